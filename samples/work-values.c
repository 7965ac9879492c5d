/*
 * work-values.c - workload with known values for value profiling (tests/e2e/values.sh).
 *
 * The truth it carries (per execution of the instruction):
 *   - lea_loop: the instruction `lea (%a,%b), %r` (inline asm, so the regs backend's interpreter
 *     computes its result) runs on (a, b) pairs whose sums are 7 in 60% of executions, 3 in 15%,
 *     11 in 10%, 2 in 10% and 13 in 5% (exactly: each round holds NSEQ pairs in those shares).
 *   - stride_loop: the load `mov (%base,%idx,8), %r` (inline asm) reads p[j] for j in
 *     {0, 8, 16, 24, 32} u64 over a 64-byte aligned array: its effective addresses are base,
 *     base+64, ..., base+256, exactly 20% each. main prints "base 0x..." (the array's address)
 *     on stdout before it starts.
 *
 * Why the truth per execution is also the truth per unit of CPU time (what a PC sample's
 * registers measure): dcpi's regs backend reports the values of the instruction at the
 * interrupted PC, so an execution is sampled in proportion to the time the CPU spends just before
 * retiring it. The order of the values is a uniformly random permutation that changes every
 * round (see shuffle(), a separate procedure), so every value is preceded
 * by the same mix of code and data, and the instruction's own latency does not depend on its
 * value (a lea; a load from one of five L1-resident lines). No timing effect of any
 * microarchitecture can favour one value, so the shares of sampled values converge to the
 * shares above on every x86-64 CPU.
 *
 * Both asm instructions follow an `imul x, x` on a loop-carried chain so that the loops' samples
 * fall mostly on them; the tests read the instruction's own sample count from the listing, so
 * how many land there does not matter for the truth.
 *   work-values [MS]   run for MS milliseconds of this process's CPU time (default 2000), so a
 *                      competing load on the machine does not shorten the sampled work
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NSEQ   2000 /* values per round: multiples of 20 keep the shares exact */
#define STRIDE 8    /* u64 elements: 64 bytes */
#define NADDR  5

static volatile uint64_t sink;

/* The lea's (a, b) pairs and how many of each per 20: sums 7 x12, 3 x3, 11 x2, 2 x2, 13 x1. */
static const struct {
    uint64_t a, b;
    int per20;
} pairs[] = {{0, 7, 12}, {1, 2, 3}, {4, 7, 2}, {1, 1, 2}, {6, 7, 1}};

static uint64_t array[NADDR * STRIDE] __attribute__((aligned(64)));
static uint64_t lea_a[NSEQ], lea_b[NSEQ], ld_idx[NSEQ];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static inline __attribute__((always_inline)) uint64_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A uniform index below n (multiply-high: no division). */
static inline __attribute__((always_inline)) int below(int n)
{
    return (int)(((xorshift() >> 32) * (uint64_t)n) >> 32);
}

static inline __attribute__((always_inline)) void swap(uint64_t *x, uint64_t *y, int i, int j)
{
    uint64_t t = x[i];
    x[i] = x[j];
    x[j] = t;
    if (y) {
        t = y[i];
        y[i] = y[j];
        y[j] = t;
    }
}

/* A uniformly random order of the values (the pairs move together): Fisher-Yates at the start;
 * then each round NSEQ / 16 random transpositions, which keep the order uniformly distributed
 * (the uniform distribution is invariant under them) at a small part of a full shuffle's cost. */
__attribute__((noinline)) static void shuffle(uint64_t *x, uint64_t *y, int n, int full)
{
    if (!full) {
        for (int i = 0; i < n / 16; i++)
            swap(x, y, below(n), below(n));
        return;
    }
    for (int i = n - 1; i > 0; i--)
        swap(x, y, i, below(i + 1));
}
/* One round: per value two loads, the imul, the lea, an add, the loop control. */
__attribute__((noinline)) static uint64_t lea_loop(uint64_t acc)
{
    register uint64_t x __asm__("r11") = 3; /* one register: no copies around the imul */
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t r;
        __asm__ volatile("imul %1, %1\n\tlea (%2,%3), %0"
                         : "=r"(r), "+r"(x)
                         : "r"(lea_a[k]), "r"(lea_b[k]));
        acc += r;
    }
    return acc + x;
}

/* One round: per value a load of the index, the imul, the strided load, an add, loop control. */
__attribute__((noinline)) static uint64_t stride_loop(uint64_t acc)
{
    const uint64_t *base = array;
    register uint64_t x __asm__("r11") = 3;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t v;
        __asm__ volatile("imul %1, %1\n\tmov (%2,%3,8), %0"
                         : "=r"(v), "+r"(x)
                         : "r"(base), "r"(ld_idx[k])
                         : "memory");
        acc += v;
    }
    return acc + x;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill(void)
{
    int k = 0;
    for (int i = 0; i < NSEQ / 20; i++)
        for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++)
            for (int c = 0; c < pairs[p].per20; c++, k++) {
                lea_a[k] = pairs[p].a;
                lea_b[k] = pairs[p].b;
            }
    for (k = 0; k < NSEQ; k++)
        ld_idx[k] = (uint64_t)(k % NADDR) * STRIDE;
    for (int i = 0; i < NADDR * STRIDE; i++)
        array[i] = (uint64_t)i;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 2000.0;
    fill();
    printf("base %p\n", (void *)array);
    fflush(stdout);
    shuffle(lea_a, lea_b, NSEQ, 1);
    shuffle(ld_idx, NULL, NSEQ, 1);
    uint64_t acc = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end) {
        /* per round the lea runs twice as often as the load */
        for (int i = 0; i < 2; i++) {
            shuffle(lea_a, lea_b, NSEQ, 0);
            acc = lea_loop(acc);
        }
        shuffle(ld_idx, NULL, NSEQ, 0);
        acc = stride_loop(acc);
    }
    sink = acc;
    printf("work-values: checksum %016llx\n", (unsigned long long)acc);
    return 0;
}
