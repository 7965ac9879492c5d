/*
 * work-values.c - workload with known values for value profiling (tests/e2e/values.sh).
 *
 * The truth it carries:
 *   - lea_loop: the instruction `lea (%a,%b), %r` (inline asm, so the regs backend's interpreter
 *     computes its result) runs on (a, b) pairs from a table of 20 whose sums are:
 *     7 twelve times (60%), 3 three times (15%), 11 twice (10%), 2 twice (10%), 13 once (5%).
 *     So its result is 7 in 60% of executions, and no other value has more than 15%.
 *   - stride_loop: the load `mov (%base,%idx,8), %r` (inline asm) reads p[i * STRIDE] for
 *     i = 0..4 in turn, STRIDE = 8 u64 = 64 bytes, over a 64-byte aligned array: its effective
 *     addresses cycle through base, base+64, ..., base+256, 20% each. main prints
 *     "base 0x..." (the array's address) on stdout before it starts.
 * lea_loop runs twice as many asm instructions per round as stride_loop. In both, the asm
 * instruction follows an `imul x, x` on a loop-carried chain: retirement waits on that imul,
 * and a timer interrupt then reports the next instruction, so nearly all of each loop's
 * samples fall on the lea / the load (measured: 99% and 100%).
 *   work-values [MS]   run for MS milliseconds of wall time (default 2000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NPAIRS  20
#define STRIDE  8 /* u64 elements: 64 bytes */
#define NADDR   5
#define PER_RUN 200000

static volatile uint64_t sink;

/* The (a, b) pairs: a + b as documented at the top. */
static const uint64_t pair_a[NPAIRS] = {0, 3, 6, 1, 4, 1, 2, 5, 0, 3, 6, 1, 4, 7, 2, 5, 0, 3, 6, 1};
static const uint64_t pair_b[NPAIRS] = {7, 0, 1, 10, 3, 1, 5, 2, 3, 4,
                                        7, 6, 7, 0,  0, 2, 3, 4, 1, 6};

static uint64_t array[NADDR * STRIDE] __attribute__((aligned(64)));

/* n rounds over the table: per pair two loads, the imul, the lea, an add, the loop control. */
__attribute__((noinline)) static uint64_t lea_loop(uint64_t acc, int n)
{
    uint64_t x = 3;
    for (int i = 0; i < n; i++)
#pragma GCC unroll 1
        for (int k = 0; k < NPAIRS; k++) {
            uint64_t r;
            __asm__ volatile("imul %1, %1\n\tlea (%2,%3), %0"
                             : "=r"(r), "+r"(x)
                             : "r"(pair_a[k]), "r"(pair_b[k]));
            acc += r;
        }
    return acc + x;
}

/* n rounds over the five addresses: the imul, the load, an add and the loop control. */
__attribute__((noinline)) static uint64_t stride_loop(uint64_t acc, int n)
{
    const uint64_t *base = array;
    uint64_t x = 3;
    for (int i = 0; i < n; i++)
#pragma GCC unroll 1
        for (uint64_t j = 0; j < NADDR * STRIDE; j += STRIDE) {
            uint64_t v;
            __asm__ volatile("imul %1, %1\n\tmov (%2,%3,8), %0"
                             : "=r"(v), "+r"(x)
                             : "r"(base), "r"(j)
                             : "memory");
            acc += v;
        }
    return acc + x;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 2000.0;
    for (int i = 0; i < NADDR * STRIDE; i++)
        array[i] = (uint64_t)i;
    printf("base %p\n", (void *)array);
    fflush(stdout);
    uint64_t acc = 0;
    double end = now_ms() + ms;
    while (now_ms() < end) {
        acc = lea_loop(acc, PER_RUN / NPAIRS * 2);
        acc = stride_loop(acc, PER_RUN / NADDR);
    }
    sink = acc;
    printf("work-values: checksum %016llx\n", (unsigned long long)acc);
    return 0;
}
