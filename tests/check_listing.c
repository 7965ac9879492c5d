/*
 * check_listing.c - core/listing/listing, hotlist, listprint: hotlist text (percentages, -vshow,
 * -vcutoff dots, contexts, plugin preface/format and their NULL answers), decoding with branch
 * targets, and sample attribution to the instruction containing an address.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/listing/listing.h"
#include "dcpi/errno.h"

static const dcpi_lst_vopts_t defaults = {.show = 3, .cutoff = 5.0};

static dcpi_vsummary_t *summary(void)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(s);
    dcpi_vsummary_add(s, 3, 0, 0, 30);
    dcpi_vsummary_add(s, 7, 0, 0, 60);
    dcpi_vsummary_add(s, 1, 0, 0, 4);
    dcpi_vsummary_add(s, 9, 0, 0, 6);
    return s;
}

static const char *fmt(const dcpi_vsummary_t *s, const vp_dispatch_t *d, const dcpi_lst_vopts_t *o)
{
    static char buf[512];
    trace_inst_t inst;
    static const uint8_t imul[] = {0x48, 0x0f, 0xaf, 0xc1}; /* imul rax, rcx */
    ck_assert_int_eq(trace_inst_decode(imul, sizeof imul, &inst), 4);
    dcpi_lst_vp_t vp = {.name = "plugin", .d = d};
    char err[DCPI_ERRLEN];
    int n = dcpi_listing_hotlist(s, &inst, &vp, o, buf, sizeof buf, err);
    ck_assert_uint_eq(n > 0 ? (size_t)n : 0, strlen(buf));
    return buf;
}

START_TEST(hex_pairs_sorted_by_count)
{
    dcpi_vsummary_t *s = summary();
    ck_assert_str_eq(fmt(s, NULL, &defaults), "(60.0% 0x7) (30.0% 0x3) (6.0% 0x9)");
    dcpi_lst_vopts_t o = {.show = 2, .cutoff = 5.0};
    ck_assert_str_eq(fmt(s, NULL, &o), "(60.0% 0x7) (30.0% 0x3)");
    o = (dcpi_lst_vopts_t){.show = 4, .cutoff = 10.0};
    ck_assert_str_eq(fmt(s, NULL, &o), "(60.0% 0x7) (30.0% 0x3) ..");
    o = (dcpi_lst_vopts_t){.show = 4, .cutoff = 99.0};
    ck_assert_str_eq(fmt(s, NULL, &o), "....");
    o = (dcpi_lst_vopts_t){.show = 0, .cutoff = 0};
    ck_assert_str_eq(fmt(s, NULL, &o), "");
    free(s);
}
END_TEST

START_TEST(contexts_and_empty)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(4);
    ck_assert_str_eq(fmt(s, NULL, &defaults), ""); /* no samples: no text */
    dcpi_vsummary_add(s, 5, 0xa, 0, 1);
    dcpi_vsummary_add(s, 6, 0, 0, 2);
    ck_assert_str_eq(fmt(s, NULL, &defaults), "(66.7% 0x6) (33.3% 0x5 @0xa,0x0)");
    free(s);
    /* SDK 2: vp_missing() entries are "missing", a share like any value, no plugin call */
    s = dcpi_vsummary_new(4);
    vsample_t m = vp_missing(0x401000);
    dcpi_vsummary_add(s, m.value, m.context0, m.context1, 2);
    dcpi_vsummary_add(s, 6, 0, 0, 3);
    ck_assert_str_eq(fmt(s, NULL, &defaults), "(60.0% 0x6) (40.0% missing)");
    free(s);
}
END_TEST

static int preface_calls, format_calls;

static const char *pre_ok(const trace_inst_t *inst)
{
    preface_calls++;
    return strcmp(inst->mnemonic, "imul") == 0 ? "rax:" : "?";
}

static const char *pre_null(const trace_inst_t *inst)
{
    (void)inst;
    preface_calls++;
    return NULL;
}

static const char *fmt_dec(const trace_inst_t *inst, uint64_t v)
{
    static char b[32];
    (void)inst;
    format_calls++;
    if (v == 3)
        return NULL; /* falls back to hex */
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    return b;
}

START_TEST(plugin_preface_and_format)
{
    dcpi_vsummary_t *s = summary();
    vp_dispatch_t d = {VP_DISPATCH_HEADER, .vp_preface = pre_ok, .vp_format = fmt_dec};
    preface_calls = format_calls = 0;
    ck_assert_str_eq(fmt(s, &d, &defaults), "rax: (60.0% 7) (30.0% 0x3) (6.0% 9)");
    ck_assert_int_eq(preface_calls, 1);
    ck_assert_int_eq(format_calls, 3);
    d.vp_format = NULL;
    ck_assert_str_eq(fmt(s, &d, &defaults), "rax: (60.0% 0x7) (30.0% 0x3) (6.0% 0x9)");
    d.vp_preface = pre_null; /* the plugin omits the hotlist */
    ck_assert_str_eq(fmt(s, &d, &defaults), "");
    free(s);
}
END_TEST

/* 0x1000: xor eax,eax; 0x1002: jmp 0x1006; 0x1004: nop; nop; 0x1006: dec ecx; jne 0x1004;
 * 0x100a: ret; 0x100b: jmp 0x2000 (outside) */
static const uint8_t code[] = {0x31, 0xc0, 0xeb, 0x02, 0x90, 0x90, 0xff, 0xc9,
                               0x75, 0xfa, 0xc3, 0xe9, 0xf0, 0x0f, 0x00, 0x00};

START_TEST(decode_targets_and_samples)
{
    static const char *const ev[] = {"cpu-clock"};
    dcpi_listing_t *ls = NULL;
    ck_assert_int_eq(dcpi_listing_new("f", 0x1000, 0x1000 + sizeof code, ev, 1, 0, &ls), 0);
    ck_assert_int_eq(dcpi_listing_decode_bytes(ls, code, sizeof code), 0);
    ck_assert_uint_eq(ls->n, 8);
    int targets = 0;
    for (size_t i = 0; i < ls->n; i++)
        targets += ls->insns[i].is_target;
    ck_assert_int_eq(targets, 2);
    ck_assert_int_eq(dcpi_listing_find(ls, 0x1006)->is_target, 1);
    ck_assert_int_eq(dcpi_listing_find(ls, 0x1004)->is_target, 1);
    ck_assert_int_eq(dcpi_listing_find(ls, 0x1005)->is_target, 0);
    ck_assert_str_eq(dcpi_listing_find(ls, 0x1008)->text, "jnz 1004");
    ck_assert_int_eq(dcpi_listing_add_samples(ls, 0, 0x1007, 5), 0); /* inside dec ecx */
    ck_assert_int_eq(dcpi_listing_add_samples(ls, 0, 0x1006, 2), 0);
    ck_assert_int_eq(dcpi_listing_add_samples(ls, 0, 0x2000, 9), DCPI_ENOENT);
    ck_assert_uint_eq(dcpi_listing_find(ls, 0x1006)->counts[0], 7);
    ck_assert_uint_eq(ls->proc_total[0], 7);
    ck_assert_uint_eq(ls->outside, 9);
    dcpi_listing_free(ls);
}
END_TEST

/* Targets named as objdump names them: bare lower-case hex, then <symbol+0xoffset>. */
START_TEST(targets_named_as_objdump)
{
    char path[] = "/tmp/check_listing_syms.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("0000000000001000 T f\n0000000000002000 T ns::Acc<long>::add\n", f);
    fclose(f);
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open_kallsyms(path, &st, NULL), 0);
    unlink(path);
    dcpi_listing_t *ls = NULL;
    ck_assert_int_eq(dcpi_listing_new("f", 0x1000, 0x1000 + sizeof code, NULL, 0, 0, &ls), 0);
    ck_assert_int_eq(dcpi_listing_decode_bytes(ls, code, sizeof code), 0);
    dcpi_listing_name_targets(ls, st);
    ck_assert_str_eq(dcpi_lst_insn_text(dcpi_listing_find(ls, 0x1008)), "jnz 1004 <f+0x4>");
    ck_assert_str_eq(dcpi_lst_insn_text(dcpi_listing_find(ls, 0x100b)),
                     "jmp 2000 <ns::Acc<long>::add>");
    ck_assert_str_eq(dcpi_lst_insn_text(dcpi_listing_find(ls, 0x1000)), "xor eax, eax");
    dcpi_listing_free(ls);
    dcpi_symtab_free(st);
}
END_TEST

START_TEST(values_only_on_instruction_starts)
{
    static const char *const ev[] = {"cpu-clock"};
    dcpi_listing_t *ls = NULL;
    ck_assert_int_eq(dcpi_listing_new("f", 0x1000, 0x1000 + sizeof code, ev, 1, 1, &ls), 0);
    ck_assert_int_eq(dcpi_listing_decode_bytes(ls, code, sizeof code), 0);
    dcpi_vsummary_t *s = summary();
    s->err = 4;
    ck_assert_int_eq(dcpi_listing_set_values(ls, 0, 0x1001, s), DCPI_ENOENT);
    ck_assert_uint_eq(ls->vp[0].max_err, 0);
    ck_assert_int_eq(dcpi_listing_set_values(ls, 0, 0x1000, s), 0);
    ck_assert_ptr_eq(ls->insns[0].vs[0], s);
    ck_assert_uint_eq(ls->vp[0].max_err, 4);
    ck_assert_int_eq(dcpi_listing_set_values(ls, 1, 0x1000, s), DCPI_ENOENT);
    dcpi_listing_free(ls);
    free(s);
}
END_TEST

/* The oracle's bound: windows are clusters. 100 executions at 60/40 in 10 windows of 10: the
 * worst-case design effect sum m^2 / sum m = 10 gives 100 / 10 x 9 / 10 = 9 effective draws,
 * whose Wilson reach is far wider than 100 independent ones'; one window over the whole run
 * (oracle-all) is exact: the error bound alone; fewer than two windows: 100. */
START_TEST(oracle_bound_counts_windows_as_clusters)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(s);
    dcpi_vsummary_add(s, 0, 0, 0, 60);
    dcpi_vsummary_add(s, 1, 0, 0, 40);
    double binom = dcpi_listing_share_bound(s);
    ck_assert_double_eq_tol(binom, dcpi_listing_share_bound_vp(s, NULL), 1e-9);
    dcpi_lst_vp_t plain = {.name = "vp"};
    ck_assert_double_eq_tol(binom, dcpi_listing_share_bound_vp(s, &plain), 1e-9);
    ck_assert(binom > 9.0 && binom < 10.5); /* 1.96 x sqrt(.24 / 100) = 9.6 */
    dcpi_lst_vp_t win = {.name = "vp.oracle",
                         .ow_set = 1,
                         .ow_windows = 10,
                         .ow_execs = 100,
                         .ow_sumsq = 10 * 10 * 10};
    double b = dcpi_listing_share_bound_vp(s, &win);
    ck_assert_msg(b > 25.0 && b < 35.0, "cluster bound %.2f (9 effective draws: ~29)", b);
    /* equal windows of one execution each: independent draws again (x (K-1)/K) */
    dcpi_lst_vp_t ones = {.ow_set = 1, .ow_windows = 100, .ow_execs = 100, .ow_sumsq = 100};
    double b1 = dcpi_listing_share_bound_vp(s, &ones);
    ck_assert(b1 >= binom && b1 < binom + 0.2);
    /* one big window among small ones weighs more: wider than the same executions evenly */
    dcpi_lst_vp_t uneven = {
        .ow_set = 1, .ow_windows = 10, .ow_execs = 100, .ow_sumsq = 55 * 55 + 9 * 5 * 5};
    ck_assert(dcpi_listing_share_bound_vp(s, &uneven) > b);
    dcpi_lst_vp_t all = {
        .ow_set = 1, .ow_all = 1, .ow_windows = 1, .ow_execs = 100, .ow_sumsq = 10000};
    ck_assert_double_eq_tol(dcpi_listing_share_bound_vp(s, &all), 0.0, 1e-9);
    dcpi_lst_vp_t one = {.ow_set = 1, .ow_windows = 1, .ow_execs = 100, .ow_sumsq = 10000};
    ck_assert_double_eq_tol(dcpi_listing_share_bound_vp(s, &one), 100.0, 1e-9);
    free(s);
}
END_TEST

/* A 60/40 hotlist of 100 samples with hand-set cluster counters K, N, S, D. */
static dcpi_vsummary_t *clustered(uint64_t k, uint64_t n, uint64_t sq, uint64_t agree)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(s);
    dcpi_vsummary_add(s, 0, 0, 0, 60);
    dcpi_vsummary_add(s, 1, 0, 0, 40);
    dcpi_vsummary_cluster(s, k, n, sq, agree);
    ck_assert_uint_eq(s->clusters, k);
    ck_assert_uint_eq(s->chits, n);
    return s;
}

/* The 95% Wilson bound of a 60/40 hotlist over n independent samples, in points (the farther
 * interval end from 0.6; 0.4 mirrors it). */
static double wilson_6040(double n)
{
    const double z = 1.96, z2 = z * z, p = 0.6;
    double c = (p + z2 / (2 * n)) / (1 + z2 / n);
    double h = z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    return 100.0 * (p - (c - h) > (c + h) - p ? p - (c - h) : (c + h) - p);
}

/* The farther end of the 95% Wilson interval of share p over n samples, in points. */
static double wilson_reach_pts(double p, double n)
{
    const double z = 1.96, z2 = z * z;
    double c = (p + z2 / (2 * n)) / (1 + z2 / n);
    double h = z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    return 100.0 * (p - (c - h) > (c + h) - p ? p - (c - h) : (c + h) - p);
}

/* Three values 80/10/10 in 10 clusters of 10 with D = 755: Pa = .66, Pw = 655/900, pooled
 * rho = (655/900 - .66) / .34 = .19935; each value's rho at its largest, rho .34 x 2/3 over
 * p (1 - p): .80 -> / .16, .10 -> / .09 (.502): the rare values' n_eff is the smallest and
 * their Wilson reach over it is the bound, wider than the pooled n_eff would give any of them;
 * with an error bound (values may be unlisted) the 2/3 goes and the bound widens. */
START_TEST(cluster_bound_takes_each_value_at_its_worst)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(s);
    dcpi_vsummary_add(s, 0, 0, 0, 80);
    dcpi_vsummary_add(s, 1, 0, 0, 10);
    dcpi_vsummary_add(s, 2, 0, 0, 10);
    dcpi_vsummary_cluster(s, 10, 100, 1000, 755);
    double rho = (655.0 / 900.0 - 0.66) / 0.34;
    double pooled = 100.0 / (1 + 9 * rho) * 0.9;
    ck_assert_double_eq_tol(dcpi_listing_neff(s), pooled, 1e-9);
    double worst = 0.0;
    const double share[2] = {0.8, 0.1};
    for (int i = 0; i < 2; i++) {
        double r = rho * 0.34 * 2.0 / 3.0 / (share[i] * (1 - share[i]));
        double n = 100.0 / (1 + 9 * (r > 1 ? 1 : r)) * 0.9, w = wilson_reach_pts(share[i], n);
        worst = w > worst ? w : worst;
    }
    double b = dcpi_listing_share_bound(s);
    ck_assert_double_eq_tol(b, worst, 1e-9);
    ck_assert(b > wilson_reach_pts(0.8, pooled) && b > wilson_reach_pts(0.1, pooled));
    s->err = 1; /* unlisted values possible: each value's spread may be all of it */
    ck_assert(dcpi_listing_share_bound(s) > b + 100.0 / 100.0 - 1e-9);
    free(s);
}
END_TEST

START_TEST(cluster_bound_counts_how_alike_clusters_are)
{
    /* Pa = .6^2 + .4^2 = .52 in every case */
    /* no cluster information: vtot independent draws, the plain Wilson bound (9.80) */
    dcpi_vsummary_t *s = clustered(0, 0, 0, 0);
    ck_assert_uint_eq(s->clusters + s->chits + s->csq + s->cagree, 0);
    ck_assert_double_eq_tol(dcpi_listing_neff(s), 100.0, 1e-9);
    double binom = dcpi_listing_share_bound(s);
    ck_assert_double_eq_tol(binom, wilson_6040(100), 1e-9);
    ck_assert(binom > 9.79 && binom < 9.81);
    free(s);

    /* 10 clusters of 10, each of one value: Pw = 900/900 = 1, rho 1, deff 10: n_eff 10 x 9/10,
     * the oracle's 10 windows of 10 (oracle_bound_counts_windows_as_clusters) */
    s = clustered(10, 100, 1000, 1000);
    ck_assert_double_eq_tol(dcpi_listing_neff(s), 9.0, 1e-9);
    double pure = dcpi_listing_share_bound(s);
    dcpi_lst_vp_t win = {.ow_set = 1, .ow_windows = 10, .ow_execs = 100, .ow_sumsq = 1000};
    ck_assert_double_eq_tol(pure, dcpi_listing_share_bound_vp(s, &win), 1e-9);
    ck_assert_double_eq_tol(pure, wilson_6040(9), 1e-9);
    ck_assert_msg(pure > 25.0 && pure < 35.0, "pure clusters %.2f (9 draws: ~29.95)", pure);
    free(s);

    /* 10 clusters of 10, each 6/4: D = 10 x (36 + 16) = 520, Pw = 420/900 = .467 < Pa: rho
     * clamped to 0, deff 1, n_eff 100 x 9/10 = 90: Wilson over 90 (10.33), just above 9.80 */
    s = clustered(10, 100, 1000, 520);
    ck_assert_double_eq_tol(dcpi_listing_neff(s), 90.0, 1e-9);
    double mixed = dcpi_listing_share_bound(s);
    ck_assert_double_eq_tol(mixed, wilson_6040(90), 1e-9);
    ck_assert_msg(mixed > binom && mixed > 10.32 && mixed < 10.34, "6/4 clusters %.3f", mixed);
    free(s);

    /* 3 pure clusters of value 0, 2 of value 1 and 5 of 6/4 (still 60/40), 10 of 10:
     * D = 5 x 100 + 5 x 52 = 760, Pw = 660/900 = 11/15, rho = (11/15 - 13/25) / (12/25)
     * = (16/75) x (25/12) = 4/9, deff = 1 + (10 - 1) x 4/9 = 5, n_eff = 100/5 x 9/10 = 18.
     * The bound takes each value's correlation at its largest, rho (1 - Pa) (k - 1) / k /
     * (p (1 - p)) = 4/9 x .48 x 1/2 / .24 = 4/9: with two values each one's spread is exactly
     * half of the pooled one, so the bound is the pooled n_eff's */
    s = clustered(10, 100, 1000, 760);
    ck_assert_double_eq_tol(dcpi_listing_neff(s), 18.0, 1e-6);
    double half = dcpi_listing_share_bound(s);
    ck_assert_double_eq_tol(half, wilson_6040(18), 1e-9);
    ck_assert(half > mixed && half < pure);
    free(s);

    /* one cluster: no spread to measure, n_eff 0, bound 100 */
    s = clustered(1, 100, 10000, 5200);
    ck_assert_double_eq_tol(dcpi_listing_neff(s), 0.0, 1e-9);
    ck_assert_double_eq_tol(dcpi_listing_share_bound(s), 100.0, 1e-9);
    free(s);

    /* 50 of the 100 in 5 pure clusters of 10, 50 unaccounted (clusters of one): K 55, N 100,
     * S 500 + 50 = 550, D 550: rho 1, m = 5.5, n_eff = 100/5.5 x 54/55 = 17.85 */
    s = clustered(5, 50, 500, 500);
    double neff = dcpi_listing_neff(s);
    ck_assert_double_eq_tol(neff, 100.0 / 5.5 * 54.0 / 55.0, 1e-9);
    ck_assert_double_eq_tol(dcpi_listing_share_bound(s), wilson_6040(neff), 1e-9);
    free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("listing");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hex_pairs_sorted_by_count);
    tcase_add_test(tc, contexts_and_empty);
    tcase_add_test(tc, plugin_preface_and_format);
    tcase_add_test(tc, decode_targets_and_samples);
    tcase_add_test(tc, targets_named_as_objdump);
    tcase_add_test(tc, values_only_on_instruction_starts);
    tcase_add_test(tc, oracle_bound_counts_windows_as_clusters);
    tcase_add_test(tc, cluster_bound_takes_each_value_at_its_worst);
    tcase_add_test(tc, cluster_bound_counts_how_alike_clusters_are);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
