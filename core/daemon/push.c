/*
 * push.c - dcpid -push URL: every flush's samples (split by process), losses and the images'
 * symbol requests become one batch (core/fleet/batch.h), spooled on disk in
 * DB/fleet-spool-<platform>/ and sent by a background thread (core/fleet/push.h) that retries
 * with backoff: sampling never waits on the store. A batch's slot is (daemon start, flush
 * number): each flush counts once however often it is sent. Write-ahead: before a flush writes
 * its files, the batch of everything it is about to write is spooled as a .prep file (dcpi_spool_
 * prepare); after the files it becomes a .batch (replaced by what was really written when part
 * of the flush failed), so a dcpid killed at any point of a flush loses none of its samples from
 * the fleet (the next dcpid -push on the database sends the .prep).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/fleet/push.h"
#include "core/fleet/schema.h"
#include "core/sampling/sampler.h"
#include "dcpi/errno.h"

struct dcpi_daemon_push {
    dcpi_pusher_t *pusher;
    char dir[4200];
    uint64_t max_bytes;
    uint64_t start_ns, seq;
    /* [DCPI_PUSH_WRITTEN]: the flush's rows as its files are written; [DCPI_PUSH_AHEAD]: the
     * write-ahead copy made before them */
    dcpi_fleet_batch_t b[2];
    int open[2];
    uint64_t ev_samples[2][DCPI_SAMPLER_MAXEV];
    uint64_t ev_lost[2][DCPI_SAMPLER_MAXEV];
    char prep[4400]; /* "" or the .prep file of the flush under way */
};

/* The duty cycle's part: this cycle's window and end (monotonic s), and whether the events are
 * enabled (inside the window). */
typedef struct duty {
    double on, off, end;
    int sampling;
} duty_t;

int dcpi__daemon_push_start(daemon_t *d, char *err)
{
    duty_t *u = dcpi__part(d, &dcpi__part_duty);
    if (u) /* the events are on once set up (or at the command's exec) */
        u->sampling = 1;
    if (!d->o->push)
        return 0;
    dcpi_daemon_push_t *p = calloc(1, sizeof *p);
    if (!p)
        return DCPI_ENOMEM;
    (void)dcpi__pathf(p->dir, sizeof p->dir, "%s/fleet-spool-%s", d->db, d->platform);
    p->max_bytes = (uint64_t)d->o->push_spool_mb << 20;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    p->start_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    int rc = dcpi_pusher_start(d->o->push, p->dir, &p->pusher, err);
    if (rc < 0) {
        free(p);
        return rc;
    }
    d->push = p;
    dcpi__log(DCPI_LOG_INFO, "push: every flush to %s (spool %s)", d->o->push, p->dir);
    return 0;
}

void dcpi__daemon_push_stop(daemon_t *d)
{
    if (!d->push)
        return;
    dcpi_pusher_stop(d->push->pusher, 5.0);
    dcpi_fleet_batch_free(&d->push->b[0]);
    dcpi_fleet_batch_free(&d->push->b[1]);
    free(d->push);
    d->push = NULL;
}

static int kind_of(const char *path, int unknown)
{
    if (unknown)
        return DCPI_FLEET_UNKNOWN;
    if (!strcmp(path, "[kernel.kallsyms]"))
        return DCPI_FLEET_KERNEL;
    return path[0] == '[' ? DCPI_FLEET_PSEUDO : DCPI_FLEET_FILE;
}

static dcpi_daemon_push_t *open_batch(daemon_t *d, int w)
{
    dcpi_daemon_push_t *p = d->push;
    if (!p->open[w]) {
        dcpi_fleet_batch_init(&p->b[w], NULL, "flush");
        snprintf(p->b[w].epoch, sizeof p->b[w].epoch, "%.63s", d->epoch);
        memset(p->ev_samples[w], 0, sizeof p->ev_samples[w]);
        memset(p->ev_lost[w], 0, sizeof p->ev_lost[w]);
        p->open[w] = 1;
    }
    return p;
}

static dcpi_fleet_key_t key_of(const daemon_t *d, const dcpi_fleet_batch_t *b, int ev,
                               uint64_t period)
{
    uint32_t estart = (uint32_t)d->epoch_start, now = (uint32_t)time(NULL);
    return (dcpi_fleet_key_t){.host = b->host,
                              .epoch = d->epoch,
                              .platform = d->platform,
                              .event = d->evs[ev].name,
                              .estart = estart,
                              .eend = now > estart ? now : estart,
                              .period = period,
                              .duty = d->o->duty > 0 ? d->o->duty : 1.0};
}

void dcpi__daemon_push_group(daemon_t *d, int w, const char *path, const char *id, uint64_t tstart,
                             uint64_t tsize, const char *dirname, uint64_t period,
                             const dcpi_agg_entry_t *e, size_t n)
{
    if (!d->push || !n)
        return;
    dcpi_daemon_push_t *p = open_batch(d, w);
    dcpi_fleet_batch_t *b = &p->b[w];
    int unknown = e[0].image == DCPI_AGG_IMAGE_UNKNOWN;
    int img = -1;
    if (!unknown) {
        char dir[4500];
        (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", d->db, d->epoch, d->platform, dirname);
        img = dcpi_fleet_batch_symreq(b, id, kind_of(path, 0), path, dir, tstart, tsize);
    }
    dcpi_fleet_key_t k = key_of(d, b, e[0].event, period);
    dcpi_fbuf_t *o = &b->t[DCPI_FLEET_T_SAMPLES];
    for (size_t i = 0; i < n; i++) {
        dcpi_fleet_batch_key(b, DCPI_FLEET_T_SAMPLES, &k);
        dcpi_fbuf_tsv(o, id);
        dcpi_fbuf_str(o, "\t");
        dcpi_fbuf_tsv(o, path);
        dcpi_fbuf_printf(o, "\t%d\t%" PRIu64 "\t%" PRIu64 "\t%u\t%d\t", kind_of(path, unknown),
                         tstart, tsize, unknown ? 0 : e[i].offset,
                         (int)dcpi_proctab_pid(d->procs, e[i].proc));
        dcpi_fbuf_tsv(o, dcpi_proctab_name(d->procs, e[i].proc));
        dcpi_fbuf_printf(o, "\t%" PRIu64 "\n", e[i].count);
        p->ev_samples[w][e[0].event] += e[i].count;
        if (img >= 0)
            dcpi_fleet_batch_page(b, img, tstart + e[i].offset);
    }
}

void dcpi__daemon_push_lost(daemon_t *d, int w, int ev, uint64_t lost)
{
    if (d->push && lost)
        open_batch(d, w)->ev_lost[w][ev] += lost;
}

/* Batch w's loss rows, then its ids (slot: daemon start and flush number seq). */
static int seal(daemon_t *d, int w, const uint64_t *periods, uint64_t seq)
{
    dcpi_daemon_push_t *p = d->push;
    dcpi_fleet_batch_t *b = &p->b[w];
    for (int ev = 0; ev < d->nev; ev++) {
        if (!p->ev_samples[w][ev] && !p->ev_lost[w][ev])
            continue;
        dcpi_fleet_key_t k = key_of(d, b, ev, periods[ev]);
        dcpi_fleet_batch_key(b, DCPI_FLEET_T_LOSS, &k);
        dcpi_fbuf_printf(&b->t[DCPI_FLEET_T_LOSS], "%" PRIu64 "\t%" PRIu64 "\n", p->ev_lost[w][ev],
                         p->ev_samples[w][ev]);
    }
    char slot[64];
    snprintf(slot, sizeof slot, "%" PRIu64 ":%" PRIu64, p->start_ns, seq);
    return dcpi_fleet_batch_seal(b, (uint32_t)d->epoch_start, slot);
}

static void close_batch(dcpi_daemon_push_t *p, int w)
{
    dcpi_fleet_batch_free(&p->b[w]);
    p->open[w] = 0;
}

void dcpi__daemon_push_prepare(daemon_t *d, const uint64_t *periods)
{
    dcpi_daemon_push_t *p = d->push;
    p->prep[0] = 0;
    if (!p->open[DCPI_PUSH_AHEAD])
        return;
    char err[DCPI_ERRLEN] = "";
    dcpi_spool_stats_t st = {0};
    int rc = seal(d, DCPI_PUSH_AHEAD, periods, p->seq + 1);
    if (rc == 0)
        rc = dcpi_spool_prepare(p->dir, p->max_bytes, &p->b[DCPI_PUSH_AHEAD], p->prep,
                                sizeof p->prep, &st, err);
    if (rc < 0) { /* the flush's own batch is spooled after it, as without the write-ahead */
        dcpi__log(DCPI_LOG_WARN, "push: write-ahead: %s", err[0] ? err : dcpi_strerror(rc));
        p->prep[0] = 0;
    }
    close_batch(p, DCPI_PUSH_AHEAD);
}

void dcpi__daemon_push_flush(daemon_t *d, const uint64_t *periods, size_t failures)
{
    dcpi_daemon_push_t *p = d->push;
    if (!p || (!p->open[DCPI_PUSH_WRITTEN] && !p->prep[0]))
        return;
    char err[DCPI_ERRLEN] = "";
    int rc = 0;
    ++p->seq;
    if (p->prep[0] && !failures) /* written as prepared: the write-ahead copy is the batch */
        rc = dcpi_spool_commit(p->prep, err);
    else if (p->prep[0]) { /* part failed (kept for the next flush): only what was written */
        if (!p->open[DCPI_PUSH_WRITTEN])
            open_batch(d, DCPI_PUSH_WRITTEN); /* nothing written: an empty batch */
        rc = seal(d, DCPI_PUSH_WRITTEN, periods, p->seq);
        if (rc == 0)
            rc = dcpi_spool_replace(p->prep, &p->b[DCPI_PUSH_WRITTEN], err);
        if (rc == 0)
            rc = dcpi_spool_commit(p->prep, err);
    } else {
        dcpi_spool_stats_t st = {0};
        rc = seal(d, DCPI_PUSH_WRITTEN, periods, p->seq);
        if (rc == 0)
            rc = dcpi_spool_put(p->dir, p->max_bytes, &p->b[DCPI_PUSH_WRITTEN], &st, err);
    }
    if (rc < 0) {
        dcpi__log(DCPI_LOG_ERR, "push: %s", err[0] ? err : dcpi_strerror(rc));
        dcpi_pusher_dropped(p->pusher, p->b[DCPI_PUSH_WRITTEN].rows);
    } else
        dcpi_pusher_kick(p->pusher);
    p->prep[0] = 0;
    close_batch(p, DCPI_PUSH_WRITTEN);
}

void dcpi__daemon_push_values(daemon_t *d)
{
    dcpi_daemon_push_t *p = d->push;
    if (!p || (!d->vt && !d->stk) || !d->epoch[0])
        return;
    dcpi_fleet_batch_t b;
    char err[DCPI_ERRLEN] = "";
    dcpi_spool_stats_t st = {0};
    dcpi_fleet_batch_init(&b, NULL, "values");
    int rc = dcpi_fleet_batch_values(&b, d->db, d->epoch, d->platform, (uint32_t)time(NULL), err);
    if (rc == 0 && b.rows)
        rc = dcpi_spool_put(p->dir, p->max_bytes, &b, &st, err);
    if (rc < 0) {
        dcpi__log(DCPI_LOG_ERR, "push: values of epoch %s: %s", d->epoch,
                  err[0] ? err : dcpi_strerror(rc));
        dcpi_pusher_dropped(p->pusher, b.rows);
    } else if (b.rows)
        dcpi_pusher_kick(p->pusher);
    dcpi_fleet_batch_free(&b);
}

void dcpi__daemon_push_status(const daemon_t *d, char *buf, size_t len)
{
    dcpi_spool_stats_t st;
    dcpi_pusher_stats(d->push->pusher, &st);
    snprintf(buf, len,
             "push %s queued %" PRIu64 " (%" PRIu64 " bytes) sent %" PRIu64 " repeats %" PRIu64
             " dropped %" PRIu64 " (%" PRIu64 " rows) failures %" PRIu64 "%s%s",
             d->o->push, st.queued, st.queued_bytes, st.sent, st.repeats, st.dropped,
             st.dropped_rows, st.failures, st.last_error[0] ? " last error: " : "", st.last_error);
}

/* ---- -duty: sampling in randomly placed windows --------------------------------------------
 * Time is cut into cycles of max(10 s, 0.25 s / duty) (a window is at least one 250 ms timer
 * tick); in each, the events are on for duty x cycle seconds starting at a random point. Over
 * many cycles a host samples that share of its time, and the fleet weights its counts by
 * 1/duty (core/fleet/query.c), so shares across hosts stay unbiased. */

static double uniform(void)
{
    return (double)(random() % 1000000) / 1000000.0;
}

static void duty_cycle(daemon_t *d, duty_t *u, double now)
{
    double duty = d->o->duty, cycle = 0.25 / duty > 10.0 ? 0.25 / duty : 10.0;
    double on = duty * cycle;
    u->on = now + uniform() * (cycle - on);
    u->off = u->on + on;
    u->end = now + cycle;
}

/* -duty: enable or disable the events at the windows' edges (every timer tick). */
static void duty_tick(daemon_t *d, void *self)
{
    duty_t *u = self;
    if (!(d->o->duty > 0 && d->o->duty < 1) || !d->smp)
        return;
    double now = dcpi__monotonic_s();
    if (u->end == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        srandom(
            (unsigned)(ts.tv_nsec ^ ts.tv_sec ^ (long)getpid() << 16)); /* windows differ by host */
    }
    if (u->end == 0 || now >= u->end)
        duty_cycle(d, u, now);
    int want = now >= u->on && now < u->off;
    if (want == u->sampling)
        return;
    int rc = want ? dcpi_sampler_enable(d->smp) : dcpi_sampler_disable(d->smp);
    if (rc < 0)
        dcpi__log(DCPI_LOG_WARN, "-duty: %s: %s", want ? "enable" : "disable", dcpi_strerror(rc));
    u->sampling = want;
}

/* -duty: the fraction written into DB/<epoch>/<platform>/duty of each new epoch. */
static void duty_record(daemon_t *d, void *self)
{
    if (!(d->o->duty > 0 && d->o->duty < 1))
        return;
    char path[4500], text[64], err[DCPI_ERRLEN];
    (void)dcpi__pathf(path, sizeof path, "%s/%s/%s/duty", d->db, d->epoch, d->platform);
    int n = snprintf(text, sizeof text, "%.9g\n", d->o->duty);
    if (dcpi__write_atomic(path, text, (size_t)n, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "-duty: %s", err);
}

const dcpi__part_ops_t dcpi__part_duty = {
    .name = "duty", .size = sizeof(duty_t), .tick = duty_tick, .epoch = duty_record};
