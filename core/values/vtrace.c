/*
 * vtrace.c - value profiling in dcpid with the regs backend (see vtrace.h).
 *
 * Per user-mode sample (dcpi_vtrace_sample):
 *   1. resolve the ip (image, offset, mapping) and read up to 15 code bytes from the image file
 *      (one fd per image, pread, a direct-mapped cache of 4096 places) or, when the file cannot be
 * read, from the process (process_vm_readv); failure counts as "without code";
 *   2. decode; for each enabled plugin with a vlist for the key the sample is a candidate; if
 *      the per-CPU token bucket admits the sample, compute the vlist's values and append a burst
 *      (pid, tid, time) and one entry to the plugin's trace; otherwise it is only "seen";
 *   3. a trace goes to the plugin (vp_prof_process) when its buffer is full, when it holds
 *      VSAMPLE_BUFFER_SIZE entries, when the pid changes, at the end of each ring drain, before a
 *      flush and before pid's mappings change; the vsamples returned are resolved in the pid and
 *      added to the (image, plugin) value profile at their offset;
 *   4. dcpi_vtrace_flush writes the value profiles next to the PC profiles.
 *
 * Isolation (opts.isolate, core/plugin/vpworker.h): each plugin's trace buffer lives in memory
 * shared with its worker process, which runs vp_prof_process; a plugin that crashes, hangs or
 * breaks the buffer contract is disabled with one log line (its data so far stays and is flushed).
 *
 * Recording (opts.record, docs/dcpireplay.md "RECORDING"): every decoded sample is a candidate
 * of the recorder; admitted ones get an entry in the recorder's trace with the recording vlist
 * of their key (the union of the plugins' vlists, then up to 7 values of REGC, EA, REGA, REGB,
 * BR_TAKEN, BR_TARGET, RFLAGS) and a MAP for their mapping; the others a SEEN count.
 */
#include "core/values/vtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/image/image.h"
#include "core/base/log.h"
#include "core/store/tracefile.h"
#include "core/plugin/vpworker.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "trace/trace-int.h"

#define TRACE_BUF_BYTES (192 * 1024)
#define FD_UNTRIED      (-2)
#define FD_FAILED       (-1)
#define CODE_SLOTS      4096 /* direct-mapped cache of code bytes read from image files */

/* 15 bytes of an image file at off; image 0: empty slot. */
typedef struct code_slot {
    uint64_t off;
    uint32_t image_plus1;
    uint8_t len;
    uint8_t bytes[15];
} code_slot_t;

/* One (image, plugin) value profile and its losses since the last flush. */
typedef struct vslot {
    dcpi_vprof_t *vp;
    uint64_t lost;
} vslot_t;

typedef struct plugin {
    dcpi_vp_t *vp;
    const vp_dispatch_t *d;
    const char *name;
    trace_vlist_table_t *spec;
    int8_t *nval;                      /* per key: values of its vlist, -1 ignored */
    uint8_t (*kinds)[TRACE_VLIST_MAX]; /* per key */
    trace_encoder_t enc;
    uint8_t *buf;
    vslot_t *slots; /* by image index */
    unsigned nslots;
    dcpi_vtrace_stats_t st;
    int error_logged;
    dcpi_vpworker_t *w;    /* isolated: its worker (p->buf is the shared input) */
    char why[DCPI_ERRLEN]; /* why it was disabled */
} plugin_t;

/* The recorder (-vrecord): its trace and the recording vlist per key. */
typedef struct recorder {
    dcpi_tracefile_t *tf;
    trace_encoder_t enc;
    uint8_t *buf;
    int8_t *nval;
    uint8_t (*kinds)[TRACE_VLIST_MAX];
    uint32_t map_pid; /* the last mapping written (0: none) */
    uint64_t map_lo, map_hi;
    int error_logged;
} recorder_t;

typedef struct bucket {
    uint64_t last; /* sample time of the last refill, 0: never */
    double tokens;
} bucket_t;

struct dcpi_vtrace {
    dcpi_loadmap_t *lm;
    dcpi_vtrace_opts_t o;
    plugin_t *pl;
    unsigned npl;
    trace_opc_t nkeys;
    uint64_t regs_mask;
    double burst;
    bucket_t cpu[DCPI_VTRACE_MAXCPU];
    int *fds; /* by image index */
    unsigned nfds;
    size_t nsummaries;
    uint64_t nocode, unresolved;
    trace_parser_t parser;
    recorder_t rec;
    code_slot_t code[CODE_SLOTS];
};

static int fail(char *err, int rc, const char *fmt, ...) DCPI_PRINTF(3, 4);
static int fail(char *err, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err)
        vsnprintf(err, DCPI_ERRLEN, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---------------------------------------------------------------- setup */

/* Per-key tables of one plugin's specification, and its registers. */
static int build_keys(dcpi_vtrace_t *vt, plugin_t *p)
{
    p->nval = malloc(vt->nkeys);
    p->kinds = calloc(vt->nkeys, sizeof *p->kinds);
    if (!p->nval || !p->kinds)
        return DCPI_ENOMEM;
    for (trace_opc_t k = 0; k < vt->nkeys; k++) {
        trace_value_t v[TRACE_VLIST_MAX];
        int n = trace_vlist_table_get(p->spec, k, v);
        p->nval[k] = (int8_t)(n < 0 ? -1 : n);
        for (int i = 0; i < n; i++)
            p->kinds[k][i] = (uint8_t)v[i];
        if (n >= 0)
            vt->regs_mask |= dcpi_capture_perf_mask(v, n);
    }
    return 0;
}

static int init_plugin(dcpi_vtrace_t *vt, plugin_t *p, dcpi_vp_t *vp, char *err)
{
    p->vp = vp;
    p->d = dcpi_vp_dispatch(vp);
    p->name = dcpi_vp_name(vp);
    p->spec = p->d->vp_prof_init();
    if (!p->spec)
        return fail(err, DCPI_EPLUGIN, "%s: vp_prof_init returned no specification", p->name);
    if (vt->o.isolate) {
        int rc = dcpi_vpworker_new(p->d, p->name, TRACE_BUF_BYTES, vt->o.timeout_ms, &p->w, err);
        if (rc < 0)
            return rc;
        p->buf = dcpi_vpworker_inbuf(p->w);
    } else {
        p->buf = malloc(TRACE_BUF_BYTES);
    }
    if (!p->buf || build_keys(vt, p) < 0)
        return fail(err, DCPI_ENOMEM, "%s: out of memory", p->name);
    trace_encoder_init(&p->enc, p->buf, TRACE_BUF_BYTES);
    return 0;
}

static void free_plugin(plugin_t *p)
{
    /* dcpid's own copy of the plugin's state (vp_prof_init ran here, before any worker was
     * forked) is released here; a worker releases its copy itself. */
    if (p->spec && p->d->vp_prof_done)
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
}

/* The recording vlist of every key: the union of the plugins' vlists, then the extras. */
static int build_recorder(dcpi_vtrace_t *vt)
{
    static const uint8_t extra[] = {TRACE_REGC,     TRACE_EA,        TRACE_REGA,  TRACE_REGB,
                                    TRACE_BR_TAKEN, TRACE_BR_TARGET, TRACE_RFLAGS};
    recorder_t *r = &vt->rec;
    r->buf = malloc(TRACE_BUF_BYTES);
    r->nval = malloc(vt->nkeys);
    r->kinds = calloc(vt->nkeys, sizeof *r->kinds);
    if (!r->buf || !r->nval || !r->kinds)
        return DCPI_ENOMEM;
    for (trace_opc_t k = 0; k < vt->nkeys; k++) {
        int n = 0;
        for (unsigned i = 0; i < vt->npl; i++)
            for (int j = 0; j < vt->pl[i].nval[k]; j++)
                if (!memchr(r->kinds[k], vt->pl[i].kinds[k][j], (size_t)n) && n < TRACE_VLIST_MAX)
                    r->kinds[k][n++] = vt->pl[i].kinds[k][j];
        for (size_t j = 0; j < sizeof extra && n < TRACE_VLIST_MAX; j++)
            if (!memchr(r->kinds[k], extra[j], (size_t)n))
                r->kinds[k][n++] = extra[j];
        r->nval[k] = (int8_t)n;
        trace_value_t v[TRACE_VLIST_MAX];
        for (int j = 0; j < n; j++)
            v[j] = (trace_value_t)r->kinds[k][j];
        vt->regs_mask |= dcpi_capture_perf_mask(v, n);
    }
    trace_encoder_init(&r->enc, r->buf, TRACE_BUF_BYTES);
    return 0;
}

static void rec_hand_over(dcpi_vtrace_t *vt);

/* Hand the recorder's trace over and close its segment; refusals and errors are logged. */
static void rec_close(dcpi_vtrace_t *vt)
{
    char err[DCPI_ERRLEN] = "";
    if (!vt->rec.tf)
        return;
    rec_hand_over(vt);
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(vt->rec.tf, &st);
    int rc = dcpi_tracefile_close(vt->rec.tf, err);
    vt->rec.tf = NULL;
    if (rc == DCPI_EFULL)
        dcpi__log(DCPI_LOG_ERR,
                  "vrecord: %" PRIu64 " records (%" PRIu64 " bytes) not recorded: -vrecord-max "
                  "reached (%s)",
                  st.refused, st.refused_bytes, err);
    else if (rc < 0)
        dcpi__log(DCPI_LOG_ERR, "vrecord: %s", err);
}

int dcpi_vtrace_new(dcpi_vp_set_t *set, dcpi_loadmap_t *lm, const dcpi_vtrace_opts_t *o,
                    dcpi_vtrace_t **out, char *err)
{
    unsigned n = dcpi_vp_count(set);
    dcpi_vtrace_t *vt = calloc(1, sizeof *vt);
    if (!vt || !(vt->pl = calloc(n ? n : 1, sizeof *vt->pl))) {
        free(vt);
        return fail(err, DCPI_ENOMEM, "vtrace: out of memory");
    }
    vt->lm = lm;
    vt->o = *o;
    vt->o.rate = o->rate ? o->rate : DCPI_VTRACE_DEFAULT_RATE;
    vt->o.hotsize = o->hotsize ? o->hotsize : DCPI_VSUMMARY_DEFAULT_CAP;
    vt->o.max_summaries = o->max_summaries ? o->max_summaries : DCPI_VTRACE_DEFAULT_HASH;
    vt->burst = vt->o.rate / 10.0 > 1 ? vt->o.rate / 10.0 : 1;
    vt->nkeys = trace_opc_count();
    for (unsigned i = 0; i < n; i++, vt->npl++) {
        int rc = init_plugin(vt, &vt->pl[i], dcpi_vp_get(set, i), err);
        if (rc < 0) {
            vt->npl++; /* free_plugin knows whether vp_prof_init returned a specification */
            dcpi_vtrace_free(vt);
            return rc;
        }
    }
    if (vt->o.record && build_recorder(vt) < 0) {
        dcpi_vtrace_free(vt);
        return fail(err, DCPI_ENOMEM, "vtrace: out of memory");
    }
    *out = vt;
    return 0;
}

void dcpi_vtrace_free(dcpi_vtrace_t *vt)
{
    if (!vt)
        return;
    dcpi_vtrace_end_drain(vt);
    rec_close(vt);
    free(vt->rec.buf);
    free(vt->rec.nval);
    free(vt->rec.kinds);
    for (unsigned i = 0; i < vt->npl; i++)
        free_plugin(&vt->pl[i]);
    for (unsigned i = 0; i < vt->nfds; i++)
        if (vt->fds[i] >= 0)
            close(vt->fds[i]);
    free(vt->fds);
    free(vt->pl);
    free(vt);
}

uint64_t dcpi_vtrace_regs_mask(const dcpi_vtrace_t *vt)
{
    /* perf has no registers past R15 in this numbering: asking for them is EINVAL */
    return vt->regs_mask & ((1ull << DCPI_REG_COUNT) - 1);
}

unsigned dcpi_vtrace_rate(const dcpi_vtrace_t *vt)
{
    return vt->o.rate;
}

int dcpi_vtrace_contexts(const dcpi_vtrace_t *vt)
{
    return vt->o.contexts;
}

/* ---------------------------------------------------------------- summaries */

static vslot_t *slot_of(plugin_t *p, unsigned image)
{
    if (image >= p->nslots) {
        unsigned n = image + 16;
        vslot_t *s = realloc(p->slots, n * sizeof *s);
        if (!s)
            return NULL;
        memset(s + p->nslots, 0, (n - p->nslots) * sizeof *s);
        p->slots = s;
        p->nslots = n;
    }
    return &p->slots[image];
}

/* The summary of (image, offset) for plugin p, created if needed and allowed. */
static dcpi_vsummary_t *summary_at(dcpi_vtrace_t *vt, plugin_t *p, unsigned image, uint32_t offset)
{
    vslot_t *sl = slot_of(p, image);
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

static void lose(plugin_t *p, unsigned image, uint64_t n)
{
    vslot_t *sl = slot_of(p, image);
    if (sl)
        sl->lost += n;
    p->st.lost += n;
}

/* ---------------------------------------------------------------- handing traces over */

static void plugin_error(plugin_t *p, const char *fmt, int rc)
{
    p->st.errors++;
    if (!p->error_logged++)
        dcpi__log(DCPI_LOG_ERR, fmt, p->name, rc);
}

static void merge_vsamples(dcpi_vtrace_t *vt, plugin_t *p, unsigned pid, const vsample_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        dcpi_image_t *img;
        uint32_t off;
        if (dcpi_loadmap_resolve(vt->lm, (pid_t)pid, v[i].pc, &img, &off) < 0) {
            p->st.lost++; /* no image for the pc the plugin returned */
            continue;
        }
        dcpi_vsummary_t *s = summary_at(vt, p, img->index, off);
        if (!s) {
            lose(p, img->index, 1);
            continue;
        }
        dcpi_vsummary_add(s, v[i].value, v[i].context0, v[i].context1, 1);
        p->st.values++;
    }
}

/* p broke its contract: one log line, the status says why; its entries are lost. */
static void disable(plugin_t *p, unsigned entries, const char *why)
{
    snprintf(p->why, sizeof p->why, "%s", why);
    dcpi__log(DCPI_LOG_ERR, "%s: disabled: %s", p->name, why);
    p->st.errors++;
    p->st.lost += entries;
    p->st.disabled = 1;
}

/* vp_prof_process in this process (-vinproc): 0 with *n, *vs, or DCPI_EPLUGIN with why. */
static int process_here(dcpi_vtrace_t *vt, plugin_t *p, unsigned pid, int *n, const vsample_t **vs,
                        char *why)
{
    vsample_t *v = NULL;
    trace_parser_init(&vt->parser, p->buf, trace_encoder_size(&p->enc));
    *n = p->d->vp_prof_process(pid, &vt->parser, &v);
    *vs = v;
    if (*n > VSAMPLE_BUFFER_SIZE)
        return fail(why, DCPI_EPLUGIN, "vp_prof_process returned %d samples (buffer holds %d)", *n,
                    VSAMPLE_BUFFER_SIZE);
    if (*n > 0 && !v)
        return fail(why, DCPI_EPLUGIN, "vp_prof_process returned samples in a NULL buffer");
    return 0;
}

/* Give p's pending trace to the plugin and start a new one. */
static void hand_over(dcpi_vtrace_t *vt, plugin_t *p)
{
    unsigned entries = trace_encoder_entries(&p->enc);
    if (entries == 0 || p->st.disabled) {
        p->st.lost += p->st.disabled ? entries : 0;
        if (p->enc.len) /* bursts without entries: nothing to hand over */
            trace_encoder_init(&p->enc, p->buf, TRACE_BUF_BYTES);
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
    trace_encoder_init(&p->enc, p->buf, TRACE_BUF_BYTES);
    p->st.traces++;
    if (rc < 0) {
        disable(p, entries, why);
        return;
    }
    if (n < 0) {
        plugin_error(p, "%s: vp_prof_process failed (%d); its traces are counted as lost", n);
        p->st.lost += entries;
        return;
    }
    merge_vsamples(vt, p, pid, vs, n);
}

/* Write the recorder's pending trace into the segment and start a new one. */
static void rec_hand_over(dcpi_vtrace_t *vt)
{
    recorder_t *r = &vt->rec;
    if (!r->tf)
        return;
    if (trace_encoder_entries(&r->enc)) {
        int rc = dcpi_tracefile_trace(r->tf, r->enc.pid, r->buf, trace_encoder_size(&r->enc));
        if (rc < 0 && rc != DCPI_EFULL && !r->error_logged++)
            dcpi__log(DCPI_LOG_ERR, "vrecord: %s: %s", dcpi_tracefile_path(r->tf),
                      dcpi_strerror(rc));
    }
    trace_encoder_init(&r->enc, r->buf, TRACE_BUF_BYTES);
}

void dcpi_vtrace_end_drain(dcpi_vtrace_t *vt)
{
    for (unsigned i = 0; i < vt->npl; i++)
        hand_over(vt, &vt->pl[i]);
    rec_hand_over(vt);
}

void dcpi_vtrace_pid_event(dcpi_vtrace_t *vt, pid_t pid)
{
    for (unsigned i = 0; i < vt->npl; i++)
        if (trace_encoder_entries(&vt->pl[i].enc) && vt->pl[i].enc.pid == (unsigned)pid)
            hand_over(vt, &vt->pl[i]);
    if (!vt->rec.tf)
        return;
    if (trace_encoder_entries(&vt->rec.enc) && vt->rec.enc.pid == (unsigned)pid)
        rec_hand_over(vt);
    dcpi_tracefile_forget_pid(vt->rec.tf, (unsigned)pid);
    if (vt->rec.map_pid == (uint32_t)pid)
        vt->rec.map_pid = 0;
}

/* ---------------------------------------------------------------- reading code */

static int image_fd(dcpi_vtrace_t *vt, const dcpi_image_t *img)
{
    if (img->index >= vt->nfds) {
        unsigned n = img->index + 16;
        int *f = realloc(vt->fds, n * sizeof *f);
        if (!f)
            return FD_FAILED;
        for (unsigned i = vt->nfds; i < n; i++)
            f[i] = FD_UNTRIED;
        vt->fds = f;
        vt->nfds = n;
    }
    int *fd = &vt->fds[img->index];
    if (*fd == FD_UNTRIED) {
        *fd = img->probed_ok && img->path[0] == '/' ? open(img->path, O_RDONLY | O_CLOEXEC) : -1;
        if (*fd < 0)
            *fd = FD_FAILED;
    }
    return *fd;
}

/* Up to 15 bytes at ip: from the image file when it can be read, else from the process. */
static ssize_t read_code(dcpi_vtrace_t *vt, const dcpi_image_t *img, uint64_t start, uint64_t pgoff,
                         const dcpi_vtrace_sample_t *s, uint8_t *buf)
{
    uint64_t off = s->ip - start + pgoff;
    code_slot_t *c = &vt->code[(off ^ (off >> 12) ^ img->index * 0x9e37u) % CODE_SLOTS];
    if (c->image_plus1 == img->index + 1 && c->off == off) {
        memcpy(buf, c->bytes, c->len);
        return c->len;
    }
    int fd = image_fd(vt, img);
    if (fd >= 0) {
        ssize_t n = pread(fd, buf, 15, (off_t)off);
        if (n > 0) { /* files do not change under a mapping: cache them */
            *c = (code_slot_t){.off = off, .image_plus1 = img->index + 1, .len = (uint8_t)n};
            memcpy(c->bytes, buf, (size_t)n);
            return n;
        }
    }
    struct iovec local = {buf, 15}, remote = {(void *)(uintptr_t)s->ip, 15};
    ssize_t n = process_vm_readv((pid_t)s->pid, &local, 1, &remote, 1, 0);
    if (n <= 0) { /* the 15 bytes may cross into an unmapped page: try up to its end */
        size_t left = 4096 - (s->ip & 4095);
        remote.iov_len = local.iov_len = left < 15 ? left : 15;
        n = process_vm_readv((pid_t)s->pid, &local, 1, &remote, 1, 0);
    }
    return n;
}

/* ---------------------------------------------------------------- one sample */

static int admit(dcpi_vtrace_t *vt, const dcpi_vtrace_sample_t *s)
{
    bucket_t *b = &vt->cpu[s->cpu % DCPI_VTRACE_MAXCPU];
    if (b->last == 0) {
        b->tokens = vt->burst;
    } else if (s->time > b->last) {
        b->tokens += (double)(s->time - b->last) * vt->o.rate / 1e9;
        if (b->tokens > vt->burst)
            b->tokens = vt->burst;
    }
    if (s->time > b->last || b->last == 0)
        b->last = s->time;
    if (b->tokens < 1)
        return 0;
    b->tokens -= 1;
    return 1;
}

/* Whether enc must be handed over before an entry of pid: another pid, or full. */
static int must_hand_over(const trace_encoder_t *e, uint32_t pid)
{
    return e->have_pid && (e->pid != pid || trace_encoder_entries(e) >= VSAMPLE_BUFFER_SIZE);
}

/* One entry (and its burst) into e. 0 or DCPI_EFULL / DCPI_E*. */
static int append(dcpi_vtrace_t *vt, trace_encoder_t *e, const dcpi_insn_t *insn,
                  const dcpi_vtrace_sample_t *s, const trace_value_t *kinds, int n,
                  const uint64_t *values, unsigned missing)
{
    int rc = trace_encoder_burst(e, s->pid, s->tid, s->time, vt->o.contexts);
    return rc ? rc
              : trace_encoder_entry(e, &insn->inst, s->ip, s->context0, s->context1, n, kinds,
                                    values, missing);
}

/* Append the sample's entry to p's trace, handing the trace over first if needed. */
static void encode(dcpi_vtrace_t *vt, plugin_t *p, const dcpi_insn_t *insn,
                   const dcpi_vtrace_sample_t *s, unsigned image)
{
    trace_opc_t k = insn->inst.opc;
    int n = p->nval[k];
    trace_value_t kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX];
    unsigned missing = 0;
    for (int i = 0; i < n; i++)
        kinds[i] = (trace_value_t)p->kinds[k][i];
    dcpi_capture_values(insn, &s->regs, kinds, n, values, &missing);
    if (must_hand_over(&p->enc, s->pid))
        hand_over(vt, p);
    for (int tries = 0; tries < 2; tries++) {
        int rc = append(vt, &p->enc, insn, s, kinds, n, values, missing);
        if (rc == 0)
            return;
        if (rc != DCPI_EFULL || tries)
            break;
        hand_over(vt, p); /* full: a burst left without its entry is harmless */
    }
    lose(p, image, 1);
}

/* The recorder's MAP for the mapping of s->ip (written when it changes). */
static void rec_map(dcpi_vtrace_t *vt, const dcpi_image_t *img, uint64_t start, uint64_t pgoff,
                    const dcpi_vtrace_sample_t *s)
{
    recorder_t *r = &vt->rec;
    if (r->map_pid == s->pid && s->ip >= r->map_lo && s->ip < r->map_hi)
        return;
    uint64_t lo, hi, delta;
    char dirname[512];
    if (dcpi_tracefile_map_range(&img->info, s->ip, start, pgoff, &lo, &hi, &delta) < 0)
        return; /* below tstart: replay counts its vsamples as lost */
    dcpi_image_dirname(img->path, img->info.id, dirname, sizeof dirname);
    if (dcpi_tracefile_map(r->tf, s->pid, lo, hi, delta, img->info.id, dirname, img->path,
                           img->info.tstart, img->info.tsize) == 0) {
        r->map_pid = s->pid;
        r->map_lo = lo;
        r->map_hi = hi;
    }
}

/* Append the sample's entry with the recording vlist to the recorder's trace. */
static void rec_encode(dcpi_vtrace_t *vt, const dcpi_insn_t *insn, const dcpi_vtrace_sample_t *s,
                       const dcpi_image_t *img, uint64_t start, uint64_t pgoff)
{
    recorder_t *r = &vt->rec;
    trace_opc_t k = insn->inst.opc;
    int n = r->nval[k];
    trace_value_t kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX];
    unsigned missing = 0;
    for (int i = 0; i < n; i++)
        kinds[i] = (trace_value_t)r->kinds[k][i];
    dcpi_capture_values(insn, &s->regs, kinds, n, values, &missing);
    if (must_hand_over(&r->enc, s->pid))
        rec_hand_over(vt);
    rec_map(vt, img, start, pgoff, s);
    int rc = append(vt, &r->enc, insn, s, kinds, n, values, missing);
    if (rc == DCPI_EFULL) {
        rec_hand_over(vt);
        append(vt, &r->enc, insn, s, kinds, n, values, missing);
    }
}

void dcpi_vtrace_sample(dcpi_vtrace_t *vt, const dcpi_vtrace_sample_t *s)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    uint32_t off;
    uint8_t code[15];
    dcpi_insn_t insn;
    if (dcpi_loadmap_resolve(vt->lm, (pid_t)s->pid, s->ip, &img, &off) < 0 ||
        dcpi_loadmap_lookup(vt->lm, (pid_t)s->pid, s->ip, &img, &start, &pgoff) < 0) {
        vt->unresolved++;
        return;
    }
    ssize_t len = read_code(vt, img, start, pgoff, s, code);
    if (len <= 0) {
        vt->nocode++;
        return;
    }
    if (dcpi_capture_decode(code, (size_t)len, s->ip, &insn) < 0 || insn.inst.opc >= vt->nkeys) {
        vt->unresolved++;
        return;
    }
    int admitted = -1; /* decided at the first candidate (the recorder is one for all) */
    if (vt->rec.tf) {
        admitted = admit(vt, s);
        if (admitted)
            rec_encode(vt, &insn, s, img, start, pgoff);
        else
            dcpi_tracefile_seen(vt->rec.tf, s->pid, s->ip, insn.inst.opc, 1);
    }
    for (unsigned i = 0; i < vt->npl; i++) {
        plugin_t *p = &vt->pl[i];
        if (p->st.disabled || p->nval[insn.inst.opc] < 0)
            continue;
        p->st.seen++;
        if (admitted < 0)
            admitted = admit(vt, s);
        if (admitted) {
            encode(vt, p, &insn, s, img->index);
            continue;
        }
        dcpi_vsummary_t *sum = summary_at(vt, p, img->index, off);
        if (sum)
            dcpi_vsummary_seen(sum, 1);
        else
            lose(p, img->index, 1);
    }
}

/* ---------------------------------------------------------------- flushing */

int dcpi_vtrace_needs_flush(const dcpi_vtrace_t *vt)
{
    return vt->nsummaries * 4 >= vt->o.max_summaries * 3;
}

size_t dcpi_vtrace_used(const dcpi_vtrace_t *vt)
{
    return vt->nsummaries;
}

size_t dcpi_vtrace_capacity(const dcpi_vtrace_t *vt)
{
    return vt->o.max_summaries;
}

static int set_header(const dcpi_vtrace_t *vt, const plugin_t *p, const dcpi_image_t *img,
                      const dcpi_vtrace_flush_info_t *fi, dcpi_vprof_t *vp, uint64_t lost)
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
    snprintf(num, sizeof num, "%" PRIu64, lost);
    return rc ? rc : dcpi_vprof_set(vp, "lost", num);
}

/* Write one (image, plugin) value profile. */
static int write_one(dcpi_vtrace_t *vt, plugin_t *p, unsigned image,
                     const dcpi_vtrace_flush_info_t *fi, char *err)
{
    vslot_t *sl = &p->slots[image];
    const dcpi_image_t *img = dcpi_loadmap_image(vt->lm, image);
    char dirname[512], dir[4096], file[4600];
    dcpi_image_dirname(img->path, img->info.id, dirname, sizeof dirname);
    if (snprintf(dir, sizeof dir, "%s/%s/%s/%s", fi->db, fi->epoch, fi->platform, dirname) >=
            (int)sizeof dir ||
        snprintf(file, sizeof file, "%s/%s.vprof", dir, p->name) >= (int)sizeof file)
        return fail(err, DCPI_ERANGE, "%s: path too long", dir);
    int rc = set_header(vt, p, img, fi, sl->vp, sl->lost);
    if (rc < 0)
        return fail(err, rc, "%s: header: %s", file, dcpi_strerror(rc));
    if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        return fail(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    rc = dcpi_vprof_merge_write(file, sl->vp, err);
    if (rc < 0)
        return rc;
    vt->nsummaries -= dcpi_vprof_count(sl->vp);
    dcpi_vprof_free(sl->vp);
    sl->vp = NULL;
    sl->lost = 0;
    return 0;
}

int dcpi_vtrace_flush(dcpi_vtrace_t *vt, const dcpi_vtrace_flush_info_t *fi, size_t *failed,
                      char *err)
{
    int written = 0, last = 0;
    size_t nfail = 0;
    char why[DCPI_ERRLEN];
    dcpi_vtrace_end_drain(vt);
    for (unsigned i = 0; i < vt->npl; i++) {
        plugin_t *p = &vt->pl[i];
        for (unsigned im = 0; im < p->nslots; im++) {
            if (!p->slots[im].vp && !p->slots[im].lost)
                continue;
            if (!p->slots[im].vp && dcpi_vprof_new(vt->o.hotsize, &p->slots[im].vp) < 0) {
                last = fail(why, DCPI_ENOMEM, "vtrace: out of memory");
            } else if ((last = write_one(vt, p, im, fi, why)) == 0) {
                written++;
                continue;
            }
            nfail++;
            dcpi__log(DCPI_LOG_ERR, "flush: %s", why);
            fail(err, last, "%s", why);
        }
    }
    if (failed)
        *failed = nfail;
    return nfail ? (last < 0 ? last : DCPI_EIO) : written;
}

/* ---------------------------------------------------------------- recording */

int dcpi_vtrace_new_epoch(dcpi_vtrace_t *vt, const dcpi_vtrace_flush_info_t *fi, char *err)
{
    char dir[4096];
    if (!vt->o.record)
        return 0;
    rec_close(vt);
    if (snprintf(dir, sizeof dir, "%s/%s/%s/%s", fi->db, fi->epoch, fi->platform,
                 DCPI_TRACEFILE_DIR) >= (int)sizeof dir)
        return fail(err, DCPI_ERANGE, "%s: path too long", dir);
    dcpi_tracefile_meta_t meta = {.epoch = fi->epoch,
                                  .platform = fi->platform,
                                  .event = fi->event,
                                  .period = fi->period,
                                  .cpuspeed = fi->cpuspeed,
                                  .cpucount = fi->cpucount,
                                  .contexts = vt->o.contexts,
                                  .hotsize = vt->o.hotsize};
    vt->rec.map_pid = 0;
    vt->rec.error_logged = 0;
    trace_encoder_init(&vt->rec.enc, vt->rec.buf, TRACE_BUF_BYTES);
    return dcpi_tracefile_open(dir, &meta, vt->o.record_max, &vt->rec.tf, err);
}

int dcpi_vtrace_record_stats(const dcpi_vtrace_t *vt, struct dcpi_tracefile_stats *out)
{
    if (!vt->rec.tf)
        return DCPI_ENOENT;
    dcpi_tracefile_stats(vt->rec.tf, out);
    return 0;
}

/* ---------------------------------------------------------------- counters */

const char *dcpi_vtrace_plugin_why(const dcpi_vtrace_t *vt, unsigned i)
{
    return i < vt->npl ? vt->pl[i].why : "";
}

int dcpi_vtrace_plugin_worker(const dcpi_vtrace_t *vt, unsigned i)
{
    return i < vt->npl && vt->pl[i].w ? dcpi_vpworker_pid(vt->pl[i].w) : 0;
}

unsigned dcpi_vtrace_nplugins(const dcpi_vtrace_t *vt)
{
    return vt->npl;
}

const char *dcpi_vtrace_plugin_name(const dcpi_vtrace_t *vt, unsigned i)
{
    return i < vt->npl ? vt->pl[i].name : NULL;
}

void dcpi_vtrace_plugin_stats(const dcpi_vtrace_t *vt, unsigned i, dcpi_vtrace_stats_t *out)
{
    if (i < vt->npl)
        *out = vt->pl[i].st;
    else
        memset(out, 0, sizeof *out);
}

uint64_t dcpi_vtrace_nocode(const dcpi_vtrace_t *vt)
{
    return vt->nocode;
}

uint64_t dcpi_vtrace_unresolved(const dcpi_vtrace_t *vt)
{
    return vt->unresolved;
}

struct dcpi_vprof *dcpi_vtrace_vprof(const dcpi_vtrace_t *vt, unsigned image, unsigned i)
{
    if (i >= vt->npl || image >= vt->pl[i].nslots)
        return NULL;
    return vt->pl[i].slots[image].vp;
}

/* ------------------------------------------------ step backend entry points (dstep) */

#include "core/capture/stepdrain.h"

/* One step record into plugin p's trace: 1 entry written, 0 none (no vlist for its key). */
static int step_one(dcpi_vtrace_t *vt, plugin_t *p, dcpi_step_encoder_t *se, unsigned pid,
                    const step_record_t *rec)
{
    trace_encoder_t *e = &p->enc;
    if (e->have_pid && (e->pid != pid || trace_encoder_entries(e) >= VSAMPLE_BUFFER_SIZE))
        hand_over(vt, p);
    for (int tries = 0; tries < 2; tries++) {
        /* a trace handed over (here, at end_drain, flush, ...) starts a new burst */
        if (trace_encoder_size(e) == 0 || se->enc != e || se->pid != pid)
            dcpi_step_encoder_init(se, e, pid);
        int rc = dcpi_step_encode(se, p->spec, rec);
        if (rc >= 0)
            return rc;
        if (rc != DCPI_EFULL || tries)
            break;
        hand_over(vt, p);
    }
    p->st.lost++;
    return 0;
}

int dcpi_vtrace_step(dcpi_vtrace_t *vt, struct dcpi_step_encoder *se, unsigned pid,
                     const struct step_record *rec)
{
    int n = 0;
    for (unsigned i = 0; i < vt->npl; i++) {
        plugin_t *p = &vt->pl[i];
        if (p->st.disabled)
            continue;
        int w = step_one(vt, p, &se[i], pid, rec);
        p->st.seen += (uint64_t)w;
        n += w;
    }
    return n;
}
