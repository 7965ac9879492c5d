/*
 * trap_cost.c - what the kernel work under a value sample costs a thread on this machine (issue
 * 29 item 1): a system call, the perf ioctls the inproc agent makes (enable + disable, modify,
 * a new period), and an execute breakpoint's hit delivered as a synchronous SIGTRAP (the
 * agent's way) or written into a perf ring with no signal, between hits of a pointer chase over
 * a small and a large working set (what the hit costs the program's own code afterwards shows
 * there), the agent's whole cycle (a tick that arms, the hit), and what an armed breakpoint that
 * waits costs the code of its 64-byte line. Microseconds of the thread's CPU
 * (CLOCK_THREAD_CPUTIME_ID), each the extra time over the same loop without the kernel work
 * (hits: the median of 7 interleaved pairs).
 * Usage: trap_cost [N (20000)]   (bench/RESULTS.md, "what a trap costs here")
 */
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { HIT_SIGNAL, HIT_RING };

static volatile long sink;
static long *chase;
static long nchase;

__attribute__((noinline)) static void target(long x)
{
    sink += x;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The agent's cycle (cycle_us): its tick's and its breakpoint's fds, what a tick does, counts */
#define TICK_DATA 0x71c4ul
#define BP_DATA   0xb9ul
static int cyc_tick = -1, cyc_bp = -1, cyc_arm;
static unsigned long long cyc_period;
static volatile long cyc_ticks, cyc_hits;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    /* siginfo's perf fields (TRAP_PERF): after si_addr, the event's sig_data */
    unsigned long data = ((const unsigned long *)(const void *)&si->si_addr)[1];
    if (data == TICK_DATA) {
        cyc_ticks++;
        unsigned long long p = cyc_period / 4 + (unsigned long long)rand() % (cyc_period * 3 / 2);
        ioctl(cyc_tick, PERF_EVENT_IOC_PERIOD, &p);
        if (cyc_arm)
            ioctl(cyc_bp, PERF_EVENT_IOC_ENABLE, 0);
    } else if (data == BP_DATA) {
        cyc_hits++;
        ioctl(cyc_bp, PERF_EVENT_IOC_DISABLE, 0);
    }
}

/* n rounds of m pointer-chase steps then a call of target(); seconds of CPU. */
static double rounds(long n, int m)
{
    long p = 0;
    double t0 = cpu_s();
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < m; k++)
            p = chase[p];
        target(p);
    }
    return cpu_s() - t0;
}

/* A random cycle over mb megabytes (Sattolo), so every step misses caches and TLB alike. */
static int make_chase(long mb)
{
    free(chase);
    nchase = mb * 1024 * 1024 / (long)sizeof(long);
    if (!(chase = malloc((size_t)nchase * sizeof(long))))
        return -1;
    for (long i = 0; i < nchase; i++)
        chase[i] = i;
    srand(1);
    for (long i = nchase - 1; i > 0; i--) {
        long j = ((long)rand() * RAND_MAX + rand()) % i, t = chase[i];
        chase[i] = chase[j];
        chase[j] = t;
    }
    return 0;
}

/* An execute breakpoint on addr, one sample per execution, user mode only. */
static void bp_attr(struct perf_event_attr *a, unsigned long addr)
{
    memset(a, 0, sizeof *a);
    a->type = PERF_TYPE_BREAKPOINT;
    a->size = sizeof *a;
    a->bp_type = HW_BREAKPOINT_X;
    a->bp_addr = addr;
    a->bp_len = sizeof(long);
    a->sample_period = 1;
    a->exclude_kernel = a->exclude_hv = 1;
}

static int bp_open(int how, int disabled, unsigned long data)
{
    struct perf_event_attr a;
    bp_attr(&a, (unsigned long)target);
    a.disabled = (unsigned)disabled;
    a.sig_data = data;
    if (how == HIT_SIGNAL) {
        a.sigtrap = a.remove_on_exec = 1;
    } else {
        a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER;
        a.sample_regs_user = 0xff0fff;
        a.wakeup_events = 1000000;
    }
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0 && how == HIT_RING &&
        mmap(NULL, 257 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED) {
        close(fd);
        return -1;
    }
    return fd;
}

static int cmp_double(const void *a, const void *b);
#define REPS 7

/* A register loop at the start of its own 64-byte line; line_cold is an instruction of the
 * same line that never runs, next_line_cold one of the next line (both after the loop). */
extern char line_cold[], next_line_cold[];
__attribute__((noinline, aligned(64))) static unsigned long line_loop(unsigned long x, long n)
{
    for (long i = 0; i < n; i++)
        __asm__ volatile("add %1, %0\n\t"
                         "xor $7, %0\n\t"
                         "ror $3, %0\n\t"
                         : "+r"(x)
                         : "r"(0x9e3779b97f4a7c15ul));
    __asm__ volatile("jmp 1f\n"
                     "line_cold: nop\n"
                     ".balign 64\n"
                     "next_line_cold: nop\n"
                     "1:");
    return x;
}

/* The loop's time with an enabled execute breakpoint (never hit) on a cold instruction of its
 * own 64-byte line and of the next line, over the time without: what an arm waiting for a
 * cold instruction costs the code around it. */
static void line_costs(long n)
{
    static char *const where[] = {line_cold, next_line_cold};
    static const char *const what[] = {"its own 64-byte line", "the next 64-byte line"};
    unsigned long x = 1;
    for (int w = 0; w < 2; w++) {
        struct perf_event_attr a;
        bp_attr(&a, (unsigned long)where[w]);
        a.disabled = 1;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            printf("| a loop with a breakpoint armed on a cold instruction of %s | perf_event_open "
                   "failed |\n",
                   what[w]);
            continue;
        }
        double r[REPS];
        for (int i = 0; i < REPS; i++) {
            double t0 = cpu_s();
            x = line_loop(x, n);
            double base = cpu_s() - t0;
            ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
            t0 = cpu_s();
            x = line_loop(x, n);
            r[i] = (cpu_s() - t0) / base;
            ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        }
        close(fd);
        qsort(r, REPS, sizeof r[0], cmp_double);
        printf("| a loop with a breakpoint armed on a cold instruction of %s (times as long) | "
               "%.2fx |\n",
               what[w], r[REPS / 2]);
    }
    sink += (long)x;
}

/* The inproc agent's cycle alone: a cpu-clock tick with sigtrap at random periods of mean
 * period_us of CPU (the next one set by IOC_PERIOD in the handler) and, with arm, an execute
 * breakpoint on target() enabled at the tick and disabled at its hit (SIGTRAP): per tick and per
 * arm-and-hit, the extra us over the loop without ticks (medians of REPS interleaved triples). */
static void cycle_us(long n, int m, long mb, double period_us)
{
    double tick[REPS], hit[REPS];
    struct perf_event_attr c;
    if (make_chase(mb) < 0)
        return;
    memset(&c, 0, sizeof c);
    c.type = PERF_TYPE_SOFTWARE;
    c.size = sizeof c;
    c.config = PERF_COUNT_SW_CPU_CLOCK;
    c.sample_period = cyc_period = (unsigned long long)(period_us * 1e3);
    c.sigtrap = c.remove_on_exec = c.exclude_kernel = c.disabled = 1;
    c.sig_data = TICK_DATA;
    cyc_tick = (int)syscall(SYS_perf_event_open, &c, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    cyc_bp = bp_open(HIT_SIGNAL, 1, BP_DATA);
    if (cyc_tick < 0 || cyc_bp < 0) {
        printf("| the agent's cycle | perf_event_open failed |\n");
        return;
    }
    ioctl(cyc_bp, PERF_EVENT_IOC_DISABLE, 0);
    rounds(n / 4, m);
    for (int r = 0; r < REPS; r++) {
        double base = rounds(n, m);
        long t0 = cyc_ticks;
        cyc_arm = 0;
        ioctl(cyc_tick, PERF_EVENT_IOC_ENABLE, 0);
        double ticked = rounds(n, m);
        ioctl(cyc_tick, PERF_EVENT_IOC_DISABLE, 0);
        long t1 = cyc_ticks, h0 = cyc_hits;
        cyc_arm = 1;
        ioctl(cyc_tick, PERF_EVENT_IOC_ENABLE, 0);
        double armed = rounds(n, m);
        ioctl(cyc_tick, PERF_EVENT_IOC_DISABLE, 0);
        ioctl(cyc_bp, PERF_EVENT_IOC_DISABLE, 0);
        long t2 = cyc_ticks, h1 = cyc_hits;
        double per_tick = (ticked - base) / (double)(t1 - t0 ? t1 - t0 : 1);
        tick[r] = per_tick * 1e6;
        hit[r] =
            (armed - base - per_tick * (double)(t2 - t1)) / (double)(h1 - h0 ? h1 - h0 : 1) * 1e6;
    }
    close(cyc_tick);
    close(cyc_bp);
    qsort(tick, REPS, sizeof tick[0], cmp_double);
    qsort(hit, REPS, sizeof hit[0], cmp_double);
    printf("| the agent's cycle, %ld MB chased, a tick every %.0f us: a tick (IOC_PERIOD in it) | "
           "%.2f |\n",
           mb, period_us, tick[REPS / 2]);
    printf("| the agent's cycle, %ld MB chased, a tick every %.0f us: an arm (IOC_ENABLE at the "
           "tick) and its hit (SIGTRAP, IOC_DISABLE) | %.2f |\n",
           mb, period_us, hit[REPS / 2]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The extra us per hit of a breakpoint on target() delivered as how, with m chase steps over
 * mb MB between hits: the median of REPS interleaved pairs (breakpoint off, on), so a
 * neighbour's load moves both halves of a pair alike. */
static double hit_us(int how, long n, int m, long mb)
{
    double d[REPS];
    if (make_chase(mb) < 0)
        return -1;
    int fd = bp_open(how, 1, 0);
    if (fd < 0)
        return -1;
    rounds(n / 4, m); /* warm */
    for (int r = 0; r < REPS; r++) {
        double base = rounds(n, m);
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        double with = rounds(n, m);
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        d[r] = (with - base) / (double)n * 1e6;
    }
    close(fd);
    qsort(d, REPS, sizeof d[0], cmp_double);
    return d[REPS / 2];
}

static char never_run[128] __attribute__((aligned(64)));

static void ioctl_costs(long n)
{
    double t0 = cpu_s();
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    printf("| a system call (getppid) | %.2f |\n", (cpu_s() - t0) / (double)n * 1e6);
    int fd = bp_open(HIT_SIGNAL, 1, 0);
    t0 = cpu_s();
    for (long i = 0; i < n; i++) {
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    }
    printf("| breakpoint IOC_ENABLE + IOC_DISABLE (not hit) | %.2f |\n",
           (cpu_s() - t0) / (double)n * 1e6);
    /* the agent's arm on another target than its breakpoint's last one: the new address by
     * MODIFY_ATTRIBUTES (enabled there), then the disable */
    struct perf_event_attr m[2]; /* on data: never executed */
    for (int j = 0; j < 2; j++) {
        bp_attr(&m[j], (unsigned long)&never_run[j * 64]);
        m[j].sigtrap = m[j].remove_on_exec = 1;
    }
    t0 = cpu_s();
    long ok = 0;
    for (long i = 0; i < n; i++) {
        ok += ioctl(fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &m[i & 1]) == 0;
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    }
    if (ok == n)
        printf("| breakpoint IOC_MODIFY_ATTRIBUTES to a new address + IOC_DISABLE (not hit) | %.2f "
               "|\n",
               (cpu_s() - t0) / (double)n * 1e6);
    else
        printf("| breakpoint IOC_MODIFY_ATTRIBUTES | failed (%ld of %ld) |\n", n - ok, n);
    close(fd);
    struct perf_event_attr c;
    memset(&c, 0, sizeof c);
    c.type = PERF_TYPE_SOFTWARE;
    c.size = sizeof c;
    c.config = PERF_COUNT_SW_CPU_CLOCK;
    c.sample_period = 1000000000;
    fd = (int)syscall(SYS_perf_event_open, &c, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    t0 = cpu_s();
    for (long i = 0; i < n; i++) {
        unsigned long long p = 1000000000ull + (unsigned long long)(i & 1023);
        ioctl(fd, PERF_EVENT_IOC_PERIOD, &p);
    }
    printf("| cpu-clock IOC_PERIOD (the agent's next tick) | %.2f |\n",
           (cpu_s() - t0) / (double)n * 1e6);
    close(fd);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &sa, NULL);
    printf("| what | us of the thread's CPU |\n| --- | --- |\n");
    ioctl_costs(n * 5);
    line_costs(n * 4000);
    static const long mbs[] = {1, 64};
    for (int i = 0; i < 2; i++) {
        printf("| a hit, SIGTRAP to the thread, %ld MB chased between hits | %.2f |\n", mbs[i],
               hit_us(HIT_SIGNAL, n, 200, mbs[i]));
        printf("| a hit, into a perf ring (no signal), %ld MB chased between hits | %.2f |\n",
               mbs[i], hit_us(HIT_RING, n, 200, mbs[i]));
        cycle_us(n * 40, 20, mbs[i], 500);
    }
    return 0;
}
