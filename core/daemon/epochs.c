/*
 * epochs.c - dcpid's epochs over time: starting one (named by core/store/db.c, described by its
 * epoch.info, core/store/epochs.h), rotating to a new one every -epoch-every, retention
 * (-keep DURATION|SIZE: the oldest epochs of the platform removed, never the current one), and
 * dropping the current epoch when the command it was made for could not start.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/log.h"
#include "core/base/units.h"
#include "core/daemon/daemon-int.h"

/* The epochs part: the counts when the current epoch started, the next -epoch-every rotation
 * (monotonic s, 0: none), whether -keep's warning was given. */
typedef struct epochs {
    uint64_t samples0, lost0;
    double next;
    int keep_warned;
} epochs_t;

DCPI_DAEMON_PART(epochs, .order = 70, .size = sizeof(epochs_t));

static epochs_t *epochs_of(daemon_t *d)
{
    return dcpi__part(d, &part_epochs);
}
#include "core/daemon/daemon.h"
#include "core/store/epochs.h"

uint64_t dcpi__daemon_lost(const daemon_t *d)
{
    uint64_t n = 0;
    for (int i = 0; i < d->nev; i++)
        n += d->st[i].lost;
    return n;
}

/* The current epoch's epoch.info: its counts so far; open while it is written. An ended epoch
 * counts what its last flush wrote: the samples up to that flush's start (later ones, drained
 * while it wrote, go to the next epoch's files). */
void dcpi__daemon_epoch_info(daemon_t *d, int open)
{
    epochs_t *ep = epochs_of(d);
    if (!ep)
        return;
    char err[DCPI_ERRLEN];
    uint64_t samples = open ? d->total_samples : d->samples_at_swap;
    uint64_t lost = open ? dcpi__daemon_lost(d) : d->lost_at_swap;
    dcpi_epoch_info_t info = {.start = d->epoch_start,
                              .end = time(NULL),
                              .samples = samples - ep->samples0,
                              .lost = lost - ep->lost0,
                              .open = open};
    snprintf(info.name, sizeof info.name, "%s", d->epoch);
    if (info.end < info.start)
        info.end = info.start;
    if (d->epoch[0] && dcpi_epoch_info_write(d->db, d->platform, &info, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "epoch info: %s", err);
}

int dcpi__daemon_new_epoch(daemon_t *d, char *err)
{
    epochs_t *ep = epochs_of(d);
    if (!ep)
        return dcpi__errf(err, DCPI_ENOMEM, "new epoch: out of memory");
    char name[DCPI_NAMELEN];
    time_t now = time(NULL);
    int rc = dcpi_db_new_epoch(d->db, d->platform, now, name, err);
    if (rc < 0)
        return rc;
    dcpi__parts_ended(d); /* push.c: the ending epoch's hotlists and chains */
    snprintf(d->epoch, sizeof d->epoch, "%s", name);
    if (dcpi_db_epoch_start(name, &d->epoch_start) < 0)
        d->epoch_start = now;
    ep->samples0 = d->samples_at_swap; /* (the samples since, in memory, go here) */
    ep->lost0 = d->lost_at_swap;
    ep->next = d->o->epoch_every_s ? dcpi__monotonic_s() + d->o->epoch_every_s : 0;
    dcpi__daemon_epoch_info(d, 1);
    dcpi__log(DCPI_LOG_INFO, "epoch %s (%s/%s/%s)", name, d->db, name, d->platform);
    return dcpi__parts_epoch(d, err); /* duty.c's file, kernel.c's symbols, -vrecord's file */
}

/* Remove epoch e (not the current one) and say why. */
static void expire(daemon_t *d, const dcpi_epoch_info_t *e, const char *why)
{
    char err[DCPI_ERRLEN], size[32];
    dcpi__format_size(e->bytes, size, sizeof size);
    if (dcpi_epoch_remove(d->db, e->name, d->platform, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "retention: %s", err);
    else
        dcpi__log(DCPI_LOG_INFO, "retention: epoch %s removed (%s, %s)", e->name, size, why);
}

void dcpi__daemon_retain(daemon_t *d)
{
    epochs_t *ep = epochs_of(d);
    if (!ep)
        return;
    const dcpi_daemon_opts_t *o = d->o;
    if (!o->keep_s && !o->keep_bytes)
        return;
    dcpi_epoch_info_t *v = NULL;
    size_t n = 0;
    char err[DCPI_ERRLEN];
    dcpi_epoch_sweep(d->db);
    if (dcpi_epoch_list(d->db, d->platform, &v, &n, err) < 0) {
        dcpi__log(DCPI_LOG_WARN, "retention: %s", err);
        return;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].bytes;
    time_t now = time(NULL);
    /* oldest first; the current epoch is the newest of this platform and is never removed */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].name, d->epoch) == 0)
            continue;
        if (o->keep_s && (uint64_t)(now - v[i].end) > o->keep_s) {
            expire(d, &v[i], "older than -keep");
            total -= v[i].bytes;
        } else if (o->keep_bytes && total > o->keep_bytes) {
            expire(d, &v[i], "over the -keep size");
            total -= v[i].bytes;
        }
    }
    if (o->keep_bytes && total > o->keep_bytes && !ep->keep_warned++)
        dcpi__log(DCPI_LOG_WARN,
                  "retention: the current epoch alone is over the -keep size (use -epoch-every)");
    free(v);
}

/* Flush, end the current epoch, start the next; then retention. */
int dcpi__daemon_rotate(daemon_t *d, char *err)
{
    flush_result_t r;
    if (dcpi__daemon_flush(d, &r) < 0)
        return dcpi__errf(err, DCPI_EIO, "flush failed: %s", d->flush_error);
    dcpi__daemon_epoch_info(d, 0);
    int rc = dcpi__daemon_new_epoch(d, err);
    if (rc == 0)
        dcpi__daemon_retain(d);
    return rc;
}

void dcpi__daemon_rotate_if_due(daemon_t *d)
{
    epochs_t *ep = epochs_of(d);
    if (!ep)
        return;
    char err[DCPI_ERRLEN];
    if (!ep->next || dcpi__monotonic_s() < ep->next)
        return;
    if (dcpi__daemon_rotate(d, err) < 0) {
        dcpi__log(DCPI_LOG_ERR, "-epoch-every: %s (retrying in %d s)", err, FAIL_RETRY_S);
        ep->next = dcpi__monotonic_s() + FAIL_RETRY_S;
    }
}

void dcpi__daemon_drop_epoch(daemon_t *d)
{
    char err[DCPI_ERRLEN];
    if (!d->epoch[0])
        return;
    if (dcpi_epoch_remove(d->db, d->epoch, d->platform, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "could not remove epoch %s: %s", d->epoch, err);
    else
        dcpi__log(DCPI_LOG_INFO, "epoch %s removed: nothing was profiled", d->epoch);
    d->epoch[0] = 0;
}
