/*
 * push.c - dcpid -push URL: every flush's samples (split by process), losses and the images'
 * symbol requests become one batch (core/fleet/batch.h), spooled on disk in
 * DB/fleet-spool-<platform>/ and sent by a background thread (core/fleet/push.h) that retries
 * with backoff: sampling never waits on the store. A batch's slot is (daemon start, flush
 * number): each flush counts once however often it is sent. Write-ahead: before a flush writes
 * its files, the batch of everything it is about to write is spooled as a .prep file (dcpi_spool_
 * prepare); after the files it becomes a .batch (replaced by what was really written when part
 * of the flush failed), so a dcpid killed at any point of a flush loses none of its samples from
 * the fleet (the next dcpid -push on the database sends the .prep). A part (part.h): start,
 * ahead, written, lost, flush, ended, status, exit.
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

/* The part's state: the pusher (NULL: no -push), its spool, the flush's two batches. */
typedef struct push {
    dcpi_pusher_t *pusher;
    char dir[4200];
    uint64_t max_bytes;
    uint64_t start_ns, seq;
    /* [WRITTEN]: the flush's rows as its files are written; [AHEAD]: the
     * write-ahead copy made before them */
    dcpi_fleet_batch_t b[2];
    int open[2];
    uint64_t ev_samples[2][DCPI_SAMPLER_MAXEV];
    uint64_t ev_lost[2][DCPI_SAMPLER_MAXEV];
    char prep[4400]; /* "" or the .prep file of the flush under way */
} push_t;

/* A flush adds its groups and losses twice: to the write-ahead batch (AHEAD) before it writes
 * any file, spooled as .prep by push_ahead, and to WRITTEN as each file is written; push_flush
 * makes the .prep the flush's batch, or what was written when part failed. */
enum { WRITTEN = 0, AHEAD = 1 };

static int push_start(daemon_t *d, void *self, char *err)
{
    push_t *p = self;
    if (!d->o->push)
        return 0;
    (void)dcpi__pathf(p->dir, sizeof p->dir, "%s/fleet-spool-%s", d->db, d->platform);
    p->max_bytes = (uint64_t)d->o->push_spool_mb << 20;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    p->start_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    int rc = dcpi_pusher_start(d->o->push, p->dir, &p->pusher, err);
    if (rc < 0)
        return rc;
    dcpi__log(DCPI_LOG_INFO, "push: every flush to %s (spool %s)", d->o->push, p->dir);
    return 0;
}

/* Sends what the last flush spooled (at most 5 s). */
static void push_exit(daemon_t *d, void *self)
{
    push_t *p = self;
    if (!p->pusher)
        return;
    dcpi_pusher_stop(p->pusher, 5.0);
    dcpi_fleet_batch_free(&p->b[0]);
    dcpi_fleet_batch_free(&p->b[1]);
}

static int kind_of(const char *path, int unknown)
{
    if (unknown)
        return DCPI_FLEET_UNKNOWN;
    if (!strcmp(path, "[kernel.kallsyms]"))
        return DCPI_FLEET_KERNEL;
    return path[0] == '[' ? DCPI_FLEET_PSEUDO : DCPI_FLEET_FILE;
}

static push_t *open_batch(daemon_t *d, push_t *p, int w)
{
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

/* Group g's rows into batch w. */
static void push_group(daemon_t *d, push_t *p, int w, const dcpi__group_t *g)
{
    if (!p->pusher || !g->n)
        return;
    open_batch(d, p, w);
    dcpi_fleet_batch_t *b = &p->b[w];
    const dcpi_agg_entry_t *e = g->e;
    const char *path = g->path, *id = g->id;
    uint64_t tstart = g->tstart, tsize = g->tsize;
    int unknown = e[0].image == DCPI_AGG_IMAGE_UNKNOWN;
    int img = -1;
    if (!unknown) {
        char dir[4500];
        (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", d->db, d->epoch, d->platform, g->dirname);
        img = dcpi_fleet_batch_symreq(b, id, kind_of(path, 0), path, dir, tstart, tsize);
    }
    dcpi_fleet_key_t k = key_of(d, b, e[0].event, g->period);
    dcpi_fbuf_t *o = &b->t[DCPI_FLEET_T_SAMPLES];
    for (size_t i = 0; i < g->n; i++) {
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

static void push_lost(daemon_t *d, push_t *p, int w, int ev, uint64_t lost)
{
    if (p->pusher && lost)
        open_batch(d, p, w)->ev_lost[w][ev] += lost;
}

/* A group the flush wrote. */
static void push_written(daemon_t *d, void *self, const dcpi__group_t *g)
{
    push_group(d, self, WRITTEN, g);
}

/* unknown@'s lost count the flush wrote. */
static void push_written_lost(daemon_t *d, void *self, int ev, uint64_t lost)
{
    push_lost(d, self, WRITTEN, ev, lost);
}

/* Batch w's loss rows, then its ids (slot: daemon start and flush number seq). */
static int seal(daemon_t *d, push_t *p, int w, const uint64_t *periods, uint64_t seq)
{
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

static void close_batch(push_t *p, int w)
{
    dcpi_fleet_batch_free(&p->b[w]);
    p->open[w] = 0;
}

/* The write-ahead batch spooled as .prep (push_flush makes it the flush's batch). */
static void prepare(daemon_t *d, push_t *p, const uint64_t *periods)
{
    p->prep[0] = 0;
    if (!p->open[AHEAD])
        return;
    char err[DCPI_ERRLEN] = "";
    dcpi_spool_stats_t st = {0};
    int rc = seal(d, p, AHEAD, periods, p->seq + 1);
    if (rc == 0)
        rc = dcpi_spool_prepare(p->dir, p->max_bytes, &p->b[AHEAD], p->prep, sizeof p->prep, &st,
                                err);
    if (rc < 0) { /* the flush's own batch is spooled after it, as without the write-ahead */
        dcpi__log(DCPI_LOG_WARN, "push: write-ahead: %s", err[0] ? err : dcpi_strerror(rc));
        p->prep[0] = 0;
    }
    close_batch(p, AHEAD);
}

/* The flush's batch (failures: its failed writes) spooled and the sender kicked. */
static void push_flush(daemon_t *d, void *self, const uint64_t *periods, flush_result_t *r)
{
    push_t *p = self;
    size_t failures = r->failures;
    if (!p->pusher || (!p->open[WRITTEN] && !p->prep[0]))
        return;
    char err[DCPI_ERRLEN] = "";
    int rc = 0;
    ++p->seq;
    if (p->prep[0] && !failures) /* written as prepared: the write-ahead copy is the batch */
        rc = dcpi_spool_commit(p->prep, err);
    else if (p->prep[0]) { /* part failed (kept for the next flush): only what was written */
        if (!p->open[WRITTEN])
            open_batch(d, p, WRITTEN); /* nothing written: an empty batch */
        rc = seal(d, p, WRITTEN, periods, p->seq);
        if (rc == 0)
            rc = dcpi_spool_replace(p->prep, &p->b[WRITTEN], err);
        if (rc == 0)
            rc = dcpi_spool_commit(p->prep, err);
    } else {
        dcpi_spool_stats_t st = {0};
        rc = seal(d, p, WRITTEN, periods, p->seq);
        if (rc == 0)
            rc = dcpi_spool_put(p->dir, p->max_bytes, &p->b[WRITTEN], &st, err);
    }
    if (rc < 0) {
        dcpi__log(DCPI_LOG_ERR, "push: %s", err[0] ? err : dcpi_strerror(rc));
        dcpi_pusher_dropped(p->pusher, p->b[WRITTEN].rows);
    } else
        dcpi_pusher_kick(p->pusher);
    p->prep[0] = 0;
    close_batch(p, WRITTEN);
}

/* The ending epoch's value hotlists and call chains (from its files), at rotation and exit. */
static void push_values(daemon_t *d, void *self)
{
    push_t *p = self;
    if (!p->pusher || (!d->o->nvtrace && !d->stk) || !d->epoch[0])
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

static void push_status(daemon_t *d, void *self, dcpi__answer_t *a)
{
    push_t *p = self;
    if (!p->pusher)
        return;
    dcpi_spool_stats_t st;
    dcpi_pusher_stats(p->pusher, &st);
    dcpi__daemon_say(
        a,
        "push %s queued %" PRIu64 " (%" PRIu64 " bytes) sent %" PRIu64 " repeats %" PRIu64
        " dropped %" PRIu64 " (%" PRIu64 " rows) failures %" PRIu64 "%s%s",
        d->o->push, st.queued, st.queued_bytes, st.sent, st.repeats, st.dropped, st.dropped_rows,
        st.failures, st.last_error[0] ? " last error: " : "", st.last_error);
}

/* -push: the batch of everything table t and the losses will write, spooled before any file is
 * written (the write-ahead). */
static void push_ahead(daemon_t *d, void *self, dcpi_agg_t *t, const uint64_t *periods)
{
    push_t *p = self;
    if (!p->pusher)
        return;
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(t, &n);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && e[j].image == e[i].image && e[j].event == e[i].event)
            j++;
        char dirname[512];
        dcpi__group_t g;
        dcpi__daemon_group_of(d, e + i, j - i, periods[e[i].event], dirname, sizeof dirname, &g);
        push_group(d, p, AHEAD, &g);
        i = j;
    }
    for (int ev = 0; ev < d->nev; ev++)
        push_lost(d, p, AHEAD, ev, d->st[ev].lost_swap);
    prepare(d, p, periods);
}

DCPI_DAEMON_PART(push, .order = 40, .size = sizeof(push_t), .start = push_start,
                 .ahead = push_ahead, .written = push_written, .lost = push_written_lost,
                 .flush = push_flush, .ended = push_values, .status = push_status,
                 .exit = push_exit);
