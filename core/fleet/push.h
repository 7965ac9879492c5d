/*
 * push.h - ship batches to the fleet: the commit protocol, the symbols, and the spool that
 * keeps batches on disk while the store is down or slow (dcpid -push).
 *
 * Commit: if the manifest already holds (slot, batch), nothing is sent (a repeat is a no-op).
 * Else a fresh random commit id (cid) is drawn, every table's rows are inserted with it, and
 * then one manifest row (slot, batch, cid, time). Queries count only the newest committed cid of
 * each slot, so rows of a push cut off before its manifest row never count, and a retry under a
 * new cid replaces rather than adds. Pushes only insert.
 *
 * Symbols: each image of a batch whose build-id has no committed symbols yet gets them read
 * here (the ELF file when it still has that id, the epoch's kallsyms copy for the kernel; as
 * dcpi_profset_open_symbols) and committed under the slot ("sym", id): a querying machine needs
 * no binaries.
 */
#ifndef DCPI_CORE_FLEET_PUSH_H
#define DCPI_CORE_FLEET_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "core/fleet/batch.h"
#include "core/fleet/conn.h"
#include "core/fleet/schema.h"

/* Commit b (and its images' symbols). *sent is 1 when rows were sent, 0 when the manifest
 * already had the batch. 0 or DCPI_E* ("URL: reason"). */
int dcpi_fleet_push(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const dcpi_fleet_batch_t *b,
                    int *sent, char *err);

/* dcpi_fleet_push of n batches with one insert per table and one for the manifest (each batch
 * still commits alone: all of them with the manifest insert, or none). sent[i] as above. */
int dcpi_fleet_push_many(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                         const dcpi_fleet_batch_t *const *b, size_t n, int *sent, char *err);

/* ---- the spool: DIR/<slot>-<batch>.batch files, sent oldest first -------------------------- */

typedef struct dcpi_spool_stats {
    uint64_t queued;       /* batch files waiting */
    uint64_t queued_bytes; /* their size */
    uint64_t sent;         /* batches committed by this process */
    uint64_t repeats;      /* batches the store already had */
    uint64_t dropped;      /* batches not spooled: the spool was full (their rows are lost) */
    uint64_t dropped_rows; /* rows of those */
    uint64_t failures;     /* failed attempts (server down, slow, refusing) */
    double next_try;       /* CLOCK_MONOTONIC seconds of the next attempt after a failure */
    char last_error[256];
} dcpi_spool_stats_t;

/* Write b into dir (created) atomically, unless the spool already holds max_bytes (0: 64 MiB):
 * then DCPI_EFULL (counted in st->dropped). */
int dcpi_spool_put(const char *dir, uint64_t max_bytes, const dcpi_fleet_batch_t *b,
                   dcpi_spool_stats_t *st, char *err);
/*
 * Write-ahead for a flush (dcpid -push): b goes into dir as "<time>-<batch>.prep" (path in
 * path), which senders ignore, before the flush writes its files; then dcpi_spool_commit
 * renames it to .batch, after dcpi_spool_replace put in what the flush really wrote when part of
 * it failed. A .prep left by a process killed mid-flush is made a .batch by dcpi_spool_recover
 * (dcpi_pusher_start calls it): the fleet then has every sample of that flush, even those the
 * killed process never wrote to its database. DCPI_EFULL as dcpi_spool_put.
 */
int dcpi_spool_prepare(const char *dir, uint64_t max_bytes, const dcpi_fleet_batch_t *b, char *path,
                       size_t len, dcpi_spool_stats_t *st, char *err);
int dcpi_spool_replace(const char *path, const dcpi_fleet_batch_t *b, char *err);
int dcpi_spool_commit(const char *path, char *err);
void dcpi_spool_recover(const char *dir);
/* Send the spooled batches oldest first, each removed once committed; stops at the first
 * failure (the batch stays) and returns it. Counts in st. url opened per call. */
int dcpi_spool_flush(const char *dir, const char *url, dcpi_spool_stats_t *st, char *err);
/* Count the spooled batches into st->queued, st->queued_bytes. */
void dcpi_spool_count(const char *dir, dcpi_spool_stats_t *st);

/*
 * A background sender (a thread): every second, or when kicked, it sends the spool with
 * dcpi_spool_flush; after a failure it waits 1 s, then 2, 4, ... up to 60 s (with jitter).
 * It never blocks its caller: dcpi_pusher_kick and dcpi_pusher_stats only take a mutex.
 */
typedef struct dcpi_pusher dcpi_pusher_t;
int dcpi_pusher_start(const char *url, const char *dir, dcpi_pusher_t **out, char *err);
void dcpi_pusher_kick(dcpi_pusher_t *p);
void dcpi_pusher_stats(dcpi_pusher_t *p, dcpi_spool_stats_t *out);
/* Add to the pusher's counts what the caller's dcpi_spool_put dropped. */
void dcpi_pusher_dropped(dcpi_pusher_t *p, uint64_t rows);
/* Try once more to send everything (the attempt under way, bounded by its 30 s per request, or
 * one more whose requests get what is left of timeout_s, at least 1 s each, so that a store that
 * hangs holds up an exit that long only), then stop the thread; what is left stays spooled for
 * the next dcpid -push on this database. */
void dcpi_pusher_stop(dcpi_pusher_t *p, double timeout_s);

#endif

/* ---- a whole database (dcpipush) ------------------------------------------------------------ */

/* One pushed epoch, for the caller's report. */
typedef struct dcpi_fleet_pushed {
    const char *epoch;
    size_t rows;
    int sent; /* 0: the store had it already */
} dcpi_fleet_pushed_t;

/* Push every epoch of db (or the one epoch_spec selects, as -epoch: "latest", "latest-N", a
 * name) as host (NULL: hostname), each its own batch (slot: host and epoch), calling report after
 * each. Stops at the first error. */
int dcpi_fleet_push_db(const char *url, const char *db, const char *host, const char *epoch_spec,
                       void (*report)(void *arg, const dcpi_fleet_pushed_t *p), void *arg,
                       char *err);
