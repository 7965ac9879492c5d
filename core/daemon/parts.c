/*
 * parts.c - the daemon's parts (part.h): the registry (the ELF section dcpi_parts, sorted by
 * order at first use), each part's state made at its first use, and the hooks called over all
 * of them.
 */
#include "core/daemon/part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/daemon/daemon-int.h"

/* Set by the linker around the section (hidden: libdcpi.so and a program each see their own). */
extern const dcpi__part_ops_t *const __start_dcpi_parts[] __attribute__((visibility("hidden")));
extern const dcpi__part_ops_t *const __stop_dcpi_parts[] __attribute__((visibility("hidden")));

static const dcpi__part_ops_t *sorted[DCPI__MAXPARTS];
static size_t nsorted;

static int by_order(const void *a, const void *b)
{
    const dcpi__part_ops_t *x = *(const dcpi__part_ops_t *const *)a;
    const dcpi__part_ops_t *y = *(const dcpi__part_ops_t *const *)b;
    return x->order != y->order ? (x->order > y->order) - (x->order < y->order)
                                : strcmp(x->name, y->name);
}

const dcpi__part_ops_t *const *dcpi__parts(size_t *n)
{
    if (!nsorted) { /* (the daemon's thread: set up before anything else runs) */
        for (const dcpi__part_ops_t *const *p = __start_dcpi_parts; p < __stop_dcpi_parts; p++)
            if (*p && nsorted < DCPI__MAXPARTS)
                sorted[nsorted++] = *p;
        qsort(sorted, nsorted, sizeof sorted[0], by_order);
    }
    *n = nsorted;
    return sorted;
}

void dcpi__parts_names(char *buf, size_t len)
{
    size_t n, at = 0;
    const dcpi__part_ops_t *const *t = dcpi__parts(&n);
    buf[0] = 0;
    for (size_t i = 0; i < n && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%s", i ? " " : "", t[i]->name);
        at += k > 0 ? (size_t)k : 0;
    }
}

static int index_of(const dcpi__part_ops_t *ops)
{
    size_t n;
    const dcpi__part_ops_t *const *t = dcpi__parts(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i] == ops)
            return (int)i;
    return -1;
}

static void *made(daemon_t *d, size_t i, const dcpi__part_ops_t *ops)
{
    if (!d->part[i])
        d->part[i] = calloc(1, ops->size ? ops->size : 1);
    return d->part[i];
}

void *dcpi__part(daemon_t *d, const dcpi__part_ops_t *ops)
{
    int i = index_of(ops);
    return i < 0 ? NULL : made(d, (size_t)i, ops);
}

void *dcpi__part_if(const daemon_t *d, const dcpi__part_ops_t *ops)
{
    int i = index_of(ops);
    return i < 0 ? NULL : d->part[i];
}

/* EACH(i, t): every part i of table t (its ops t[i]); MADE(i): part i's state, made now;
 * HAS(i): part i's state if it was made (NULL otherwise). */
#define EACH(i, t)                                                                                 \
    size_t n_;                                                                                     \
    const dcpi__part_ops_t *const *t = dcpi__parts(&n_);                                           \
    for (size_t i = 0; i < n_; i++)
#define MADE(i) made(d, i, t[i])
#define HAS(i)  d->part[i]
/* Every part's hook that returns 0 or an error (err), made first; the first error stops. */
#define FIRST_ERROR(hook, ...)                                                                     \
    EACH(i, t)                                                                                     \
    {                                                                                              \
        int rc = t[i]->hook && MADE(i) ? t[i]->hook(d, HAS(i), __VA_ARGS__) : 0;                   \
        if (rc < 0)                                                                                \
            return rc;                                                                             \
    }                                                                                              \
    return 0

int dcpi__parts_setup(daemon_t *d, char *err)
{
    FIRST_ERROR(setup, err);
}

void dcpi__parts_sampler(daemon_t *d, dcpi_sampler_opts_t *x)
{
    EACH(i, t) if (t[i]->sampler && MADE(i)) t[i]->sampler(d, HAS(i), x);
}

int dcpi__parts_start(daemon_t *d, char *err)
{
    FIRST_ERROR(start, err);
}

int dcpi__parts_target(daemon_t *d, pid_t pid, char *err)
{
    FIRST_ERROR(target, pid, err);
}

int dcpi__parts_spawned(daemon_t *d)
{
    EACH(i, t) if (t[i]->spawned && HAS(i) && t[i]->spawned(d, HAS(i)) < 0) return -1;
    return 0;
}

int dcpi__parts_record(daemon_t *d, const dcpi_sample_t *s, int ring)
{
    EACH(i, t) if (t[i]->record && HAS(i) && t[i]->record(d, HAS(i), s, ring)) return 1;
    return 0;
}

void dcpi__parts_sample(daemon_t *d, int ev, uint32_t image, uint32_t off)
{
    EACH(i, t) if (t[i]->sample && HAS(i)) t[i]->sample(d, HAS(i), ev, image, off);
}

void dcpi__parts_user(daemon_t *d, const dcpi_sample_t *s, int ring)
{
    EACH(i, t) if (t[i]->user && HAS(i)) t[i]->user(d, HAS(i), s, ring);
}

int dcpi__parts_unresolved(daemon_t *d, pid_t pid, uint64_t ip)
{
    EACH(i, t) if (t[i]->unresolved && MADE(i) && t[i]->unresolved(d, HAS(i), pid, ip)) return 1;
    return 0;
}

void dcpi__parts_resolved(daemon_t *d, pid_t pid, uint64_t ip, uint64_t ts, const dcpi_image_t *img,
                          uint32_t *off)
{
    EACH(i, t) if (t[i]->resolved && HAS(i)) t[i]->resolved(d, HAS(i), pid, ip, ts, img, off);
}

void dcpi__parts_pid(daemon_t *d, pid_t pid, int what)
{
    EACH(i, t) if (t[i]->pid && HAS(i)) t[i]->pid(d, HAS(i), pid, what);
}

void dcpi__parts_mmap(daemon_t *d, const dcpi__mmap_t *m)
{
    EACH(i, t) if (t[i]->mmap && HAS(i)) t[i]->mmap(d, HAS(i), m);
}

void dcpi__parts_loss(daemon_t *d, int throttled, uint64_t n)
{
    EACH(i, t) if (t[i]->loss && HAS(i)) t[i]->loss(d, HAS(i), throttled, n);
}

int dcpi__parts_drain(daemon_t *d, uint64_t now_ns)
{
    int gone = 0;
    EACH(i, t) if (t[i]->drain && HAS(i)) gone |= t[i]->drain(d, HAS(i), now_ns);
    return gone;
}

int dcpi__parts_timeout(daemon_t *d)
{
    int ms = -1;
    EACH(i, t)
    {
        int m = t[i]->timeout && HAS(i) ? t[i]->timeout(d, HAS(i)) : -1;
        if (m >= 0 && (ms < 0 || m < ms))
            ms = m;
    }
    return ms;
}

int dcpi__parts_polls(daemon_t *d)
{
    EACH(i, t) if (t[i]->polls && HAS(i) && t[i]->polls(d, HAS(i))) return 1;
    return 0;
}

int dcpi__parts_fd(daemon_t *d, size_t i)
{
    size_t n;
    const dcpi__part_ops_t *const *t = dcpi__parts(&n);
    return i < n && t[i]->fd && HAS(i) ? t[i]->fd(d, HAS(i)) : -1;
}

void dcpi__parts_tick(daemon_t *d)
{
    EACH(i, t) if (t[i]->tick && MADE(i)) t[i]->tick(d, HAS(i));
}

int dcpi__parts_epoch(daemon_t *d, char *err)
{
    FIRST_ERROR(epoch, err);
}

void dcpi__parts_ended(daemon_t *d)
{
    EACH(i, t) if (t[i]->ended && HAS(i)) t[i]->ended(d, HAS(i));
}

void dcpi__parts_ahead(daemon_t *d, dcpi_agg_t *tab, const uint64_t *periods)
{
    EACH(i, t) if (t[i]->ahead && HAS(i)) t[i]->ahead(d, HAS(i), tab, periods);
}

void dcpi__parts_written(daemon_t *d, const dcpi__group_t *g)
{
    EACH(i, t) if (t[i]->written && MADE(i)) t[i]->written(d, HAS(i), g);
}

void dcpi__parts_lost(daemon_t *d, int ev, uint64_t lost)
{
    EACH(i, t) if (t[i]->lost && HAS(i)) t[i]->lost(d, HAS(i), ev, lost);
}

void dcpi__parts_flush(daemon_t *d, const uint64_t *periods, flush_result_t *r)
{
    EACH(i, t) if (t[i]->flush && MADE(i)) t[i]->flush(d, HAS(i), periods, r);
}

int dcpi__parts_full(daemon_t *d, char *why, size_t len)
{
    EACH(i, t) if (t[i]->full && HAS(i) && t[i]->full(d, HAS(i), why, len)) return 1;
    return 0;
}

void dcpi__parts_child(daemon_t *d)
{
    EACH(i, t) if (t[i]->child && HAS(i)) t[i]->child(d, HAS(i));
}

int dcpi__parts_control(daemon_t *d, const char *cmd, dcpi__answer_t *a)
{
    EACH(i, t) if (t[i]->control && MADE(i) && t[i]->control(d, HAS(i), cmd, a)) return 1;
    return 0;
}

void dcpi__parts_status(daemon_t *d, dcpi__answer_t *a)
{
    EACH(i, t) if (t[i]->status && HAS(i)) t[i]->status(d, HAS(i), a);
}

void dcpi__parts_stop(daemon_t *d)
{
    EACH(i, t) if (t[i]->stop && HAS(i)) t[i]->stop(d, HAS(i));
}

void dcpi__parts_report(daemon_t *d)
{
    EACH(i, t) if (t[i]->report && HAS(i)) t[i]->report(d, HAS(i));
}

void dcpi__parts_exit(daemon_t *d)
{
    EACH(i, t)
    {
        if (HAS(i) && t[i]->exit)
            t[i]->exit(d, HAS(i));
        free(HAS(i));
        d->part[i] = NULL;
    }
}
