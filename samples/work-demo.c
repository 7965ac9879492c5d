/*
 * work-demo.c - the bundled sample workload for `make demo` and the end-to-end tests.
 *
 * Three hot functions with clearly unequal shares of the CPU time: hot_mul is called 6 times,
 * hot_add 3 times and hot_xor once per round, each running the same number of loop iterations
 * (their bodies differ slightly in cost, so measure shares rather than assume 60/30/10).
 *   work-demo [MS]       run for MS milliseconds of its own CPU time (default 2000): a competing
 *                        load on the machine stretches the run, not the number of samples
 *   work-demo -n ROUNDS  run a fixed amount of work (for overhead benchmarks)
 * It prints a checksum (so the work cannot be optimized away) and, on stderr, its own CPU
 * time as "work-demo: cpu SECONDS", which benchmarks use to separate it from the profiler's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t one_round(uint64_t x)
{
    const int rounds = 100000;
    for (int k = 0; k < 6; k++)
        x = hot_mul(x, rounds);
    for (int k = 0; k < 3; k++)
        x = hot_add(x, rounds);
    return hot_xor(x, rounds);
}

int main(int argc, char **argv)
{
    uint64_t x = 1;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++)
            x = one_round(x);
    } else {
        double ms = argc > 1 ? atof(argv[1]) : 2000.0;
        double end = cpu_ms() + ms;
        while (cpu_ms() < end)
            x = one_round(x);
    }
    sink = x;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    printf("work-demo: checksum %016llx\n", (unsigned long long)x);
    fprintf(stderr, "work-demo: cpu %.4f\n", cpu);
    return 0;
}
