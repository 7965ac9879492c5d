/*
 * bpcost.c - what the bp backend's triggers, arms and hits cost a thread, measured here at start
 * (see bpcost.h). The reader runs on the CPU of the trigger it reads, as dcpid follows its
 * triggers (core/daemon/bparm.c), and the spinner is free to move as a target is, so the
 * wake-ups, the switches to the reader and back, what the reader's run leaves in the caches and
 * the spinner's moves to the other CPUs are all in the spinner's CPU time.
 */
#include "core/sampling/bpcost.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/sampling/bpslots.h"
#include "core/sampling/thin.h"

#define RING_PAGES   8          /* the calibration's ring (data pages) */
#define CAL_PERIOD   400000     /* ns of the spinner's CPU between two calibration triggers */
#define CAL_ROUNDS   6          /* rounds of (plain, triggers, triggers + arms) */
#define CAL_STRETCH  6          /* ms of each stretch */
#define WS_BYTES     (1u << 20) /* the spinner's working set, read a cache line at a time */
#define WS_LINES     8          /* ... lines per call */
#define TICK_PERIOD  50000      /* ns between two ticks of the tick stretches */
#define TRAP_BATCHES 7
#define TRAP_CALLS   32

/* What the breakpoints of the measurements trap on. */
__attribute__((noinline)) static void trap_target(void)
{
    __asm__ volatile("" ::: "memory");
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds per call of trap_target: the fastest of TRAP_BATCHES batches (a batch the scheduler
 * interrupted is slower, never faster). */
static double per_call(void)
{
    double best = 1e9;
    for (int b = 0; b < TRAP_BATCHES; b++) {
        double t0 = clock_s(CLOCK_MONOTONIC);
        for (int i = 0; i < TRAP_CALLS; i++)
            trap_target();
        double t = (clock_s(CLOCK_MONOTONIC) - t0) / TRAP_CALLS;
        if (t < best)
            best = t;
    }
    return best;
}

int dcpi_bp_trap_cost(double *us)
{
    struct perf_event_attr a;
    dcpi__bp_attr(&a, (uint64_t)(uintptr_t)&trap_target);
    a.sample_period = 1ull << 62; /* counts each hit, never writes a sample */
    a.disabled = 0;
    double plain = per_call();
    int fd = dcpi__perf_open(&a, 0, -1);
    if (fd < 0)
        return fd;
    double trapped = per_call();
    close(fd);
    *us = trapped > plain ? (trapped - plain) * 1e6 : 0.0;
    return 0;
}

/* ---- the spinner: calls trap_target, its CPU time and calls counted per phase */
enum { PH_NONE, PH_PLAIN, PH_TRIG, PH_ARM, PH_TICK0, PH_TICK1, PH_N };

typedef struct spinner {
    volatile int stop, phase;
    volatile pid_t tid;
    volatile uint64_t calls[PH_N];
    volatile double cpu[PH_N];
    unsigned char *ws; /* its working set: what a switch to the reader evicts costs it too */
    uint64_t sum;
} spinner_t;

static void *spin(void *arg)
{
    spinner_t *sp = arg;
    size_t pos = 0;
    sp->tid = (pid_t)syscall(SYS_gettid);
    while (!sp->stop) {
        int ph = sp->phase;
        double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        uint64_t n = 0;
        while (sp->phase == ph && !sp->stop) {
            trap_target();
            for (int i = 0; i < WS_LINES; i++, pos = (pos + 64) % WS_BYTES)
                sp->sum += sp->ws[pos]; /* a program's loop reads its data */
            n++;
        }
        sp->calls[ph] += n;
        sp->cpu[ph] += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    }
    return NULL;
}

/* ---- the reader: the trigger's ring, and the arms it sets */
typedef struct reader {
    int fd, bp, cpu, prog_fd; /* cpu: the one the reader runs on (-1: any) */
    int tick[2];              /* PH_TICK0, PH_TICK1: bare cpu-clock ticks, without and with
                                 the thinning program (keeping none); -1: not measured */
    uint64_t id;
    void *base;
    size_t len;
    unsigned char *data;
    uint64_t size;
    struct perf_event_attr bpa;
    unsigned count, triggers[PH_N], arms;
} reader_t;

static int reader_open(reader_t *r, const dcpi_sampler_opts_t *x, pid_t tid)
{
    dcpi_sampler_opts_t cx = *x;
    cx.trigger_ns = CAL_PERIOD;
    struct perf_event_attr a;
    dcpi_sampler_trigger_attr(&cx, &a);
    r->fd = dcpi__perf_open(&a, tid, -1);
    if (r->fd < 0)
        return r->fd;
    long page = sysconf(_SC_PAGESIZE);
    r->len = (size_t)page * (1 + RING_PAGES);
    r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (r->base == MAP_FAILED) {
        r->base = NULL;
        return -errno;
    }
    r->data = (unsigned char *)r->base + page;
    r->size = (uint64_t)page * RING_PAGES;
    if (ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id) < 0)
        return -errno;
    dcpi__bp_attr(&r->bpa, (uint64_t)(uintptr_t)&trap_target);
    r->bpa.sample_type = a.sample_type; /* the trigger's layout, as dcpi_sampler_layout does */
    r->bpa.sample_regs_user = a.sample_regs_user;
    r->bpa.sample_id_all = 1;
    r->bpa.use_clockid = 1;
    r->bpa.clockid = CLOCK_MONOTONIC;
    return 0;
}

static void reader_close(reader_t *r)
{
    for (int i = 0; i < 2; i++)
        if (r->tick[i] >= 0)
            close(r->tick[i]);
    if (r->bp >= 0)
        close(r->bp);
    if (r->base)
        munmap(r->base, r->len);
    if (r->fd >= 0)
        close(r->fd);
}

/* The tick events (no ring: their samples go nowhere), the second with the thinning program
 * keeping none (thin.h), when it loads. */
static void ticks_open(reader_t *r, pid_t tid)
{
    struct perf_event_attr a = {.size = sizeof a,
                                .type = PERF_TYPE_SOFTWARE,
                                .config = PERF_COUNT_SW_CPU_CLOCK,
                                .sample_period = TICK_PERIOD,
                                .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID,
                                .disabled = 1,
                                .exclude_kernel = 1};
    dcpi_thin_t *t = NULL;
    char why[DCPI_ERRLEN];
    r->tick[0] = dcpi__perf_open(&a, tid, -1);
    if (dcpi_thin_open(0, &t, why) < 0) /* keeps none */
        return;
    r->tick[1] = dcpi__perf_open(&a, tid, -1);
    if (r->tick[1] >= 0 && ioctl(r->tick[1], PERF_EVENT_IOC_SET_BPF, dcpi_thin_prog_fd(t)) < 0) {
        close(r->tick[1]);
        r->tick[1] = -1;
    }
    dcpi_thin_close(t); /* the event holds the program */
}

/* Ticks of tick event i so far: its CPU time over the period. */
static double ticks_of(const reader_t *r, int i)
{
    uint64_t ns = 0;
    if (r->tick[i] < 0 || read(r->tick[i], &ns, sizeof ns) != (ssize_t)sizeof ns)
        return 0;
    return (double)ns / TICK_PERIOD;
}

/* An arm as dcpid sets one: a new breakpoint for the spinner, into the trigger's
 * ring, with the BPF program, REFRESH(count); the previous one closed. */
static void arm(reader_t *r, pid_t tid)
{
    if (r->bp >= 0)
        close(r->bp);
    r->bp = dcpi__perf_open(&r->bpa, tid, -1);
    if (r->bp < 0)
        return;
    if (ioctl(r->bp, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0 ||
        (r->prog_fd >= 0 && ioctl(r->bp, PERF_EVENT_IOC_SET_BPF, r->prog_fd) < 0) ||
        ioctl(r->bp, PERF_EVENT_IOC_REFRESH, (int)r->count) < 0) {
        close(r->bp);
        r->bp = -1;
        return;
    }
    r->arms++;
}

/* Run on cpu, as dcpid follows its triggers (core/daemon/bparm.c). */
static void follow(reader_t *r, int cpu)
{
    cpu_set_t set;
    if (cpu == r->cpu || cpu < 0 || cpu >= CPU_SETSIZE)
        return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0)
        r->cpu = cpu;
}

/* Read the ring: each trigger sample counted for phase ph (and armed on in PH_ARM). */
static void drain(reader_t *r, int ph, pid_t tid)
{
    struct perf_event_mmap_page *m = r->base;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
    while (tail + sizeof(struct perf_event_header) <= head) {
        struct perf_event_header h;
        uint64_t id = 0;
        for (size_t i = 0; i < sizeof h; i++)
            ((unsigned char *)&h)[i] = r->data[(tail + i) % r->size];
        if (h.size == 0)
            break;
        for (size_t i = 0; h.type == PERF_RECORD_SAMPLE && i < sizeof id; i++)
            ((unsigned char *)&id)[i] = r->data[(tail + sizeof h + i) % r->size];
        if (h.type == PERF_RECORD_SAMPLE && id == r->id) { /* IDENTIFIER comes first */
            uint32_t cpu = 0; /* IDENTIFIER IP TID TIME CPU: the CPU at byte 32 */
            for (size_t i = 0; i < sizeof cpu; i++)
                ((unsigned char *)&cpu)[i] = r->data[(tail + sizeof h + 32 + i) % r->size];
            follow(r, (int)cpu);
            r->triggers[ph]++;
            if (ph == PH_ARM)
                arm(r, tid);
        }
        tail += h.size;
    }
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
}

/* One stretch of phase ph: ms of the spinner's run, the trigger on (not in PH_PLAIN). */
static void stretch(reader_t *r, spinner_t *sp, int ph)
{
    double end = clock_s(CLOCK_MONOTONIC) + CAL_STRETCH / 1e3;
    int quiet = ph == PH_PLAIN || ph == PH_TICK0 || ph == PH_TICK1; /* nothing to read */
    int fd = ph == PH_TICK0 ? r->tick[0] : ph == PH_TICK1 ? r->tick[1] : r->fd;
    if (fd < 0)
        return;
    sp->phase = ph;
    if (ph != PH_PLAIN)
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    for (double now; (now = clock_s(CLOCK_MONOTONIC)) < end;) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        int ms = (int)((end - now) * 1e3) + 1;
        if (quiet || poll(&p, 1, ms) <= 0) {
            if (quiet)
                usleep((useconds_t)((end - now) * 1e6) + 1);
            continue;
        }
        drain(r, ph, sp->tid);
    }
    if (ph != PH_PLAIN)
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    sp->phase = PH_NONE;
    if (r->bp >= 0)
        close(r->bp);
    r->bp = -1;
    drain(r, PH_NONE, sp->tid); /* what came in late is not counted */
}

/* The spinner's extra CPU time per call in phase ph against PH_PLAIN, times its calls: seconds. */
static double extra_s(const spinner_t *sp, int ph)
{
    double plain = sp->cpu[PH_PLAIN] / (double)sp->calls[PH_PLAIN];
    return (sp->cpu[ph] / (double)sp->calls[ph] - plain) * (double)sp->calls[ph];
}

/* The calling thread at real-time priority when allowed, as dcpid runs (its policy and
 * affinity saved in the out parameters). */
static void realtime(cpu_set_t *old, int *old_policy, struct sched_param *old_sp)
{
    sched_getaffinity(0, sizeof *old, old);
    *old_policy = sched_getscheduler(0);
    sched_getparam(0, old_sp);
    struct sched_param rt = {.sched_priority = 1};
    sched_setscheduler(0, SCHED_FIFO, &rt);
}

int dcpi_bp_cost_measure(const dcpi_sampler_opts_t *x, unsigned count, int prog_fd,
                         dcpi_bp_cost_t *c)
{
    spinner_t sp = {0};
    reader_t r = {
        .fd = -1, .bp = -1, .prog_fd = prog_fd, .count = count ? count : 1, .tick = {-1, -1}};
    pthread_t th;
    cpu_set_t old;
    int old_policy;
    struct sched_param old_sp;
    int rc = dcpi_bp_trap_cost(&c->hit_us);
    if (rc < 0)
        return rc;
    if (!(sp.ws = calloc(WS_BYTES, 1)))
        return -ENOMEM;
    if (pthread_create(&th, NULL, spin, &sp) != 0) {
        free(sp.ws);
        return -EAGAIN;
    }
    while (!sp.tid)
        usleep(100);
    r.cpu = -1;
    realtime(&old, &old_policy, &old_sp);
    rc = reader_open(&r, x, sp.tid);
    if (rc == 0)
        ticks_open(&r, sp.tid);
    for (int round = 0; rc == 0 && round < CAL_ROUNDS; round++) {
        stretch(&r, &sp, PH_PLAIN);
        stretch(&r, &sp, PH_TRIG);
        stretch(&r, &sp, PH_ARM);
        stretch(&r, &sp, PH_TICK0);
        stretch(&r, &sp, PH_TICK1);
    }
    double ticks[2] = {ticks_of(&r, 0), ticks_of(&r, 1)};
    sp.stop = 1;
    pthread_join(th, NULL);
    free(sp.ws);
    reader_close(&r);
    sched_setscheduler(0, old_policy, &old_sp);
    sched_setaffinity(0, sizeof old, &old);
    if (rc < 0)
        return rc;
    if (!sp.calls[PH_PLAIN] || !sp.calls[PH_TRIG] || !sp.calls[PH_ARM] || !r.triggers[PH_TRIG] ||
        !r.triggers[PH_ARM] || !r.arms)
        return -EAGAIN;
    double trig = extra_s(&sp, PH_TRIG) / r.triggers[PH_TRIG];
    double both = extra_s(&sp, PH_ARM) / r.triggers[PH_ARM]; /* a trigger and its arm */
    c->trigger_us = trig > 0 ? trig * 1e6 : 0.0;
    c->arm_us = both > trig ? (both - trig) * 1e6 * r.triggers[PH_ARM] / r.arms : 0.0;
    c->tick_us = c->prog_us = 0;
    if (ticks[0] > 0 && sp.calls[PH_TICK0]) /* the timer interrupt alone */
        c->tick_us = fmax(extra_s(&sp, PH_TICK0) / ticks[0] * 1e6, 0.0);
    if (ticks[0] > 0 && ticks[1] > 0 && sp.calls[PH_TICK1]) /* the program on top */
        c->prog_us = fmax(
            (extra_s(&sp, PH_TICK1) / ticks[1] - extra_s(&sp, PH_TICK0) / ticks[0]) * 1e6, 0.0);
    c->triggers = r.triggers[PH_TRIG];
    c->arms = r.arms;
    return 0;
}

/* ---- the inproc backend's arm mode: a thread's own tick and breakpoints, signalled to it */
#define IP_ROUNDS   3
#define IP_STRETCH  0.004  /* s of the thread's CPU per stretch */
#define IP_TICK_NS  100000 /* ns between two ticks of the measured stretches */
#define IP_COOKIE   0x5dc1b000ul
#define IP_TRAPPERF 6 /* si_code TRAP_PERF (Linux 5.13+) */
#define IP_DEF_TICK 15.0
#define IP_DEF_ARM  17.0

enum { IP_PLAIN, IP_TICK, IP_ARM, IP_N };

/* Four breakpoint targets, called in turn by the measuring loop. */
__attribute__((noinline)) static void ip_f0(void)
{
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void ip_f1(void)
{
    __asm__ volatile("nop" ::: "memory");
}
__attribute__((noinline)) static void ip_f2(void)
{
    __asm__ volatile("nop\n\tnop" ::: "memory");
}
__attribute__((noinline)) static void ip_f3(void)
{
    __asm__ volatile("nop\n\tnop\n\tnop" ::: "memory");
}

static struct {
    int tick_fd, bp[4], arms, err;
    volatile uint64_t ticks, hits;
    double cpu[IP_N];
    uint64_t calls[IP_N], nticks[IP_N], nhits[IP_N];
} ip;

static void ip_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code != IP_TRAPPERF)
        return;
    unsigned long data = *(const unsigned long *)(const void *)((const char *)&si->si_addr + 8);
    if (data == IP_COOKIE + 0xff) {
        ip.ticks++;
        for (int k = 0; k < ip.arms; k++)
            ioctl(ip.bp[k], PERF_EVENT_IOC_ENABLE, 0);
    } else if (data >= IP_COOKIE && data < IP_COOKIE + 4) {
        ip.hits++;
        ioctl(ip.bp[data - IP_COOKIE], PERF_EVENT_IOC_DISABLE, 0);
    }
}

static int ip_open(void)
{
    void (*fn[4])(void) = {ip_f0, ip_f1, ip_f2, ip_f3};
    struct perf_event_attr a;
    for (int k = 0; k < 4; k++) {
        dcpi__bp_attr(&a, (uint64_t)(uintptr_t)fn[k]);
        a.sample_period = 1;
        a.sigtrap = 1;
        a.remove_on_exec = 1;
        a.disabled = 1;
        a.sig_data = IP_COOKIE + (unsigned long)k;
        if ((ip.bp[k] = dcpi__perf_open(&a, 0, -1)) < 0)
            return ip.bp[k];
    }
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.size = sizeof a;
    a.sample_period = IP_TICK_NS;
    a.sigtrap = 1;
    a.remove_on_exec = 1;
    a.exclude_kernel = 1;
    a.disabled = 1;
    a.sig_data = IP_COOKIE + 0xff;
    return (ip.tick_fd = dcpi__perf_open(&a, 0, -1)) < 0 ? ip.tick_fd : 0;
}

static void ip_stretch(int ph)
{
    ip.arms = ph == IP_ARM ? 4 : 0;
    ioctl(ip.tick_fd, ph == IP_PLAIN ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE, 0);
    uint64_t t0 = ip.ticks, h0 = ip.hits, n = 0;
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), c = c0;
    while (c - c0 < IP_STRETCH) {
        for (int i = 0; i < 4096; i++) { /* the clock is read rarely: ticks in the kernel
                                            arm nothing, as in the agent */
            ip_f0();
            ip_f1();
            ip_f2();
            ip_f3();
        }
        n += 4096;
        c = clock_s(CLOCK_THREAD_CPUTIME_ID);
    }
    ioctl(ip.tick_fd, PERF_EVENT_IOC_DISABLE, 0);
    ip.arms = 0;
    for (int k = 0; k < 4; k++)
        ioctl(ip.bp[k], PERF_EVENT_IOC_DISABLE, 0);
    ip.cpu[ph] += c - c0;
    ip.calls[ph] += n;
    ip.nticks[ph] += ip.ticks - t0;
    ip.nhits[ph] += ip.hits - h0;
}

static void *ip_thread(void *arg)
{
    (void)arg;
    if ((ip.err = ip_open()) < 0)
        return NULL;
    for (int r = 0; r < IP_ROUNDS; r++)
        for (int ph = 0; ph < IP_N; ph++)
            ip_stretch(ph);
    return NULL;
}

int dcpi_inproc_cost_measure(dcpi_inproc_cost_t *c)
{
    *c = (dcpi_inproc_cost_t){.tick_us = IP_DEF_TICK, .arm_us = IP_DEF_ARM};
    memset(&ip, 0, sizeof ip);
    ip.tick_fd = ip.bp[0] = ip.bp[1] = ip.bp[2] = ip.bp[3] = -1;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ip_trap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGTRAP, &sa, &old) != 0)
        return -errno;
    pthread_t t;
    int rc = pthread_create(&t, NULL, ip_thread, NULL);
    if (rc == 0)
        pthread_join(t, NULL);
    for (int k = 0; k < 4; k++)
        if (ip.bp[k] >= 0)
            close(ip.bp[k]);
    if (ip.tick_fd >= 0)
        close(ip.tick_fd);
    sigaction(SIGTRAP, &old, NULL);
    if (rc != 0)
        return -rc;
    if (ip.err < 0)
        return ip.err;
    double per = ip.cpu[IP_PLAIN] / (double)(ip.calls[IP_PLAIN] ? ip.calls[IP_PLAIN] : 1);
    double tick = ip.cpu[IP_TICK] - per * (double)ip.calls[IP_TICK];
    double arm = ip.cpu[IP_ARM] - per * (double)ip.calls[IP_ARM];
    if (!ip.nticks[IP_TICK] || !ip.nhits[IP_ARM])
        return -EAGAIN;
    c->tick_us = tick / (double)ip.nticks[IP_TICK] * 1e6;
    c->arm_us = (arm * 1e6 - c->tick_us * (double)ip.nticks[IP_ARM]) / (double)ip.nhits[IP_ARM];
    c->ticks = ip.nticks[IP_TICK] + ip.nticks[IP_ARM];
    c->hits = ip.nhits[IP_ARM];
    if (c->tick_us < 1) /* noise: never below a plausible floor */
        c->tick_us = 1;
    if (c->arm_us < 1)
        c->arm_us = 1;
    return 0;
}
