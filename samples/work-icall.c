/*
 * work-icall.c - a workload for LLVM sample profiles (tests/e2e/export_llvm.sh,
 * docs/dcpiexport.md): an indirect call with an exact target mix, a hot loop, and a function
 * inlined into two callers. Built by the test with clang -O2 -gline-tables-only
 * -fdebug-info-for-profiling.
 *   work-icall [MS [skewed] [tail]]   run for MS milliseconds of this process's CPU time
 *   (default 2000); skewed: the 90/5/5 mix instead of 50/30/20; tail: a tail call too (below)
 * Before it starts it prints its truth on stdout: truth icall_t0=50 icall_t1=30 icall_t2=20, the
 * targets' shares of the calls at the indirect call (percent, exact per round). The lines of the
 * hot loop, the indirect call, the tail call and scale() carry the markers HOT-LINE, ICALL-LINE,
 * TAIL-LINE and SCALE-LINE, for the test to find them.
 *
 * Each round runs: dispatch() (the indirect call, NSEQ calls whose targets are the entries of
 * seq[], which holds the targets in exactly the shares above, in an order reshuffled every
 * round by random transpositions, so no predictor learns it), with `tail` tails() (NSEQ / 4
 * calls of tail_call(), whose tail call through a pointer always goes to icall_t2), hot_loop()
 * (about two thirds of the round's time: a multiply-add over an array, one source line), and
 * via_a() and via_b(), which both inline scale(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSEQ     1000 /* a multiple of 10: 500 / 300 / 200 */
#define NHOT     4096
#define HOT_REPS 2

typedef long (*target_fn)(long);

__attribute__((noinline)) long icall_t0(long x)
{
    return x + 1;
}

__attribute__((noinline)) long icall_t1(long x)
{
    return x * 3;
}

__attribute__((noinline)) long icall_t2(long x)
{
    return x ^ 0x55;
}

static target_fn seq[NSEQ];
static long hot[NHOT];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void shuffle_some(void)
{
    for (int k = 0; k < NSEQ / 16; k++) {
        int i = (int)(next_random() % NSEQ), j = (int)(next_random() % NSEQ);
        target_fn t = seq[i];
        seq[i] = seq[j];
        seq[j] = t;
    }
}

__attribute__((noinline)) long dispatch(long acc)
{
    for (int i = 0; i < NSEQ; i++)
        acc += seq[i](acc + i); /* ICALL-LINE */
    return acc;
}

target_fn tail_fn; /* icall_t2, set in main: not a constant the compiler could call directly */

/* A tail call through a pointer after some work of its own (one basic block, so PC samples land
 * in it): clang -O2 makes it `jmp [rip + tail_fn]`, a call in the IR. */
__attribute__((noinline)) long tail_call(long x)
{
    for (int k = 0; k < 4; k++) /* unrolled: no branch */
        x = (x * 0x9e3779b97f4a7c15) ^ (x >> 7);
    return tail_fn(x); /* TAIL-LINE */
}

__attribute__((noinline)) long tails(long acc)
{
    for (int i = 0; i < NSEQ / 4; i++)
        acc += tail_call(acc + i);
    return acc;
}

__attribute__((noinline)) long hot_loop(long s)
{
    for (int r = 0; r < HOT_REPS; r++)
        for (int i = 0; i < NHOT; i++)
            s += hot[i] * (hot[i] ^ (s + r)); /* HOT-LINE */
    return s;
}

static inline long scale(long x)
{
    return (x * 7 + 1) / (long)((unsigned long)x % 13 + 1); /* SCALE-LINE */
}

__attribute__((noinline)) long via_a(long n)
{
    long s = 0;
    for (long i = 1; i <= n; i++)
        s += scale(i + s);
    return s;
}

__attribute__((noinline)) long via_b(long n)
{
    long s = 0;
    for (long i = 1; i <= n; i++)
        s -= scale(i * 3 - s);
    return s;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 2000;
    int skewed = 0, tail = 0;
    for (int i = 2; i < argc; i++) {
        skewed |= strcmp(argv[i], "skewed") == 0;
        tail |= strcmp(argv[i], "tail") == 0;
    }
    int p0 = skewed ? 90 : 50, p1 = skewed ? 5 : 30;
    static const target_fn t[3] = {icall_t0, icall_t1, icall_t2};
    tail_fn = t[2];
    for (int i = 0; i < NSEQ; i++)
        seq[i] = t[i < NSEQ * p0 / 100 ? 0 : i < NSEQ * (p0 + p1) / 100 ? 1 : 2];
    for (int i = 0; i < NHOT; i++)
        hot[i] = (long)(next_random() & 0xffff);
    printf("truth icall_t0=%d icall_t1=%d icall_t2=%d\n", p0, p1, 100 - p0 - p1);
    fflush(stdout);
    long acc = 0, rounds = 0;
    double start = cpu_ms();
    while (cpu_ms() - start < ms) {
        shuffle_some();
        acc = dispatch(acc);
        if (tail)
            acc = tails(acc);
        acc = hot_loop(acc);
        acc += via_a(200) + via_b(200);
        rounds++;
    }
    fprintf(stderr, "rounds %ld acc %ld\n", rounds, acc);
    return 0;
}
