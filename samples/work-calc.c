/*
 * work-calc.c - the workload of dcpicalc's end-to-end test (tests/e2e/calc_blocks.sh): one
 * procedure whose blocks run in a ratio known by construction.
 *   work-calc [MS]   run calc_loop for MS milliseconds of this process's CPU time (default 2000)
 *
 * calc_loop(n, x) runs n iterations of a loop whose body is an if/else on i % 4 == 0: the
 * then-branch runs in exactly 1 of 4 iterations, the else-branch in 3 of 4 (n is a multiple of
 * 4). Both branches are one inline-asm block of CALC_CHAIN dependent `imul r, r, K` on the same
 * register x (the constants differ, 3 and 5, so the compiler cannot merge the two branches), so
 * a branch takes the same time per execution by construction: CALC_CHAIN multiply latencies,
 * serialised through x from one iteration to the next. The pattern (period 4) is learnt by the
 * branch predictor, so neither branch pays for mispredictions. At the end it prints
 * "calls C iterations N then T else E" on stdout (T:E is exactly 1:3).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CALC_N 4096 /* iterations per call, a multiple of 4 */

#define IMUL4(k)                                                                                   \
    "imul $" #k ", %0, %0\n\t"                                                                     \
    "imul $" #k ", %0, %0\n\t"                                                                     \
    "imul $" #k ", %0, %0\n\t"                                                                     \
    "imul $" #k ", %0, %0\n\t"
#define CALC_CHAIN(k) IMUL4(k) IMUL4(k) IMUL4(k) IMUL4(k) /* 16 imul */

static uint64_t n_then, n_else;

__attribute__((noinline)) uint64_t calc_loop(uint64_t n, uint64_t x)
{
    for (uint64_t i = 0; i < n; i++) {
        if (i % 4 == 0)
            __asm__ volatile(CALC_CHAIN(3) : "+r"(x));
        else
            __asm__ volatile(CALC_CHAIN(5) : "+r"(x));
    }
    return x;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 2000;
    if (ms <= 0) {
        fprintf(stderr, "usage: work-calc [MS]\n");
        return 2;
    }
    uint64_t x = 1, calls = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end) {
        x = calc_loop(CALC_N, x | 1);
        calls++;
    }
    n_then = calls * (CALC_N / 4);
    n_else = calls * CALC_N - n_then;
    printf("calls %llu iterations %llu then %llu else %llu (x %llx)\n", (unsigned long long)calls,
           (unsigned long long)(calls * CALC_N), (unsigned long long)n_then,
           (unsigned long long)n_else, (unsigned long long)x);
    return 0;
}
