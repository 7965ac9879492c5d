/*
 * flush.c - dcpid's flush and epochs: the count table sorted by image and event into one
 * PC profile per group (merged into the current epoch's files) and its split by process
 * (<event>.procs, core/store/procprof.h), the unknown@<platform> profiles, the value profiles
 * (core/values/values.h) and the stack profiles (dstacks.c). What could not be written stays in
 * memory for the next flush; the error is kept for status.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/store/procprof.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

typedef struct image_desc {
    const char *path, *id;
    uint64_t tstart, tsize;
} image_desc_t;

void dcpi__daemon_group_of(const daemon_t *d, const dcpi_agg_entry_t *e, size_t n, uint64_t period,
                           char *dirname, size_t len, dcpi__group_t *g)
{
    *g = (dcpi__group_t){.image = e[0].image, .dirname = dirname, .period = period, .e = e, .n = n};
    if (e[0].image == DCPI_AGG_IMAGE_UNKNOWN) {
        snprintf(dirname, len, "unknown@%s", d->platform);
        g->path = dirname;
        g->id = "0";
        return;
    }
    if (e[0].image == DCPI_AGG_IMAGE_KERNEL) {
        g->path = "[kernel.kallsyms]";
        g->id = d->kern.id;
        g->tstart = d->kern.tstart;
        g->tsize = d->kern.tsize;
    } else {
        const dcpi_image_t *img = dcpi_loadmap_image(d->lm, e[0].image);
        g->path = img->path;
        g->id = img->info.id;
        g->tstart = img->info.tstart;
        g->tsize = img->info.tsize;
    }
    dcpi_image_dirname(g->path, g->id, dirname, len);
}

static uint64_t event_period(const daemon_t *d, int ev)
{
    const dcpi_event_spec_t *e = &d->evs[ev];
    if (e->period)
        return e->period;
    /* frequency mode: the nominal period at the nominal clock */
    return d->cpuspeed ? (uint64_t)d->cpuspeed * 1000000 / e->freq : 1;
}

static int set_header(const daemon_t *d, dcpi_profile_t *p, const image_desc_t *im, int ev,
                      uint64_t lost)
{
    const dcpi_event_spec_t *e = &d->evs[ev];
    uint64_t period = event_period(d, ev);
    int rc = dcpi_profile_set(p, "version", DCPI_PROFILE_VERSION);
    rc = rc ? rc : dcpi_profile_set(p, "image", im->id);
    rc = rc ? rc : dcpi_profile_set(p, "epoch", d->epoch);
    rc = rc ? rc : dcpi_profile_set(p, "platform", d->platform);
    rc = rc ? rc : dcpi_profile_set(p, "event", e->name);
    rc = rc ? rc : dcpi_profile_setf(p, "period", "%" PRIu64, period);
    rc = rc ? rc : dcpi_profile_setf(p, "tstart", "0x%" PRIx64, im->tstart);
    rc = rc ? rc : dcpi_profile_setf(p, "tsize", "%" PRIu64, im->tsize);
    rc = rc ? rc : dcpi_profile_setf(p, "cpuspeed", "%u", d->cpuspeed);
    rc = rc ? rc : dcpi_profile_setf(p, "cpucount", "%d", d->cpucount);
    rc = rc ? rc : dcpi_profile_set(p, "path", im->path);
    rc = rc ? rc : dcpi_profile_setf(p, "lost", "%" PRIu64, lost);
    return rc;
}

static void profile_path(const daemon_t *d, const char *dirname, int ev, char *dir, size_t dlen,
                         char *file, size_t flen)
{
    (void)dcpi__pathf(dir, dlen, "%s/%s/%s/%s", d->db, d->epoch, d->platform, dirname);
    (void)dcpi__pathf(file, flen, "%s/%s.prof", dir, d->evs[ev].name);
}

/* Write (merge) one profile into the current epoch. */
static int write_profile(daemon_t *d, const image_desc_t *im, const char *dirname, int ev,
                         const dcpi_agg_entry_t *e, size_t n, uint64_t lost, char *err)
{
    char dir[4096], file[4200];
    profile_path(d, dirname, ev, dir, sizeof dir, file, sizeof file);
    dcpi_profile_t *p = NULL;
    int rc = dcpi_profile_new(&p);
    if (rc == 0)
        rc = set_header(d, p, im, ev, lost);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t c = e[i].count > UINT32_MAX ? UINT32_MAX : e[i].count;
        if (dcpi_profile_add(p, e[i].offset, (uint32_t)c) == DCPI_ERANGE)
            dcpi__log(DCPI_LOG_WARN, "%s: count saturated at offset 0x%x", file, e[i].offset);
    }
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", file, dcpi_strerror(rc));
    else if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    else
        rc = dcpi_profile_merge_write(file, p, err);
    dcpi_profile_free(p);
    return rc;
}

/* Write (merge) the split by process of one profile: "<event>.procs" in its directory. */
static int write_procs(daemon_t *d, const char *dirname, int ev, const dcpi_agg_entry_t *e,
                       size_t n, char *err)
{
    char dir[4096], file[4200];
    profile_path(d, dirname, ev, dir, sizeof dir, file, sizeof file);
    (void)dcpi__pathf(file, sizeof file, "%s/%s" DCPI_PROCPROF_SUFFIX, dir, d->evs[ev].name);
    dcpi_procprof_t pp = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = dcpi_procprof_add(&pp, (uint32_t)dcpi_proctab_pid(d->procs, e[i].proc),
                               dcpi_proctab_name(d->procs, e[i].proc), e[i].offset, e[i].count);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: out of memory", file);
    else if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    else {
        uint64_t torn = 0; /* appended: O(this flush's counts), not O(the epoch's processes) */
        rc = dcpi_procprof_append(file, &pp, &torn, err);
        if (torn)
            dcpi__log(DCPI_LOG_WARN,
                      "%s: %" PRIu64 " bytes of an unfinished write (dcpid killed in a flush) cut "
                      "off: that flush's samples of this profile have no split by process",
                      file, torn);
    }
    dcpi_procprof_free(&pp);
    return rc;
}

static void flush_failed(daemon_t *d, const char *err, flush_result_t *r)
{
    dcpi__log(DCPI_LOG_ERR, "flush: %s", err);
    (void)dcpi__pathf(d->flush_error, sizeof d->flush_error, "%s", err);
    r->failures++;
}

/* The unknown samples' split by process (their counts went to unknown@ by flush_unknown). */
static void flush_unknown_procs(daemon_t *d, dcpi_agg_t *t, const dcpi__group_t *g,
                                flush_result_t *r)
{
    char err[DCPI_ERRLEN];
    if (write_procs(d, g->dirname, g->e[0].event, g->e, g->n, err) < 0) {
        flush_failed(d, err, r);
        return;
    }
    dcpi__parts_written(d, g); /* push.c's rows */
    dcpi_agg_clear(t, g->e, g->n);
}

static void flush_group(daemon_t *d, dcpi_agg_t *t, const dcpi_agg_entry_t *e, size_t n,
                        flush_result_t *r)
{
    char dirname[512], err[DCPI_ERRLEN];
    dcpi__group_t g;
    dcpi__daemon_group_of(d, e, n, event_period(d, e[0].event), dirname, sizeof dirname, &g);
    if (e[0].image == DCPI_AGG_IMAGE_UNKNOWN) {
        flush_unknown_procs(d, t, &g, r);
        return;
    }
    image_desc_t im = {g.path, g.id, g.tstart, g.tsize};
    uint64_t samples = 0;
    for (size_t i = 0; i < n; i++)
        samples += e[i].count;
    if (write_profile(d, &im, dirname, e[0].event, e, n, 0, err) < 0) {
        flush_failed(d, err, r);
        return;
    }
    /* The profile is written: its samples are cleared even when their split by process
     * cannot be (they would count twice); the failure is reported like any other. */
    if (write_procs(d, dirname, e[0].event, e, n, err) < 0)
        flush_failed(d, err, r);
    dcpi__parts_written(d, &g); /* push.c's rows, kernel.c's symbols, jit.c's map, the caches */
    dcpi_agg_clear(t, e, n);
    r->profiles++;
    r->samples += samples;
}

static void flush_unknown(daemon_t *d, int ev, flush_result_t *r)
{
    ev_stats_t *s = &d->st[ev];
    uint64_t unknown = s->unknown_swap, lost = s->lost_swap; /* (as the flush began) */
    if (!unknown && !lost)
        return;
    char dirname[DCPI_NAMELEN + 16], err[DCPI_ERRLEN];
    snprintf(dirname, sizeof dirname, "unknown@%s", d->platform);
    image_desc_t im = {"unknown", "0", 0, 0};
    dcpi_agg_entry_t e = {.offset = 0, .count = unknown};
    if (write_profile(d, &im, dirname, ev, &e, unknown ? 1 : 0, lost, err) < 0) {
        dcpi__log(DCPI_LOG_ERR, "flush: %s", err);
        (void)dcpi__pathf(d->flush_error, sizeof d->flush_error, "%s", err);
        r->failures++;
        return;
    }
    r->profiles++;
    r->samples += unknown;
    dcpi__parts_lost(d, ev, lost); /* push.c's loss rows */
    s->unknown_pending -= unknown;
    s->lost_pending -= lost;
}

/* Add one writer's result (files written, or the failures and their message) to r. */
static void account_flush(daemon_t *d, flush_result_t *r, int rc, size_t failed, const char *err)
{
    if (rc >= 0) {
        r->profiles += (size_t)rc;
        return;
    }
    (void)dcpi__pathf(d->flush_error, sizeof d->flush_error, "%s", err);
    r->failures += failed;
}

/* What the value profiles' headers and the recording need of the current epoch. */
dcpi_values_flush_info_t dcpi__daemon_flush_info(const daemon_t *d)
{
    return (dcpi_values_flush_info_t){.db = d->db,
                                      .epoch = d->epoch,
                                      .platform = d->platform,
                                      .event = d->evs[0].name,
                                      .period = event_period(d, 0),
                                      .cpuspeed = d->cpuspeed,
                                      .cpucount = d->cpucount};
}

/* The stack profiles (-g; dstacks.c keeps what it could not write). */
static void flush_stacks(daemon_t *d, flush_result_t *r)
{
    const char *names[DCPI_SAMPLER_MAXEV];
    uint64_t periods[DCPI_SAMPLER_MAXEV];
    for (int i = 0; i < d->nev; i++) {
        names[i] = d->evs[i].name;
        periods[i] = event_period(d, i);
    }
    dcpi_dstacks_flush_info_t fi = {.db = d->db,
                                    .epoch = d->epoch,
                                    .platform = d->platform,
                                    .events = names,
                                    .periods = periods,
                                    .cpuspeed = d->cpuspeed};
    size_t failed = 0;
    char err[DCPI_ERRLEN] = "";
    account_flush(d, r, dcpi_dstacks_flush(d->stk, &fi, &failed, err), failed, err);
}

/* What a failed flush could not write goes back into the current table (grown if need be;
 * what even that cannot hold is counted lost). */
static void keep_unwritten(daemon_t *d, dcpi_agg_t *t)
{
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(t, &n);
    for (size_t i = 0; i < n; i++) {
        const dcpi_agg_entry_t *x = &e[i];
        if (dcpi_agg_add_proc(d->agg, x->image, x->event, x->offset, x->proc, x->count) < 0 &&
            (dcpi_agg_grow(d->agg) < 0 ||
             dcpi_agg_add_proc(d->agg, x->image, x->event, x->offset, x->proc, x->count) < 0))
            d->st[x->event].lost += x->count;
    }
}

/* The PC profiles of table t, group by group; the rings are drained between groups (into the
 * other table) so that a long flush does not overflow them. */
static void flush_table(daemon_t *d, dcpi_agg_t *t, flush_result_t *r)
{
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(t, &n);
    double drained = dcpi__monotonic_s();
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && e[j].image == e[i].image && e[j].event == e[i].event)
            j++;
        flush_group(d, t, e + i, j - i, r);
        i = j;
        if (dcpi__monotonic_s() - drained > DCPI_DAEMON_FLUSH_DRAIN_MS / 1000.0) {
            dcpi__daemon_drain_all(d);
            drained = dcpi__monotonic_s();
        }
    }
}

/* The samples of the flush's time go to the spare table; the full one, returned, is written. */
static dcpi_agg_t *swap_tables(daemon_t *d)
{
    dcpi_agg_t *t = d->agg;
    d->agg = d->agg_spare;
    d->agg_spare = t;
    d->samples_at_swap = d->total_samples;
    d->lost_at_swap = dcpi__daemon_lost(d);
    for (int ev = 0; ev < d->nev; ev++) {
        d->st[ev].unknown_swap = d->st[ev].unknown_pending;
        d->st[ev].lost_swap = d->st[ev].lost_pending;
    }
    dcpi_proctab_mark(d->procs);
    return t;
}

/* The flush's time (ms since t0) into the status' counters. */
static double count_flush(daemon_t *d, double t0)
{
    d->last_flush = dcpi__monotonic_s();
    d->samples_at_flush = d->total_samples;
    double ms = (d->last_flush - t0) * 1000;
    d->flushes++;
    d->flush_ms_last = ms;
    d->flush_ms_total += ms;
    if (ms > d->flush_ms_max)
        d->flush_ms_max = ms;
    return ms;
}

/* Write everything in memory; what could not be written stays for the next flush. */
int dcpi__daemon_flush(daemon_t *d, flush_result_t *r)
{
    double t0 = dcpi__monotonic_s();
    dcpi_agg_t *t = swap_tables(d);
    *r = (flush_result_t){0};
    dcpi__sync_defer(1); /* one syncfs below instead of two fsyncs per file */
    uint64_t periods[DCPI_SAMPLER_MAXEV];
    for (int i = 0; i < d->nev; i++)
        periods[i] = event_period(d, i);
    dcpi__parts_ahead(d, t, periods); /* push.c's write-ahead */
    flush_table(d, t, r);
    for (int ev = 0; ev < d->nev; ev++)
        flush_unknown(d, ev, r);
    if (d->stk)
        flush_stacks(d, r);
    dcpi__parts_flush(d, periods, r); /* the value profiles, push.c's batch, the caches' writer */
    dcpi__daemon_epoch_info(d, 1);
    dcpi__sync_defer(0);
    malloc_trim(0); /* the merges' buffers: resident memory is not the largest flush's */
    int src = dcpi__sync_fs(d->db);
    if (src < 0)
        dcpi__log(DCPI_LOG_WARN, "flush: syncfs %s: %s", d->db, dcpi_strerror(src));
    double ms = count_flush(d, t0);
    if (r->failures) {
        keep_unwritten(d, t);
        dcpi_agg_reset(t);
        d->last_fail = d->last_flush;
        dcpi__log(DCPI_LOG_ERR, "flush: %zu profiles failed, their samples are kept", r->failures);
        return DCPI_EIO;
    }
    dcpi_agg_reset(t);
    dcpi_proctab_compact(d->procs); /* what died before the flush: no count refers to it */
    d->flush_error[0] = 0;
    d->last_flush_wall = time(NULL);
    d->flushed_profiles = r->profiles;
    dcpi__log(DCPI_LOG_INFO, "flush: %zu profiles, %" PRIu64 " samples, %.0f ms", r->profiles,
              r->samples, ms);
    return 0;
}

void dcpi__daemon_flush_if_full(daemon_t *d)
{
    char why[256] = "";
    int stacks = d->stk && dcpi_dstacks_needs_flush(d->stk);
    int parts = !stacks && dcpi__parts_full(d, why, sizeof why); /* vtrace.c's summaries */
    if ((!dcpi_agg_needs_flush(d->agg) && !parts && !stacks) ||
        dcpi__monotonic_s() - d->last_fail < FAIL_RETRY_S)
        return;
    dcpi__log(DCPI_LOG_INFO, "%s, flushing early",
              stacks  ? "stack profile 75% full"
              : parts ? why
                      : "hash table 75% full");
    flush_result_t r;
    d->flush_async = 1;
    dcpi__daemon_flush(d, &r);
    d->flush_async = 0;
}
