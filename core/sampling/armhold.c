/*
 * armhold.c - arm holders: a real-time thread per CPU holding its CPU from an arm trigger until
 * the loop armed it (see armhold.h). The hand-over is one slot per ring: the holder posts the
 * trigger (IDLE -> POSTED) and spins; the loop takes it (POSTED -> TAKEN, compare-and-swap) and
 * releases it (-> IDLE) once armed; a holder whose wait passes max_hold_ns gives up (POSTED ->
 * EXPIRED, compare-and-swap: exactly one of the two wins) and the loop, finding it EXPIRED,
 * counts it as run on (-> IDLE), as it does one it takes after max_hold_ns (its holder had no
 * CPU to give up: the loop ran there at the same priority, and the thread may have migrated).
 */
#include "core/sampling/armhold.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

enum { IDLE = 0, POSTED = 1, TAKEN = 2, EXPIRED = 3 };

typedef struct holder {
    _Alignas(64) dcpi_armhold_t *h;
    int ring, cpu, started;
    pthread_t th;
    int state;          /* IDLE, POSTED, TAKEN, EXPIRED (atomic) */
    unsigned ntrig;     /* triggers since the loop's last take (atomic) */
    dcpi_sample_t trig; /* the posted trigger: the holder's until POSTED, the loop's after */
    uint64_t posted_ns; /* when it was posted */
    int alive;          /* 0 starting, 1 running with its CPU and priority, -1 not (atomic) */
    /* the holder's counters (atomic: the loop reads them for status) */
    uint64_t holds, timeouts, busy, lost, wake_ns, hold_ns, max_hold_ns;
} holder_t;

struct dcpi_armhold {
    dcpi_sampler_t *s;
    pid_t self;
    uint64_t max_hold_ns;
    int wake_fd, stop_fd;
    int n;
    holder_t *hs;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define LOAD(p)     __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define ADD(p, v)   __atomic_add_fetch(p, v, __ATOMIC_RELAXED)
#define CAS(p, o, n)                                                                               \
    __extension__({                                                                                \
        int o_ = (o);                                                                              \
        __atomic_compare_exchange_n(p, &o_, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);             \
    })

/* Hold the CPU until the loop has released the posted trigger, or max_hold_ns passed. */
static void hold(holder_t *k, uint64_t t0)
{
    int st;
    uint64_t now = t0;
    while ((st = LOAD(&k->state)) == POSTED || st == TAKEN) {
        now = mono_ns();
        if (st == POSTED && now - t0 > k->h->max_hold_ns && CAS(&k->state, POSTED, EXPIRED)) {
            ADD(&k->timeouts, 1);
            break;
        }
        sched_yield(); /* the loop may be queued on this CPU at the same priority */
    }
    ADD(&k->holds, 1);
    ADD(&k->hold_ns, now - t0);
    if (now - t0 > LOAD(&k->max_hold_ns))
        STORE(&k->max_hold_ns, now - t0);
}

/* Read the ring's triggers; post the newest one and hold when the slot is free. */
static void on_triggers(holder_t *k)
{
    dcpi_sample_t s;
    unsigned n;
    uint64_t lost, t0;
    int got = dcpi_sampler_take_triggers(k->h->s, k->ring, &s, &n, &lost);
    t0 = mono_ns();
    ADD(&k->ntrig, n);
    if (lost)
        ADD(&k->lost, lost);
    if (!got || s.pid == (uint32_t)k->h->self)
        return;
    if (LOAD(&k->state) != IDLE) { /* the loop has not taken the last one yet */
        ADD(&k->busy, 1);
        return;
    }
    k->trig = s;
    k->posted_ns = t0;
    STORE(&k->state, POSTED);
    uint64_t one = 1;
    if (write(k->h->wake_fd, &one, sizeof one) < 0) { /* cannot fail on an eventfd below max */
    }
    ADD(&k->wake_ns, t0 > s.time ? t0 - s.time : 0);
    hold(k, t0);
}

static int become_holder(const holder_t *k)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(k->cpu, &set);
    struct sched_param sp = {.sched_priority = 1};
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
           pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

static void *holder_main(void *arg)
{
    holder_t *k = arg;
    if (!become_holder(k)) {
        STORE(&k->alive, -1); /* the loop reads this ring's triggers itself */
        return NULL;
    }
    STORE(&k->alive, 1);
    struct pollfd p[2] = {{.fd = dcpi_sampler_trigger_fd(k->h->s, k->ring), .events = POLLIN},
                          {.fd = k->h->stop_fd, .events = POLLIN}};
    int hup = 0;
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN)
            on_triggers(k);
        if ((hup = (p[0].revents & (POLLHUP | POLLERR)) != 0))
            break; /* the ring's owner event is gone (its thread exited) */
    }
    /* a posted trigger the loop has not taken: given up */
    CAS(&k->state, POSTED, EXPIRED);
    if (hup) /* whatever other threads still write there: the loop reads it at its drains */
        STORE(&k->alive, -1);
    return NULL;
}

int dcpi_armhold_start(dcpi_sampler_t *s, pid_t self, uint64_t max_hold_ns, dcpi_armhold_t **out,
                       char *err)
{
    dcpi_armhold_t *h = calloc(1, sizeof *h);
    int n = dcpi_sampler_nrings(s);
    if (!h || !(h->hs = aligned_alloc(64, sizeof(holder_t) * (size_t)(n > 0 ? n : 1)))) {
        free(h);
        return dcpi__errf(err, DCPI_ENOMEM, "arm holders: out of memory");
    }
    memset(h->hs, 0, sizeof(holder_t) * (size_t)(n > 0 ? n : 1));
    *h = (dcpi_armhold_t){.s = s, .self = self, .max_hold_ns = max_hold_ns, .n = n, .hs = h->hs};
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->wake_fd < 0 || h->stop_fd < 0) {
        int e = errno;
        dcpi_armhold_free(h);
        return dcpi__errf(err, dcpi__errno_code(e), "arm holders: eventfd: %s", strerror(e));
    }
    for (int i = 0; i < n; i++) {
        holder_t *k = &h->hs[i];
        *k = (holder_t){.h = h, .ring = i, .cpu = dcpi_sampler_ring_cpu(s, i)};
        if (dcpi_sampler_trigger_fd(s, i) < 0)
            continue;
        int rc = pthread_create(&k->th, NULL, holder_main, k);
        if (rc != 0) {
            dcpi_armhold_free(h);
            return dcpi__errf(err, dcpi__errno_code(rc), "arm holders: pthread_create: %s",
                              strerror(rc));
        }
        k->started = 1;
    }
    *out = h;
    return 0;
}

void dcpi_armhold_free(dcpi_armhold_t *h)
{
    if (!h)
        return;
    uint64_t one = 1;
    if (h->stop_fd >= 0 && write(h->stop_fd, &one, sizeof one) < 0) { /* cannot fail */
    }
    for (int i = 0; i < h->n; i++)
        if (h->hs[i].started)
            pthread_join(h->hs[i].th, NULL);
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    if (h->stop_fd >= 0)
        close(h->stop_fd);
    free(h->hs);
    free(h);
}

int dcpi_armhold_wake_fd(const dcpi_armhold_t *h)
{
    return h ? h->wake_fd : -1;
}

void dcpi_armhold_clear_wake(dcpi_armhold_t *h)
{
    uint64_t v;
    if (h && read(h->wake_fd, &v, sizeof v) < 0) { /* EAGAIN: nothing posted since */
    }
}

int dcpi_armhold_take(dcpi_armhold_t *h, int i, dcpi_sample_t *s, unsigned *ntrig)
{
    *ntrig = 0;
    if (!h || i < 0 || i >= h->n || dcpi_sampler_trigger_fd(h->s, i) < 0)
        return DCPI_ARMHOLD_NONE;
    holder_t *k = &h->hs[i];
    int alive = LOAD(&k->alive);
    if (alive < 0) { /* no holder here: read the ring now, without a hold */
        uint64_t lost;
        int got = dcpi_sampler_take_triggers(h->s, i, s, ntrig, &lost);
        *ntrig += __atomic_exchange_n(&k->ntrig, 0, __ATOMIC_RELAXED);
        ADD(&k->lost, lost);
        return got && s->pid != (uint32_t)h->self ? DCPI_ARMHOLD_ARM : DCPI_ARMHOLD_NONE;
    }
    if (alive == 0)
        return DCPI_ARMHOLD_NONE; /* still starting */
    *ntrig = __atomic_exchange_n(&k->ntrig, 0, __ATOMIC_RELAXED);
    int st = LOAD(&k->state);
    if (st == EXPIRED) {
        STORE(&k->state, IDLE);
        return DCPI_ARMHOLD_RANON;
    }
    if (st != POSTED || !CAS(&k->state, POSTED, TAKEN))
        return LOAD(&k->state) == EXPIRED ? (STORE(&k->state, IDLE), DCPI_ARMHOLD_RANON)
                                          : DCPI_ARMHOLD_NONE;
    if (mono_ns() - k->posted_ns > h->max_hold_ns) { /* its holder could not run to give up */
        ADD(&k->timeouts, 1);
        STORE(&k->state, IDLE);
        return DCPI_ARMHOLD_RANON;
    }
    *s = k->trig;
    return DCPI_ARMHOLD_ARM;
}

void dcpi_armhold_release(dcpi_armhold_t *h, int i)
{
    if (h && i >= 0 && i < h->n)
        CAS(&h->hs[i].state, TAKEN, IDLE);
}

void dcpi_armhold_stats(const dcpi_armhold_t *h, dcpi_armhold_stats_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; h && i < h->n; i++) {
        holder_t *k = &h->hs[i];
        out->holders += LOAD(&k->alive) == 1;
        out->holds += LOAD(&k->holds);
        out->timeouts += LOAD(&k->timeouts);
        out->busy += LOAD(&k->busy);
        out->lost += LOAD(&k->lost);
        out->wake_ns += LOAD(&k->wake_ns);
        out->hold_ns += LOAD(&k->hold_ns);
        if (LOAD(&k->max_hold_ns) > out->max_hold_ns)
            out->max_hold_ns = LOAD(&k->max_hold_ns);
    }
}
