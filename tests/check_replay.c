/*
 * check_replay.c - dcpireplay's engine (core/values/replay.h) and tool on a recording written
 * through the tracefile API: replaying vp-addr and vp-classic over recorded traces (entries
 * carrying the union of both plugins' values) gives exactly the value profiles of running each
 * plugin live on its own traces of the same entries, as dcpid's vtrace.c builds them; SEEN records
 * add to "seen"; unmapped pcs are lost; existing profiles are refused; a plugin returning too
 * many vsamples, or crashing, is disabled in its worker with one line naming it and the reason,
 * and the other plugin's profiles are written; dcpireplay writes the same files; CLUSTER records
 * give the replayed summaries the recorded clusters' counters (one that does not match its TRACE
 * is ignored with one warning).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/db.h"
#include "core/values/replay.h"
#include "core/store/tracefile.h"
#include "core/plugin/vploader.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

#define EPOCH    "202401021530"
#define PLATFORM "host1"
#define PID      100u
#define BASE     0x7f0000400000ull
#define NENT     6000

static char db[256], recdir[512];

static void setup(void)
{
    snprintf(db, sizeof db, "/tmp/check_replay.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(db));
    snprintf(recdir, sizeof recdir, "%s/%s/%s/%s", db, EPOCH, PLATFORM, DCPI_TRACEFILE_DIR);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", db);
    ck_assert_int_eq(system(cmd), 0);
}

/* The program: a load, an add and a store, at offsets 0, 4, 8 of the image. */
static const struct {
    uint8_t bytes[4];
    int len;
} code[3] = {
    {{0x48, 0x8b, 0x43, 0x08}, 4}, /* mov rax, [rbx+8] */
    {{0x48, 0x83, 0xc0, 0x01}, 4}, /* add rax, 1 */
    {{0x48, 0x89, 0x11}, 3},       /* mov [rcx], rdx */
};
static const trace_value_t rec_kinds[2] = {TRACE_REGC, TRACE_EA};

/* Key of the load (code[0]). */
static uint32_t code_key(void)
{
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(code[0].bytes, code[0].len, &inst), code[0].len);
    return inst.opc;
}

/* Entry i: which instruction, its pc, its values (REGC, EA) and missing mask. */
static void entry(int i, trace_inst_t *inst, uint64_t *pc, uint64_t v[2], unsigned *missing)
{
    int k = (i * 7 + i / 5) % 3;
    ck_assert_int_eq(trace_inst_decode(code[k].bytes, code[k].len, inst), code[k].len);
    *pc = BASE + 4u * (unsigned)k;
    if (i % 97 == 0)
        *pc += 0x100000; /* no MAP covers it: lost */
    v[0] = 0x1000 + (uint64_t)(i % 5);
    v[1] = 0x7ffd0000 + 8u * (uint64_t)(i % 11);
    *missing = k == 1 ? 2u : 1u; /* add: no EA; load/store: no result (regs backend) */
}

/* The cluster of entry i: consecutive entries of one instruction, 12 entries at a time, are one
 * cluster (a breakpoint arm's hits). */
static uint64_t entry_cluster(int i)
{
    return (uint64_t)(i / 12) * 3 + (uint64_t)((i * 7 + i / 5) % 3) + 1;
}

enum { REC_PLAIN, REC_CLUSTERS, REC_CLUSTERS_SHORT };

/* Record NENT entries of PID in traces of at most 1000 entries, like dcpid -vrecord; with
 * REC_CLUSTERS each TRACE has the CLUSTER record of its entries' clusters, with
 * REC_CLUSTERS_SHORT one that misses the last entry. */
static void record_with(int mode)
{
    static uint64_t cl[1000];
    static uint8_t buf[64 * 1024];
    dcpi_tracefile_meta_t m = {EPOCH, PLATFORM, "cpu-clock", 1000000, 2400, 2, 1, 16};
    dcpi_tracefile_t *w = NULL;
    char err[DCPI_ERRLEN] = "";
    trace_encoder_t enc;
    ck_assert_msg(dcpi_tracefile_open(recdir, &m, 0, &w, err) == 0, "%s", err);
    ck_assert_int_eq(dcpi_tracefile_map(w, PID, BASE, BASE + 0x1000, 0, "abcd", "prog_abcd",
                                        "/bin/prog", 0x1000, 0x1000),
                     0);
    ck_assert_int_eq(dcpi_tracefile_seen(w, PID, BASE, code_key(), 5), 0);
    trace_encoder_init(&enc, buf, sizeof buf);
    for (int i = 0; i < NENT; i++) {
        trace_inst_t inst;
        uint64_t pc, v[2];
        unsigned missing;
        entry(i, &inst, &pc, v, &missing);
        ck_assert_int_eq(trace_encoder_burst(&enc, PID, PID + 1, 1000u * (uint64_t)i, 1), 0);
        ck_assert_int_eq(trace_encoder_entry(&enc, &inst, pc, 0x400100, (uint64_t)(i % 2), 2,
                                             rec_kinds, v, missing),
                         0);
        unsigned n = trace_encoder_entries(&enc);
        cl[n - 1] = entry_cluster(i);
        if (n == 1000 || i == NENT - 1) {
            uint32_t ncl = mode == REC_PLAIN ? 0 : mode == REC_CLUSTERS ? n : n - 1;
            ck_assert_int_eq(
                dcpi_tracefile_trace_clustered(w, PID, buf, trace_encoder_size(&enc), cl, ncl), 0);
            trace_encoder_init(&enc, buf, sizeof buf);
        }
    }
    ck_assert_msg(dcpi_tracefile_close(w, err) == 0, "%s", err);
}

static void record(void)
{
    record_with(REC_PLAIN);
}

static dcpi_vp_set_t *load(const char *const *names)
{
    dcpi_vp_set_t *set = NULL;
    char err[DCPI_ERRLEN] = "", path[512];
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    for (; *names; names++) {
        snprintf(path, sizeof path, "%s", *names);
        ck_assert_msg(dcpi_vp_load(set, path, NULL, err) == 0, "%s", err);
    }
    return set;
}

/* Hand a live trace to the plugin and count its vsamples at their offsets. */
static void live_process(const vp_dispatch_t *d, trace_encoder_t *enc, uint8_t *buf, size_t cap,
                         dcpi_vprof_t *vp)
{
    trace_parser_t *p = malloc(sizeof *p);
    vsample_t *vs = NULL;
    if (trace_encoder_entries(enc) > 0) {
        trace_parser_init(p, buf, trace_encoder_size(enc));
        int n = d->vp_prof_process(PID, p, &vs);
        ck_assert_int_ge(n, 0);
        ck_assert_int_le(n, VSAMPLE_BUFFER_SIZE);
        for (int i = 0; i < n; i++) {
            ck_assert_uint_lt(vs[i].pc - BASE, 0x1000);
            dcpi_vsummary_t *s = dcpi_vprof_at(vp, (uint32_t)(vs[i].pc - BASE), 1);
            dcpi_vsummary_add(s, vs[i].value, vs[i].context0, vs[i].context1, 1);
        }
    }
    trace_encoder_init(enc, buf, cap);
    free(p);
}

/*
 * The plugin run live (as vtrace.c does) on the mapped entries: each entry whose key its
 * specification selects, with the values of its own vlist; SEEN counts added to "seen".
 */
static dcpi_vprof_t *live(const vp_dispatch_t *d)
{
    static uint8_t buf[192 * 1024];
    trace_encoder_t *enc = malloc(sizeof *enc);
    dcpi_vprof_t *vp = NULL;
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    ck_assert_int_eq(dcpi_vprof_new(16, &vp), 0);
    trace_encoder_init(enc, buf, sizeof buf);
    for (int i = 0; i < NENT; i++) {
        trace_inst_t inst;
        uint64_t pc, v[2], values[TRACE_VLIST_MAX] = {0};
        unsigned missing, m = 0;
        trace_value_t kinds[TRACE_VLIST_MAX];
        entry(i, &inst, &pc, v, &missing);
        int n = trace_vlist_table_get(spec, inst.opc, kinds);
        if (n < 0 || pc - BASE >= 0x1000)
            continue;
        for (int j = 0; j < n; j++) {
            int r = kinds[j] == TRACE_REGC ? 0 : kinds[j] == TRACE_EA ? 1 : -1;
            if (r < 0 || (missing >> r & 1u))
                m |= 1u << j;
            else
                values[j] = v[r];
        }
        if (trace_encoder_entries(enc) >= VSAMPLE_BUFFER_SIZE)
            live_process(d, enc, buf, sizeof buf, vp);
        ck_assert_int_eq(trace_encoder_burst(enc, PID, PID + 1, 1000u * (uint64_t)i, 1), 0);
        ck_assert_int_eq(
            trace_encoder_entry(enc, &inst, pc, 0x400100, (uint64_t)(i % 2), n, kinds, values, m),
            0);
    }
    live_process(d, enc, buf, sizeof buf, vp);
    if (trace_vlist_table_get(spec, code_key(), NULL) >= 0)
        dcpi_vsummary_seen(dcpi_vprof_at(vp, 0, 1), 5);
    d->vp_prof_done();
    free(enc);
    return vp;
}

static void vprof_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s/%s/prog_abcd/%s.vprof", db, EPOCH, PLATFORM, name);
}

/* The replayed file equals the live profile: every offset, total and hotlist entry. */
static void compare(const char *name, dcpi_vprof_t *want)
{
    char path[1024], err[DCPI_ERRLEN] = "";
    dcpi_vprof_t *got = NULL;
    vprof_path(path, sizeof path, name);
    ck_assert_msg(dcpi_vprof_read(path, &got, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_vprof_get(got, "origin"), DCPI_REPLAY_ORIGIN);
    ck_assert_str_eq(dcpi_vprof_get(got, "vprof"), name);
    ck_assert_str_eq(dcpi_vprof_get(got, "event"), "cpu-clock");
    ck_assert_str_eq(dcpi_vprof_get(got, "contexts"), "1");
    ck_assert_str_eq(dcpi_vprof_get(got, "tstart"), "0x1000");
    ck_assert_uint_gt(dcpi_vprof_count(want), 0);
    ck_assert_uint_eq(dcpi_vprof_count(got), dcpi_vprof_count(want));
    for (size_t i = 0; i < dcpi_vprof_count(want); i++) {
        uint32_t off;
        const dcpi_vsummary_t *w;
        dcpi_vprof_entry(want, i, &off, &w);
        dcpi_vsummary_t *g = dcpi_vprof_at(got, off, 0);
        ck_assert_ptr_nonnull(g);
        ck_assert_uint_eq(g->vtot, w->vtot);
        ck_assert_uint_eq(g->seen, w->seen);
        ck_assert_uint_eq(g->n, w->n);
        for (uint32_t k = 0; k < w->n; k++)
            ck_assert_uint_eq(
                dcpi_vsummary_count(g, w->e[k].value, w->e[k].context0, w->e[k].context1),
                w->e[k].count);
    }
    dcpi_vprof_free(got);
}

#define VP_ADDR    DCPI_TEST_BIN "/plugins/vp-addr.so"
#define VP_CLASSIC DCPI_TEST_BIN "/plugins/vp-classic.so"

START_TEST(test_replay_equals_live)
{
    static const char *const names[] = {VP_ADDR, VP_CLASSIC, NULL};
    record();
    dcpi_vp_set_t *set = load(names);
    dcpi_vprof_t *want_addr = live(dcpi_vp_dispatch(dcpi_vp_get(set, 0)));
    dcpi_vprof_t *want_classic = live(dcpi_vp_dispatch(dcpi_vp_get(set, 1)));
    dcpi_replay_opts_t o = {.db = db, .epoch = EPOCH, .platform = PLATFORM};
    dcpi_replay_stats_t st;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_replay_run(set, &o, &st, err) == 0, "%s", err);
    ck_assert_uint_eq(st.segments, 1);
    ck_assert_uint_eq(st.traces, 6);
    ck_assert_uint_eq(st.entries, NENT);
    ck_assert_uint_eq(st.files, 2);
    ck_assert_uint_eq(st.torn + st.bad + st.bad_traces + st.plugin_errors, 0);
    ck_assert_uint_gt(st.lost, 0); /* the unmapped pcs */
    compare("vp-addr", want_addr);
    compare("vp-classic", want_classic);
    /* the load's seen: its EA samples plus the 5 not admitted */
    ck_assert_uint_eq(dcpi_vprof_at(want_addr, 0, 0)->seen,
                      dcpi_vprof_at(want_addr, 0, 0)->vtot + 5);
    /* again: the files exist */
    ck_assert_int_eq(dcpi_replay_run(set, &o, &st, err), DCPI_EEXIST);
    ck_assert_ptr_nonnull(strstr(err, "vp-addr.vprof: exists"));
    dcpi_vprof_free(want_addr);
    dcpi_vprof_free(want_classic);
    dcpi_vp_set_free(set);
}
END_TEST

/* The replayed summary of the load (offset 0) in vp-addr.vprof. */
static dcpi_vprof_t *replayed(const dcpi_vsummary_t **load)
{
    char path[1024], err[DCPI_ERRLEN] = "";
    dcpi_vprof_t *got = NULL;
    vprof_path(path, sizeof path, "vp-addr");
    ck_assert_msg(dcpi_vprof_read(path, &got, err) == 0, "%s", err);
    *load = dcpi_vprof_at(got, 0, 0);
    ck_assert_ptr_nonnull(*load);
    return got;
}

static char said[4096];
static int nsaid;
static void collect(void *arg, int level, const char *line);

/* CLUSTER records give the replayed entries their clusters: the summaries get the cluster
 * counters of the recorded clusters (as the live pipeline would), the values stay those of the
 * live run. A CLUSTER record whose n is not its TRACE's entry count is ignored (its entries
 * have no cluster), counted and said once. */
START_TEST(test_clusters)
{
    static const char *const names[] = {VP_ADDR, NULL};
    record_with(REC_CLUSTERS);
    dcpi_vp_set_t *set = load(names);
    dcpi_vprof_t *want = live(dcpi_vp_dispatch(dcpi_vp_get(set, 0)));
    dcpi_replay_opts_t o = {.db = db, .epoch = EPOCH, .platform = PLATFORM, .say = collect};
    dcpi_replay_stats_t st;
    char err[DCPI_ERRLEN] = "";
    said[0] = '\0';
    nsaid = 0;
    ck_assert_msg(dcpi_replay_run(set, &o, &st, err) == 0, "%s", err);
    ck_assert_msg(nsaid == 0, "said: %s", said);
    ck_assert_uint_eq(st.traces, 6);
    ck_assert_uint_eq(st.clusters, 6);
    ck_assert_uint_eq(st.bad_clusters, 0);
    compare("vp-addr", want);
    /* the load's clusters: its mapped entries, by cluster */
    static uint64_t size[NENT / 12 + 1];
    uint64_t k = 0, n = 0, q = 0;
    memset(size, 0, sizeof size);
    for (int i = 0; i < NENT; i++)
        if ((i * 7 + i / 5) % 3 == 0 && i % 97 != 0)
            size[i / 12]++;
    for (size_t g = 0; g < NENT / 12 + 1; g++) {
        k += size[g] != 0;
        n += size[g];
        q += size[g] * size[g];
    }
    const dcpi_vsummary_t *s;
    dcpi_vprof_t *got = replayed(&s);
    ck_assert_uint_eq(s->vtot, n);
    ck_assert_uint_eq(s->clusters, k);
    ck_assert_uint_eq(s->chits, n);
    ck_assert_uint_eq(s->csq, q);
    ck_assert_uint_ge(s->cagree, s->chits);
    ck_assert_uint_le(s->cagree, s->csq);
    ck_assert_uint_lt(s->clusters, s->chits); /* clusters of several samples */
    dcpi_vprof_free(got);

    /* CLUSTER records one entry short: ignored, the entries replayed without clusters */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s/%s", db, EPOCH);
    ck_assert_int_eq(system(cmd), 0);
    record_with(REC_CLUSTERS_SHORT);
    said[0] = '\0';
    nsaid = 0;
    ck_assert_msg(dcpi_replay_run(set, &o, &st, err) == 0, "%s", err);
    ck_assert_uint_eq(st.clusters, 6);
    ck_assert_uint_eq(st.bad_clusters, 6);
    ck_assert_msg(nsaid == 1, "said: %s", said);
    ck_assert_msg(strstr(said, "1 6 CLUSTER records ignored (their entries replayed without "
                               "clusters); the first: ") == said &&
                      strstr(said, ".dtr: offset ") &&
                      strstr(said, ": CLUSTER record of 999 entries of pid 100: its TRACE has "
                                   "1000 entries\n"),
                  "said: %s", said);
    compare("vp-addr", want);
    got = replayed(&s);
    ck_assert_uint_eq(s->clusters + s->chits + s->csq + s->cagree, 0);
    dcpi_vprof_free(got);
    dcpi_vprof_free(want);
    dcpi_vp_set_free(set);
}
END_TEST

/* A torn segment: the records before the tear are replayed, and the tear is counted. */
START_TEST(test_torn_segment)
{
    static const char *const names[] = {VP_ADDR, NULL};
    char **seg;
    size_t n;
    char path[1024], err[DCPI_ERRLEN] = "";
    struct stat sb;
    record();
    ck_assert_int_eq(dcpi_tracefile_list(recdir, &seg, &n, NULL), 0);
    ck_assert_uint_eq(n, 1);
    snprintf(path, sizeof path, "%s/%s", recdir, seg[0]);
    dcpi_db_free_list(seg, n);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size - 100), 0); /* into the last TRACE record */
    dcpi_vp_set_t *set = load(names);
    dcpi_replay_opts_t o = {.db = db, .epoch = EPOCH, .platform = PLATFORM};
    dcpi_replay_stats_t st;
    ck_assert_msg(dcpi_replay_run(set, &o, &st, err) == 0, "%s", err);
    ck_assert_uint_eq(st.torn, 1);
    ck_assert_uint_eq(st.traces, 5);
    ck_assert_uint_eq(st.entries, 5000);
    ck_assert_uint_eq(st.files, 1);
    dcpi_vp_set_free(set);
}
END_TEST

/* The lines dcpi_replay_run says, one after the other. */
static void collect(void *arg, int level, const char *line)
{
    (void)arg;
    size_t n = strlen(said);
    snprintf(said + n, sizeof said - n, "%d %s\n", level, line);
    nsaid++;
}

/* A broken plugin is disabled (one line: its name, the reason) and not written; vp-addr's
 * profile is, and equals the live one. */
static void broken(const char *plugin, const char *line)
{
    const char *const names[] = {VP_ADDR, plugin, NULL};
    char err[DCPI_ERRLEN] = "", path[1024];
    dcpi_vp_set_t *set = load(names);
    dcpi_replay_opts_t o = {.db = db, .epoch = EPOCH, .platform = PLATFORM, .say = collect};
    dcpi_replay_stats_t st;
    said[0] = '\0';
    nsaid = 0;
    ck_assert_int_eq(dcpi_replay_run(set, &o, &st, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "values.trace: no recorded traces"));
    record();
    dcpi_vprof_t *want = live(dcpi_vp_dispatch(dcpi_vp_get(set, 0)));
    ck_assert_msg(dcpi_replay_run(set, &o, &st, err) == 0, "%s", err);
    ck_assert_msg(nsaid == 1 && strcmp(said, line) == 0, "said: %s", said);
    ck_assert_uint_eq(st.disabled, 1);
    ck_assert_uint_eq(st.files, 1); /* vp-addr's profile is still written */
    compare("vp-addr", want);
    vprof_path(path, sizeof path, dcpi_vp_name(dcpi_vp_get(set, 1)));
    ck_assert_int_ne(access(path, F_OK), 0);
    dcpi_vprof_free(want);
    dcpi_vp_set_free(set);
}

START_TEST(test_too_many)
{
    broken(DCPI_TEST_PLUGINS "/too_many.so",
           "0 tp-too-many: disabled: vp_prof_process returned 4097 samples (buffer holds 4096); "
           "its value profiles are not written\n");
}
END_TEST

START_TEST(test_crash)
{
    setenv("DCPI_TEST_FAULT_AFTER", "1", 1);
    broken(DCPI_TEST_PLUGINS "/segv_process.so",
           "0 tp-segv-process: disabled: vp_prof_process crashed (SIGSEGV); its value profiles "
           "are not written\n");
}
END_TEST

/* dcpireplay itself: same files as the live run, a summary line, refusal of a second run. */
START_TEST(test_tool)
{
    static const char *const names[] = {VP_ADDR, NULL};
    char cmd[2048];
    const char *tool = DCPI_TEST_BIN "/dcpireplay";
    /* Always built with the library: missing is a broken build, not a skip. */
    ck_assert_msg(access(tool, X_OK) == 0, "%s not built: %s", tool, strerror(errno));
    record();
    dcpi_vp_set_t *set = load(names);
    dcpi_vprof_t *want = live(dcpi_vp_dispatch(dcpi_vp_get(set, 0)));
    snprintf(cmd, sizeof cmd, "%s -db %s -epoch latest -vtrace %s > %s/out.txt 2>&1", tool, db,
             VP_ADDR, db);
    ck_assert_int_eq(system(cmd), 0);
    compare("vp-addr", want);
    snprintf(cmd, sizeof cmd, "grep -q '1 files written' %s/out.txt", db);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s -db %s -vtrace %s > /dev/null 2>&1", tool, db, VP_ADDR);
    ck_assert_int_ne(system(cmd), 0);
    dcpi_vprof_free(want);
    dcpi_vp_set_free(set);
}
END_TEST

int main(void)
{
    /* The shipped plugins are always built with the library: missing is a failure. */
    if (access(VP_ADDR, R_OK) != 0 || access(VP_CLASSIC, R_OK) != 0) {
        printf("FAIL: %s or %s not built (the build makes them with libdcpi)\n", VP_ADDR,
               VP_CLASSIC);
        return 1;
    }
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_replay_equals_live);
    tcase_add_test(tc, test_clusters);
    tcase_add_test(tc, test_torn_segment);
    tcase_add_test(tc, test_too_many);
    tcase_add_test(tc, test_crash);
    tcase_add_test(tc, test_tool);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
