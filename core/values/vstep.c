/*
 * vstep.c - dcpid -vstep (see vstep.h): the agent's rings or ptrace bursts, step records into
 * the value profilers' traces (dcpi_values_step).
 */
#include "core/values/vstep.h"
#include "core/values/backend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/header.h"
#include "core/base/err.h"
#include "core/base/log.h"
#include "core/capture/ptstep.h"
#include "core/capture/stepdrain.h"
#include "dcpi/errno.h"

#define BUCKETS 1024 /* per-thread token buckets (ptrace) */
#define PENDING 64   /* threads with an admitted burst (ptrace) */

typedef struct bucket {
    uint32_t tid; /* 0: free */
    double tokens;
} bucket_t;

typedef struct dcpi_vstep dcpi_vstep_t;

struct dcpi_vstep {
    dcpi_vbackend_t b; /* the sink: b.vt */
    dcpi_vstep_opts_t o;
    dcpi_step_encoder_t *se; /* one per plugin */
    uint64_t records, entries;
    uint64_t first_dropped; /* ptrace: first records of bursts dropped (agent: the drain's) */
    /* agent */
    dcpi_stepdrain_t *drain;
    char prefix[128], agent[4096];
    /* ptrace */
    dcpi_ptstep_t *pt;
    pid_t pid;
    int gone;
    double credit;                   /* tokens per sample */
    uint64_t refused;                /* admitted bursts that found the thread gone */
    uint64_t bursts, steps, signals; /* ptstep's counters at detach */
    bucket_t buckets[BUCKETS];
    unsigned nbuckets;
    uint32_t pending[PENDING];
    unsigned npending;
    step_record_t recs[STEP_BURST_MAX];
};

static const dcpi_vbackend_ops_t step_ops;
static void vstep_free(dcpi_vstep_t *vs);
static void vstep_stop(dcpi_vstep_t *vs);

static dcpi_vstep_t *alloc_vstep(dcpi_values_t *vt, const dcpi_vstep_opts_t *o)
{
    dcpi_vstep_t *vs = calloc(1, sizeof *vs);
    unsigned n = dcpi_values_nplugins(vt);
    if (!vs)
        return NULL;
    vs->se = calloc(n ? n : 1, sizeof *vs->se);
    if (!vs->se) {
        free(vs);
        return NULL;
    }
    vs->b = (dcpi_vbackend_t){.ops = &step_ops, .vt = vt};
    vs->o = *o;
    if (vs->o.burst == 0 || vs->o.burst > STEP_BURST_MAX)
        vs->o.burst = 16;
    if (vs->o.rate == 0)
        vs->o.rate = 100;
    return vs;
}

/* ---------------------------------------------------------------- records */

static int on_record(unsigned pid, const step_record_t *rec, void *arg)
{
    dcpi_vstep_t *vs = arg;
    vs->records++;
    vs->entries += (uint64_t)dcpi_values_step(vs->b.vt, vs->se, pid, rec);
    return 0;
}

/* ---------------------------------------------------------------- agent */

int dcpi__vagent_find(const char *const *dirs, const char *flag, char *out, size_t len, char *err)
{
    const char *env = getenv(DCPI_VSTEP_AGENT_ENV);
    if (env && env[0]) {
        if (access(env, R_OK) < 0)
            return dcpi__errf(err, DCPI_ENOENT, "%s: %s=%s: %s", flag, DCPI_VSTEP_AGENT_ENV, env,
                              strerror(errno));
        snprintf(out, len, "%s", env);
        return 0;
    }
    for (const char *const *d = dirs; d && *d; d++) {
        const char *slash = strrchr(*d, '/');
        if (!slash)
            continue;
        int n = snprintf(out, len, "%.*s/%s", (int)(slash - *d), *d, DCPI_VSTEP_AGENT);
        if (n > 0 && (size_t)n < len && out[0] == '/' && access(out, R_OK) == 0)
            return 0;
    }
    out[0] = 0;
    return dcpi__errf(err, DCPI_ENOENT, "%s: %s not found (build it, or set %s)", flag,
                      DCPI_VSTEP_AGENT, DCPI_VSTEP_AGENT_ENV);
}

int dcpi__vagent_env(const char *agent, const char *prefix)
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(agent) + (old ? strlen(old) + 1 : 0) + 1;
    char *pre = malloc(len);
    if (!pre)
        return -1;
    snprintf(pre, len, "%s%s%s", agent, old && old[0] ? ":" : "", old ? old : "");
    int rc = setenv("LD_PRELOAD", pre, 1);
    free(pre);
    rc |= setenv(STEP_RING_ENV, prefix, 1);
    return rc ? -1 : 0;
}

int dcpi_vstep_agent_new(dcpi_values_t *vt, const dcpi_vstep_opts_t *o, dcpi_vbackend_t **out,
                         char *err)
{
    dcpi_vstep_t *vs = alloc_vstep(vt, o);
    if (!vs)
        return dcpi__errf(err, DCPI_ENOMEM, "-vstep: out of memory");
    int rc = dcpi__vagent_find(vs->o.plugin_dirs, "-vstep", vs->agent, sizeof vs->agent, err);
    if (rc == 0) {
        snprintf(vs->prefix, sizeof vs->prefix, "/dev/shm/dcpi-step-%d", (int)getpid());
        rc = dcpi_stepdrain_open(vs->prefix, &vs->drain, err);
    }
    if (rc == 0)
        dcpi_stepdrain_keep_first(vs->drain, vs->o.keep_first);
    if (rc < 0) {
        vstep_free(vs);
        return rc;
    }
    dcpi__log(DCPI_LOG_INFO,
              "vstep: agent %s, rings %s.*, %u-instruction bursts, %u/s per thread, first record "
              "of each burst %s",
              vs->agent, vs->prefix, vs->o.burst, vs->o.rate,
              vs->o.keep_first ? "kept" : "dropped");
    *out = &vs->b;
    return 0;
}

static int vstep_child_env(const dcpi_vstep_t *vs)
{
    char num[32];
    int rc = dcpi__vagent_env(vs->agent, vs->prefix);
    snprintf(num, sizeof num, "%u", vs->o.burst);
    rc |= setenv(STEP_BURST_ENV, num, 1);
    snprintf(num, sizeof num, "%u", vs->o.rate);
    rc |= setenv(STEP_RATE_ENV, num, 1);
    return rc ? -1 : 0;
}

static void agent_drain(dcpi_vstep_t *vs)
{
    char err[DCPI_ERRLEN];
    if (dcpi_stepdrain_scan(vs->drain, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "%s", err);
    dcpi_stepdrain_poll(vs->drain, on_record, vs);
}

/* ---------------------------------------------------------------- ptrace */

int dcpi_vstep_ptrace_new(dcpi_values_t *vt, const dcpi_vstep_opts_t *o, pid_t pid,
                          dcpi_vbackend_t **out, char *err)
{
    dcpi_vstep_t *vs = alloc_vstep(vt, o);
    if (!vs)
        return dcpi__errf(err, DCPI_ENOMEM, "-vstep: out of memory");
    char why[DCPI_ERRLEN] = "";
    int rc = dcpi_ptstep_attach(pid, &vs->pt, why);
    if (rc < 0) {
        vstep_free(vs);
        return dcpi__errf(err, rc, "-vstep -p %d: %s", (int)pid, why);
    }
    vs->pid = pid;
    vs->credit = (double)o->ns_per_sample * vs->o.rate / 1e9;
    dcpi__log(DCPI_LOG_INFO,
              "vstep: ptrace attached to %d (%d threads), %u-instruction bursts, %u/s per thread",
              (int)pid, dcpi_ptstep_threads(vs->pt, NULL, 0), vs->o.burst, vs->o.rate);
    *out = &vs->b;
    return 0;
}

/* The bucket of tid (found or taken; the table is cleared when full). */
static bucket_t *bucket_of(dcpi_vstep_t *vs, uint32_t tid)
{
    if (vs->nbuckets * 2 >= BUCKETS) {
        memset(vs->buckets, 0, sizeof vs->buckets);
        vs->nbuckets = 0;
    }
    unsigned i = (tid * 2654435761u) % BUCKETS;
    while (vs->buckets[i].tid && vs->buckets[i].tid != tid)
        i = (i + 1) % BUCKETS;
    if (!vs->buckets[i].tid) {
        vs->buckets[i].tid = tid;
        vs->buckets[i].tokens = 1; /* a new thread gets its first burst at once */
        vs->nbuckets++;
    }
    return &vs->buckets[i];
}

static int is_pending(const dcpi_vstep_t *vs, uint32_t tid)
{
    for (unsigned i = 0; i < vs->npending; i++)
        if (vs->pending[i] == tid)
            return 1;
    return 0;
}

static void vstep_sample(dcpi_vstep_t *vs, uint32_t pid, uint32_t tid)
{
    if (!vs->pt || pid != (uint32_t)vs->pid || tid == 0)
        return;
    bucket_t *b = bucket_of(vs, tid);
    b->tokens += vs->credit;
    if (b->tokens > 2)
        b->tokens = 2;
    if (b->tokens < 1 || vs->npending == PENDING || is_pending(vs, tid))
        return;
    b->tokens -= 1;
    vs->pending[vs->npending++] = tid;
}

/* Up to DCPI_VSTEP_MAX_PER_TICK admitted bursts, oldest first. */
static void run_bursts(dcpi_vstep_t *vs)
{
    unsigned n = vs->npending < DCPI_VSTEP_MAX_PER_TICK ? vs->npending : DCPI_VSTEP_MAX_PER_TICK;
    for (unsigned i = 0; i < n && !vs->gone; i++) {
        int end = 0;
        char err[DCPI_ERRLEN];
        int k =
            dcpi_ptstep_burst(vs->pt, (pid_t)vs->pending[i], (int)vs->o.burst, vs->recs, &end, err);
        if (k < 0) {
            vs->refused++; /* the thread exited meanwhile */
            continue;
        }
        /* the first record is where the burst was admitted: biased, dropped as the drain does */
        int j = !vs->o.keep_first && k > 0 && (vs->recs[0].flags & STEP_REC_FIRST);
        vs->first_dropped += (uint64_t)j;
        for (; j < k; j++)
            on_record((unsigned)vs->pid, &vs->recs[j], vs);
        vs->gone = dcpi_ptstep_poll(vs->pt) == 0;
    }
    memmove(vs->pending, vs->pending + n, (vs->npending - n) * sizeof vs->pending[0]);
    vs->npending -= n;
}

static int ptrace_tick(dcpi_vstep_t *vs)
{
    if (!vs->pt)
        return vs->gone;
    if (!vs->gone && dcpi_ptstep_poll(vs->pt) == 0)
        vs->gone = 1;
    if (!vs->gone)
        run_bursts(vs);
    if (vs->gone) {
        dcpi__log(DCPI_LOG_INFO, "vstep: process %d is gone", (int)vs->pid);
        vstep_stop(vs);
    }
    return vs->gone;
}

/* ---------------------------------------------------------------- both */

static void vstep_drain(dcpi_vstep_t *vs)
{
    if (vs->drain) /* no scan: rings found later may hold records of mappings not applied yet */
        dcpi_stepdrain_poll(vs->drain, on_record, vs);
}

static int vstep_tick(dcpi_vstep_t *vs)
{
    if (!vs->drain)
        return ptrace_tick(vs);
    agent_drain(vs);
    dcpi_stepdrain_reap(vs->drain);
    return 0;
}

static int vstep_timeout_ms(const dcpi_vstep_t *vs)
{
    return vs->pt ? DCPI_VSTEP_TICK_MS : -1;
}

static void vstep_stop(dcpi_vstep_t *vs)
{
    if (!vs->pt)
        return;
    dcpi_ptstep_counts(vs->pt, &vs->bursts, &vs->steps, &vs->signals);
    int rc = dcpi_ptstep_detach(vs->pt);
    vs->pt = NULL;
    vs->npending = 0;
    vs->gone = 1;
    dcpi__log(rc < 0 ? DCPI_LOG_WARN : DCPI_LOG_INFO,
              "vstep: detached from %d (%" PRIu64 " bursts, %" PRIu64 " steps, %" PRIu64
              " signals passed on)%s",
              (int)vs->pid, vs->bursts, vs->steps, vs->signals,
              rc < 0 ? ": detach reported an error" : "");
}

static void vstep_status(const dcpi_vstep_t *vs, char *buf, size_t len)
{
    int n;
    uint64_t dropped = vs->first_dropped;
    if (vs->drain) {
        dcpi_step_stats_t st;
        dcpi_stepdrain_stats(vs->drain, &st);
        dropped = st.first_dropped;
        n = snprintf(buf, len,
                     "vstep agent bursts %" PRIu64 " steps %" PRIu64 " lost %" PRIu64 "\n",
                     st.bursts, st.steps, st.lost_bursts);
    } else {
        uint64_t bursts = vs->bursts, steps = vs->steps, signals = vs->signals;
        if (vs->pt)
            dcpi_ptstep_counts(vs->pt, &bursts, &steps, &signals);
        n = snprintf(buf, len, "vstep ptrace bursts %" PRIu64 " steps %" PRIu64 "\n", bursts,
                     steps);
    }
    if (n < 0 || (size_t)n >= len)
        return;
    snprintf(buf + n, len - (size_t)n,
             "vstep records %" PRIu64 " entries %" PRIu64 " first-dropped %" PRIu64 "\n",
             vs->records, vs->entries, dropped);
}

static void vstep_free(dcpi_vstep_t *vs)
{
    if (!vs)
        return;
    vstep_stop(vs);
    if (vs->drain) {
        dcpi_step_stats_t st;
        dcpi_stepdrain_stats(vs->drain, &st);
        dcpi__log(DCPI_LOG_INFO,
                  "vstep agent: %" PRIu64 " bursts, %" PRIu64 " steps, %" PRIu64 " bursts lost",
                  st.bursts, st.steps, st.lost_bursts);
    }
    dcpi_stepdrain_close(vs->drain, 1);
    free(vs->se);
    free(vs);
}

/* ---------------------------------------------------------------- the backend's entry points */

static int step_child_env(const dcpi_vbackend_t *b)
{
    return vstep_child_env((const dcpi_vstep_t *)b);
}

static void step_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    (void)ring;
    vstep_sample((dcpi_vstep_t *)b, s->pid, s->tid);
}

static void step_pid_event(dcpi_vbackend_t *b, pid_t pid, int exec)
{
    (void)pid;
    if (exec) /* step records of the old image (rings mapped so far) */
        vstep_drain((dcpi_vstep_t *)b);
}

static int step_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    (void)now_ns;
    dcpi_values_end_drain(b->vt);
    int gone = vstep_tick((dcpi_vstep_t *)b);
    dcpi_values_end_drain(b->vt);
    return gone;
}

static int step_timeout_ms(const dcpi_vbackend_t *b)
{
    return vstep_timeout_ms((const dcpi_vstep_t *)b);
}

static void step_stop(dcpi_vbackend_t *b)
{
    vstep_stop((dcpi_vstep_t *)b);
}

static void step_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    vstep_status((const dcpi_vstep_t *)b, buf, len);
}

static void step_free(dcpi_vbackend_t *b)
{
    vstep_free((dcpi_vstep_t *)b);
}

static const dcpi_vbackend_ops_t step_ops = {.desc = &dcpi_vdesc_step,
                                             .child_env = step_child_env,
                                             .pc = step_pc,
                                             .pid_event = step_pid_event,
                                             .drain = step_drain,
                                             .timeout_ms = step_timeout_ms,
                                             .stop = step_stop,
                                             .status = step_status,
                                             .free = step_free};
