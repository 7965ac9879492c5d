/*
 * work-demo.c - the bundled sample workload for `make demo` and the end-to-end tests.
 *
 * Three hot functions with clearly unequal, known shares of the CPU time: hot_mul does about
 * 60% of the work, hot_add about 30%, hot_xor about 10% (each does the same loop body
 * `rounds` times per call, called in a 6:3:1 ratio). Run time is set by the first argument in
 * milliseconds (default 2000); it prints a checksum so the work cannot be optimized away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t hot_mul(uint64_t x, int rounds)
{
    for (int i = 0; i < rounds; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

__attribute__((noinline)) static uint64_t hot_add(uint64_t x, int rounds)
{
    for (int i = 0; i < rounds; i++)
        x = (x + 0x9e3779b97f4a7c15ULL) ^ (x >> 7);
    return x;
}

__attribute__((noinline)) static uint64_t hot_xor(uint64_t x, int rounds)
{
    for (int i = 0; i < rounds; i++)
        x = (x ^ (x << 13)) + 0x2545f4914f6cdd1dULL;
    return x;
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
    double end = now_ms() + ms;
    uint64_t x = 1;
    const int rounds = 100000;
    while (now_ms() < end) {
        for (int k = 0; k < 6; k++)
            x = hot_mul(x, rounds);
        for (int k = 0; k < 3; k++)
            x = hot_add(x, rounds);
        x = hot_xor(x, rounds);
    }
    sink = x;
    printf("work-demo: checksum %016llx\n", (unsigned long long)x);
    return 0;
}
