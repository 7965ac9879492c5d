/*
 * check_bpslots.c - core/sampling/bpslots.c: the bp backend's arms. Without perf: an empty
 * table's calls. The "breakpoints" case (execute breakpoints and two CPUs this process may use):
 * as many arms as the table holds (4 per ring, one per thread of this process, all at one
 * function) must open together (a thread's breakpoints on any CPU are accounted to the thread:
 * no ENOSPC however many rings have an arm); each armed thread then calls the function three
 * times and its arm gives exactly its two samples (PERF_EVENT_IOC_REFRESH), read from its own
 * ring, numbered 0 and 1; thread 0, armed while pinned to one CPU, moves to the other before
 * its calls, and its samples come from there (the arm follows its thread; counted in
 * dcpi_bpslot_info_t.other).
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/sampling/bpslots.h"
#include "core/sampling/sampler.h"
#include "dcpi/errno.h"

START_TEST(empty)
{
    dcpi_bpslots_t *b = NULL;
    ck_assert_int_eq(dcpi_bpslots_new(NULL, 3, &b), 0);
    ck_assert_int_eq(dcpi_bpslots_count(b), 3);
    ck_assert_int_eq(dcpi_bpslots_find(b, 1234), -1);
    ck_assert_int_eq(dcpi_bpslots_pick(b), 0);
    dcpi_bpslot_info_t in;
    ck_assert_int_eq(dcpi_bpslots_info(b, 0, &in), 0);
    ck_assert_int_eq(dcpi_bpslots_busy(b, 0, 1, 1000), 0);
    ck_assert_int_eq(dcpi_bpslots_busy(b, 5, 1, 1000), 1); /* no such slot: never free */
    uint32_t cookie;
    unsigned got;
    ck_assert_int_eq(dcpi_bpslots_close(b, 1, &cookie, &got), 0);
    ck_assert_int_eq(dcpi_bpslots_read(b, 1, NULL, NULL), 0);
    ck_assert_int_eq(dcpi_bpslots_arm(b, 7, 1, 1, 0, 0x1000, 2, 0, 0), -22); /* -EINVAL */
    dcpi_bpslots_free(b);
    dcpi_bpslots_free(NULL);
}
END_TEST

__attribute__((noinline)) static int target(int x)
{
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

#define MAXT 64
typedef struct worker {
    pthread_t th;
    volatile pid_t tid;
    volatile int go, done;
    int move_to; /* -1: stay */
} worker_t;

static void pin(pid_t tid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ck_assert_int_eq(sched_setaffinity(tid, sizeof set, &set), 0);
}

static void *work(void *p)
{
    worker_t *w = p;
    w->tid = (pid_t)syscall(SYS_gettid);
    while (!w->go)
        usleep(100);
    if (w->move_to >= 0)
        pin(0, w->move_to);
    int x = 0;
    for (int i = 0; i < 3; i++)
        x = target(x);
    w->done = x;
    return NULL;
}

typedef struct seen {
    unsigned n, seq[4];
    dcpi_sample_t s[4];
} seen_t;

static void on_sample(void *arg, int i, const dcpi_sample_t *s, unsigned seq, uint32_t cookie)
{
    seen_t *v = (seen_t *)arg + i;
    ck_assert_uint_eq(cookie, 100 + (unsigned)i);
    if (v->n < 4) {
        v->seq[v->n] = seq;
        v->s[v->n] = *s;
    }
    v->n++;
}

static int two_cpus(int *a, int *b)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) < 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set))
            *(n++ ? b : a) = c;
    return n == 2;
}

START_TEST(breakpoints)
{
    int ca, cb;
    ck_assert(two_cpus(&ca, &cb));
    char err[512] = "";
    dcpi_event_spec_t ev;
    ck_assert_int_eq(dcpi_event_parse("cpu-clock:10000000", 1000, &ev, err), 0);
    dcpi_sampler_t *smp = NULL;
    int rc = dcpi_sampler_open(&ev, 1, DCPI_SAMPLE_PID, getpid(), NULL, &smp, NULL, err);
    ck_assert_msg(rc == 0, "sampler: %s", err);
    int n = 4 * dcpi_sampler_nrings(smp);
    if (n > MAXT)
        n = MAXT;
    dcpi_bpslots_t *b = NULL;
    ck_assert_int_eq(dcpi_bpslots_new(smp, n, &b), 0);
    static worker_t w[MAXT];
    for (int i = 0; i < n; i++) {
        w[i] = (worker_t){.move_to = i == 0 ? cb : -1};
        ck_assert_int_eq(pthread_create(&w[i].th, NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        while (!w[i].tid)
            usleep(100);
    pin(w[0].tid, ca); /* armed on ca; moves itself to cb before its calls */
    uint64_t addr = (uint64_t)(uintptr_t)&target;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(dcpi_bpslots_pick(b), i);
        rc = dcpi_bpslots_arm(b, i, getpid(), w[i].tid, ca, addr, 2, 100 + (uint32_t)i,
                              1000 + (uint64_t)i);
        ck_assert_msg(rc == 0, "arm %d of %d: %s", i + 1, n, strerror(-rc));
    }
    ck_assert_int_eq(dcpi_bpslots_find(b, w[3 % n].tid), 3 % n);
    ck_assert_int_eq(dcpi_bpslots_pick(b), 0); /* full: the oldest */
    for (int i = 0; i < n; i++)
        w[i].go = 1;
    for (int i = 0; i < n; i++)
        pthread_join(w[i].th, NULL);
    static seen_t seen[MAXT];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(dcpi_bpslots_read(b, i, on_sample, seen), 2);
        ck_assert_uint_eq(seen[i].n, 2);
        for (unsigned k = 0; k < 2; k++) {
            ck_assert_uint_eq(seen[i].seq[k], k);
            ck_assert_uint_eq(seen[i].s[k].ip, addr);
            ck_assert_uint_eq(seen[i].s[k].tid, (uint32_t)w[i].tid);
            ck_assert_uint_eq(seen[i].s[k].event, DCPI_SAMPLER_EV_OTHER);
        }
        ck_assert_int_eq(dcpi_bpslots_read(b, i, on_sample, seen), 0); /* consumed */
        dcpi_bpslot_info_t in;
        ck_assert_int_eq(dcpi_bpslots_info(b, i, &in), 1);
        ck_assert_uint_eq(in.got, 2);
        ck_assert_int_eq(in.cpu, ca);
        ck_assert_int_eq(dcpi_bpslots_busy(b, i, 1000 + (uint64_t)i + 1, 1000000), 0);
    }
    ck_assert_int_eq((int)seen[0].s[0].cpu, cb);
    ck_assert_int_eq((int)seen[0].s[1].cpu, cb);
    dcpi_bpslot_info_t in;
    ck_assert_int_eq(dcpi_bpslots_info(b, 0, &in), 1);
    ck_assert_uint_eq(in.other, 2);
    uint32_t cookie;
    unsigned got;
    ck_assert_int_eq(dcpi_bpslots_close(b, 0, &cookie, &got), 1);
    ck_assert_uint_eq(cookie, 100);
    ck_assert_uint_eq(got, 2);
    ck_assert_int_eq(dcpi_bpslots_find(b, w[0].tid), -1);
    ck_assert_int_eq(dcpi_bpslots_pick(b), 0);
    dcpi_bpslots_free(b);
    dcpi_sampler_close(smp);
}
END_TEST

/* Execute breakpoints, cpu-clock events and two CPUs for this process here? */
static const char *no_breakpoints(void)
{
    static char why[512];
    char err[256] = "";
    int a, b;
    if (dcpi_bp_probe(err) < 0) {
        snprintf(why, sizeof why, "no execute breakpoints here (%s)", err);
        return why;
    }
    dcpi_event_spec_t ev;
    if (dcpi_event_parse("cpu-clock", 1000, &ev, err) < 0 || dcpi_event_probe(&ev, err) < 0) {
        snprintf(why, sizeof why, "no cpu-clock perf events here (%s): the sampler's layout", err);
        return why;
    }
    if (!two_cpus(&a, &b))
        return "fewer than 2 CPUs for this process: an arm's thread cannot move";
    return NULL;
}

int main(void)
{
    Suite *s = suite_create("bpslots");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, empty);
    suite_add_tcase(s, tc);
    TCase *bp = dcpi_check_tcase("breakpoints");
    tcase_set_timeout(bp, 30);
    tcase_add_test(bp, breakpoints);
    suite_add_tcase(s, bp);
    static const struct dcpi_check_need needs[] = {{"breakpoints", no_breakpoints}};
    return dcpi_check_run(s, needs, 1);
}
