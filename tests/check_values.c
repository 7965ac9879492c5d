/*
 * check_values.c - core/values/pipeline.c, entry.c, step.c without perf: synthetic user-mode
 * samples (registers chosen by the test, code read from this very test binary, where vt_code below
 * holds a known lea and a known load) go through the real plugins vp-classic and vp-addr and the
 * test plugin too_many; checks the summaries (counts, seen vs vtot under the rate limiter),
 * disabling of a plugin that returns too many samples, traces split per pid, the perf register
 * mask, and a flush into a value-profile file read back with dcpi_vprof_read. The worker path
 * (opts.isolate, core/plugin/vpworker.c): the same counts through worker processes, and plugins
 * that crash, hang or return too many samples disabled with their reason while the others go on;
 * the recorder (opts.record): a segment read back with the tracefile reader, the CLUSTER record
 * of a trace's clustered entries; the cluster counters
 * (core/values/cluster.c) of breakpoint hits fed with their cluster numbers.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/capture/capture.h"
#include "core/image/loadmap.h"
#include "core/store/tracefile.h"
#include "core/plugin/vploader.h"
#include "core/store/vprof.h"
#include "core/values/values.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

/* vt_code+0: lea rax, [rsi+rdi] (4 bytes); vt_code+4: mov rcx, [rbx] (3 bytes); ret. */
__asm__(".text\n"
        ".globl vt_code\n"
        ".type vt_code, @function\n"
        "vt_code:\n"
        "    lea (%rsi,%rdi), %rax\n"
        "    mov (%rbx), %rcx\n"
        "    ret\n"
        ".size vt_code, .-vt_code\n");
extern char vt_code[];
#define LEA_IP   ((uint64_t)(uintptr_t)vt_code)
#define MOV_IP   (LEA_IP + 4)
#define FAKE_PID 999999

static dcpi_loadmap_t *lm;
static dcpi_vp_set_t *set;
static dcpi_values_t *vt;
static int contexts;            /* -vcontext for the next load_plugins */
static dcpi_values_opts_t base; /* isolate, timeout, record for the next load_plugins */

static void load_plugins(const char *const *names, unsigned rate)
{
    char path[4096], err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_loadmap_new(&lm), 0);
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, getpid()), 0);
    ck_assert_int_eq(dcpi_loadmap_fork(lm, getpid(), FAKE_PID), 0);
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    for (; *names; names++) {
        snprintf(path, sizeof path, "%s", *names);
        ck_assert_msg(dcpi_vp_load(set, path, NULL, err) == 0, "%s", err);
    }
    dcpi_values_opts_t o = base;
    o.rate = rate;
    o.contexts = contexts;
    ck_assert_msg(dcpi_values_new(set, lm, &o, &vt, err) == 0, "%s", err);
}

static void teardown(void)
{
    dcpi_values_free(vt);
    dcpi_vp_set_free(set);
    dcpi_loadmap_free(lm);
    vt = NULL;
    set = NULL;
    lm = NULL;
}

#define CLASSIC DCPI_TEST_BIN "/plugins/vp-classic.so"
#define ADDR    DCPI_TEST_BIN "/plugins/vp-addr.so"
#define TOOMANY DCPI_TEST_PLUGINS "/too_many.so"

/* One sample of ip with rsi, rdi, rbx set; every register valid. */
static void feed(uint32_t pid, uint32_t cpu, uint64_t t_ns, uint64_t ip, uint64_t rsi, uint64_t rdi,
                 uint64_t rbx)
{
    dcpi_values_sample_t s = {.pid = pid, .tid = pid, .cpu = cpu, .time = t_ns, .ip = ip};
    s.regs.valid = DCPI_REGS_FULL_MASK & ((1ull << DCPI_REG_COUNT) - 1);
    s.regs.r[DCPI_REG_SI] = rsi;
    s.regs.r[DCPI_REG_DI] = rdi;
    s.regs.r[DCPI_REG_BX] = rbx;
    s.regs.r[DCPI_REG_IP] = ip;
    dcpi_values_sample(vt, &s);
}

/* The summary plugin i keeps for the instruction at ip (NULL when none). */
static const dcpi_vsummary_t *summary(unsigned i, uint64_t ip)
{
    dcpi_image_t *img;
    uint32_t off;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), ip, &img, &off), 0);
    struct dcpi_vprof *vp = dcpi_values_vprof(vt, img->index, i);
    return vp ? dcpi_vprof_at(vp, off, 0) : NULL;
}

static dcpi_values_stats_t stats(unsigned i)
{
    dcpi_values_stats_t st;
    dcpi_values_plugin_stats(vt, i, &st);
    return st;
}

START_TEST(test_counts)
{
    const char *const p[] = {CLASSIC, ADDR, NULL};
    load_plugins(p, 1000000);
    for (int i = 0; i < 100; i++) /* lea: 7 in 60%, 2 in 40% */
        feed(getpid(), 0, 1000000ull * (i + 1), LEA_IP, i < 60 ? 3 : 1, i < 60 ? 4 : 1, 0);
    for (int i = 0; i < 50; i++) /* load: [rbx] at two addresses */
        feed(getpid(), 0, 200000000ull + 1000000ull * i, MOV_IP, 0, 0, i % 5 ? 0x1000 : 0x2000);
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->vtot, 100);
    ck_assert_uint_eq(s->seen, 100);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), 60);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 2, 0, 0), 40);
    ck_assert_ptr_null(summary(1, LEA_IP)); /* lea is no memory access for vp-addr */
    s = summary(1, MOV_IP);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->vtot, 50);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x1000, 0, 0), 40);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x2000, 0, 0), 10);
    /* vp-classic sees the load but the regs backend cannot give a loaded value */
    ck_assert_uint_eq(stats(0).seen, 150);
    ck_assert_uint_eq(stats(0).values, 100);
    ck_assert_uint_eq(stats(1).seen, 50);
    ck_assert_uint_eq(stats(1).values, 50);
    ck_assert_uint_eq(stats(0).errors + stats(1).errors + stats(0).lost + stats(1).lost, 0);
    ck_assert_uint_eq(dcpi_values_nocode(vt) + dcpi_values_unresolved(vt), 0);
    teardown();
}
END_TEST

START_TEST(test_rate_limit)
{
    const char *const p[] = {CLASSIC, NULL};
    load_plugins(p, 100);          /* 100/s per CPU, bucket of 10 */
    for (int i = 0; i < 1000; i++) /* 1 s of samples every 1 ms on CPU 0 */
        feed(getpid(), 0, 1000000000ull + 1000000ull * i, LEA_IP, 3, 4, 0);
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_uint_eq(s->seen, 1000);
    ck_assert_msg(s->vtot >= 100 && s->vtot <= 111, "vtot %" PRIu64, s->vtot);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), s->vtot);
    uint64_t one_cpu = s->vtot;
    /* the next second on two CPUs: each has its own bucket */
    for (int i = 0; i < 1000; i++)
        feed(getpid(), (uint32_t)(i & 1), 2000000000ull + 1000000ull * i, LEA_IP, 3, 4, 0);
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(s->seen, 2000);
    uint64_t two = s->vtot - one_cpu;
    ck_assert_msg(two >= 190 && two <= 215, "two CPUs admitted %" PRIu64, two);
    ck_assert_uint_eq(stats(0).seen, 2000);
    ck_assert_uint_eq(stats(0).values, s->vtot);
    teardown();
}
END_TEST

START_TEST(test_too_many_disabled)
{
    const char *const p[] = {TOOMANY, CLASSIC, NULL};
    load_plugins(p, 1000000);
    for (int i = 0; i < 10; i++)
        feed(getpid(), 0, 1000000ull * (i + 1), LEA_IP, 3, 4, 0);
    dcpi_values_end_drain(vt);
    ck_assert_str_eq(dcpi_values_plugin_name(vt, 0), "tp-too-many");
    dcpi_values_stats_t st = stats(0);
    ck_assert_int_eq(st.disabled, 1);
    ck_assert_uint_eq(st.errors, 1);
    ck_assert_uint_eq(st.seen, 10);
    ck_assert_uint_eq(st.values, 0);
    ck_assert_uint_eq(st.lost, 10);
    for (int i = 0; i < 10; i++) /* a disabled plugin sees nothing more */
        feed(getpid(), 0, 100000000ull + 1000000ull * i, LEA_IP, 3, 4, 0);
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(stats(0).seen, 10);
    ck_assert_uint_eq(stats(0).traces, 1);
    ck_assert_uint_eq(stats(1).values, 20); /* the other plugin is unaffected */
    ck_assert_int_eq(stats(1).disabled, 0);
    teardown();
}
END_TEST

START_TEST(test_split_per_pid)
{
    const char *const p[] = {CLASSIC, NULL};
    load_plugins(p, 1000000);
    const uint32_t pids[] = {getpid(), getpid(), FAKE_PID, FAKE_PID, FAKE_PID, getpid()};
    for (int i = 0; i < 6; i++) /* three runs of one pid: three traces */
        feed(pids[i], 0, 1000000ull * (i + 1), LEA_IP, 3, 4, 0);
    ck_assert_uint_eq(stats(0).traces, 2); /* handed over at each pid change */
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(stats(0).traces, 3);
    ck_assert_uint_eq(stats(0).values, 6); /* both pids map the same image */
    ck_assert_uint_eq(summary(0, LEA_IP)->vtot, 6);
    dcpi_values_end_drain(vt); /* nothing pending: no empty trace */
    ck_assert_uint_eq(stats(0).traces, 3);
    teardown();
}
END_TEST

START_TEST(test_contexts)
{
    const char *const p[] = {CLASSIC, NULL};
    contexts = 1;
    load_plugins(p, 1000000);
    ck_assert_int_eq(dcpi_values_contexts(vt), 1);
    for (int i = 0; i < 9; i++) {
        dcpi_values_sample_t s = {.pid = getpid(),
                                  .tid = getpid(),
                                  .time = 1000000ull * (i + 1),
                                  .ip = LEA_IP,
                                  .context0 = 0x1000 + (i % 3),
                                  .context1 = 0x2000};
        s.regs.valid = DCPI_REGS_FULL_MASK & ((1ull << DCPI_REG_COUNT) - 1);
        s.regs.r[DCPI_REG_SI] = 3;
        s.regs.r[DCPI_REG_DI] = 4;
        dcpi_values_sample(vt, &s);
    }
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_uint_eq(s->vtot, 9);
    for (int c = 0; c < 3; c++)
        ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0x1000 + c, 0x2000), 3);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), 0);
    teardown();
}
END_TEST

START_TEST(test_regs_mask_and_unresolved)
{
    const char *const p[] = {CLASSIC, NULL};
    load_plugins(p, 0);
    ck_assert_uint_eq(dcpi_values_regs_mask(vt), 0x00ff03ffull); /* GPRs, IP, FLAGS */
    ck_assert_uint_eq(dcpi_values_rate(vt), DCPI_VALUES_DEFAULT_RATE);
    feed(12345678, 0, 1000, LEA_IP, 3, 4, 0); /* no such process in the loadmap */
    ck_assert_uint_eq(dcpi_values_unresolved(vt), 1);
    ck_assert_uint_eq(stats(0).seen, 0);
    teardown();
}
END_TEST

START_TEST(test_no_specification)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_loadmap_new(&lm), 0);
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    ck_assert_int_eq(dcpi_vp_load(set, DCPI_TEST_PLUGINS "/good.so", NULL, err), 0);
    dcpi_values_opts_t o = {0};
    ck_assert_int_eq(dcpi_values_new(set, lm, &o, &vt, err), DCPI_EPLUGIN);
    ck_assert_str_eq(err, "tp-good: vp_prof_init returned no specification (NULL: the plugin "
                          "gave up building it, e.g. out of memory or a trace_* builder call "
                          "that failed; check what they return)");
    vt = NULL;
    teardown();
}
END_TEST

/* A specification that selects no instruction is refused, not run for "0 traces". */
START_TEST(test_empty_specification)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_loadmap_new(&lm), 0);
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    ck_assert_int_eq(dcpi_vp_load(set, DCPI_TEST_PLUGINS "/empty_spec.so", NULL, err), 0);
    dcpi_values_opts_t o = {0};
    ck_assert_int_eq(dcpi_values_new(set, lm, &o, &vt, err), DCPI_EPLUGIN);
    ck_assert_str_eq(err, "tp-empty-spec: vp_prof_init's specification selects no instruction "
                          "(every key ignored: add vlists with trace_add_vlist_by_select / "
                          "_by_opc)");
    vt = NULL;
    teardown();
}
END_TEST

START_TEST(test_flush_file)
{
    const char *const p[] = {CLASSIC, NULL};
    char dir[] = "/tmp/check_values.XXXXXX", err[DCPI_ERRLEN] = "", cmd[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    load_plugins(p, 1000000);
    for (int i = 0; i < 10; i++)
        feed(getpid(), 0, 1000000ull * (i + 1), LEA_IP, 3, i < 7 ? 4 : 5, 0);
    ck_assert_uint_eq(dcpi_values_used(vt), 0); /* the trace is still pending */
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(dcpi_values_used(vt), 1);
    dcpi_values_flush_info_t fi = {.db = dir,
                                   .epoch = "202601010000",
                                   .platform = "test",
                                   .event = "cpu-clock",
                                   .period = 500000,
                                   .cpuspeed = 1000,
                                   .cpucount = 2};
    size_t failed = 9;
    ck_assert_msg(dcpi_values_flush(vt, &fi, &failed, err) == 1, "%s", err);
    ck_assert_uint_eq(failed, 0);
    ck_assert_uint_eq(dcpi_values_used(vt), 0);
    dcpi_image_t *img;
    uint32_t off;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), LEA_IP, &img, &off), 0);
    char dname[512], path[8192];
    dcpi_image_dirname(img->path, img->info.id, dname, sizeof dname);
    snprintf(path, sizeof path, "%s/202601010000/test/%s/vp-classic.vprof", dir, dname);
    dcpi_vprof_t *vp = NULL;
    ck_assert_msg(dcpi_vprof_read(path, &vp, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_vprof_get(vp, "vprof"), "vp-classic");
    ck_assert_str_eq(dcpi_vprof_get(vp, "contexts"), "0");
    ck_assert_str_eq(dcpi_vprof_get(vp, "event"), "cpu-clock");
    ck_assert_str_eq(dcpi_vprof_get(vp, "image"), img->info.id);
    const dcpi_vsummary_t *s = dcpi_vprof_at(vp, off, 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->vtot, 10);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), 7);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 8, 0, 0), 3);
    dcpi_vprof_free(vp);
    /* a second flush merges into the file */
    for (int i = 0; i < 5; i++)
        feed(getpid(), 0, 100000000ull + 1000000ull * i, LEA_IP, 3, 4, 0);
    ck_assert_int_eq(dcpi_values_flush(vt, &fi, NULL, err), 1);
    ck_assert_int_eq(dcpi_vprof_read(path, &vp, err), 0);
    ck_assert_uint_eq(dcpi_vsummary_count(dcpi_vprof_at(vp, off, 0), 7, 0, 0), 12);
    dcpi_vprof_free(vp);
    teardown();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

#define FAULT(x) DCPI_TEST_PLUGINS "/" x "_process.so"

START_TEST(test_worker_counts)
{
    const char *const p[] = {CLASSIC, ADDR, NULL};
    base = (dcpi_values_opts_t){.isolate = 1};
    load_plugins(p, 1000000);
    ck_assert_int_eq(dcpi_values_plugin_worker(vt, 0), 0); /* started on first use */
    for (int i = 0; i < 100; i++)
        feed(getpid(), 0, 1000000ull * (i + 1), LEA_IP, i < 60 ? 3 : 1, i < 60 ? 4 : 1, 0);
    for (int i = 0; i < 50; i++)
        feed(getpid(), 0, 200000000ull + 1000000ull * i, MOV_IP, 0, 0, i % 5 ? 0x1000 : 0x2000);
    dcpi_values_end_drain(vt);
    ck_assert_int_gt(dcpi_values_plugin_worker(vt, 0), 0);
    ck_assert_int_ne(dcpi_values_plugin_worker(vt, 0), getpid());
    ck_assert_int_ne(dcpi_values_plugin_worker(vt, 0), dcpi_values_plugin_worker(vt, 1));
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), 60);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 2, 0, 0), 40);
    s = summary(1, MOV_IP);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x1000, 0, 0), 40);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x2000, 0, 0), 10);
    ck_assert_uint_eq(stats(0).values, 100);
    ck_assert_uint_eq(stats(1).values, 50);
    teardown();
}
END_TEST

/* Plugin 0 is faulty (good for its first call), plugin 1 vp-classic: 4 drains of 5 samples. */
static void run_faulty(const char *path, unsigned timeout_ms, const char *why)
{
    const char *const p[] = {path, CLASSIC, NULL};
    setenv("DCPI_TEST_FAULT_AFTER", "1", 1);
    base = (dcpi_values_opts_t){.isolate = 1, .timeout_ms = timeout_ms};
    load_plugins(p, 1000000);
    for (int d = 0; d < 4; d++) {
        for (int i = 0; i < 5; i++)
            feed(getpid(), 0, 1000000ull * (d * 10 + i + 1), LEA_IP, 3, 4, 0);
        dcpi_values_end_drain(vt);
    }
    dcpi_values_stats_t st = stats(0);
    ck_assert_int_eq(st.disabled, 1);
    ck_assert_str_eq(dcpi_values_plugin_why(vt, 0), why);
    ck_assert_uint_eq(st.traces, 2); /* one good, one fatal, then nothing more */
    ck_assert_uint_eq(st.values, 5); /* the first call's data stays */
    ck_assert_uint_eq(st.lost, 5);
    ck_assert_uint_eq(st.errors, 1);
    ck_assert_int_eq(dcpi_values_plugin_worker(vt, 0), 0);
    ck_assert_uint_eq(stats(1).values, 20); /* the other plugin goes on */
    ck_assert_int_eq(stats(1).disabled, 0);
    ck_assert_uint_eq(summary(0, LEA_IP)->vtot, 5);
    teardown();
}

START_TEST(test_worker_segv)
{
    run_faulty(FAULT("segv"), 0, "vp_prof_process crashed (SIGSEGV)");
}
END_TEST

START_TEST(test_worker_abort)
{
    run_faulty(FAULT("abort"), 0, "vp_prof_process crashed (SIGABRT)");
}
END_TEST

START_TEST(test_worker_hang)
{
    run_faulty(FAULT("hang"), 300, "vp_prof_process did not return within 300 ms");
}
END_TEST

START_TEST(test_worker_too_many)
{
    run_faulty(FAULT("too_many"), 0, "vp_prof_process returned 5000 samples (buffer holds 4096)");
}
END_TEST

START_TEST(test_worker_badptr)
{
    run_faulty(FAULT("badptr"), 0, "vp_prof_process crashed (SIGSEGV)");
}
END_TEST

START_TEST(test_record_segment)
{
    const char *const p[] = {ADDR, NULL};
    char dir[] = "/tmp/check_values.XXXXXX", err[DCPI_ERRLEN] = "", cmd[128], seg[4096];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    base = (dcpi_values_opts_t){.record = 1};
    load_plugins(p, 100); /* bucket of 10 */
    dcpi_values_flush_info_t fi = {.db = dir,
                                   .epoch = "202601010000",
                                   .platform = "test",
                                   .event = "cpu-clock",
                                   .period = 500000,
                                   .cpuspeed = 1000,
                                   .cpucount = 2};
    ck_assert_msg(dcpi_values_new_epoch(vt, &fi, err) == 0, "%s", err);
    for (int i = 0; i < 30; i++) /* lea: no key of vp-addr, recorded all the same */
        feed(getpid(), 0, 1000000ull * (i + 1), LEA_IP, 3, 4, 0);
    dcpi_values_end_drain(vt);
    dcpi_tracefile_stats_t rs;
    ck_assert_int_eq(dcpi_values_record_stats(vt, &rs), 0);
    ck_assert_uint_eq(rs.traces, 1);
    ck_assert_uint_eq(rs.maps, 1);
    snprintf(seg, sizeof seg, "%s/202601010000/test/values.trace/trace-%d-0.dtr", dir,
             (int)getpid());
    teardown(); /* closes the segment */
    dcpi_tracefile_reader_t *r;
    ck_assert_msg(dcpi_tracefile_reader_open(seg, &r, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_tracefile_reader_get(r, "event"), "cpu-clock");
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    uint64_t seen = 0, traces = 0, entries = 0;
    int rc;
    while ((rc = dcpi_tracefile_next(r, &rec, &tr, err)) == 1) {
        traces += rec.type == DCPI_TRACEFILE_TRACE;
        if (rec.type == DCPI_TRACEFILE_TRACE) {
            trace_parser_t tp;
            uint64_t pc, c0, c1;
            trace_parser_init(&tp, rec.data, rec.len);
            while (trace_parser_next(&tp, NULL, &pc, &c0, &c1, 0) >= 0)
                entries++;
        }
        for (uint32_t i = 0; rec.type == DCPI_TRACEFILE_SEEN && i < rec.npairs; i++) {
            uint64_t pc;
            uint32_t key, count;
            dcpi_tracefile_seen_at(&rec, i, &pc, &key, &count);
            ck_assert_uint_eq(pc, LEA_IP);
            seen += count;
        }
    }
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(traces, 1);
    ck_assert_uint_eq(seen + entries, 30); /* admitted by the bucket or only seen */
    ck_assert_msg(entries >= 10 && entries <= 13, "entries %" PRIu64, entries);
    dcpi_tracefile_reader_close(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* One breakpoint hit of the lea in cluster c (0: not clustered): vp-classic's value is
 * rsi + rdi = value (dcpi_values_hit: always admitted, as the inproc backend feeds it). */
static void hit(uint64_t c, uint64_t t_ns, uint64_t value)
{
    dcpi_values_sample_t s = {
        .pid = getpid(), .tid = getpid(), .time = t_ns, .ip = LEA_IP, .cluster = c};
    s.regs.valid = DCPI_REGS_FULL_MASK & ((1ull << DCPI_REG_COUNT) - 1);
    s.regs.r[DCPI_REG_SI] = value;
    s.regs.r[DCPI_REG_DI] = 0;
    s.regs.r[DCPI_REG_IP] = LEA_IP;
    dcpi_values_hit(vt, &s);
}

/* The summary's cluster counters K, N, S, D (a macro: a failure names the caller's line). */
#define assert_clusters(s, k, n, sq, agree)                                                        \
    do {                                                                                           \
        const dcpi_vsummary_t *s_ = (s);                                                           \
        ck_assert_ptr_nonnull(s_);                                                                 \
        ck_assert_uint_eq(s_->clusters, (k));                                                      \
        ck_assert_uint_eq(s_->chits, (n));                                                         \
        ck_assert_uint_eq(s_->csq, (sq));                                                          \
        ck_assert_uint_eq(s_->cagree, (agree));                                                    \
    } while (0)

/* Two clusters of the lea interleaved in one trace: A = 5,5,5 and B = 5,7 (A5 B5 A5 B7 A5):
 * K 2, N 5, S 3^2 + 2^2 = 13, D 3^2 + (1^2 + 1^2) = 11; in this process and through a worker. */
static void two_clusters(int isolate)
{
    const char *const p[] = {CLASSIC, NULL};
    base = (dcpi_values_opts_t){.isolate = isolate};
    load_plugins(p, 1000000);
    const uint64_t A = (uint64_t)getpid() << 32 | 1, B = (uint64_t)getpid() << 32 | 2;
    const uint64_t c[] = {A, B, A, B, A}, v[] = {5, 5, 5, 7, 5};
    for (int i = 0; i < 5; i++)
        hit(c[i], 1000000ull * (i + 1), v[i]);
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->vtot, 5);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 5, 0, 0), 4);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 7, 0, 0), 1);
    assert_clusters(s, 2, 5, 13, 11);
    ck_assert_uint_eq(stats(0).traces, 1);
    teardown();
}

START_TEST(test_clusters_counted)
{
    two_clusters(0);
}
END_TEST

START_TEST(test_worker_clusters_counted)
{
    two_clusters(1);
}
END_TEST

/* A cluster handed over in two traces is one cluster, its squares taken over the whole of it;
 * the next cluster starts afresh. */
START_TEST(test_cluster_across_traces)
{
    const char *const p[] = {CLASSIC, NULL};
    load_plugins(p, 1000000);
    hit(10, 1000000, 5); /* cluster 10: 5, 5 | 5 */
    hit(10, 2000000, 5);
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(stats(0).traces, 1);
    assert_clusters(summary(0, LEA_IP), 1, 2, 4, 4);
    hit(10, 3000000, 5);
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(stats(0).traces, 2);
    assert_clusters(summary(0, LEA_IP), 1, 3, 9, 9); /* not 2 clusters: S 4 + 1, D 4 + 1 */
    hit(11, 4000000, 5); /* cluster 11: 5, 7 | 5: S 9, D 2^2 + 1^2 = 5 */
    hit(11, 5000000, 7);
    dcpi_values_end_drain(vt);
    hit(11, 6000000, 5);
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    assert_clusters(s, 2, 6, 18, 14);
    ck_assert_uint_eq(s->vtot, 6);
    teardown();
}
END_TEST

/* The recorder keeps the clusters of its entries: a trace with clustered entries is written
 * right after a CLUSTER record of its entries' clusters in entry order, one without (cluster
 * 0 only) alone. */
START_TEST(test_record_clusters)
{
    const char *const p[] = {CLASSIC, NULL};
    char dir[] = "/tmp/check_values.XXXXXX", err[DCPI_ERRLEN] = "", cmd[128], seg[4096];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    base = (dcpi_values_opts_t){.record = 1};
    load_plugins(p, 1000000);
    dcpi_values_flush_info_t fi = {.db = dir,
                                   .epoch = "202601010000",
                                   .platform = "test",
                                   .event = "cpu-clock",
                                   .period = 500000,
                                   .cpuspeed = 1000,
                                   .cpucount = 2};
    ck_assert_msg(dcpi_values_new_epoch(vt, &fi, err) == 0, "%s", err);
    const uint64_t A = (uint64_t)getpid() << 32 | 1, B = (uint64_t)getpid() << 32 | 2;
    const uint64_t c[] = {A, 0, B, A, B, A}, v[] = {5, 6, 5, 5, 7, 5};
    for (int i = 0; i < 6; i++)
        hit(c[i], 1000000ull * (i + 1), v[i]);
    dcpi_values_end_drain(vt);
    for (int i = 0; i < 3; i++) /* not clustered: no CLUSTER record */
        hit(0, 10000000ull * (i + 1), 5);
    dcpi_values_end_drain(vt);
    assert_clusters(summary(0, LEA_IP), 2, 5, 13, 11); /* live, as two_clusters */
    dcpi_tracefile_stats_t rs;
    ck_assert_int_eq(dcpi_values_record_stats(vt, &rs), 0);
    ck_assert_uint_eq(rs.traces, 2);
    ck_assert_uint_eq(rs.clusters, 1);
    snprintf(seg, sizeof seg, "%s/202601010000/test/values.trace/trace-%d-0.dtr", dir,
             (int)getpid());
    teardown(); /* closes the segment */
    dcpi_tracefile_reader_t *r;
    ck_assert_msg(dcpi_tracefile_reader_open(seg, &r, err) == 0, "%s", err);
    dcpi_tracefile_record_t rec;
    int types[8], n = 0, rc;
    while ((rc = dcpi_tracefile_next(r, &rec, NULL, err)) == 1) {
        ck_assert_int_lt(n, 8);
        types[n++] = rec.type;
        if (rec.type == DCPI_TRACEFILE_CLUSTER) {
            ck_assert_uint_eq(rec.pid, (unsigned)getpid());
            ck_assert_uint_eq(rec.nclusters, 6);
            for (uint32_t i = 0; i < 6; i++)
                ck_assert_uint_eq(dcpi_tracefile_cluster_at(&rec, i), c[i]);
        }
    }
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(types[0], DCPI_TRACEFILE_MAP);
    ck_assert_int_eq(types[1], DCPI_TRACEFILE_CLUSTER); /* right before its TRACE */
    ck_assert_int_eq(types[2], DCPI_TRACEFILE_TRACE);
    ck_assert_int_eq(types[3], DCPI_TRACEFILE_TRACE);
    dcpi_tracefile_reader_close(r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Samples of cluster 0 are no cluster's: all counters stay 0; mixed with clustered ones in a
 * trace, only those count (the vsamples are matched to their entries in order). */
START_TEST(test_cluster_zero_uncounted)
{
    const char *const p[] = {CLASSIC, NULL};
    load_plugins(p, 1000000);
    for (int i = 0; i < 4; i++)
        hit(0, 1000000ull * (i + 1), i % 2 ? 7 : 5);
    for (int i = 0; i < 3; i++) /* the rate-limited path too */
        feed(getpid(), 0, 10000000ull * (i + 1), LEA_IP, 5, 0, 0);
    dcpi_values_end_drain(vt);
    const dcpi_vsummary_t *s = summary(0, LEA_IP);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->vtot, 7);
    assert_clusters(s, 0, 0, 0, 0);
    /* 0, 20: 7, 0, 20: 7, 0: the cluster's two 7s are matched to it, the 5s are not */
    const uint64_t c[] = {0, 20, 0, 20, 0}, v[] = {5, 7, 5, 7, 5};
    for (int i = 0; i < 5; i++)
        hit(c[i], 100000000ull + 1000000ull * i, v[i]);
    dcpi_values_end_drain(vt);
    ck_assert_uint_eq(s->vtot, 12);
    assert_clusters(s, 1, 2, 4, 4);
    teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("values");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_rate_limit);
    tcase_add_test(tc, test_too_many_disabled);
    tcase_add_test(tc, test_split_per_pid);
    tcase_add_test(tc, test_contexts);
    tcase_add_test(tc, test_regs_mask_and_unresolved);
    tcase_add_test(tc, test_no_specification);
    tcase_add_test(tc, test_empty_specification);
    tcase_add_test(tc, test_flush_file);
    tcase_add_test(tc, test_worker_counts);
    tcase_add_test(tc, test_worker_segv);
    tcase_add_test(tc, test_worker_abort);
    tcase_add_test(tc, test_worker_hang);
    tcase_add_test(tc, test_worker_too_many);
    tcase_add_test(tc, test_worker_badptr);
    tcase_add_test(tc, test_record_segment);
    tcase_add_test(tc, test_record_clusters);
    tcase_add_test(tc, test_clusters_counted);
    tcase_add_test(tc, test_worker_clusters_counted);
    tcase_add_test(tc, test_cluster_across_traces);
    tcase_add_test(tc, test_cluster_zero_uncounted);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
