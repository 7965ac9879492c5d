/*
 * check_backend.c - core/values/backend.{c,h} without perf: the one interface every value backend
 * is called through. The real regs backend takes a synthetic perf sample (registers chosen by the
 * test, code read from this very test binary: a known lea) into the real sink with vp-classic,
 * and a drain hands the trace to the plugin (the sink's hand-over when the backend has no drain
 * of its own); a chain of two test backends shows what goes where: a record to the first that
 * takes it, a drain to the main (last) backend then the others, pid events to all and then the
 * sink, the shortest timeout, status lines of all, the main backend's report first, every one's
 * files flushed (the first failure returned), every one freed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/image/loadmap.h"
#include "core/plugin/vploader.h"
#include "core/store/vprof.h"
#include "core/values/backend.h"
#include "dcpi/errno.h"

/* bk_code+0: lea rax, [rsi+rdi] (4 bytes); ret. */
__asm__(".text\n"
        ".globl bk_code\n"
        ".type bk_code, @function\n"
        "bk_code:\n"
        "    lea (%rsi,%rdi), %rax\n"
        "    ret\n"
        ".size bk_code, .-bk_code\n");
extern char bk_code[];
#define LEA_IP  ((uint64_t)(uintptr_t)bk_code)
#define CLASSIC DCPI_TEST_BIN "/plugins/vp-classic.so"

static dcpi_loadmap_t *lm;
static dcpi_vp_set_t *set;
static dcpi_values_t *vt;

static void setup(void)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_loadmap_new(&lm), 0);
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, getpid()), 0);
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    ck_assert_msg(dcpi_vp_load(set, CLASSIC, NULL, err) == 0, "%s", err);
    dcpi_values_opts_t o = {.rate = 1000000};
    ck_assert_msg(dcpi_values_new(set, lm, &o, &vt, err) == 0, "%s", err);
}

static void teardown(void)
{
    dcpi_values_free(vt);
    dcpi_vp_set_free(set);
    dcpi_loadmap_free(lm);
}

/* A user-mode perf sample of the first event at the lea, rsi + rdi = 7. */
static dcpi_sample_t lea_sample(uint64_t t_ns)
{
    dcpi_sample_t s = {.ip = LEA_IP,
                       .time = t_ns,
                       .pid = (uint32_t)getpid(),
                       .tid = (uint32_t)getpid(),
                       .regs_abi = 2};
    s.regs_mask = (1ull << DCPI_REG_COUNT) - 1;
    s.regs[DCPI_REG_SI] = 3;
    s.regs[DCPI_REG_DI] = 4;
    s.regs[DCPI_REG_IP] = LEA_IP;
    return s;
}

static uint64_t traces(void)
{
    dcpi_values_stats_t st;
    dcpi_values_plugin_stats(vt, 0, &st);
    return st.traces;
}

START_TEST(test_regs_backend)
{
    dcpi_vbackend_t *b;
    ck_assert_int_eq(dcpi_vbackend_regs_new(vt, "-vregs", &b), 0);
    ck_assert_str_eq(dcpi_vbackend_name(b), "regs");
    dcpi_sampler_opts_t x = {0};
    dcpi_vbackend_sampler_opts(b, &x);
    ck_assert(x.regs_user & 1ull << DCPI_REG_IP); /* registers asked of the sampler */
    ck_assert_uint_eq(x.trigger_ns, 0);
    for (int i = 0; i < 10; i++) {
        dcpi_sample_t s = lea_sample(1000000ull * (i + 1));
        dcpi_vbackend_pc(b, &s, 0);
    }
    dcpi_sample_t k = lea_sample(20000000);
    k.regs_abi = 0; /* no user registers (a kernel thread): nothing */
    dcpi_vbackend_pc(b, &k, 0);
    ck_assert_uint_eq(traces(), 0);                      /* pending in the sink */
    ck_assert_int_eq(dcpi_vbackend_record(b, &k, 0), 0); /* no records of its own */
    ck_assert_int_eq(dcpi_vbackend_drain(b, 0), 0);
    ck_assert_uint_eq(traces(), 1); /* the sink's hand-over at the drain */
    dcpi_image_t *img;
    uint32_t off;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), LEA_IP, &img, &off), 0);
    struct dcpi_vprof *vp = dcpi_values_vprof(vt, img->index, 0);
    ck_assert_ptr_nonnull(vp);
    const dcpi_vsummary_t *sum = dcpi_vprof_at(vp, off, 0);
    ck_assert_ptr_nonnull(sum);
    ck_assert_uint_eq(sum->vtot, 10);
    ck_assert_uint_eq(dcpi_vsummary_count(sum, 7, 0, 0), 10);
    ck_assert_int_eq(dcpi_vbackend_timeout_ms(b), -1);
    ck_assert_int_eq(dcpi_vbackend_polls(b), 0);
    char buf[256];
    dcpi_vbackend_status(b, buf, sizeof buf);
    ck_assert_str_eq(buf, "vbp off: -vregs\n");
    dcpi_vbackend_free(b);
}
END_TEST

/* ---- a chain of two test backends */

static char calls[512]; /* "NAME.op " in call order */

typedef struct fake {
    dcpi_vbackend_t b;
    const char *name;
    uint64_t take_id; /* records with this id are its own */
    int gone, timeout;
    int *freed;
} fake_t;

static void log_call(const dcpi_vbackend_t *b, const char *op)
{
    size_t n = strlen(calls);
    snprintf(calls + n, sizeof calls - n, "%s.%s ", ((const fake_t *)b)->name, op);
}

static int f_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    (void)ring;
    log_call(b, "record");
    return s->id == ((fake_t *)b)->take_id;
}

static void f_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    (void)s;
    (void)ring;
    log_call(b, "pc");
}

static void f_pid_event(dcpi_vbackend_t *b, pid_t pid, int what)
{
    (void)pid;
    log_call(b, what == DCPI_VBACKEND_EXEC ? "exec" : what == DCPI_VBACKEND_EXIT ? "exit" : "mmap");
}

static int f_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    (void)now_ns;
    log_call(b, "drain");
    return ((fake_t *)b)->gone;
}

static int f_timeout(const dcpi_vbackend_t *b)
{
    return ((const fake_t *)b)->timeout;
}

static void f_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    snprintf(buf, len, "%s ok\n", ((const fake_t *)b)->name);
}

static void f_report(const dcpi_vbackend_t *b, int user)
{
    (void)user;
    log_call(b, "report");
}

static void f_loss(dcpi_vbackend_t *b, uint64_t throttled, uint64_t lost)
{
    (void)throttled;
    (void)lost;
    log_call(b, "loss");
}

/* A's files fail to be written, M's are written. */
static int f_flush(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err)
{
    (void)fi;
    log_call(b, "flush");
    if (((fake_t *)b)->take_id != 1)
        return 0;
    snprintf(err, DCPI_ERRLEN, "A: cannot write");
    return DCPI_EIO;
}

static void f_free(dcpi_vbackend_t *b)
{
    (*((fake_t *)b)->freed)++;
    free(b);
}

static const dcpi_vdesc_t fake_desc = {"fake", "a test backend", NULL};

static const dcpi_vbackend_ops_t fake_ops = {.desc = &fake_desc,
                                             .record = f_record,
                                             .pc = f_pc,
                                             .pid_event = f_pid_event,
                                             .drain = f_drain,
                                             .timeout_ms = f_timeout,
                                             .status = f_status,
                                             .report = f_report,
                                             .loss = f_loss,
                                             .flush = f_flush,
                                             .free = f_free};

static dcpi_vbackend_t *fake(const char *name, uint64_t take_id, int timeout, int *freed)
{
    fake_t *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    *f = (fake_t){.b = {.ops = &fake_ops, .vt = vt},
                  .name = name,
                  .take_id = take_id,
                  .timeout = timeout,
                  .freed = freed};
    return &f->b;
}

START_TEST(test_chain)
{
    int freed = 0;
    dcpi_vbackend_t *chain = NULL;
    dcpi_vbackend_t *beside = fake("A", 1, 10, &freed), *main = fake("M", 2, 4, &freed);
    dcpi_vbackend_chain(&chain, beside);
    dcpi_vbackend_chain(&chain, main);
    ck_assert_ptr_eq(chain, beside);
    dcpi_sample_t s = {.event = DCPI_SAMPLER_EV_OTHER, .id = 1};
    calls[0] = 0;
    ck_assert_int_eq(dcpi_vbackend_record(chain, &s, 0), 1);
    ck_assert_str_eq(calls, "A.record "); /* the first that takes it */
    s.id = 2;
    calls[0] = 0;
    ck_assert_int_eq(dcpi_vbackend_record(chain, &s, 0), 1);
    ck_assert_str_eq(calls, "A.record M.record ");
    s.id = 3;
    ck_assert_int_eq(dcpi_vbackend_record(chain, &s, 0), 0); /* nobody's: a PC sample */
    calls[0] = 0;
    dcpi_vbackend_pc(chain, &s, 0);
    dcpi_vbackend_pid_event(chain, 1, DCPI_VBACKEND_EXEC);
    dcpi_vbackend_pid_event(chain, 1, DCPI_VBACKEND_EXIT);
    dcpi_vbackend_loss(chain, 1, 0);
    ck_assert_str_eq(calls, "A.pc M.pc A.exec M.exec A.exit M.exit A.loss M.loss ");
    calls[0] = 0;
    ck_assert_int_eq(dcpi_vbackend_drain(chain, 0), 0);
    ck_assert_str_eq(calls, "M.drain A.drain "); /* the main backend's first */
    ((fake_t *)beside)->gone = 1;
    ck_assert_int_eq(dcpi_vbackend_drain(chain, 0), 1); /* any one's target gone */
    ck_assert_int_eq(dcpi_vbackend_timeout_ms(chain), 4);
    ck_assert_int_eq(dcpi_vbackend_polls(chain), 1);
    char buf[64];
    dcpi_vbackend_status(chain, buf, sizeof buf);
    ck_assert_str_eq(buf, "A ok\nM ok\n");
    calls[0] = 0;
    dcpi_vbackend_report(chain, 1);
    ck_assert_str_eq(calls, "M.report A.report ");
    calls[0] = 0;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vbackend_flush(chain, NULL, err), DCPI_EIO); /* the others still flush */
    ck_assert_str_eq(calls, "A.flush M.flush ");
    ck_assert_str_eq(err, "A: cannot write");
    dcpi_vbackend_free(chain);
    ck_assert_int_eq(freed, 2);
}
END_TEST

/* A pid's mappings change: the sink hands that pid's pending trace over (after the backends). */
START_TEST(test_pid_event_hands_over)
{
    dcpi_vbackend_t *b;
    ck_assert_int_eq(dcpi_vbackend_regs_new(vt, "", &b), 0);
    dcpi_sample_t s = lea_sample(1000000);
    dcpi_vbackend_pc(b, &s, 0);
    ck_assert_uint_eq(traces(), 0);
    dcpi_vbackend_pid_event(b, getpid() + 1, DCPI_VBACKEND_MMAP); /* another pid: nothing */
    ck_assert_uint_eq(traces(), 0);
    dcpi_vbackend_pid_event(b, getpid(), DCPI_VBACKEND_MMAP);
    ck_assert_uint_eq(traces(), 1);
    dcpi_vbackend_free(b);
    /* no backend: every call is a no-op */
    ck_assert_int_eq(dcpi_vbackend_record(NULL, &s, 0), 0);
    ck_assert_int_eq(dcpi_vbackend_drain(NULL, 0), 0);
    ck_assert_int_eq(dcpi_vbackend_timeout_ms(NULL), -1);
    ck_assert_str_eq(dcpi_vbackend_name(NULL), "");
    dcpi_vbackend_free(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_regs_backend);
    tcase_add_test(tc, test_chain);
    tcase_add_test(tc, test_pid_event_hands_over);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
