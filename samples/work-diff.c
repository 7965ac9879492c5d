/*
 * work-diff.c - a workload with two modes for dcpidiff (tests/e2e/diff_modes.sh,
 * bench/dcpidiff_noise.sh, bench/dcpidiff_vs_perf.sh):
 *   work-diff MODE [UNITS]   MODE 1 or 2, UNITS rounds of work (default 400)
 * Every round runs 100 units of one loop spread over three procedures with identical bodies:
 *   mode 1: diff_f 20, diff_g 40, diff_h 40 units;  mode 2: diff_f 40, diff_g 30, diff_h 30
 * so diff_f's share of the work moves by +20 points from mode 1 to mode 2 and diff_g's and
 * diff_h's by -10 each. The work is counted in loop iterations (UNIT_ITERS per unit), never in
 * time, so a slower or busier machine changes how long it runs, not the shares. Prints the sum
 * so that no loop is optimised away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define UNIT_ITERS 20000

/* The three bodies are the same loop: each iteration costs the same in each procedure. */
#define BODY(seed)                                                                                 \
    uint64_t s = (seed) + round;                                                                   \
    for (long i = 0; i < units * UNIT_ITERS; i++)                                                  \
        s = s * 6364136223846793005ULL + (uint64_t)i;                                              \
    return s;

__attribute__((noinline)) uint64_t diff_f(long units, long round)
{
    BODY(1)
}
__attribute__((noinline)) uint64_t diff_g(long units, long round)
{
    BODY(2)
}
__attribute__((noinline)) uint64_t diff_h(long units, long round)
{
    BODY(3)
}

int main(int argc, char **argv)
{
    int mode = argc > 1 ? atoi(argv[1]) : 0;
    long rounds = argc > 2 ? atol(argv[2]) : 400;
    if ((mode != 1 && mode != 2) || rounds <= 0) {
        fprintf(stderr, "usage: work-diff 1|2 [ROUNDS]\n");
        return 2;
    }
    long f = mode == 1 ? 20 : 40, gh = mode == 1 ? 40 : 30;
    uint64_t sum = 0;
    for (long r = 0; r < rounds; r++)
        sum += diff_f(f, r) + diff_g(gh, r) + diff_h(gh, r); /* r: no call is hoisted */
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
