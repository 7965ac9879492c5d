/*
 * trap_cost.c - what the kernel work under a value sample costs a thread on this machine (issue
 * 29 item 1): a system call, the perf ioctls the inproc agent makes (enable + disable, modify,
 * a new period), and an execute breakpoint's hit delivered as a synchronous SIGTRAP (the
 * agent's way) or written into a perf ring with no signal, between hits of a pointer chase over
 * a small and a large working set (what the hit costs the program's own code afterwards shows
 * there). Microseconds of the thread's CPU (CLOCK_THREAD_CPUTIME_ID), each the extra time over
 * the same loop without the kernel work (hits: the median of 7 interleaved pairs).
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

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
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

static int bp_open(int how, int disabled)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof a;
    a.bp_type = HW_BREAKPOINT_X;
    a.bp_addr = (unsigned long)target;
    a.bp_len = sizeof(long);
    a.sample_period = 1;
    a.exclude_kernel = a.exclude_hv = 1;
    a.disabled = (unsigned)disabled;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The extra us per hit of a breakpoint on target() delivered as how, with m chase steps over
 * mb MB between hits: the median of REPS interleaved pairs (breakpoint off, on), so a
 * neighbour's load moves both halves of a pair alike. */
#define REPS 7
static double hit_us(int how, long n, int m, long mb)
{
    double d[REPS];
    if (make_chase(mb) < 0)
        return -1;
    int fd = bp_open(how, 1);
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

static void ioctl_costs(long n)
{
    double t0 = cpu_s();
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    printf("| a system call (getppid) | %.2f |\n", (cpu_s() - t0) / (double)n * 1e6);
    int fd = bp_open(HIT_SIGNAL, 1);
    t0 = cpu_s();
    for (long i = 0; i < n; i++) {
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    }
    printf("| breakpoint IOC_ENABLE + IOC_DISABLE (not hit) | %.2f |\n",
           (cpu_s() - t0) / (double)n * 1e6);
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
    static const long mbs[] = {1, 64};
    for (int i = 0; i < 2; i++) {
        printf("| a hit, SIGTRAP to the thread, %ld MB chased between hits | %.2f |\n", mbs[i],
               hit_us(HIT_SIGNAL, n, 200, mbs[i]));
        printf("| a hit, into a perf ring (no signal), %ld MB chased between hits | %.2f |\n",
               mbs[i], hit_us(HIT_RING, n, 200, mbs[i]));
    }
    return 0;
}
