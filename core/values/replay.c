/*
 * replay.c - dcpireplay's engine: plugins over recorded value traces (see replay.h).
 *
 * Per recorded TRACE record: parse it once; for each entry and each plugin whose specification
 * has a vlist for the entry's key, append a burst (the entry's pid, tid, time, contexts flag)
 * and the entry with the plugin's vlist (values looked up by kind in the recorded entry, absent
 * kinds missing) to the plugin's trace; a plugin's trace is handed to vp_prof_process when it
 * holds VSAMPLE_BUFFER_SIZE entries, when it is full and at the end of the record, as dcpid
 * does. vsamples are resolved with the MAP records of the segment and counted into
 * per-(image, plugin) value profiles, written at the end with dcpi_vprof_merge_write.
 */
#include "core/base/progress.h"
#include "core/values/keys.h"
#include "core/values/replay.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/store/db.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "core/image/image.h"
#include "core/store/tracefile.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

#define TRACE_BUF_BYTES (192 * 1024)

typedef struct rimage {
    char *id, *imagedir, *path;
    uint64_t tstart, tsize;
} rimage_t;

typedef struct rmap {
    unsigned pid, image;
    uint64_t start, end, delta;
} rmap_t;

typedef struct rplugin {
    const vp_dispatch_t *d;
    const char *name;
    trace_vlist_table_t *spec;
    int8_t *nval;                      /* per key: values of its vlist, -1 ignored */
    uint8_t (*kinds)[TRACE_VLIST_MAX]; /* per key */
    trace_encoder_t enc;
    uint8_t *buf;
    dcpi_vprof_t **vp; /* by image index */
    uint64_t *lost;    /* by image index */
    unsigned nvp;
    int failed; /* returned too many vsamples: profiles not written */
    int warned;
} rplugin_t;

typedef struct replay {
    const dcpi_replay_opts_t *o;
    dcpi_replay_stats_t *st;
    rplugin_t *pl;
    unsigned npl;
    trace_opc_t nkeys;
    rimage_t *img;
    unsigned nimg;
    size_t capimg;
    rmap_t *map; /* of the current segment */
    size_t nmap, capmap, lastmap;
    dcpi_hdr_t meta; /* header of the first segment */
    int have_meta;
    unsigned hotsize;
    char fatal[DCPI_ERRLEN];
    int fatal_rc;
    trace_parser_t in, out;
} replay_t;

static void warn(replay_t *r, const char *fmt, ...) DCPI_PRINTF(2, 3);
static void warn(replay_t *r, const char *fmt, ...)
{
    char line[DCPI_ERRLEN + 64];
    va_list ap;
    if (!r->o->warn)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->o->warn(r->o->warn_arg, line);
}

/* ---------------------------------------------------------------- plugins */

static int init_plugin(replay_t *r, rplugin_t *p, dcpi_vp_t *vp, char *err)
{
    p->d = dcpi_vp_dispatch(vp);
    p->name = dcpi_vp_name(vp);
    p->spec = p->d->vp_prof_init();
    if (!p->spec)
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: vp_prof_init returned no specification", p->name);
    p->buf = malloc(TRACE_BUF_BYTES);
    if (!p->buf || dcpi_values_key_tables(p->spec, r->nkeys, &p->nval, &p->kinds) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", p->name);
    trace_encoder_init(&p->enc, p->buf, TRACE_BUF_BYTES);
    return 0;
}

static void free_plugin(rplugin_t *p)
{
    if (p->spec && p->d->vp_prof_done)
        p->d->vp_prof_done();
    for (unsigned i = 0; i < p->nvp; i++)
        dcpi_vprof_free(p->vp[i]);
    free(p->vp);
    free(p->lost);
    free(p->buf);
    free(p->nval);
    free(p->kinds);
}

/* ---------------------------------------------------------------- images and maps */

static int add_image(replay_t *r, const dcpi_tracefile_record_t *m, unsigned *index)
{
    for (unsigned i = 0; i < r->nimg; i++) {
        const rimage_t *im = &r->img[i];
        if (strcmp(im->id, m->image_id) == 0 && strcmp(im->imagedir, m->imagedir) == 0 &&
            im->tstart == m->tstart) {
            *index = i;
            return 0;
        }
    }
    if (r->nimg == UINT_MAX ||
        dcpi__grow((void **)&r->img, &r->capimg, (size_t)r->nimg + 1, sizeof *r->img) < 0)
        return DCPI_ENOMEM;
    rimage_t *im = &r->img[r->nimg];
    im->id = strdup(m->image_id);
    im->imagedir = strdup(m->imagedir);
    im->path = strdup(m->path);
    im->tstart = m->tstart;
    im->tsize = m->tsize;
    if (!im->id || !im->imagedir || !im->path) {
        free(im->id);
        free(im->imagedir);
        free(im->path);
        return DCPI_ENOMEM;
    }
    *index = r->nimg++;
    return 0;
}

/* A MAP record replaces the mappings of its pid it overlaps (as the writer assumes). */
static int add_map(replay_t *r, const dcpi_tracefile_record_t *m)
{
    unsigned image;
    int rc = add_image(r, m, &image);
    if (rc < 0)
        return rc;
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
static int resolve(replay_t *r, unsigned pid, uint64_t pc, unsigned *image, uint32_t *offset)
{
    for (size_t k = 0; k < r->nmap; k++) {
        size_t i = (r->lastmap + k) % r->nmap;
        const rmap_t *m = &r->map[i];
        if (m->pid != pid || pc < m->start || pc >= m->end)
            continue;
        uint64_t off = pc - m->start + m->delta;
        if (off > UINT32_MAX)
            return DCPI_ERANGE;
        r->lastmap = i;
        *image = m->image;
        *offset = (uint32_t)off;
        return 0;
    }
    return DCPI_ENOENT;
}

/* The summary of (plugin, image, offset), created as needed. */
static dcpi_vsummary_t *summary_at(replay_t *r, rplugin_t *p, unsigned image, uint32_t offset)
{
    if (image >= p->nvp) {
        if (image > UINT_MAX - 16)
            return NULL;
        unsigned n = image + 16;
        dcpi_vprof_t **v = reallocarray(p->vp, n, sizeof *v);
        if (!v)
            return NULL;
        p->vp = v;
        uint64_t *l = reallocarray(p->lost, n, sizeof *l);
        if (!l)
            return NULL;
        p->lost = l;
        memset(p->vp + p->nvp, 0, (n - p->nvp) * sizeof *v);
        memset(p->lost + p->nvp, 0, (n - p->nvp) * sizeof *l);
        p->nvp = n;
    }
    if (!p->vp[image] && dcpi_vprof_new(r->hotsize, &p->vp[image]) < 0)
        return NULL;
    return dcpi_vprof_at(p->vp[image], offset, 1);
}

/* ---------------------------------------------------------------- handing traces over */

static void merge_vsamples(replay_t *r, rplugin_t *p, unsigned pid, const vsample_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned image;
        uint32_t off;
        dcpi_vsummary_t *s;
        if (resolve(r, pid, v[i].pc, &image, &off) < 0 || !(s = summary_at(r, p, image, off))) {
            r->st->lost++;
            continue;
        }
        dcpi_vsummary_add(s, v[i].value, v[i].context0, v[i].context1, 1);
        r->st->values++;
    }
}

static void hand_over(replay_t *r, rplugin_t *p)
{
    unsigned entries = trace_encoder_entries(&p->enc);
    unsigned pid = p->enc.pid;
    size_t len = trace_encoder_size(&p->enc);
    trace_encoder_init(&p->enc, p->buf, TRACE_BUF_BYTES);
    if (entries == 0 || p->failed)
        return;
    vsample_t *vs = NULL;
    trace_parser_init(&r->out, p->buf, len);
    trace_parser_set_backend(&r->out, "replay");
    int n = p->d->vp_prof_process(pid, &r->out, &vs);
    r->st->fed += entries;
    if (n < 0) {
        r->st->plugin_errors++;
        r->st->lost += entries;
        if (!p->warned++)
            warn(r, "%s: vp_prof_process failed (%d); its traces are counted as lost", p->name, n);
        return;
    }
    if (n > VSAMPLE_BUFFER_SIZE || (!vs && n > 0)) {
        p->failed = 1;
        r->st->plugin_errors++;
        r->fatal_rc = DCPI_EPLUGIN;
        snprintf(r->fatal, sizeof r->fatal,
                 "%s: vp_prof_process returned %d samples (buffer holds %d); its profiles are "
                 "not written",
                 p->name, n, VSAMPLE_BUFFER_SIZE);
        return;
    }
    merge_vsamples(r, p, pid, vs, n);
}

/* Append the entry the input parser just returned to p's trace. */
static void feed(replay_t *r, rplugin_t *p, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                 uint64_t c1)
{
    trace_opc_t k = inst->opc;
    int n = p->nval[k];
    trace_value_t have[TRACE_VLIST_MAX], kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX] = {0};
    unsigned missing = 0, hmiss = trace_parser_missing(&r->in);
    int nh = trace_parser_kinds(&r->in, have);
    for (int i = 0; i < n; i++) {
        int j = 0;
        kinds[i] = (trace_value_t)p->kinds[k][i];
        while (j < nh && have[j] != kinds[i])
            j++;
        if (j == nh || (hmiss >> j & 1u))
            missing |= 1u << i;
        else
            values[i] = r->in.values[j];
    }
    if (trace_encoder_entries(&p->enc) >= VSAMPLE_BUFFER_SIZE)
        hand_over(r, p);
    for (int tries = 0; tries < 2; tries++) {
        int rc =
            trace_encoder_burst(&p->enc, trace_parser_get_pid(&r->in), trace_parser_get_tid(&r->in),
                                trace_parser_get_time(&r->in), trace_parser_has_context(&r->in));
        if (rc == 0)
            rc = trace_encoder_entry(&p->enc, inst, pc, c0, c1, n, kinds, values, missing);
        if (rc == 0)
            return;
        if (rc != DCPI_EFULL || tries)
            break;
        hand_over(r, p);
    }
    r->st->lost++;
}

static void replay_trace(replay_t *r, const char *seg, const dcpi_tracefile_record_t *rec)
{
    trace_inst_t inst;
    uint64_t pc, c0, c1;
    int rc;
    trace_parser_init(&r->in, rec->data, rec->len);
    while ((rc = trace_parser_next(&r->in, &inst, &pc, &c0, &c1, 0)) >= 0) {
        if (trace_parser_get_pid(&r->in) != rec->pid) {
            rc = TRACE_PARSE_ERROR;
            break;
        }
        r->st->entries++;
        if (inst.opc >= r->nkeys)
            continue;
        for (unsigned i = 0; i < r->npl; i++)
            if (!r->pl[i].failed && r->pl[i].nval[inst.opc] >= 0)
                feed(r, &r->pl[i], &inst, pc, c0, c1);
    }
    if (rc == TRACE_PARSE_ERROR) {
        r->st->bad_traces++;
        warn(r, "%s: offset %" PRIu64 ": %s", seg, rec->offset,
             trace_parser_get_pid(&r->in) != rec->pid ? "trace of another pid than its record"
                                                      : trace_parser_error(&r->in));
    }
    for (unsigned i = 0; i < r->npl; i++)
        hand_over(r, &r->pl[i]);
}

static void replay_seen(replay_t *r, const dcpi_tracefile_record_t *rec)
{
    for (uint32_t i = 0; i < rec->npairs; i++) {
        uint64_t pc;
        uint32_t key, count, off;
        unsigned image;
        dcpi_tracefile_seen_at(rec, i, &pc, &key, &count);
        r->st->seen++;
        if (key >= r->nkeys || resolve(r, rec->pid, pc, &image, &off) < 0)
            continue;
        for (unsigned k = 0; k < r->npl; k++) {
            rplugin_t *p = &r->pl[k];
            dcpi_vsummary_t *s;
            if (p->failed || p->nval[key] < 0)
                continue;
            if ((s = summary_at(r, p, image, off)) != NULL)
                dcpi_vsummary_seen(s, count);
            else
                r->st->lost++;
        }
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
        if (rec.type == DCPI_TRACEFILE_MAP) {
            r->st->maps++;
            if (add_map(r, &rec) < 0)
                return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", seg);
        } else if (rec.type == DCPI_TRACEFILE_TRACE) {
            r->st->traces++;
            replay_trace(r, seg, &rec);
        } else {
            replay_seen(r, &rec);
        }
    }
    dcpi__progress_done(&pg);
    if (rc == 0)
        r->st->not_recorded += tr.refused;
    else if (rc == DCPI_ETRUNC)
        r->st->torn++;
    else
        r->st->bad++;
    if (rc < 0)
        warn(r, "%s (records before it were replayed)", why);
    return 0;
}

static int replay_segment(replay_t *r, const char *path, char *err)
{
    dcpi_tracefile_reader_t *rd;
    int rc = dcpi_tracefile_reader_open(path, &rd, err);
    if (rc < 0)
        return rc;
    r->st->segments++;
    r->nmap = 0; /* MAP records belong to their segment */
    rc = check_meta(r, rd, path, err);
    if (rc == 0)
        rc = replay_records(r, rd, path, err);
    dcpi_tracefile_reader_close(rd);
    return rc;
}

/* ---------------------------------------------------------------- writing */

static int set_header(replay_t *r, const rplugin_t *p, const rimage_t *im, dcpi_vprof_t *vp,
                      uint64_t lost)
{
    static const char *const keys[] = {"epoch",  "platform", "event",
                                       "period", "cpuspeed", "cpucount"};
    char num[64];
    int rc = dcpi_vprof_set(vp, "image", im->id);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !rc; i++) {
        const char *v = dcpi__hdr_get(&r->meta, keys[i]);
        if (v)
            rc = dcpi_vprof_set(vp, keys[i], v);
    }
    snprintf(num, sizeof num, "0x%" PRIx64, im->tstart);
    rc = rc ? rc : dcpi_vprof_set(vp, "tstart", num);
    snprintf(num, sizeof num, "%" PRIu64, im->tsize);
    rc = rc ? rc : dcpi_vprof_set(vp, "tsize", num);
    rc = rc ? rc : dcpi_vprof_set(vp, "path", im->path);
    rc = rc ? rc : dcpi_vprof_set(vp, "vprof", p->name);
    const char *ctx = dcpi__hdr_get(&r->meta, "contexts");
    rc = rc ? rc : dcpi_vprof_set(vp, "contexts", ctx ? ctx : "0");
    snprintf(num, sizeof num, "%" PRIu64, lost);
    rc = rc ? rc : dcpi_vprof_set(vp, "lost", num);
    rc = rc ? rc : dcpi_vprof_set(vp, "backend", "replay");
    return rc ? rc : dcpi_vprof_set(vp, "origin", DCPI_REPLAY_ORIGIN);
}

static int write_one(replay_t *r, rplugin_t *p, unsigned image, char *err)
{
    const rimage_t *im = &r->img[image];
    char dir[4096], file[4400];
    struct stat sb;
    if (snprintf(dir, sizeof dir, "%s/%s/%s/%s", r->o->db, r->o->epoch, r->o->platform,
                 im->imagedir) >= (int)sizeof dir ||
        snprintf(file, sizeof file, "%s/%s.vprof", dir, p->name) >= (int)sizeof file)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", dir);
    if (!r->o->merge && lstat(file, &sb) == 0)
        return dcpi__errf(err, DCPI_EEXIST,
                          "%s: exists (replaying again would count twice; remove it or use -merge)",
                          file);
    int rc = set_header(r, p, im, p->vp[image], p->lost[image]);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: header: %s", file, dcpi_strerror(rc));
    if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        return dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    return dcpi_vprof_merge_write(file, p->vp[image], err);
}

static int write_all(replay_t *r, char *err)
{
    int last = 0;
    for (unsigned i = 0; i < r->npl; i++) {
        rplugin_t *p = &r->pl[i];
        for (unsigned im = 0; im < p->nvp && !p->failed; im++) {
            char why[DCPI_ERRLEN];
            int rc;
            if (!p->vp[im])
                continue;
            if ((rc = write_one(r, p, im, why)) == 0) {
                r->st->files++;
                continue;
            }
            warn(r, "%s", why);
            if (!last)
                dcpi__errf(err, rc, "%s", why);
            last = last ? last : rc;
        }
    }
    return last;
}

/* ---------------------------------------------------------------- driver */

static int replay_all(replay_t *r, const char *dir, char *err)
{
    char **names = NULL;
    size_t n = 0;
    int rc = dcpi_tracefile_list(dir, &names, &n, err);
    if (rc == DCPI_ENOENT)
        return dcpi__errf(err, rc, "%s: no recorded traces (record with dcpid -vrecord)", dir);
    if (rc < 0)
        return rc;
    if (n == 0)
        rc = dcpi__errf(err, DCPI_ENOENT, "%s: no segment files", dir);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = replay_segment(r, path, err);
    }
    dcpi_db_free_list(names, n);
    if (rc == 0 && r->fatal_rc)
        rc = dcpi__errf(err, r->fatal_rc, "%s", r->fatal);
    int wrc = rc == 0 || rc == DCPI_EPLUGIN ? write_all(r, err) : 0;
    return rc ? rc : wrc;
}

static void free_replay(replay_t *r)
{
    for (unsigned i = 0; i < r->npl; i++)
        free_plugin(&r->pl[i]);
    free(r->pl);
    for (unsigned i = 0; i < r->nimg; i++) {
        free(r->img[i].id);
        free(r->img[i].imagedir);
        free(r->img[i].path);
    }
    free(r->img);
    free(r->map);
    dcpi__hdr_free(&r->meta);
    free(r);
}

int dcpi_replay_run(dcpi_vp_set_t *set, const dcpi_replay_opts_t *o, dcpi_replay_stats_t *st,
                    char *err)
{
    dcpi_replay_stats_t local;
    char dir[4096];
    if (!set || !o || !o->db || !o->epoch || !o->platform)
        return dcpi__errf(err, DCPI_EINVAL, "replay: missing plugins, database, epoch or platform");
    if (snprintf(dir, sizeof dir, "%s/%s/%s/%s", o->db, o->epoch, o->platform,
                 DCPI_TRACEFILE_DIR) >= (int)sizeof dir)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", o->db);
    replay_t *r = calloc(1, sizeof *r);
    unsigned n = dcpi_vp_count(set);
    if (!r || !(r->pl = calloc(n ? n : 1, sizeof *r->pl))) {
        free(r);
        return dcpi__errf(err, DCPI_ENOMEM, "replay: out of memory");
    }
    r->o = o;
    r->st = st ? st : &local;
    memset(r->st, 0, sizeof *r->st);
    r->nkeys = trace_opc_count();
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++, r->npl++)
        rc = init_plugin(r, &r->pl[i], dcpi_vp_get(set, i), err);
    if (rc == 0)
        rc = replay_all(r, dir, err);
    free_replay(r);
    return rc;
}
