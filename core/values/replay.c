/*
 * replay.c - dcpireplay's engine, the replay backend (backend.h): plugins over recorded value
 * traces (see replay.h), through the sink dcpid uses (pipeline.c: dcpi_values_put, workers,
 * watchdog, merge, flush). Each drain replays one segment; the last one ends the source.
 *
 * The first segment's header gives the recording's facts (hotsize, contexts, event...); the
 * pipeline is made then, its images being the recording's: each MAP record names an image
 * (id, imagedir, path, tstart, tsize) and maps [start, end) of a pid onto it, offset = pc - start
 * + delta. Per recorded TRACE entry: resolve its pc; for each plugin whose specification admits
 * the instruction (key, then filter, symbol and range, select.c), append a burst (the entry's
 * pid, tid, time, contexts flag) and the entry with the plugin's vlist (values looked up by kind
 * in the recorded entry, absent kinds missing) to the plugin's trace, which the pipeline hands
 * to the plugin's worker as dcpid does (full, VSAMPLE_BUFFER_SIZE entries, another pid, before
 * pid's mappings change, at the end of a segment). SEEN pairs add to "seen". A CLUSTER record
 * gives the entries of the TRACE record after it their clusters (the inproc backend's arms),
 * which the pipeline turns into the summaries' cluster counters as it does live; a TRACE
 * without one has none (0). At the end the pipeline writes the value profiles (origin
 * values.replay; a disabled plugin's are not).
 */
#include "core/base/progress.h"
#include "core/values/backend.h"
#include "core/values/keys.h"
#include "core/values/replay.h"
#include "core/values/values.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/base/mem.h"
#include "core/image/image.h"
#include "core/store/db.h"
#include "core/store/header.h"
#include "core/store/tracefile.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

#define REPLAY_MAX_SUMMARIES ((size_t)1 << 40) /* the recording bounds them: no early flush */

typedef struct rmap {
    unsigned pid, image;
    uint64_t start, end, delta;
} rmap_t;

typedef struct replay {
    dcpi_vbackend_t b; /* the replay backend; b.vt, the sink, made at the first segment */
    const dcpi_replay_opts_t *o;
    dcpi_replay_stats_t *st;
    dcpi_vp_set_t *set;
    dcpi_values_images_t images;
    dcpi_image_t **img; /* the recording's images, by index */
    unsigned nimg;
    size_t capimg;
    rmap_t *map; /* of the current segment */
    size_t nmap, capmap, lastmap;
    dcpi_hdr_t meta; /* header of the first segment */
    int have_meta;
    unsigned hotsize;
    trace_parser_t in;
    /* The clusters of the next TRACE's entries (a CLUSTER record just read): ncl of pid cl_pid,
     * from the record at cl_offset; have_cl: pending. cl_count: the parser that counts the
     * TRACE's entries first (a CLUSTER of another count is ignored). */
    uint64_t *cl;
    size_t capcl;
    uint32_t ncl;
    unsigned cl_pid;
    uint64_t cl_offset;
    int have_cl;
    trace_parser_t cl_count;
    char cl_first[DCPI_ERRLEN]; /* the first CLUSTER record ignored, said at the end */
    char dir[4096];             /* DB/<epoch>/<platform>/values.trace */
    char **seg;                 /* its segment files, replayed in turn (one per drain) */
    size_t nseg, next;
    int rc; /* the first failure (err), which ends the replay */
    char err[DCPI_ERRLEN];
} replay_t;

static void say(replay_t *r, int level, const char *fmt, ...) DCPI_PRINTF(3, 4);
static void say(replay_t *r, int level, const char *fmt, ...)
{
    char line[DCPI_ERRLEN + 64];
    va_list ap;
    if (!r->o->say)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->o->say(r->o->say_arg, level, line);
}

/* The pipeline's own lines (a plugin disabled or failing) go where the caller wants them. */
static void pipeline_said(void *arg, int level, const char *line)
{
    say(arg, level, "%s", line);
}

/* ---------------------------------------------------------------- images and maps */

static dcpi_image_t *image_of(void *arg, unsigned index)
{
    replay_t *r = arg;
    return index < r->nimg ? r->img[index] : NULL;
}

static void free_image(dcpi_image_t *im)
{
    if (im)
        free(im->path);
    free(im);
}

/* A recorded image: its path and identity as recorded; probed_ok (its symbols readable, for a
 * symbol= selection) when the file at that path still has the recorded id. */
static dcpi_image_t *new_image(const dcpi_tracefile_record_t *m, unsigned index)
{
    dcpi_image_t *im = calloc(1, sizeof *im);
    if (!im || !(im->path = strdup(m->path))) {
        free(im);
        return NULL;
    }
    im->index = index;
    snprintf(im->info.id, sizeof im->info.id, "%s", m->image_id);
    im->info.tstart = m->tstart;
    im->info.tsize = m->tsize;
    dcpi_image_info_t now;
    im->probed_ok = m->path[0] == '/' && dcpi_image_probe(m->path, &now, NULL) == 0 &&
                    strcmp(now.id, im->info.id) == 0;
    return im;
}

static int add_image(replay_t *r, const dcpi_tracefile_record_t *m, unsigned *index)
{
    char dirname[512];
    for (unsigned i = 0; i < r->nimg; i++) {
        const dcpi_image_t *im = r->img[i];
        dcpi_image_dirname(im->path, im->info.id, dirname, sizeof dirname);
        if (strcmp(im->info.id, m->image_id) == 0 && strcmp(dirname, m->imagedir) == 0 &&
            im->info.tstart == m->tstart) {
            *index = i;
            return 0;
        }
    }
    if (r->nimg == UINT_MAX ||
        dcpi__grow((void **)&r->img, &r->capimg, (size_t)r->nimg + 1, sizeof *r->img) < 0 ||
        !(r->img[r->nimg] = new_image(m, r->nimg)))
        return DCPI_ENOMEM;
    *index = r->nimg++;
    return 0;
}

/* A MAP record replaces the mappings of its pid it overlaps (as the writer assumes); the
 * pid's pending traces go to their plugins first, resolved with the mappings they were
 * recorded under (dcpid does the same before a process's mappings change). */
static int add_map(replay_t *r, const dcpi_tracefile_record_t *m)
{
    unsigned image;
    int rc = add_image(r, m, &image);
    if (rc < 0)
        return rc;
    dcpi_values_pid_event(r->b.vt, (pid_t)m->pid);
    for (size_t i = 0; i < r->nmap;) {
        const rmap_t *o = &r->map[i];
        if (o->pid == m->pid && o->start < m->end && m->start < o->end)
            r->map[i] = r->map[--r->nmap];
        else
            i++;
    }
    if (dcpi__grow((void **)&r->map, &r->capmap, r->nmap + 1, sizeof *r->map) < 0)
        return DCPI_ENOMEM;
    r->map[r->nmap++] = (rmap_t){m->pid, image, m->start, m->end, m->delta};
    r->lastmap = 0;
    return 0;
}

/* (image, offset) of pc in pid, as dcpi_loadmap_resolve would have answered. */
static int resolve(void *arg, pid_t pid, uint64_t pc, dcpi_image_t **img, uint32_t *offset)
{
    replay_t *r = arg;
    for (size_t k = 0; k < r->nmap; k++) {
        size_t i = (r->lastmap + k) % r->nmap;
        const rmap_t *m = &r->map[i];
        if (m->pid != (unsigned)pid || pc < m->start || pc >= m->end)
            continue;
        uint64_t off = pc - m->start + m->delta;
        if (off > UINT32_MAX)
            return DCPI_ERANGE;
        r->lastmap = i;
        *img = r->img[m->image];
        *offset = (uint32_t)off;
        return 0;
    }
    return DCPI_ENOENT;
}

/* ---------------------------------------------------------------- the pipeline */

static int make_pipeline(replay_t *r, char *err)
{
    const char *ctx = dcpi__hdr_get(&r->meta, "contexts");
    r->images = (dcpi_values_images_t){.arg = r, .resolve = resolve, .image = image_of};
    dcpi_values_opts_t vo = {
        .hotsize = r->hotsize,
        .max_summaries = REPLAY_MAX_SUMMARIES,
        .contexts = ctx && strcmp(ctx, "0") != 0,
        .isolate = 1,
        .timeout_ms = r->o->timeout_ms,
        .backend = "replay",
        .images = &r->images,
        .report = pipeline_said,
        .report_arg = r,
        .disable_note = "; its value profiles are not written",
    };
    return dcpi_values_new(r->set, NULL, &vo, &r->b.vt, err);
}

/* The entry the input parser just returned, with p's vlist for its key, appended to p's trace
 * (handed over first when it holds another pid or VSAMPLE_BUFFER_SIZE entries, or is full). */
static void feed(replay_t *r, unsigned plugin, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                 uint64_t c1, unsigned image, uint64_t cluster)
{
    trace_value_t have[TRACE_VLIST_MAX], kinds[TRACE_VLIST_MAX];
    int n = dcpi_values_vlist(r->b.vt, plugin, inst->opc, kinds);
    uint64_t values[TRACE_VLIST_MAX] = {0};
    unsigned missing = 0, hmiss = trace_parser_missing(&r->in), pid = trace_parser_get_pid(&r->in);
    int nh = trace_parser_kinds(&r->in, have);
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < nh && have[j] != kinds[i])
            j++;
        if (j == nh || (hmiss >> j & 1u))
            missing |= 1u << i;
        else
            values[i] = r->in.values[j];
    }
    dcpi_values_put_t e = {.pid = pid,
                           .tid = trace_parser_get_tid(&r->in),
                           .time = trace_parser_get_time(&r->in),
                           .contexts = trace_parser_has_context(&r->in),
                           .inst = inst,
                           .pc = pc,
                           .c0 = c0,
                           .c1 = c1,
                           .n = n,
                           .kinds = kinds,
                           .values = values,
                           .missing = missing,
                           .cluster = cluster};
    r->st->fed += (uint64_t)dcpi_values_put(r->b.vt, plugin, &e, image);
}

/* ---------------------------------------------------------------- records */

static void replay_entry(replay_t *r, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                         uint64_t c1, uint64_t cluster)
{
    dcpi_values_t *vt = r->b.vt;
    dcpi_image_t *img = NULL;
    uint32_t off = 0;
    int mapped = resolve(r, (pid_t)trace_parser_get_pid(&r->in), pc, &img, &off) == 0;
    for (unsigned i = 0, n = dcpi_values_nplugins(vt); i < n; i++) {
        if (!dcpi_values_takes(vt, i, inst->opc))
            continue;
        if (!mapped)
            dcpi_values_lost(vt, i); /* no MAP holds the pc: no image to count it in */
        else if (dcpi_values_admits(vt, i, img, off, inst))
            feed(r, i, inst, pc, c0, c1, img->index, cluster);
    }
}

/* printf into out[n], truncated (a warning's text). */
static void line_of(char *out, size_t n, const char *fmt, ...) DCPI_PRINTF(3, 4);
static void line_of(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, n, fmt, ap);
    va_end(ap);
}

/* The pending CLUSTER record is ignored (why: its TRACE's pid or entries differ, or no TRACE
 * comes right after it): counted, and the first one remembered for the warning at the end. */
static void drop_clusters(replay_t *r, const char *seg, const char *why)
{
    if (!r->have_cl)
        return;
    r->have_cl = 0;
    if (!r->st->bad_clusters++)
        line_of(r->cl_first, sizeof r->cl_first,
                "%s: offset %" PRIu64 ": CLUSTER record of %" PRIu32 " entries of pid %u: %s", seg,
                r->cl_offset, r->ncl, r->cl_pid, why);
}

static void add_clusters(replay_t *r, const char *seg, const dcpi_tracefile_record_t *rec)
{
    r->st->clusters++;
    if (dcpi__grow((void **)&r->cl, &r->capcl, rec->nclusters ? rec->nclusters : 1, sizeof *r->cl) <
        0) { /* its TRACE is replayed without them */
        if (!r->st->bad_clusters++)
            line_of(r->cl_first, sizeof r->cl_first,
                    "%s: offset %" PRIu64 ": CLUSTER record: out of memory", seg, rec->offset);
        return;
    }
    for (uint32_t i = 0; i < rec->nclusters; i++)
        r->cl[i] = dcpi_tracefile_cluster_at(rec, i);
    r->ncl = rec->nclusters;
    r->cl_pid = rec->pid;
    r->cl_offset = rec->offset;
    r->have_cl = 1;
}

/* The entries of the TRACE record as replay_trace reads them (to its first error). */
static uint32_t count_entries(replay_t *r, const dcpi_tracefile_record_t *rec)
{
    uint32_t n = 0;
    trace_parser_init(&r->cl_count, rec->data, rec->len);
    while (trace_parser_next(&r->cl_count, NULL, NULL, NULL, NULL, 0) >= 0 &&
           trace_parser_get_pid(&r->cl_count) == rec->pid && n < UINT32_MAX)
        n++;
    return n;
}

/* The clusters of the TRACE record's entries (the pending CLUSTER record's), NULL: none. */
static const uint64_t *trace_clusters(replay_t *r, const char *seg,
                                      const dcpi_tracefile_record_t *rec)
{
    if (!r->have_cl)
        return NULL;
    char why[64];
    if (r->cl_pid != rec->pid) {
        snprintf(why, sizeof why, "its TRACE is of pid %u", rec->pid);
        drop_clusters(r, seg, why);
        return NULL;
    }
    uint32_t n = count_entries(r, rec);
    if (n != r->ncl) {
        snprintf(why, sizeof why, "its TRACE has %" PRIu32 " entries", n);
        drop_clusters(r, seg, why);
        return NULL;
    }
    r->have_cl = 0;
    return r->cl;
}

static void replay_trace(replay_t *r, const char *seg, const dcpi_tracefile_record_t *rec)
{
    trace_inst_t inst;
    uint64_t pc, c0, c1;
    uint32_t i = 0; /* the entry's index in the trace */
    int rc;
    const uint64_t *cl = trace_clusters(r, seg, rec);
    trace_parser_init(&r->in, rec->data, rec->len);
    while ((rc = trace_parser_next(&r->in, &inst, &pc, &c0, &c1, 0)) >= 0) {
        if (trace_parser_get_pid(&r->in) != rec->pid) {
            rc = TRACE_PARSE_ERROR;
            break;
        }
        r->st->entries++;
        if (inst.opc < dcpi_values_nkeys(r->b.vt))
            replay_entry(r, &inst, pc, c0, c1, cl ? cl[i] : 0);
        i++;
    }
    if (rc == TRACE_PARSE_ERROR) {
        r->st->bad_traces++;
        say(r, DCPI_LOG_WARN, "%s: offset %" PRIu64 ": %s", seg, rec->offset,
            trace_parser_get_pid(&r->in) != rec->pid ? "trace of another pid than its record"
                                                     : trace_parser_error(&r->in));
    }
}

/* SEEN pairs: candidates the recorder did not admit. Counted for the plugins whose
 * specification admits the instruction; a plugin with an instruction filter is asked through
 * the decision its entries left (a pair has the key, not the instruction). */
static void replay_seen(replay_t *r, const dcpi_tracefile_record_t *rec)
{
    dcpi_values_t *vt = r->b.vt;
    for (uint32_t i = 0; i < rec->npairs; i++) {
        uint64_t pc;
        uint32_t key, count, off;
        dcpi_image_t *img;
        dcpi_tracefile_seen_at(rec, i, &pc, &key, &count);
        r->st->seen++;
        if (key >= dcpi_values_nkeys(vt) || resolve(r, (pid_t)rec->pid, pc, &img, &off) < 0)
            continue;
        for (unsigned k = 0, n = dcpi_values_nplugins(vt); k < n; k++)
            if (dcpi_values_takes(vt, k, key) && dcpi_values_admits(vt, k, img, off, NULL))
                dcpi_values_seen(vt, k, img, off, count);
    }
}

/* ---------------------------------------------------------------- segments */

/* The first segment's header is the recording's; the others must agree with it. */
static int check_meta(replay_t *r, const dcpi_tracefile_reader_t *rd, const char *seg, char *err)
{
    static const char *const same[] = {"event", "period", "contexts", "epoch", "platform"};
    const char *rh = dcpi_tracefile_reader_get(rd, "hotsize");
    if (!r->have_meta) {
        static const char *const keys[] = {"epoch",    "platform", "event",   "period",
                                           "cpuspeed", "contexts", "cpucount"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const char *v = dcpi_tracefile_reader_get(rd, keys[i]);
            if (v && dcpi__hdr_append(&r->meta, keys[i], v) < 0)
                return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", seg);
        }
        r->have_meta = 1;
        r->hotsize = r->o->hotsize ? r->o->hotsize : rh ? (unsigned)strtoul(rh, NULL, 10) : 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const char *a = dcpi__hdr_get(&r->meta, same[i]);
        const char *b = dcpi_tracefile_reader_get(rd, same[i]);
        if (!a || !b || strcmp(a, b) != 0)
            return dcpi__errf(err, DCPI_EFORMAT,
                              "%s: %s '%s' differs from the first segment's '%s'", seg, same[i],
                              b ? b : "", a ? a : "");
    }
    return 0;
}

static int replay_records(replay_t *r, dcpi_tracefile_reader_t *rd, const char *seg, char *err)
{
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    char why[DCPI_ERRLEN];
    int rc;
    uint64_t nrec = 0;
    dcpi__progress_t pg;
    dcpi__progress_start(&pg, stderr, -1, 0, "dcpireplay: trace records");
    while ((rc = dcpi_tracefile_next(rd, &rec, &tr, why)) > 0) {
        dcpi__progress_update(&pg, ++nrec);
        if (rec.type != DCPI_TRACEFILE_TRACE) /* a CLUSTER is for the record right after it */
            drop_clusters(r, seg, "no TRACE record after it");
        if (rec.type == DCPI_TRACEFILE_MAP) {
            r->st->maps++;
            if (add_map(r, &rec) < 0)
                return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", seg);
        } else if (rec.type == DCPI_TRACEFILE_TRACE) {
            r->st->traces++;
            replay_trace(r, seg, &rec);
        } else if (rec.type == DCPI_TRACEFILE_CLUSTER) {
            add_clusters(r, seg, &rec);
        } else {
            replay_seen(r, &rec);
        }
    }
    dcpi__progress_done(&pg);
    drop_clusters(r, seg, "no TRACE record after it");
    if (rc == 0)
        r->st->not_recorded += tr.refused;
    else if (rc == DCPI_ETRUNC)
        r->st->torn++;
    else
        r->st->bad++;
    if (rc < 0)
        say(r, DCPI_LOG_WARN, "%s (records before it were replayed)", why);
    return 0;
}

static int replay_segment(replay_t *r, const char *path, char *err)
{
    dcpi_tracefile_reader_t *rd;
    int rc = dcpi_tracefile_reader_open(path, &rd, err);
    if (rc < 0)
        return rc;
    r->st->segments++;
    rc = check_meta(r, rd, path, err);
    if (rc == 0 && !r->b.vt)
        rc = make_pipeline(r, err);
    if (rc == 0)
        rc = replay_records(r, rd, path, err);
    if (r->b.vt)
        dcpi_values_end_drain(r->b.vt); /* resolved with this segment's MAP records */
    r->nmap = 0;                        /* MAP records belong to their segment */
    dcpi_tracefile_reader_close(rd);
    return rc;
}

/* ---------------------------------------------------------------- writing */

static int write_all(replay_t *r, char *err)
{
    char why[DCPI_ERRLEN] = "";
    dcpi_values_flush_info_t fi = {
        .db = r->o->db,
        .epoch = r->o->epoch,
        .platform = r->o->platform,
        .event = dcpi__hdr_get(&r->meta, "event"),
        .origin = DCPI_REPLAY_ORIGIN,
        .exclusive = !r->o->merge,
        .skip_disabled = 1,
    };
    const char *v;
    if ((v = dcpi__hdr_get(&r->meta, "period")))
        fi.period = strtoull(v, NULL, 10);
    if ((v = dcpi__hdr_get(&r->meta, "cpuspeed")))
        fi.cpuspeed = (unsigned)strtoul(v, NULL, 10);
    if ((v = dcpi__hdr_get(&r->meta, "cpucount")))
        fi.cpucount = atoi(v);
    if (!fi.event)
        fi.event = "";
    int rc = dcpi_values_flush(r->b.vt, &fi, NULL, why);
    if (rc >= 0) {
        r->st->files = (uint64_t)rc;
        return 0;
    }
    if (rc == DCPI_EEXIST)
        return dcpi__errf(err, rc,
                          "%s (replaying again would count twice; remove it or use -merge)", why);
    return dcpi__errf(err, rc, "%s", why);
}

/* The plugins' counters into the replay's, and what their selection says. */
static void count(replay_t *r)
{
    for (unsigned i = 0; r->b.vt && i < dcpi_values_nplugins(r->b.vt); i++) {
        dcpi_values_stats_t st, *s = &st;
        dcpi_values_plugin_stats(r->b.vt, i, s);
        const char *note = dcpi_values_plugin_note(r->b.vt, i);
        if (note[0])
            say(r, DCPI_LOG_WARN, "%s", note);
        r->st->values += s->values;
        r->st->lost += s->lost;
        r->st->plugin_errors += s->errors;
        r->st->disabled += s->disabled != 0;
    }
    if (r->st->bad_clusters)
        say(r, DCPI_LOG_WARN,
            "%" PRIu64 " CLUSTER record%s ignored (their entries replayed without clusters); the "
            "first: %s",
            r->st->bad_clusters, r->st->bad_clusters == 1 ? "" : "s", r->cl_first);
}

/* ---------------------------------------------------------------- the backend */

/* Drain: the next segment into the sink; 1 once every segment was replayed or one failed. */
static int replay_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    replay_t *r = (replay_t *)b;
    (void)now_ns;
    if (r->rc == 0 && r->next < r->nseg) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", r->dir, r->seg[r->next++]);
        r->rc = replay_segment(r, path, r->err);
    }
    return r->rc < 0 || r->next == r->nseg;
}

static void replay_free(dcpi_vbackend_t *b)
{
    replay_t *r = (replay_t *)b;
    dcpi_values_free(r->b.vt); /* ends the workers */
    for (unsigned i = 0; i < r->nimg; i++)
        free_image(r->img[i]);
    free(r->img);
    free(r->map);
    free(r->cl);
    dcpi_db_free_list(r->seg, r->nseg);
    dcpi__hdr_free(&r->meta);
    free(r);
}

static const dcpi_vbackend_ops_t replay_ops = {
    .desc = &dcpi_vdesc_replay, .drain = replay_drain, .free = replay_free};

/* The recording's segments (set up). */
static int replay_open(replay_t *r, char *err)
{
    int rc = dcpi_tracefile_list(r->dir, &r->seg, &r->nseg, err);
    if (rc == DCPI_ENOENT)
        return dcpi__errf(err, rc, "%s: no recorded traces (record with dcpid -vrecord)", r->dir);
    if (rc < 0)
        return rc;
    if (r->nseg == 0)
        return dcpi__errf(err, DCPI_ENOENT, "%s: no segment files", r->dir);
    return 0;
}

/* ---------------------------------------------------------------- driver */

int dcpi_replay_run(dcpi_vp_set_t *set, const dcpi_replay_opts_t *o, dcpi_replay_stats_t *st,
                    char *err)
{
    dcpi_replay_stats_t local;
    if (!set || !o || !o->db || !o->epoch || !o->platform)
        return dcpi__errf(err, DCPI_EINVAL, "replay: missing plugins, database, epoch or platform");
    replay_t *r = calloc(1, sizeof *r);
    if (!r)
        return dcpi__errf(err, DCPI_ENOMEM, "replay: out of memory");
    r->b.ops = &replay_ops;
    r->o = o;
    r->set = set;
    r->st = st ? st : &local;
    memset(r->st, 0, sizeof *r->st);
    int rc = 0;
    if (snprintf(r->dir, sizeof r->dir, "%s/%s/%s/%s", o->db, o->epoch, o->platform,
                 DCPI_TRACEFILE_DIR) >= (int)sizeof r->dir)
        rc = dcpi__errf(err, DCPI_ERANGE, "%s: path too long", o->db);
    if (rc == 0 && (rc = replay_open(r, err)) == 0) {
        while (!dcpi_vbackend_drain(&r->b, 0))
            ;
        rc = r->rc < 0 ? dcpi__errf(err, r->rc, "%s", r->err) : write_all(r, err);
        count(r);
    }
    dcpi_vbackend_free(&r->b);
    return rc;
}
