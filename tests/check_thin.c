/*
 * check_thin.c - core/sampling/thin.c: the bp backend's randomly thinned arm triggers. Without
 * BPF: the calls on no program are neutral and a bad period is refused. The "bpf" case (root:
 * BPF programs on perf events, cpu-clock events of a child): a target process spins, then runs
 * 80 children one after the other, each spinning 10 ms of CPU; its PC event (cpu-clock every
 * 1 ms, inherited by the children) carries the thinning program for a mean trigger period of
 * 4 ms (q = 1/4), the triggers share the events' rings. Then
 *   - the program's kept ticks are Binomial(ticks, q): within 5.5 standard deviations (a false
 *     failure below 1e-7), from at least 600 ticks;
 *   - every kept tick is a trigger record in the rings (none lost on the way);
 *   - the children have triggers too (the kernel copied the program to their inherited events:
 *     their 800 ticks give ~200, at least 100 asserted, P(fewer) < 1e-20), and not the same
 *     number each: with a fixed 4 ms period each 10 ms child got exactly its triggers at 4 and
 *     8 ms; thinned, a child's count is Binomial(~10, 1/4), so 80 children show at least three
 *     distinct counts (P(two or fewer) < 0.47^80 < 1e-25).
 * Counts are of CPU time (ticks of the children's own CPU), so a competing load does not change
 * them.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/sampling/sampler.h"
#include "core/sampling/thin.h"
#include "dcpi/errno.h"

#define NCHILD    80
#define CHILD_MS  10
#define PARENT_MS 400
#define PC_NS     1000000
#define TRIG_NS   4000000

START_TEST(neutral)
{
    char err[256] = "";
    dcpi_thin_t *t = (dcpi_thin_t *)1;
    ck_assert_int_lt(dcpi_thin_open(-0.5, &t, err), 0);
    ck_assert_ptr_null(t);
    ck_assert_int_lt(dcpi_thin_open(0.0 / 0.0, &t, err), 0);
    ck_assert_ptr_nonnull(strstr(err, "trigger thinning"));
    uint64_t a = 9, b = 9;
    dcpi_thin_counts(NULL, &a, &b);
    ck_assert_uint_eq(a, 0);
    ck_assert_uint_eq(b, 0);
    ck_assert_int_eq(dcpi_thin_prog_fd(NULL), -1);
    dcpi_thin_close(NULL);
}
END_TEST

static void spin_cpu_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 50000; i++) /* ~50 us in user mode between two system calls */
            x++;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

/* The target: waits for a byte on fd, spins, then runs the children one after the other. */
static pid_t target(int fd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char c;
    if (read(fd, &c, 1) != 1)
        _exit(1);
    spin_cpu_ms(PARENT_MS);
    for (int i = 0; i < NCHILD; i++) {
        pid_t k = fork();
        if (k == 0) {
            spin_cpu_ms(CHILD_MS);
            _exit(0);
        }
        waitpid(k, NULL, 0);
    }
    _exit(0);
}

typedef struct seen {
    pid_t target;
    uint32_t kids[NCHILD + 8];
    unsigned trig[NCHILD + 8], nkids;
    uint64_t triggers, parent, lost;
} seen_t;

static void on_sample(void *arg, const dcpi_sample_t *s)
{
    seen_t *v = arg;
    if (s->event != DCPI_SAMPLER_EV_TRIGGER)
        return;
    v->triggers++;
    if (s->pid == (uint32_t)v->target) {
        v->parent++;
        return;
    }
    for (unsigned i = 0; i < v->nkids; i++)
        if (v->kids[i] == s->pid) {
            v->trig[i]++;
            return;
        }
}

static void on_fork(void *arg, uint32_t ppid, uint32_t pid)
{
    seen_t *v = arg;
    if (ppid == (uint32_t)v->target && v->nkids < NCHILD + 8)
        v->kids[v->nkids++] = pid;
}

static void on_lost(void *arg, int event, uint64_t n)
{
    (void)event;
    ((seen_t *)arg)->lost += n;
}

START_TEST(thinned)
{
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    static seen_t v;
    memset(&v, 0, sizeof v);
    v.target = target(go[0]);
    ck_assert_int_gt(v.target, 0);
    char err[512] = "";
    dcpi_thin_t *t = NULL;
    ck_assert_msg(dcpi_thin_open((double)PC_NS / TRIG_NS, &t, err) == 0, "%s", err);
    dcpi_event_spec_t ev;
    ck_assert_int_eq(dcpi_event_parse("cpu-clock:1000000", 1000, &ev, err), 0);
    dcpi_sampler_opts_t x = {.trigger_ns = TRIG_NS, .thin = t};
    dcpi_sampler_t *smp = NULL;
    int rc = dcpi_sampler_open(&ev, 1, DCPI_SAMPLE_PID, v.target, &x, &smp, NULL, err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(dcpi_sampler_enable(smp), 0);
    dcpi_sampler_handler_t h = {.arg = &v, .sample = on_sample, .fork = on_fork, .lost = on_lost};
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    for (int done = 0; !done;) {
        usleep(20000);
        done = waitpid(v.target, NULL, WNOHANG) == v.target;
        dcpi_sampler_drain_merged(smp, &h);
    }
    dcpi_sampler_drain_merged(smp, &h);
    uint64_t ticks, kept;
    dcpi_thin_counts(t, &ticks, &kept);
    double q = (double)PC_NS / TRIG_NS, tol = 5.5 * sqrt((double)ticks * q * (1 - q));
    fprintf(stderr,
            "thin: ticks %llu kept %llu (expected %.0f +- %.0f) triggers read %llu (parent %llu) "
            "lost %llu, %u children\n",
            (unsigned long long)ticks, (unsigned long long)kept, q * (double)ticks, tol,
            (unsigned long long)v.triggers, (unsigned long long)v.parent,
            (unsigned long long)v.lost, v.nkids);
    ck_assert_uint_ge(ticks, 600);
    ck_assert_msg(fabs((double)kept - q * (double)ticks) <= tol, "kept %llu of %llu ticks",
                  (unsigned long long)kept, (unsigned long long)ticks);
    ck_assert_uint_eq(v.lost, 0);
    ck_assert_uint_eq(v.triggers, kept);
    ck_assert_uint_eq(v.nkids, NCHILD);
    uint64_t kids = 0;
    int distinct = 0, hist[64] = {0};
    for (unsigned i = 0; i < v.nkids; i++) {
        kids += v.trig[i];
        hist[v.trig[i] < 63 ? v.trig[i] : 63]++;
    }
    char counts[256] = "";
    for (int i = 0; i < 64; i++)
        if (hist[i]) {
            distinct++;
            size_t used = strlen(counts);
            snprintf(counts + used, sizeof counts - used, " %d:%d", i, hist[i]);
        }
    fprintf(stderr, "thin: children's triggers %llu; children by count (count:children)%s\n",
            (unsigned long long)kids, counts);
    ck_assert_uint_ge(kids, 100);
    ck_assert_int_ge(distinct, 3);
    dcpi_sampler_close(smp);
    dcpi_thin_close(t);
    close(go[0]);
    close(go[1]);
}
END_TEST

/* BPF programs on perf events and cpu-clock events here? */
static const char *no_bpf(void)
{
    static char why[600];
    char err[512] = "";
    dcpi_event_spec_t ev;
    if (dcpi_event_parse("cpu-clock", 1000, &ev, err) < 0 || dcpi_event_probe(&ev, err) < 0) {
        snprintf(why, sizeof why, "no cpu-clock perf events here (%s)", err);
        return why;
    }
    dcpi_thin_t *t = NULL;
    if (dcpi_thin_open(0.25, &t, err) < 0) {
        snprintf(why, sizeof why, "the thinning program cannot load here (%s)", err);
        return why;
    }
    dcpi_thin_close(t);
    return NULL;
}

int main(void)
{
    Suite *s = suite_create("thin");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, neutral);
    suite_add_tcase(s, tc);
    TCase *b = dcpi_check_tcase("bpf");
    tcase_set_timeout(b, 60);
    tcase_add_test(b, thinned);
    suite_add_tcase(s, b);
    static const struct dcpi_check_need needs[] = {{"bpf", no_bpf}};
    return dcpi_check_run(s, needs, 1);
}
