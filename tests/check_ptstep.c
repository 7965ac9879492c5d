/*
 * check_ptstep.c - ptrace stepping (core/capture/ptstep.c) against a running samples/work-step -w:
 * attach, 50 bursts with consecutive pcs and exact load values, signals of the program
 * delivered while attached, detach leaving the process running with its normal output.
 * The cases that attach are the "ptrace" case, skipped (77) when this machine does not let a
 * process ptrace its child (yama ptrace_scope 3, seccomp in containers).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check_skip.h"
#include "core/capture/ptstep.h"
#include "core/capture/stepdrain.h"
#include "dcpi/errno.h"

#define WORK DCPI_TEST_BIN "/samples/work-step"

typedef struct child {
    pid_t pid;
    int out;
} child_t;

static void start(child_t *c)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    c->pid = fork();
    ck_assert_int_ge(c->pid, 0);
    if (c->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        execl(WORK, "work-step", "-w", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    c->out = p[0];
    char buf[8] = {0};
    ck_assert_int_eq(read(c->out, buf, 6), 6); /* "ready\n" */
    ck_assert_str_eq(buf, "ready\n");
}

/* Collect the rest of the output and the exit status. */
static int finish(child_t *c, char *out, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while ((n = read(c->out, out + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(c->out);
    int status;
    if (waitpid(c->pid, &status, 0) != c->pid)
        return -1; /* the tracer, also the parent here, already reaped it while polling */
    return status;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_attach_bursts_detach)
{
    child_t c;
    char err[DCPI_ERRLEN], out[256];
    start(&c);
    dcpi_ptstep_t *pt;
    ck_assert_int_eq(dcpi_ptstep_attach(c.pid, &pt, err), 0);
    pid_t tids[4];
    ck_assert_int_eq(dcpi_ptstep_threads(pt, tids, 4), 1);
    ck_assert_int_eq(tids[0], c.pid);
    static step_record_t recs[16];
    long total = 0, loads = 0, exact = 0;
    double t = 0;
    for (int b = 0; b < 50; b++) {
        usleep(2000);
        ck_assert_int_eq(dcpi_ptstep_poll(pt), 1);
        int end;
        double t0 = now_s();
        int n = dcpi_ptstep_burst(pt, c.pid, 16, recs, &end, err);
        t += now_s() - t0;
        ck_assert_int_ge(n, 0);
        ck_assert(n == 16 || end != STEP_END_DONE);
        for (int i = 0; i < n; i++) {
            const step_record_t *r = &recs[i];
            ck_assert_uint_eq(r->index, i);
            if (i + 1 < n)
                ck_assert_uint_eq(recs[i + 1].before[DCPI_REG_IP], r->after[DCPI_REG_IP]);
            dcpi_insn_t in;
            ck_assert_int_gt(dcpi_capture_decode(r->insn, r->insn_len, r->before[DCPI_REG_IP], &in),
                             0);
            ck_assert_int_ne(in.zi.mnemonic, ZYDIS_MNEMONIC_SYSCALL);
            if ((r->flags & STEP_REC_MEMRD) && in.zi.mnemonic == ZYDIS_MNEMONIC_ADD &&
                (r->mem_before == 0x1111 || r->mem_before == 0x2222)) {
                int idx = dcpi_capture_perf_index(in.ops[0].reg.value);
                loads++;
                exact += r->after[idx] == r->before[idx] + r->mem_before;
            }
        }
        ck_assert_uint_eq(recs[n ? n - 1 : 0].flags & STEP_REC_LAST, n ? STEP_REC_LAST : 0);
        total += n;
    }
    uint64_t bursts, steps;
    dcpi_ptstep_counts(pt, &bursts, &steps, NULL);
    ck_assert_uint_eq(bursts, 50);
    ck_assert_uint_eq(steps, (uint64_t)total);
    ck_assert_int_gt(total, 400);
    ck_assert_int_gt(loads, 0);
    ck_assert_int_eq(exact, loads);
    printf("ptrace: %ld steps, %.0f ns per stepped instruction\n", total, t * 1e9 / total);
    ck_assert_int_eq(dcpi_ptstep_detach(pt), 0);
    usleep(20000); /* still running after the detach */
    ck_assert_int_eq(waitpid(c.pid, NULL, WNOHANG), 0);
    kill(c.pid, SIGTERM);
    int status = finish(&c, out, sizeof(out));
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_str_eq(out, "stopped ok 1\n"); /* as an unprofiled run prints */
}
END_TEST

/* A signal sent while attached reaches the program's handler (poll re-injects it). */
START_TEST(test_signal_while_attached)
{
    child_t c;
    char err[DCPI_ERRLEN], out[256];
    start(&c);
    dcpi_ptstep_t *pt;
    ck_assert_int_eq(dcpi_ptstep_attach(c.pid, &pt, err), 0);
    static step_record_t recs[16];
    int end;
    ck_assert_int_ge(dcpi_ptstep_burst(pt, c.pid, 16, recs, &end, err), 0);
    kill(c.pid, SIGTERM);
    int alive = 1;
    for (int i = 0; i < 2000 && alive; i++) {
        usleep(1000);
        alive = dcpi_ptstep_poll(pt) > 0;
    }
    ck_assert_int_eq(alive, 0); /* the handler ran, the program finished */
    uint64_t sigs;
    dcpi_ptstep_counts(pt, NULL, NULL, &sigs);
    ck_assert_uint_ge(sigs, 1);
    ck_assert_int_eq(dcpi_ptstep_detach(pt), 0);
    int status = finish(&c, out, sizeof(out));
    ck_assert(status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    ck_assert_str_eq(out, "stopped ok 1\n");
}
END_TEST

START_TEST(test_errors)
{
    dcpi_ptstep_t *pt;
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_ptstep_attach(0, &pt, err), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_ptstep_attach(999999999, &pt, err), DCPI_ESRCH);
    ck_assert_int_eq(dcpi_ptstep_detach(NULL), 0);
}
END_TEST

/* Can this machine ptrace a child at all (yama, containers)? Tried on a paused child. */
static const char *ptrace_impossible(void)
{
    static char why[DCPI_ERRLEN + 100];
    pid_t pid = fork();
    if (pid == 0) {
        pause();
        _exit(0);
    }
    dcpi_ptstep_t *pt;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_ptstep_attach(pid, &pt, err);
    if (rc == 0)
        dcpi_ptstep_detach(pt);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (rc == 0)
        return NULL;
    snprintf(why, sizeof why, "cannot ptrace a child here (%s): the case steps a live process",
             err);
    return why;
}

int main(void)
{
    Suite *s = suite_create("ptstep");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    TCase *tp = dcpi_check_tcase("ptrace");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_attach_bursts_detach);
    tcase_add_test(tp, test_signal_while_attached);
    suite_add_tcase(s, tp);
    static const struct dcpi_check_need needs[] = {{"ptrace", ptrace_impossible}};
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
