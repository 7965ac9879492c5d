/*
 * work-step.c - workload for the step backend's tests (agent and ptrace).
 *
 * The hot loop (step_loop) loads table[i & 1023] (768 entries hold 0x1111, 256 hold 0x2222:
 * loaded values 3:1), calls step_leaf (a call and a return) and branches back (a taken branch);
 * every 4096 iterations (-c) it makes a getppid system call. Output is deterministic.
 *   work-step [-n ROUNDS] [-c LOG2] [-s] [-f] [-t THREADS] [-b] [-x] [-w]
 *   -n  rounds of 1,000,000 iterations (default 20)
 *   -c  a getppid system call every 2^C iterations (default 12)
 *   -s  install own SIGTRAP and SIGPROF handlers; raise SIGTRAP 5 times and execute int3 5
 *       times; count 20 SIGPROF ticks of an ITIMER_PROF; print the counts
 *   -f  fork a child that runs the same work and prints its own line
 *   -t  run the work in THREADS extra threads as well
 *   -b  block all signals with sigprocmask while working
 *   -x  exec itself once more (without -x) at the end, keeping the environment
 *   -w  print "ready" and run until killed by SIGTERM (for attaching), printing a final line
 *   -j  instead of the above: branch_loop for ROUNDS rounds of 2^20 iterations; the `je` of
 *       branch_pass (inline asm, once per iteration) is taken when pattern[i] is 0: 256 of the
 *       1024 entries, each pass once over all of them, so the je is taken in exactly 25% of its
 *       executions. The order is random and changes every pass, so the predictor cannot learn
 *       it (tests/e2e/vstep_agent.sh checks the share of taken executions)
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t table[1024];
static volatile sig_atomic_t traps, profs, stop;
static long sys_mask = 4095;

__attribute__((noinline)) uint64_t step_leaf(uint64_t x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) uint64_t step_loop(long iters)
{
    uint64_t sum = 0;
    for (long i = 0; i < iters; i++) {
        sum += table[i & 1023];
        sum = step_leaf(sum);
        if ((i & sys_mask) == sys_mask)
            sum ^= (uint64_t)syscall(SYS_getppid) & 0;
    }
    return sum;
}

static uint8_t pattern[1024];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static void swap_pattern(int i, int j)
{
    uint8_t t = pattern[i];
    pattern[i] = pattern[j];
    pattern[j] = t;
}

/* A new order of the pattern before every pass, so that the predictor cannot learn it: 64
 * random transpositions keep it uniformly random (Fisher-Yates once at the start). */
__attribute__((noinline)) static void shuffle_pattern(void)
{
    for (int k = 0; k < 64; k++)
        swap_pattern((int)(xorshift() & 1023), (int)(xorshift() & 1023));
}

__attribute__((noinline)) static uint64_t branch_pass(uint64_t sum)
{
    for (int i = 0; i < 1024; i++)
        __asm__ volatile("cmpb $0, (%1)\n\t"
                         "je 1f\n\t"
                         "add $3, %0\n"
                         "1:"
                         : "+r"(sum)
                         : "r"(&pattern[i])
                         : "cc", "memory");
    return sum;
}

__attribute__((noinline)) uint64_t branch_loop(long passes)
{
    uint64_t sum = 0;
    for (int i = 0; i < 1024; i++)
        pattern[i] = i >= 256; /* 0: the je is taken */
    for (int i = 1023; i > 0; i--)
        swap_pattern(i, (int)(xorshift() % (uint64_t)(i + 1)));
    for (long p = 0; p < passes; p++) {
        shuffle_pattern();
        sum = branch_pass(sum);
    }
    return sum;
}

static void on_trap(int sig)
{
    traps++;
}

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    profs++;
}

static void on_term(int sig)
{
    stop = 1;
}

static void own_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    signal(SIGTRAP, on_trap);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    for (int i = 0; i < 5; i++)
        raise(SIGTRAP);
    for (int i = 0; i < 5; i++)
        __asm__ volatile("int3");
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_PROF, &it, NULL);
    volatile uint64_t x = 0;
    while (profs < 20)
        x = step_loop(1000) + x;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("sigtrap %d sigprof>=20 %d\n", (int)traps, profs >= 20);
}

static void *thread_main(void *arg)
{
    long iters = *(long *)arg;
    uint64_t *out = malloc(sizeof(*out));
    *out = step_loop(iters);
    return out;
}

static uint64_t run_threads(int n, long iters)
{
    pthread_t t[64];
    uint64_t x = 0;
    n = n > 64 ? 64 : n;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, thread_main, &iters);
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        x += *(uint64_t *)r;
        free(r);
    }
    return x;
}

static void wait_mode(void)
{
    signal(SIGTERM, on_term);
    printf("ready\n");
    fflush(stdout);
    uint64_t x = 0;
    long rounds = 0;
    do { /* at least one round, however early SIGTERM comes */
        x += step_loop(100000);
        rounds++;
    } while (!stop);
    printf("stopped ok %d\n", rounds > 0 && x != 1);
}

int main(int argc, char **argv)
{
    long rounds = 20;
    int sigs = 0, forks = 0, threads = 0, block = 0, exe = 0, wait = 0;
    long branch = 0;
    int c;
    while ((c = getopt(argc, argv, "n:c:sft:bxwj:")) != -1) {
        switch (c) {
        case 'j':
            branch = atol(optarg);
            break;
        case 'n':
            rounds = atol(optarg);
            break;
        case 'c':
            sys_mask = (1L << atoi(optarg)) - 1;
            break;
        case 's':
            sigs = 1;
            break;
        case 'f':
            forks = 1;
            break;
        case 't':
            threads = atoi(optarg);
            break;
        case 'b':
            block = 1;
            break;
        case 'x':
            exe = 1;
            break;
        case 'w':
            wait = 1;
            break;
        default:
            fprintf(stderr,
                    "usage: work-step [-n ROUNDS] [-c LOG2] [-s] [-f] [-t N] [-b] [-x] [-w] "
                    "[-j ROUNDS]\n");
            return 2;
        }
    }
    for (int i = 0; i < 1024; i++)
        table[i] = (i & 3) == 3 ? 0x2222 : 0x1111;
    if (branch > 0) {
        printf("branch sum %llx\n", (unsigned long long)branch_loop(branch << 10));
        return 0;
    }
    if (wait) {
        wait_mode();
        return 0;
    }
    if (sigs)
        own_signals();
    if (block) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
    }
    fflush(stdout);
    pid_t child = forks ? fork() : -1;
    uint64_t x = step_loop(rounds * 1000000L);
    if (threads)
        x += run_threads(threads, rounds * 1000000L);
    if (child == 0) {
        printf("child sum %llx\n", (unsigned long long)x);
        fflush(stdout);
        _exit(0);
    }
    if (child > 0)
        waitpid(child, NULL, 0); /* the child's line first: output is deterministic */
    printf("main sum %llx\n", (unsigned long long)x);
    fflush(stdout);
    if (exe) {
        char n[32];
        snprintf(n, sizeof(n), "%ld", rounds);
        execl("/proc/self/exe", argv[0], "-n", n, (char *)NULL);
        perror("execl");
        return 1;
    }
    return 0;
}
