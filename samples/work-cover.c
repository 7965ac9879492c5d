/*
 * work-cover.c - the workload of dcpitopcounts' and dcpicoverage's tests (tests/e2e/topcov.sh):
 * one procedure, cover_me, whose code runs by a mode, and a warm procedure with a ninth of its
 * work.
 *   work-cover MODE [MS]   run for MS milliseconds of its own CPU time (default 1000)
 * MODE a runs cover_me's loop LOOP_A, MODE b its loop LOOP_B; its COLD lines run only in any
 * other mode, which the tests never give, so they can never hold a sample. Each round runs
 * cover_me for 9 * ROUND iterations and warm for ROUND (both loops have one multiply-add or
 * xor-shift-add per iteration). The lines are marked (LOOP_A, LOOP_B, COLD, WARM) for the tests
 * to find with grep; -O1 -fno-inline -g (CMakeLists.txt) keeps them as written.
 * It prints its own truth: the share of its CPU time spent in cover_me of cover_me + warm, timed
 * around each call with the thread's CPU clock (a call lasts about a millisecond, the clock read
 * tens of nanoseconds). "Nine times the iterations" is 90% only when both loops cost the same
 * per iteration, which depends on the CPU (loop alignment, sanitizer builds); the time does not.
 * A round's length is drawn at random (ROUND/2 to 3*ROUND/2 iterations of warm, nine times that
 * of cover_me): with a fixed length (~1.1 ms) the rounds kept step with cpu-clock's fixed 1 ms
 * sampling period, and the samples, taken at one phase of the round for long stretches, were not
 * independent draws: cover_me's share read 84.2% for 89.8% from 2490 samples (z -9.3) beside
 * one busy process, 80.1% for 89.3% in the suite; now |z| < 2 in 8 runs there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUND 100000L

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t cover_me(int mode, uint64_t x, long n)
{
    if (mode == 'a') {
        for (long i = 0; i < n; i++)                                 /* LOOP_A */
            x = x * 6364136223846793005ULL + 1442695040888963407ULL; /* LOOP_A */
    } else if (mode == 'b') {
        for (long i = 0; i < n; i++)                    /* LOOP_B */
            x = (x ^ (x >> 7)) + 0x9e3779b97f4a7c15ULL; /* LOOP_B */
    } else {
        x = x * 3 + 1; /* COLD */
        x ^= x >> 5;   /* COLD */
        sink = x;      /* COLD */
    }
    return x;
}

__attribute__((noinline)) static uint64_t warm(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = x * 2862933555777941757ULL + 3037000493ULL; /* WARM */
    return x;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: work-cover a|b [MS]\n");
        return 2;
    }
    int mode = argv[1][0];
    double end = cpu_ms() + (argc > 2 ? atof(argv[2]) : 1000.0);
    uint64_t x = 1;
    double t_cover = 0, t_warm = 0, t0 = cpu_ms(), t1;
    uint64_t r = 88172645463325252ULL; /* xorshift64: each round's length */
    while (t0 < end) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        long n = ROUND / 2 + (long)(r % ROUND);
        x = cover_me(mode, x, 9 * n);
        t1 = cpu_ms();
        t_cover += t1 - t0;
        x = warm(x, n);
        t0 = cpu_ms();
        t_warm += t0 - t1;
    }
    sink = x;
    printf("work-cover: checksum %016llx\n", (unsigned long long)x);
    printf("work-cover: cover_me %.3f%% of cover_me + warm CPU time (%.1f ms, %.1f ms)\n",
           100 * t_cover / (t_cover + t_warm), t_cover, t_warm);
    return 0;
}
