/*
 * pipeline.c - the sink every value backend feeds (see backend.h, values.h, values-int.h): plugins
 * and their traces, hand-over to the plugins, merge of the vsamples they return into the
 * per-(image, plugin) value profiles, flush, counters.
 *
 * A trace goes to its plugin (vp_prof_process) when its buffer is full, when it holds
 * VSAMPLE_BUFFER_SIZE entries, when the pid changes, at the end of each ring drain, before a
 * flush and before pid's mappings change; the vsamples returned are resolved in the pid and
 * added to the (image, plugin) value profile at their offset. dcpi_values_flush writes the value
 * profiles next to the PC profiles. The entries come in through dcpi__values_put (entry.c for
 * the regs and bp backends' CPU states, replay.c) or dcpi_values_step (step.c, the step backend).
 *
 * Isolation (opts.isolate, core/plugin/vpworker.h): each plugin's trace buffer lives in memory
 * shared with its worker process, which runs vp_prof_process; a plugin that crashes, hangs or
 * breaks the buffer contract is disabled with one log line (its data so far stays and is flushed,
 * unless the flush says skip_disabled). dcpireplay (replay.c) feeds the same pipeline, with its
 * recording's MAP records as the images (opts.images) and its own messages (opts.report).
 */
#include "core/values/keys.h"
#include "core/values/values-int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/image/image.h"
#include "dcpi/errno.h"

/* ---------------------------------------------------------------- messages and images */

static void say(const dcpi_values_t *vt, int level, const char *fmt, ...) DCPI_PRINTF(3, 4);
static void say(const dcpi_values_t *vt, int level, const char *fmt, ...)
{
    char line[DCPI_ERRLEN + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (vt->o.report)
        vt->o.report(vt->o.report_arg, level, line);
    else
        dcpi__log(level, "%s", line);
}

static int resolve_pc(const dcpi_values_t *vt, unsigned pid, uint64_t pc, dcpi_image_t **img,
                      uint32_t *off)
{
    if (vt->o.images)
        return vt->o.images->resolve(vt->o.images->arg, (pid_t)pid, pc, img, off);
    return dcpi_loadmap_resolve(vt->lm, (pid_t)pid, pc, img, off);
}

static const dcpi_image_t *image_at(const dcpi_values_t *vt, unsigned index)
{
    if (vt->o.images)
        return vt->o.images->image(vt->o.images->arg, index);
    return dcpi_loadmap_image(vt->lm, index);
}

/* ---------------------------------------------------------------- setup */

/* Per-key tables of one plugin's specification, and its registers. */
static int build_keys(dcpi_values_t *vt, dcpi_values_plugin_t *p)
{
    int rc = dcpi_values_key_tables(p->spec, vt->nkeys, &p->nval, &p->kinds);
    if (rc < 0)
        return rc;
    for (trace_opc_t k = 0; k < vt->nkeys; k++) {
        trace_value_t v[TRACE_VLIST_MAX];
        for (int i = 0; i < p->nval[k]; i++)
            v[i] = (trace_value_t)p->kinds[k][i];
        if (p->nval[k] >= 0)
            vt->regs_mask |= dcpi_capture_perf_mask(v, p->nval[k]);
    }
    return 0;
}

/* Whether p's specification has a vlist for some key. */
static int selects_any(const dcpi_values_t *vt, const dcpi_values_plugin_t *p)
{
    for (trace_opc_t k = 0; k < vt->nkeys; k++)
        if (p->nval[k] >= 0)
            return 1;
    return 0;
}

/* The backend feeding the pipeline, as plugins see it (trace_parser_backend). */
static const char *backend_of(const dcpi_values_t *vt)
{
    return vt->o.backend ? vt->o.backend : "regs";
}

static int init_plugin(dcpi_values_t *vt, dcpi_values_plugin_t *p, dcpi_vp_t *vp, char *err)
{
    p->vp = vp;
    p->d = dcpi_vp_dispatch(vp);
    p->name = dcpi_vp_name(vp);
    p->spec = p->d->vp_prof_init();
    if (!p->spec) {
        const char *why = dcpi_vp_init_why(vp);
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: vp_prof_init returned no specification (%s)",
                          p->name,
                          why ? why
                              : "NULL: the plugin gave up building it, e.g. out of memory or a "
                                "trace_* builder call that failed; check what they return");
    }
    if (vt->o.isolate) {
        int rc =
            dcpi_vpworker_new(p->d, p->name, DCPI_VALUES_BUF_BYTES, vt->o.timeout_ms, &p->w, err);
        if (rc < 0)
            return rc;
        dcpi_vpworker_set_backend(p->w, backend_of(vt));
        p->buf = dcpi_vpworker_inbuf(p->w);
    } else {
        p->buf = malloc(DCPI_VALUES_BUF_BYTES);
    }
    p->cl = dcpi__values_clusters_new();
    if (!p->buf || !p->cl || build_keys(vt, p) < 0 || dcpi__values_select_init(p) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", p->name);
    if (!selects_any(vt, p))
        return dcpi__errf(err, DCPI_EPLUGIN,
                          "%s: vp_prof_init's specification selects no instruction (every key "
                          "ignored: add vlists with trace_add_vlist_by_select / _by_opc)",
                          p->name);
    trace_encoder_init(&p->enc, p->buf, DCPI_VALUES_BUF_BYTES);
    return 0;
}

/* p's oracle twin t: p's dispatch and specification (vp_prof_init is not called again), its
 * own buffer, worker, key tables and value profiles, named "NAME.oracle". */
static int init_oracle(dcpi_values_t *vt, dcpi_values_plugin_t *t, const dcpi_values_plugin_t *p,
                       char *err)
{
    t->vp = p->vp;
    t->d = p->d;
    t->spec = p->spec;
    t->oracle = 1;
    snprintf(t->oname, sizeof t->oname, "%s.oracle", p->name);
    t->name = t->oname;
    if (vt->o.isolate) {
        int rc =
            dcpi_vpworker_new(t->d, t->name, DCPI_VALUES_BUF_BYTES, vt->o.timeout_ms, &t->w, err);
        if (rc < 0)
            return rc;
        dcpi_vpworker_set_backend(t->w, backend_of(vt));
        t->buf = dcpi_vpworker_inbuf(t->w);
    } else {
        t->buf = malloc(DCPI_VALUES_BUF_BYTES);
    }
    t->cl = dcpi__values_clusters_new();
    if (!t->buf || !t->cl || build_keys(vt, t) < 0 || dcpi__values_select_init(t) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", t->name);
    trace_encoder_init(&t->enc, t->buf, DCPI_VALUES_BUF_BYTES);
    return 0;
}

static void free_plugin(dcpi_values_plugin_t *p)
{
    /* dcpid's own copy of the plugin's state (vp_prof_init ran here, before any worker was
     * forked) is released here; a worker releases its copy itself. A twin shares its plugin's. */
    if (p->spec && p->d->vp_prof_done && !p->oracle)
        p->d->vp_prof_done();
    for (unsigned i = 0; i < p->nslots; i++)
        dcpi_vprof_free(p->slots[i].vp);
    free(p->slots);
    if (p->w)
        dcpi_vpworker_free(p->w);
    else
        free(p->buf);
    free(p->nval);
    free(p->kinds);
    free(p->cl);
}

int dcpi_values_new(dcpi_vp_set_t *set, dcpi_loadmap_t *lm, const dcpi_values_opts_t *o,
                    dcpi_values_t **out, char *err)
{
    unsigned n = dcpi_vp_count(set);
    dcpi_values_t *vt = calloc(1, sizeof *vt);
    if (!vt || !(vt->pl = calloc((n ? n : 1) * (o->oracle ? 2 : 1), sizeof *vt->pl))) {
        free(vt);
        return dcpi__errf(err, DCPI_ENOMEM, "vtrace: out of memory");
    }
    vt->lm = lm;
    vt->o = *o;
    vt->o.rate = o->rate ? o->rate : DCPI_VALUES_DEFAULT_RATE;
    vt->o.hotsize = o->hotsize ? o->hotsize : DCPI_VSUMMARY_DEFAULT_CAP;
    vt->o.max_summaries = o->max_summaries ? o->max_summaries : DCPI_VALUES_DEFAULT_HASH;
    vt->burst = vt->o.rate / 10.0 > 1 ? vt->o.rate / 10.0 : 1;
    vt->nkeys = trace_opc_count();
    for (unsigned i = 0; i < n; i++, vt->npl++) {
        int rc = init_plugin(vt, &vt->pl[i], dcpi_vp_get(set, i), err);
        if (rc < 0) {
            vt->npl++; /* free_plugin knows whether vp_prof_init returned a specification */
            dcpi_values_free(vt);
            return rc;
        }
    }
    for (unsigned i = 0; o->oracle && i < n; i++, vt->nor++) {
        int rc = init_oracle(vt, &vt->pl[n + i], &vt->pl[i], err);
        if (rc < 0) {
            vt->nor++;
            dcpi_values_free(vt);
            return rc;
        }
    }
    if (vt->o.record && dcpi__values_rec_build(vt) < 0) {
        dcpi_values_free(vt);
        return dcpi__errf(err, DCPI_ENOMEM, "vtrace: out of memory");
    }
    *out = vt;
    return 0;
}

void dcpi_values_free(dcpi_values_t *vt)
{
    if (!vt)
        return;
    dcpi_values_end_drain(vt);
    dcpi__values_rec_free(vt);
    for (unsigned i = 0; i < vt->npl + vt->nor; i++)
        free_plugin(&vt->pl[i]);
    dcpi__values_close_code(vt);
    dcpi__values_select_free(vt);
    free(vt->pl);
    free(vt);
}

uint64_t dcpi_values_regs_mask(const dcpi_values_t *vt)
{
    /* perf has no registers past R15 in this numbering: asking for them is EINVAL */
    return vt->regs_mask & ((1ull << DCPI_REG_COUNT) - 1);
}

unsigned dcpi_values_rate(const dcpi_values_t *vt)
{
    return vt->o.rate;
}

int dcpi_values_contexts(const dcpi_values_t *vt)
{
    return vt->o.contexts;
}

/* ---------------------------------------------------------------- summaries */

static dcpi_values_vslot_t *slot_of(dcpi_values_plugin_t *p, unsigned image)
{
    if (image >= p->nslots) {
        if (image > UINT_MAX - 16)
            return NULL;
        unsigned n = image + 16;
        dcpi_values_vslot_t *s = reallocarray(p->slots, n, sizeof *s);
        if (!s)
            return NULL;
        memset(s + p->nslots, 0, (n - p->nslots) * sizeof *s);
        p->slots = s;
        p->nslots = n;
    }
    return &p->slots[image];
}

/* The summary of (image, offset) for plugin p, created if needed and allowed. */
dcpi_vsummary_t *dcpi__values_summary_at(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned image,
                                         uint32_t offset)
{
    dcpi_values_vslot_t *sl = slot_of(p, image);
    if (!sl)
        return NULL;
    if (!sl->vp && dcpi_vprof_new(vt->o.hotsize, &sl->vp) < 0)
        return NULL;
    dcpi_vsummary_t *s = dcpi_vprof_at(sl->vp, offset, 0);
    if (s || vt->nsummaries >= vt->o.max_summaries)
        return s;
    s = dcpi_vprof_at(sl->vp, offset, 1);
    vt->nsummaries += s != NULL;
    return s;
}

const dcpi_vsummary_t *dcpi__values_summary_find(const dcpi_values_plugin_t *p, unsigned image,
                                                 uint32_t offset)
{
    if (image >= p->nslots || !p->slots[image].vp)
        return NULL;
    return dcpi_vprof_at(p->slots[image].vp, offset, 0);
}

void dcpi__values_lose(dcpi_values_plugin_t *p, unsigned image, uint64_t n)
{
    dcpi_values_vslot_t *sl = slot_of(p, image);
    if (sl)
        sl->lost += n;
    p->st.lost += n;
}

/* ---------------------------------------------------------------- entries in */

int dcpi__values_write(dcpi_values_t *vt, const dcpi__values_writer_t *w)
{
    const trace_encoder_t *enc = w->enc;
    if (enc->have_pid && (enc->pid != w->pid || trace_encoder_entries(enc) >= VSAMPLE_BUFFER_SIZE))
        w->hand_over(vt, w->owner);
    int rc = DCPI_EFULL;
    for (int tries = 0; tries < 2 && !(w->stopped && w->stopped(w->owner)); tries++) {
        rc = w->write(w->arg, tries);
        if (rc != DCPI_EFULL || tries)
            break;
        w->hand_over(vt, w->owner); /* full: a burst left without its entry is harmless */
    }
    return rc;
}

void dcpi__values_plugin_hand_over(dcpi_values_t *vt, void *plugin)
{
    dcpi__values_hand_over(vt, plugin);
}

int dcpi__values_plugin_stopped(const void *plugin)
{
    return ((const dcpi_values_plugin_t *)plugin)->st.disabled;
}

typedef struct put_arg {
    trace_encoder_t *enc;
    const dcpi_values_put_t *e;
} put_arg_t;

/* The entry (and its burst) into the plugin's trace: 0 or DCPI_EFULL / DCPI_E*. */
static int put_write(void *arg, int retry)
{
    const put_arg_t *a = arg;
    const dcpi_values_put_t *e = a->e;
    (void)retry;
    int rc = trace_encoder_burst(a->enc, e->pid, e->tid, e->time, e->contexts);
    if (rc == 0)
        rc = trace_encoder_entry(a->enc, e->inst, e->pc, e->c0, e->c1, e->n, e->kinds, e->values,
                                 e->missing);
    return rc;
}

int dcpi__values_put(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_values_put_t *e,
                     unsigned image)
{
    put_arg_t a = {.enc = &p->enc, .e = e};
    dcpi__values_writer_t w = {.enc = &p->enc,
                               .pid = e->pid,
                               .hand_over = dcpi__values_plugin_hand_over,
                               .stopped = dcpi__values_plugin_stopped,
                               .owner = p,
                               .write = put_write,
                               .arg = &a};
    if (dcpi__values_write(vt, &w) == 0) {
        p->st.missing += e->missing != 0;
        dcpi__values_cluster_put(p->cl, e->pc, e->cluster);
        return 1;
    }
    dcpi__values_lose(p, image, 1);
    return 0;
}

/* ---------------------------------------------------------------- handing traces over */

static void plugin_error(const dcpi_values_t *vt, dcpi_values_plugin_t *p, int rc)
{
    p->st.errors++;
    if (!p->error_logged++)
        say(vt, DCPI_LOG_ERR, "%s: vp_prof_process failed (%d); its traces are counted as lost",
            p->name, rc);
}

static void merge_vsamples(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned pid,
                           const vsample_t *v, int n)
{
    dcpi__values_cluster_begin(p->cl, v, (unsigned)n);
    for (int i = 0; i < n; i++) {
        dcpi_image_t *img;
        uint32_t off;
        if (resolve_pc(vt, pid, v[i].pc, &img, &off) < 0) {
            p->st.lost++; /* no image for the pc the plugin returned */
            continue;
        }
        dcpi_vsummary_t *s = dcpi__values_summary_at(vt, p, img->index, off);
        if (!s) {
            dcpi__values_lose(p, img->index, 1);
            continue;
        }
        dcpi_vsummary_add(s, v[i].value, v[i].context0, v[i].context1, 1);
        dcpi__values_cluster_add(p->cl, (unsigned)i, s);
        p->st.values++;
    }
}

/* p broke its contract: one log line, the status says why; its entries are lost. */
static void disable(const dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned entries,
                    const char *why)
{
    snprintf(p->why, sizeof p->why, "%s", why);
    say(vt, DCPI_LOG_ERR, "%s: disabled: %s%s", p->name, why,
        vt->o.disable_note ? vt->o.disable_note : "");
    p->st.errors++;
    p->st.lost += entries;
    p->st.disabled = 1;
}

/* vp_prof_process in this process (-vinproc): 0 with *n, *vs, or DCPI_EPLUGIN with why. */
static int process_here(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned pid, int *n,
                        const vsample_t **vs, char *why)
{
    vsample_t *v = NULL;
    trace_parser_init(&vt->parser, p->buf, trace_encoder_size(&p->enc));
    trace_parser_set_backend(&vt->parser, backend_of(vt));
    *n = p->d->vp_prof_process(pid, &vt->parser, &v);
    *vs = v;
    if (*n > VSAMPLE_BUFFER_SIZE)
        return dcpi__errf(why, DCPI_EPLUGIN,
                          "vp_prof_process returned %d samples (buffer holds %d)", *n,
                          VSAMPLE_BUFFER_SIZE);
    if (*n > 0 && !v)
        return dcpi__errf(why, DCPI_EPLUGIN, "vp_prof_process returned samples in a NULL buffer");
    return 0;
}

/* Give p's pending trace to the plugin and start a new one. */
void dcpi__values_hand_over(dcpi_values_t *vt, dcpi_values_plugin_t *p)
{
    unsigned entries = trace_encoder_entries(&p->enc);
    if (entries == 0 || p->st.disabled) {
        dcpi__values_cluster_end(p->cl);
        p->st.lost += p->st.disabled ? entries : 0;
        if (p->enc.len) /* bursts without entries: nothing to hand over */
            trace_encoder_init(&p->enc, p->buf, DCPI_VALUES_BUF_BYTES);
        return;
    }
    unsigned pid = p->enc.pid;
    const vsample_t *vs = NULL;
    char why[DCPI_ERRLEN] = "";
    int n = 0, rc;
    if (p->w)
        rc = dcpi_vpworker_process(p->w, pid, trace_encoder_size(&p->enc), &n, &vs, why);
    else
        rc = process_here(vt, p, pid, &n, &vs, why);
    trace_encoder_init(&p->enc, p->buf, DCPI_VALUES_BUF_BYTES);
    p->st.traces++;
    if (rc < 0)
        disable(vt, p, entries, why);
    else if (n < 0) {
        plugin_error(vt, p, n);
        p->st.lost += entries;
    } else
        merge_vsamples(vt, p, pid, vs, n);
    dcpi__values_cluster_end(p->cl);
}

void dcpi_values_end_drain_batched(dcpi_values_t *vt, uint64_t now_ns)
{
    int due = now_ns >= vt->handed_ns + DCPI_VALUES_BATCH_MS * 1000000ull;
    for (unsigned i = 0; !due && i < vt->npl + vt->nor; i++)
        due = trace_encoder_entries(&vt->pl[i].enc) >= VSAMPLE_BUFFER_SIZE / 2;
    if (due)
        dcpi_values_end_drain(vt);
}

void dcpi_values_end_drain(dcpi_values_t *vt)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    vt->handed_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    for (unsigned i = 0; i < vt->npl + vt->nor; i++)
        dcpi__values_hand_over(vt, &vt->pl[i]);
    dcpi__values_rec_hand_over(vt);
}

void dcpi_values_pid_event(dcpi_values_t *vt, pid_t pid)
{
    for (unsigned i = 0; i < vt->npl + vt->nor; i++)
        if (trace_encoder_entries(&vt->pl[i].enc) && vt->pl[i].enc.pid == (unsigned)pid)
            dcpi__values_hand_over(vt, &vt->pl[i]);
    dcpi__values_rec_pid_event(vt, pid);
}

/* ---------------------------------------------------------------- flushing */

int dcpi_values_needs_flush(const dcpi_values_t *vt)
{
    return vt->nsummaries * 4 >= vt->o.max_summaries * 3;
}

size_t dcpi_values_used(const dcpi_values_t *vt)
{
    return vt->nsummaries;
}

size_t dcpi_values_capacity(const dcpi_values_t *vt)
{
    return vt->o.max_summaries;
}

static int set_header(const dcpi_values_t *vt, const dcpi_values_plugin_t *p,
                      const dcpi_image_t *img, const dcpi_values_flush_info_t *fi, dcpi_vprof_t *vp,
                      uint64_t lost)
{
    char num[64];
    int rc = dcpi_vprof_set(vp, "image", img->info.id);
    rc = rc ? rc : dcpi_vprof_set(vp, "epoch", fi->epoch);
    rc = rc ? rc : dcpi_vprof_set(vp, "platform", fi->platform);
    rc = rc ? rc : dcpi_vprof_set(vp, "event", fi->event);
    snprintf(num, sizeof num, "%" PRIu64, fi->period);
    rc = rc ? rc : dcpi_vprof_set(vp, "period", num);
    snprintf(num, sizeof num, "0x%" PRIx64, img->info.tstart);
    rc = rc ? rc : dcpi_vprof_set(vp, "tstart", num);
    snprintf(num, sizeof num, "%" PRIu64, img->info.tsize);
    rc = rc ? rc : dcpi_vprof_set(vp, "tsize", num);
    snprintf(num, sizeof num, "%u", fi->cpuspeed);
    rc = rc ? rc : dcpi_vprof_set(vp, "cpuspeed", num);
    snprintf(num, sizeof num, "%d", fi->cpucount);
    rc = rc ? rc : dcpi_vprof_set(vp, "cpucount", num);
    rc = rc ? rc : dcpi_vprof_set(vp, "path", img->path);
    rc = rc ? rc : dcpi_vprof_set(vp, "vprof", p->name);
    rc = rc ? rc : dcpi_vprof_set(vp, "contexts", vt->o.contexts ? "1" : "0");
    rc = rc ? rc : dcpi_vprof_set(vp, "backend", p->oracle ? "oracle" : backend_of(vt));
    if (fi->origin)
        rc = rc ? rc : dcpi_vprof_set(vp, "origin", fi->origin);
    snprintf(num, sizeof num, "%" PRIu64, lost);
    return rc ? rc : dcpi_vprof_set(vp, "lost", num);
}

#define VPROF_DIR_LEN  4096
#define VPROF_FILE_LEN 4600

/* The directory and the .vprof file of (image, plugin). 0 or DCPI_ERANGE with err. */
static int vprof_path(const dcpi_values_t *vt, const dcpi_values_plugin_t *p, unsigned image,
                      const dcpi_values_flush_info_t *fi, char *dir, char *file, char *err)
{
    const dcpi_image_t *img = image_at(vt, image);
    char dirname[512];
    dcpi_image_dirname(img->path, img->info.id, dirname, sizeof dirname);
    if (snprintf(dir, VPROF_DIR_LEN, "%s/%s/%s/%s", fi->db, fi->epoch, fi->platform, dirname) >=
            VPROF_DIR_LEN ||
        snprintf(file, VPROF_FILE_LEN, "%s/%s.vprof", dir, p->name) >= VPROF_FILE_LEN)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", dir);
    return 0;
}

static int set_oracle_windows(const dcpi_values_t *vt, dcpi_values_plugin_t *p, dcpi_vprof_t *vp);

/* Write one (image, plugin) value profile. */
static int write_one(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned image,
                     const dcpi_values_flush_info_t *fi, char *err)
{
    dcpi_values_vslot_t *sl = &p->slots[image];
    const dcpi_image_t *img = image_at(vt, image);
    char dir[VPROF_DIR_LEN], file[VPROF_FILE_LEN];
    int rc = vprof_path(vt, p, image, fi, dir, file, err);
    if (rc < 0)
        return rc;
    rc = set_header(vt, p, img, fi, sl->vp, sl->lost);
    rc = rc ? rc : set_oracle_windows(vt, p, sl->vp);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: header: %s", file, dcpi_strerror(rc));
    if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        return dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    rc = dcpi_vprof_merge_write(file, sl->vp, err);
    if (rc < 0)
        return rc;
    vt->nsummaries -= dcpi_vprof_count(sl->vp);
    dcpi_vprof_free(sl->vp);
    sl->vp = NULL;
    sl->lost = 0;
    return 0;
}

/* Whether flush writes p's profile of image. */
static int to_write(const dcpi_values_plugin_t *p, unsigned image,
                    const dcpi_values_flush_info_t *fi)
{
    return (p->slots[image].vp || p->slots[image].lost) && !(fi->skip_disabled && p->st.disabled);
}

/* fi->exclusive: DCPI_EEXIST ("FILE: exists") when any file flush would write exists. */
static int check_exclusive(const dcpi_values_t *vt, const dcpi_values_flush_info_t *fi, char *err)
{
    char dir[VPROF_DIR_LEN], file[VPROF_FILE_LEN];
    struct stat sb;
    for (unsigned i = 0; i < vt->npl + vt->nor; i++) {
        const dcpi_values_plugin_t *p = &vt->pl[i];
        for (unsigned im = 0; im < p->nslots; im++) {
            if (!to_write(p, im, fi))
                continue;
            int rc = vprof_path(vt, p, im, fi, dir, file, err);
            if (rc < 0)
                return rc;
            if (lstat(file, &sb) == 0)
                return dcpi__errf(err, DCPI_EEXIST, "%s: exists", file);
        }
    }
    return 0;
}

int dcpi_values_flush(dcpi_values_t *vt, const dcpi_values_flush_info_t *fi, size_t *failed,
                      char *err)
{
    int written = 0, last = 0;
    size_t nfail = 0;
    char why[DCPI_ERRLEN];
    dcpi_values_end_drain(vt);
    if (fi->exclusive && (last = check_exclusive(vt, fi, err)) < 0) {
        if (failed)
            *failed = 1;
        return last;
    }
    for (unsigned i = 0; i < vt->npl + vt->nor; i++) {
        dcpi_values_plugin_t *p = &vt->pl[i];
        for (unsigned im = 0; im < p->nslots; im++) {
            if (!to_write(p, im, fi))
                continue;
            if (!p->slots[im].vp && dcpi_vprof_new(vt->o.hotsize, &p->slots[im].vp) < 0) {
                last = dcpi__errf(why, DCPI_ENOMEM, "vtrace: out of memory");
            } else if ((last = write_one(vt, p, im, fi, why)) == 0) {
                written++;
                continue;
            }
            nfail++;
            say(vt, DCPI_LOG_ERR, "flush: %s", why);
            dcpi__errf(err, last, "%s", why);
        }
    }
    if (failed)
        *failed = nfail;
    return nfail ? (last < 0 ? last : DCPI_EIO) : written;
}

/* ---------------------------------------------------------------- counters */

const char *dcpi_values_plugin_why(const dcpi_values_t *vt, unsigned i)
{
    return i < vt->npl ? vt->pl[i].why : "";
}

const char *dcpi_values_plugin_note(dcpi_values_t *vt, unsigned i)
{
    return i < vt->npl ? dcpi__values_select_note(&vt->pl[i]) : "";
}

int dcpi_values_plugin_worker(const dcpi_values_t *vt, unsigned i)
{
    return i < vt->npl && vt->pl[i].w ? dcpi_vpworker_pid(vt->pl[i].w) : 0;
}

unsigned dcpi_values_nplugins(const dcpi_values_t *vt)
{
    return vt->npl;
}

void dcpi_values_oracle_windows(dcpi_values_t *vt, uint64_t windows, uint64_t execs, uint64_t sumsq,
                                int all)
{
    if (!vt)
        return;
    vt->ow_windows = windows;
    vt->ow_execs = execs;
    vt->ow_sumsq = sumsq;
    vt->ow_all = all;
    vt->ow_set = 1;
}

/* An oracle twin's header: its windows since its last write (summed again when merged). */
static int set_oracle_windows(const dcpi_values_t *vt, dcpi_values_plugin_t *p, dcpi_vprof_t *vp)
{
    char num[64];
    if (!p->oracle || !vt->ow_set)
        return 0;
    int rc = dcpi_vprof_set(vp, "oracle-all", vt->ow_all ? "1" : "0");
    snprintf(num, sizeof num, "%" PRIu64, vt->ow_windows - p->ow_windows);
    rc = rc ? rc : dcpi_vprof_set(vp, "oracle-windows", num);
    snprintf(num, sizeof num, "%" PRIu64, vt->ow_execs - p->ow_execs);
    rc = rc ? rc : dcpi_vprof_set(vp, "oracle-execs", num);
    snprintf(num, sizeof num, "%" PRIu64, vt->ow_sumsq - p->ow_sumsq);
    rc = rc ? rc : dcpi_vprof_set(vp, "oracle-sumsq", num);
    if (rc == 0) {
        p->ow_windows = vt->ow_windows;
        p->ow_execs = vt->ow_execs;
        p->ow_sumsq = vt->ow_sumsq;
    }
    return rc;
}

unsigned dcpi_values_noracles(const dcpi_values_t *vt)
{
    return vt->nor;
}

const char *dcpi_values_plugin_name(const dcpi_values_t *vt, unsigned i)
{
    return i < vt->npl + vt->nor ? vt->pl[i].name : NULL;
}

void dcpi_values_plugin_stats(const dcpi_values_t *vt, unsigned i, dcpi_values_stats_t *out)
{
    if (i < vt->npl + vt->nor)
        *out = vt->pl[i].st;
    else
        memset(out, 0, sizeof *out);
}

uint64_t dcpi_values_nocode(const dcpi_values_t *vt)
{
    return vt->nocode;
}

uint64_t dcpi_values_unresolved(const dcpi_values_t *vt)
{
    return vt->unresolved;
}

struct dcpi_vprof *dcpi_values_vprof(const dcpi_values_t *vt, unsigned image, unsigned i)
{
    if (i >= vt->npl || image >= vt->pl[i].nslots)
        return NULL;
    return vt->pl[i].slots[image].vp;
}
