/*
 * work-phased.c - workloads whose value mix depends on where the program is in its phases, for
 * tests/e2e/values_phased.sh and bench/hotlist_accuracy.sh: a value sampler that takes some
 * executions more often than others (the first iterations of a loop, one call site, one thread,
 * the start of a process) reads a wrong mix here, where work-accuracy.c's shuffled loops hide it.
 *   work-phased MODE [MS]   run MODE for MS milliseconds of this process's CPU time (default 2000)
 * Every mode measures one `div rcx` (its divisor in rcx: 3, 7 or 10) in one procedure (migrate:
 * `div qword [..]`, the divisor in memory and in rcx):
 *   phased     ph_div    two loops called in turn, ph_div's then ph_other's, for n iterations
 *                        each, n cycling through 16, 128, ... 33554432 (phases from ~0.1 us to
 *                        ~100 ms), each length run as often as it takes to total 33554432
 *                        iterations; the divisor depends on the iteration's place in its call:
 *                        3 in the first eighth, then 7 at every fourth, else 10
 *   brief      br_div    two threads, each calling br_div's loop and ph_other's in turn for 4096
 *                        iterations each (~10 us a call; the divisor by place, as in phased): a
 *                        value sampler whose thread runs on for more than a call before its
 *                        breakpoint is set takes a later call's first iterations (3) too often
 *                        (e.g. one that arms from one CPU at a time: the threads run on two)
 *   callsites  cs_div    one routine called from two loops in turn (~1 ms each): site a divides
 *                        by 10 / 7 / 3 in 70 / 20 / 10%, site b by 3 / 7 in 60 / 40%, with other
 *                        work between its calls
 *   threads    th_div    two threads run th_div's loop: thread a all the time with 10 / 7 / 3 in
 *                        70 / 20 / 10%, thread b a quarter of the time (1 ms runs, 3 ms sleeps)
 *                        with 3 / 7 in 60 / 40%
 *   rare       rare_div  a routine called every ~200 ms that runs ~10 ms (the divisor by place,
 *                        as in phased); the rest of the time goes to other work
 *   recurse    rec_div   a recursion 12 deep, each level running a few iterations of a loop whose
 *                        divisor depends on the depth (10 at depths 0-7, 7 at 8-10, 3 at 11)
 *   spawn      sp_div    a child process forked every ~40 ms runs sp_div's loop (the divisor by
 *                        place) for ~20 ms and exits; the parent spins between children
 *   migrate    mig_div   threads a and b as in threads, moved by the main thread every 200 us,
 *                        each to the other of the first two allowed CPUs (sched_setaffinity; a
 *                        and b on opposite ones); mig_div's div reads its divisor from memory
 *                        (`div qword [..]`, rcx holding the same value): a value sampler whose
 *                        breakpoint stays on the CPU where it was armed, or that another
 *                        thread's trigger can take away, loses the arms of the thread that waits
 *                        or moves more (b). Needs 2 CPUs (exits 3 when there are fewer)
 * The truth is counted, not assumed: each execution of the measured div adds 1 to its divisor's
 * count (children send theirs through a pipe, threads add theirs at the end), and at the end the
 * mode prints on stdout
 *   truth LABEL=0xVALUE:PERCENT ...   (label the divisor, percent of executions, 3 decimals)
 *   executions N
 * and "rounds N cpu_ms T" on stderr. Nothing here is random but the order of the phased lengths'
 * calls (a fixed xorshift sequence), so the truth is exact for each run.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static uint64_t count[11]; /* executions of the measured div by divisor */

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The measured instruction: q / d with d in rcx. */
#define DIV(q, d) __asm__ volatile("xor %%edx, %%edx\n\tdiv %%rcx" : "+a"(q) : "c"(d) : "rdx", "cc")

/* The divisor of iteration i of a call of n iterations: by place. */
static inline uint64_t by_place(uint64_t i, uint64_t n)
{
    return i * 8 < n ? 3 : i % 4 == 0 ? 7 : 10;
}

__attribute__((noinline)) static uint64_t ph_div(uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = by_place(i, n), q = (acc & 0xffff) + 1000;
        DIV(q, d);
        count[d]++;
        acc += q;
    }
    return acc;
}

/* Other work of about the same cost per iteration, no div. */
__attribute__((noinline)) static uint64_t ph_other(uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        acc = acc * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(acc));
        acc ^= acc >> 29;
        __asm__ volatile("" : "+r"(acc));
        acc += acc >> 7;
    }
    return acc;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define PH_TOTAL (1ull << 25) /* iterations per length per round */

static uint64_t round_phased(uint64_t acc)
{
    /* every length's calls in a random interleaving: lengths 16 << 3k, k = 0..7 */
    uint64_t left[8];
    for (int k = 0; k < 8; k++)
        left[k] = PH_TOTAL >> (4 + 3 * k);
    for (;;) {
        int k = (int)(xorshift() % 8), tries = 0;
        while (left[k] == 0 && tries++ < 8)
            k = (k + 1) % 8;
        if (left[k] == 0)
            return acc;
        left[k]--;
        uint64_t n = 16ull << (3 * k);
        acc = ph_div(n, acc);
        acc = ph_other(n, acc);
    }
}

/* ---- brief: two threads of short calls */
typedef struct br_arg {
    volatile int *stop;
    uint64_t count[11];
} br_arg_t;

__attribute__((noinline)) static uint64_t br_div(br_arg_t *a, uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = by_place(i, n), q = (acc & 0xffff) + 1000;
        DIV(q, d);
        a->count[d]++;
        acc += q;
    }
    return acc;
}

static void *br_main(void *p)
{
    br_arg_t *a = p;
    uint64_t acc = 1;
    while (!*a->stop)
        for (int i = 0; i < 64; i++) {
            acc = br_div(a, 4096, acc);
            acc = ph_other(4096, acc);
        }
    sink = acc;
    return NULL;
}

/* ---- callsites */
static const uint64_t mix_a[20] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
                                   10, 10, 10, 10, 7,  7,  7,  7,  3,  3};
static const uint64_t mix_b[20] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 7, 7, 7, 7, 7, 7, 7, 7};

__attribute__((noinline)) static uint64_t cs_div(uint64_t d, uint64_t acc)
{
    uint64_t q = (acc & 0xffff) + 1000;
    DIV(q, d);
    count[d]++;
    return acc + q;
}

__attribute__((noinline)) static uint64_t cs_site_a(uint64_t acc)
{
    for (int i = 0; i < 200000; i++)
        acc = cs_div(mix_a[i % 20], acc);
    return acc;
}

__attribute__((noinline)) static uint64_t cs_site_b(uint64_t acc)
{
    for (int i = 0; i < 40000; i++) {
        acc = cs_div(mix_b[(i * 7) % 20], acc);
        acc = ph_other(16, acc);
    }
    return acc;
}

/* ---- threads */
typedef struct th_arg {
    const uint64_t *mix;
    int duty; /* 1: all the time; 4: 1 ms of every 4 */
    volatile int *stop;
    uint64_t (*div)(struct th_arg *, uint64_t, uint64_t); /* th_div, mig_div */
    volatile pid_t tid;                                   /* set by the thread (migrate) */
    uint64_t count[11];
} th_arg_t;

__attribute__((noinline)) static uint64_t th_div(th_arg_t *a, uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = a->mix[i % 20], q = (acc & 0xffff) + 1000;
        DIV(q, d);
        a->count[d]++;
        acc += q;
    }
    return acc;
}

static void *th_main(void *p)
{
    th_arg_t *a = p;
    uint64_t acc = 1;
    a->tid = (pid_t)syscall(SYS_gettid);
    while (!*a->stop) {
        double t0 = wall_ms();
        while (wall_ms() < t0 + 1.0)
            acc = a->div(a, 2000, acc);
        if (a->duty > 1)
            usleep((useconds_t)(1000 * (a->duty - 1)));
    }
    sink = acc;
    return NULL;
}

/* ---- migrate: as threads, the threads moved from CPU to CPU by the main thread */
static int mig_cpus[2];

__attribute__((noinline)) static uint64_t mig_div(th_arg_t *a, uint64_t n, uint64_t acc)
{
    volatile uint64_t m;
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = a->mix[i % 20], q = (acc & 0xffff) + 1000;
        m = d;
        __asm__ volatile("xor %%edx, %%edx\n\tdivq %1" : "+a"(q) : "m"(m), "c"(d) : "rdx", "cc");
        a->count[d]++;
        acc += q;
    }
    return acc;
}

/* Move thread tid to cpu (it may have exited: ignored). */
static void mig_pin(pid_t tid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (tid > 0)
        sched_setaffinity(tid, sizeof set, &set);
}

/* threads and migrate: threads a (mix a, all the time) and b (mix b, 1 ms of every 4) run div
 * until the process has used ms * 1.25 ms of CPU since start (both threads: ~1.25 CPUs' worth);
 * with move, the main thread moves them every 200 us, each to the other of mig_cpus (a and b
 * opposite). The truth: their counts summed. */
static int two_threads(uint64_t (*div)(th_arg_t *, uint64_t, uint64_t), int move, double start,
                       double ms)
{
    volatile int stop = 0;
    th_arg_t a = {.mix = mix_a, .duty = 1, .stop = &stop, .div = div};
    th_arg_t b = {.mix = mix_b, .duty = 4, .stop = &stop, .div = div};
    pthread_t ta, tb;
    if (pthread_create(&ta, NULL, th_main, &a) || pthread_create(&tb, NULL, th_main, &b)) {
        fprintf(stderr, "work-phased: cannot start threads\n");
        return 1;
    }
    for (int k = 0; cpu_ms() < start + ms * 1.25; k ^= 1) {
        if (move) {
            mig_pin(a.tid, mig_cpus[k]);
            mig_pin(b.tid, mig_cpus[k ^ 1]);
        }
        usleep(move ? 200 : 10000);
    }
    stop = 1;
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    for (int i = 0; i < 11; i++)
        count[i] = a.count[i] + b.count[i];
    return 0;
}

static int mig_run(double start, double ms)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
            if (CPU_ISSET(c, &set))
                mig_cpus[n++] = c;
    if (n < 2) {
        fprintf(stderr, "work-phased: migrate needs 2 CPUs\n");
        return 3;
    }
    return two_threads(mig_div, 1, start, ms);
}

/* ---- rare */
__attribute__((noinline)) static uint64_t rare_div(uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = by_place(i, n), q = (acc & 0xffff) + 1000;
        DIV(q, d);
        count[d]++;
        acc += q;
    }
    return acc;
}

/* ---- recurse */
__attribute__((noinline)) static uint64_t rec_div(int depth, uint64_t acc)
{
    if (depth < 11)
        acc = rec_div(depth + 1, acc);
    uint64_t d = depth < 8 ? 10 : depth < 11 ? 7 : 3;
#pragma GCC unroll 1
    for (int i = 0; i < 8; i++) {
        uint64_t q = (acc & 0xffff) + 1000;
        DIV(q, d);
        count[d]++;
        acc += q;
    }
    return acc;
}

/* ---- spawn */
__attribute__((noinline)) static uint64_t sp_div(uint64_t n, uint64_t acc)
{
#pragma GCC unroll 1
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = by_place(i, n), q = (acc & 0xffff) + 1000;
        DIV(q, d);
        count[d]++;
        acc += q;
    }
    return acc;
}

static void child_run(int fd)
{
    memset(count, 0, sizeof count); /* the parent's sums so far are not this child's */
    double t0 = cpu_ms();
    uint64_t acc = 1;
    while (cpu_ms() < t0 + 20)
        acc = sp_div(65536, acc);
    sink = acc;
    ssize_t w = write(fd, count, sizeof count);
    _exit(w == (ssize_t)sizeof count ? 0 : 1);
}

static int spawn_one(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        child_run(fds[1]);
    }
    close(fds[1]);
    uint64_t c[11];
    ssize_t r = read(fds[0], c, sizeof c);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    if (r != (ssize_t)sizeof c || !WIFEXITED(st) || WEXITSTATUS(st))
        return -1;
    for (int i = 0; i < 11; i++)
        count[i] += c[i];
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: work-phased phased|brief|callsites|threads|rare|recurse|spawn|migrate [MS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    double ms = argc > 2 ? atof(argv[2]) : 2000.0, start = cpu_ms(), wstart = wall_ms();
    uint64_t acc = 1;
    long rounds = 0;
    if (strcmp(mode, "phased") == 0) {
        while (cpu_ms() < start + ms) {
            acc = round_phased(acc);
            rounds++;
        }
    } else if (strcmp(mode, "brief") == 0) {
        volatile int stop = 0;
        br_arg_t a = {.stop = &stop}, b = {.stop = &stop};
        pthread_t ta, tb;
        if (pthread_create(&ta, NULL, br_main, &a) || pthread_create(&tb, NULL, br_main, &b)) {
            fprintf(stderr, "work-phased: cannot start threads\n");
            return 1;
        }
        while (cpu_ms() < start + ms)
            usleep(10000);
        stop = 1;
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        for (int i = 0; i < 11; i++)
            count[i] = a.count[i] + b.count[i];
        rounds = 1;
    } else if (strcmp(mode, "callsites") == 0) {
        while (cpu_ms() < start + ms) {
            acc = cs_site_a(acc);
            acc = cs_site_b(acc);
            rounds++;
        }
    } else if (strcmp(mode, "threads") == 0 || strcmp(mode, "migrate") == 0) {
        int rc = mode[0] == 't' ? two_threads(th_div, 0, start, ms) : mig_run(start, ms);
        if (rc)
            return rc;
        rounds = 1;
    } else if (strcmp(mode, "rare") == 0) {
        while (cpu_ms() < start + ms) {
            double t0 = cpu_ms();
            while (cpu_ms() < t0 + 190)
                acc = ph_other(4096, acc);
            acc = rare_div(1 << 22, acc);
            rounds++;
        }
    } else if (strcmp(mode, "recurse") == 0) {
        while (cpu_ms() < start + ms) {
            for (int i = 0; i < 1000; i++)
                acc = rec_div(0, acc);
            rounds++;
        }
    } else if (strcmp(mode, "spawn") == 0) {
        /* the children's CPU time (20 ms each) counts towards MS */
        while (cpu_ms() - start + 20.0 * rounds < ms && wall_ms() < wstart + ms * 3) {
            double t0 = cpu_ms();
            while (cpu_ms() < t0 + 20)
                acc = ph_other(4096, acc);
            if (spawn_one() < 0) {
                fprintf(stderr, "work-phased: a child failed\n");
                return 1;
            }
            rounds++;
        }
    } else {
        usage();
    }
    sink = acc;
    uint64_t total = 0;
    for (int i = 0; i < 11; i++)
        total += count[i];
    printf("truth");
    for (int d = 10; d >= 3; d--)
        if (count[d])
            printf(" %d=0x%x:%.3f", d, d, 100.0 * (double)count[d] / (double)(total ? total : 1));
    printf("\nexecutions %llu\n", (unsigned long long)total);
    fprintf(stderr, "rounds %ld cpu_ms %.1f\n", rounds, cpu_ms());
    return 0;
}
