/*
 * check_armhold.c - core/sampling/armhold.c: the bp backend's arm holders. Without perf: the
 * calls on no holders are neutral. The "realtime" case (root or CAP_SYS_NICE, cpu-clock events
 * of a child): a child process pinned to one CPU counts in shared memory; its arm triggers
 * (every 0.5 ms of its CPU) go to trigger rings read by the holders, and this test plays dcpid's
 * loop. While the test holds a taken trigger (300 us) the child's count must not move: the
 * holder of its CPU keeps it off (that is what makes an arm take the executions right after its
 * trigger, also when other programs compete for the CPUs); a trigger taken after the holders'
 * limit is given up (DCPI_ARMHOLD_RANON) and then, on a machine with a second CPU for this test,
 * the child has run meanwhile.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/sampling/armhold.h"
#include "core/sampling/sampler.h"
#include "dcpi/errno.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

START_TEST(no_holders)
{
    dcpi_sample_t s;
    unsigned n = 7;
    dcpi_armhold_stats_t st;
    ck_assert_int_eq(dcpi_armhold_take(NULL, 0, &s, &n), DCPI_ARMHOLD_NONE);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(dcpi_armhold_wake_fd(NULL), -1);
    dcpi_armhold_stats(NULL, &st);
    ck_assert_int_eq(st.holders, 0);
    ck_assert_uint_eq(st.holds, 0);
    dcpi_armhold_release(NULL, 0);
    dcpi_armhold_clear_wake(NULL);
    dcpi_armhold_free(NULL);
}
END_TEST

/* The child: pinned to cpu, counting for ever. */
static pid_t spinner(int cpu, volatile uint64_t *count)
{
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        for (;;)
            (*count)++;
    }
    return pid;
}

/* This thread at SCHED_FIFO 1 (as dcpid's loop), on a CPU other than cpu when there is one. */
static int become_loop(int cpu, int ncpu, const int *cpus)
{
    struct sched_param sp = {.sched_priority = 1};
    for (int i = 0; i < ncpu; i++)
        if (cpus[i] != cpu) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpus[i], &set);
            sched_setaffinity(0, sizeof set, &set);
            break;
        }
    return sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}

/* Wait for a held trigger of pid (up to 2 s): its ring, or -1. */
static int next_held(dcpi_sampler_t *smp, dcpi_armhold_t *h, pid_t pid, dcpi_sample_t *s)
{
    uint64_t end = mono_ns() + 2000000000ull;
    struct pollfd p = {.fd = dcpi_armhold_wake_fd(h), .events = POLLIN};
    while (mono_ns() < end) {
        if (poll(&p, 1, 100) <= 0)
            continue;
        dcpi_armhold_clear_wake(h);
        for (int r = 0; r < dcpi_sampler_nrings(smp); r++) {
            unsigned n;
            int what = dcpi_armhold_take(h, r, s, &n);
            if (what == DCPI_ARMHOLD_ARM && s->pid == (uint32_t)pid)
                return r;
            if (what == DCPI_ARMHOLD_ARM)
                dcpi_armhold_release(h, r);
        }
    }
    return -1;
}

START_TEST(realtime)
{
    int cpus[1024];
    int ncpu = dcpi_online_cpus(cpus, 1024), cpu = cpus[0];
    volatile uint64_t *count =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne((void *)count, MAP_FAILED);
    pid_t child = spinner(cpu, count);
    ck_assert_int_gt(child, 0);
    char err[512] = "";
    dcpi_event_spec_t ev;
    ck_assert_int_eq(dcpi_event_parse("cpu-clock:10000000", 1000, &ev, err), 0);
    dcpi_sampler_opts_t x = {.trigger_ns = 500000, .trigger_rings = 1};
    dcpi_sampler_t *smp = NULL;
    int rc = dcpi_sampler_open(&ev, 1, DCPI_SAMPLE_PID, child, &x, &smp, NULL, err);
    ck_assert_msg(rc == 0, "sampler: %s", err);
    for (int r = 0; r < dcpi_sampler_nrings(smp); r++)
        ck_assert_int_ge(dcpi_sampler_trigger_fd(smp, r), 0);
    dcpi_armhold_t *h = NULL;
    ck_assert_int_eq(dcpi_armhold_start(smp, getpid(), 1000000, &h, err), 0);
    ck_assert_msg(become_loop(cpu, ncpu, cpus), "SCHED_FIFO");
    ck_assert_int_eq(dcpi_sampler_enable(smp), 0);

    /* held: the child does not run until released */
    for (int k = 0; k < 20; k++) {
        dcpi_sample_t s;
        int r = next_held(smp, h, child, &s);
        ck_assert_msg(r >= 0, "no held trigger of the child in 2 s (hold %d)", k);
        ck_assert_int_eq((int)s.cpu, cpu);
        ck_assert_int_eq(dcpi_sampler_ring_cpu(smp, r), cpu);
        uint64_t c0 = *count, until = mono_ns() + 300000;
        while (mono_ns() < until)
            sched_yield(); /* a holder on this CPU (one CPU only) gets its turn */
        uint64_t c1 = *count;
        dcpi_armhold_release(h, r);
        ck_assert_msg(c1 == c0, "the child ran %llu counts while held (hold %d)",
                      (unsigned long long)(c1 - c0), k);
    }
    /* taken after the limit (1 ms): given up, not to be armed */
    int ranon = 0;
    for (int k = 0; k < 20 && !ranon; k++) {
        struct pollfd p = {.fd = dcpi_armhold_wake_fd(h), .events = POLLIN};
        if (poll(&p, 1, 500) <= 0)
            continue;
        uint64_t c0 = *count, until = mono_ns() + 3000000;
        while (mono_ns() < until)
            sched_yield();
        dcpi_armhold_clear_wake(h);
        for (int r = 0; r < dcpi_sampler_nrings(smp); r++) {
            dcpi_sample_t s;
            unsigned n;
            int what = dcpi_armhold_take(h, r, &s, &n);
            if (what == DCPI_ARMHOLD_ARM)
                dcpi_armhold_release(h, r); /* posted after the wait began */
            if (what == DCPI_ARMHOLD_RANON) {
                ranon = 1;
                /* the holder gave up its CPU: the child runs (when the scheduler gives it its
                 * turn there: up to 5 s on a loaded machine) */
                until = mono_ns() + 5000000000ull;
                while (ncpu > 1 && *count == c0 && mono_ns() < until)
                    usleep(1000);
                ck_assert_msg(ncpu == 1 || *count != c0,
                              "the child did not run after its hold timed out");
            }
        }
    }
    ck_assert_msg(ranon, "no trigger given up after the hold limit");
    dcpi_armhold_stats_t st;
    dcpi_armhold_stats(h, &st);
    ck_assert_int_eq(st.holders, dcpi_sampler_nrings(smp));
    ck_assert_uint_ge(st.holds, 20);
    ck_assert_uint_ge(st.timeouts, 1);
    dcpi_armhold_free(h);
    dcpi_sampler_close(smp);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}
END_TEST

/* Real-time priority and cpu-clock events of a child here? */
static const char *no_realtime(void)
{
    static char why[256];
    struct sched_param sp = {.sched_priority = 1}, zero = {0};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        snprintf(why, sizeof why,
                 "no real-time priority here (%s): the arm holders run at SCHED_FIFO",
                 strerror(errno));
        return why;
    }
    sched_setscheduler(0, SCHED_OTHER, &zero);
    dcpi_event_spec_t ev;
    char err[256] = "";
    if (dcpi_event_parse("cpu-clock", 1000, &ev, err) < 0 || dcpi_event_probe(&ev, err) < 0) {
        snprintf(why, sizeof why, "no cpu-clock perf events here (%s)", err);
        return why;
    }
    return NULL;
}

int main(void)
{
    Suite *s = suite_create("armhold");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, no_holders);
    suite_add_tcase(s, tc);
    TCase *rt = dcpi_check_tcase("realtime");
    tcase_set_timeout(rt, 30);
    tcase_add_test(rt, realtime);
    suite_add_tcase(s, rt);
    static const struct dcpi_check_need needs[] = {{"realtime", no_realtime}};
    return dcpi_check_run(s, needs, 1);
}
