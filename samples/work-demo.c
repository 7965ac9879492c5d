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

/* Each round's length is drawn at random, 50000 to 149999 iterations per call (the same for
 * the ten calls of a round, so their 6:3:1 holds; the mean, and the work of -n ROUNDS, as with
 * 100000 each, the sequence fixed): rounds of one fixed length (~2 ms) kept step with the fixed
 * 1 ms period of cpu-clock sampling, so perf's and dcpid's samples of one run, each taken at its
 * own phase of the rounds, read hot_mul at 74.1% and 64.9% (n 1964 and 1968, z 5.5). */
static uint64_t round_len(void)
{
    static uint64_t r = 88172645463325252ULL; /* xorshift64 */
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    return r;
}

static uint64_t one_round(uint64_t x)
{
    const int rounds = 50000 + (int)(round_len() % 100000);
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
