/*
 * check_diff.c - dcpidiff's statistics and row matching (core/diff/diffstat.h, diff.h):
 * binomial tails and the two-Poisson-rates p-value against exact values (scipy's documented
 * binomtest example, and sums of the binomial pmf in exact rational arithmetic by python3's
 * fractions module), Benjamini-Hochberg on a textbook case, the p-value's formatting and
 * markers, pieces summed and matched into rows, images matched between two sets, and the rows
 * of two value hotlists (-vprof: shares of each hotlist's vtot, keys of one side only, contexts
 * and the "missing" value named as dcpilist names them).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff/diff.h"
#include "core/diff/diffstat.h"
#include "core/listing/listing.h"

/* |got - want| within rel of want */
#define ck_assert_rel(got, want, rel)                                                              \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        ck_assert_msg(fabs(g_ - w_) <= (rel)*fabs(w_), "got %.17g, want %.17g", g_, w_);           \
    } while (0)

START_TEST(test_binom_tails)
{
    /* scipy.stats.binomtest(3, n=15, p=0.1, alternative='greater').pvalue (its documentation) */
    ck_assert_rel(dcpi_diffstat_binom_sf(3, 15, 0.1), 0.18406106910639114, 1e-12);
    /* exact sums: python3 fractions, sum(comb(n, i) p^i (1 - p)^(n - i)) */
    ck_assert_rel(dcpi_diffstat_binom_cdf(10, 40, 0.5), 0.0011107168866146822, 1e-12);
    ck_assert_rel(dcpi_diffstat_binom_sf(60, 100, 0.4), 4.2466387057294882e-05, 1e-11);
    ck_assert(dcpi_diffstat_binom_sf(0, 10, 0.3) == 1.0);
    ck_assert(dcpi_diffstat_binom_cdf(10, 10, 0.3) == 1.0);
    ck_assert(dcpi_diffstat_binom_sf(11, 10, 0.3) == 0.0);
    ck_assert_rel(dcpi_diffstat_betai(2.0, 3.0, 0.4), 0.5248, 1e-12); /* 1 - (1-x)^3 (1 + 3x) */
}
END_TEST

START_TEST(test_pvalue)
{
    /* 2 min(P(X <= a), P(X >= a)), X ~ Binomial(a + b, na / (na + nb)), exact sums (python3) */
    ck_assert_rel(dcpi_diffstat_pvalue(11, 800, 21, 3011), 0.11201731957539932, 1e-10);
    ck_assert_rel(dcpi_diffstat_pvalue(400, 1000, 600, 1000), 2.7284641560660184e-10, 1e-9);
    ck_assert_rel(dcpi_diffstat_pvalue(4000, 10000, 6000, 10000), 1.7404316412268784e-89, 1e-7);
    ck_assert_rel(dcpi_diffstat_pvalue(5, 100, 20, 200), 0.22390548168553256, 1e-10);
    ck_assert_rel(dcpi_diffstat_pvalue(0, 500, 9, 700), 0.015641598768582621, 1e-10);
    ck_assert(dcpi_diffstat_pvalue(100, 1000, 100, 1000) == 1.0);
    /* symmetric in the sets */
    ck_assert_rel(dcpi_diffstat_pvalue(21, 3011, 11, 800), 0.11201731957539932, 1e-10);
    /* nothing to compare */
    ck_assert(dcpi_diffstat_pvalue(0, 100, 0, 100) == 1.0);
    ck_assert(dcpi_diffstat_pvalue(5, 0, 3, 100) == 1.0);
    /* ten million samples: the normal approximation's 2.54e-10 (z = 6.32) within 10% */
    ck_assert_rel(dcpi_diffstat_pvalue(5010000, 10000000, 4990000, 10000000), 2.5448e-10, 0.1);
    ck_assert(dcpi_diffstat_pvalue(5000000, 10000000, 5000000, 10000000) == 1.0);
}
END_TEST

START_TEST(test_bh)
{
    /* m = 4: sorted 0.005 0.01 0.03 0.04 -> 0.02 0.02 0.04 0.04 */
    double p[] = {0.01, 0.04, 0.03, 0.005}, q[4];
    ck_assert_int_eq(dcpi_diffstat_bh(p, 4, q), 0);
    ck_assert_rel(q[0], 0.02, 1e-12);
    ck_assert_rel(q[1], 0.04, 1e-12);
    ck_assert_rel(q[2], 0.04, 1e-12);
    ck_assert_rel(q[3], 0.02, 1e-12);
    /* capped at 1, in place */
    double r[] = {0.9, 0.8, 1.0};
    ck_assert_int_eq(dcpi_diffstat_bh(r, 3, r), 0);
    ck_assert(r[0] <= 1.0 && r[1] <= 1.0 && r[2] == 1.0);
    ck_assert_rel(r[0], 1.0, 1e-12); /* min(0.9 * 3/2, 1.0 * 3/3) */
    ck_assert_int_eq(dcpi_diffstat_bh(NULL, 0, NULL), 0);
}
END_TEST

START_TEST(test_format)
{
    char b[16];
    dcpi_diffstat_format_p(0.0004, b, sizeof b);
    ck_assert_str_eq(b, "<0.001");
    dcpi_diffstat_format_p(0.0342, b, sizeof b);
    ck_assert_str_eq(b, "0.034");
    dcpi_diffstat_format_p(1.0, b, sizeof b);
    ck_assert_str_eq(b, "1");
    ck_assert_str_eq(dcpi_diffstat_marker(1e-9, 0.001), "***");
    ck_assert_str_eq(dcpi_diffstat_marker(0.002, 0.001), "noise");
    ck_assert_str_eq(dcpi_diffstat_marker(0.002, 0.05), "**");
    ck_assert_str_eq(dcpi_diffstat_marker(0.02, 0.05), "*");
    ck_assert_str_eq(dcpi_diffstat_marker(0.05, 0.05), "noise");
}
END_TEST

static const dcpi_diff_row_t *find_row(const dcpi_diff_t *d, const char *image, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->rows[i].image, image) && !strcmp(d->rows[i].name, name))
            return &d->rows[i];
    return NULL;
}

START_TEST(test_rows)
{
    dcpi_diff_t d = {.na = 1000, .nb = 1000};
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_A, "/p", "f", 200), 0);
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_A, "/p", "g", 500), 0);
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_A, "/p", "f", 100), 0); /* summed with f */
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_A, "/q", "f", 200), 0); /* another image */
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_B, "/p", "f", 500), 0);
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_B, "/p", "g", 490), 0);
    ck_assert_int_eq(dcpi_diff_add(&d, DCPI_DIFF_B, "/r", "h", 10), 0); /* only in B */
    ck_assert_int_eq(dcpi_diff_finish(&d), 0);
    ck_assert_uint_eq(d.n, 4);
    const dcpi_diff_row_t *f = find_row(&d, "/p", "f"), *g = find_row(&d, "/p", "g");
    const dcpi_diff_row_t *qf = find_row(&d, "/q", "f"), *h = find_row(&d, "/r", "h");
    ck_assert(f && g && qf && h);
    ck_assert_uint_eq(f->a, 300);
    ck_assert_uint_eq(f->b, 500);
    ck_assert_rel(f->delta, 20.0, 1e-12);
    ck_assert_uint_eq(qf->a, 200);
    ck_assert_uint_eq(qf->b, 0);
    ck_assert_uint_eq(h->a, 0);
    ck_assert_uint_eq(h->b, 10);
    /* sorted by |delta|: f +20, /q f -20 (tie: smaller q first, then names), g -1, h +1 */
    ck_assert_ptr_eq(&d.rows[0], f->q <= qf->q ? f : qf);
    ck_assert(fabs(d.rows[2].delta) == 1.0 && fabs(d.rows[3].delta) == 1.0);
    ck_assert(f->q < 0.001 && qf->q < 0.001);
    ck_assert(g->q > 0.05 && h->q < 1.0);
    /* adjusted >= raw */
    for (size_t i = 0; i < d.n; i++)
        ck_assert(d.rows[i].q >= d.rows[i].p);
    dcpi_diff_free(&d);
    ck_assert_uint_eq(d.n, 0);
}
END_TEST

START_TEST(test_rows_own_totals)
{
    dcpi_diff_t d = {0};
    ck_assert_int_eq(dcpi_diff_add_row(&d, "0x10 div", "0x7", 400, 1000, 600, 1000), 0);
    ck_assert_int_eq(dcpi_diff_add_row(&d, "0x10 div", "0x3", 100, 1000, 100, 1000), 0);
    ck_assert_int_eq(dcpi_diff_finish(&d), 0);
    ck_assert_str_eq(d.rows[0].name, "0x7");
    ck_assert_rel(d.rows[0].p, 2.7284641560660184e-10, 1e-9);
    ck_assert_rel(d.rows[0].q, 2 * 2.7284641560660184e-10, 1e-9);
    ck_assert(d.rows[1].q == 1.0);
    dcpi_diff_free(&d);
}
END_TEST

static const dcpi_diff_row_t *row_named(const dcpi_diff_t *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->rows[i].name, name))
            return &d->rows[i];
    ck_abort_msg("no row '%s'", name);
    return NULL;
}

/* one row of a value diff: counts, totals (the hotlists' vtot), shares and p-value */
static void check_vrow(const dcpi_diff_t *d, const char *name, uint64_t a, uint64_t b, double pa,
                       double pb)
{
    const dcpi_diff_row_t *r = row_named(d, name);
    ck_assert_str_eq(r->image, "0x13db div rcx [vp-acc]");
    ck_assert_uint_eq(r->a, a);
    ck_assert_uint_eq(r->b, b);
    ck_assert_uint_eq(r->na, 1000);
    ck_assert_uint_eq(r->nb, 2000);
    ck_assert_rel(r->pa, pa, 1e-12);
    ck_assert_rel(r->pb, pb, 1e-12);
    ck_assert_rel(r->p, dcpi_diffstat_pvalue(a, 1000, b, 2000), 1e-12);
}

START_TEST(test_value_rows)
{
    dcpi_vsummary_t *va = dcpi_vsummary_new(16), *vb = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(va);
    ck_assert_ptr_nonnull(vb);
    /* A: 10 / 7 / 3 in 60 / 20 / 10 %, and 0x5 with a context in 10 % (vtot 1000) */
    dcpi_vsummary_add(va, 0xa, 0, 0, 600);
    dcpi_vsummary_add(va, 0x7, 0, 0, 200);
    dcpi_vsummary_add(va, 0x3, 0, 0, 100);
    dcpi_vsummary_add(va, 0x5, 0x10, 0x20, 100);
    /* B: 10 / 7 / 3 in 40 / 20 / 30 %, missing 10 % (vtot 2000) */
    dcpi_vsummary_add(vb, 0x3, 0, 0, 600);
    dcpi_vsummary_add(vb, 0xa, 0, 0, 800);
    dcpi_vsummary_add(vb, 0, VP_CONTEXT_MISSING, 0, 200);
    dcpi_vsummary_add(vb, 0x7, 0, 0, 400);
    /* the event totals of the sets are not what value shares are of */
    dcpi_diff_t d = {.na = 5, .nb = 7};
    ck_assert_int_eq(dcpi_diff_add_values(&d, "0x13db div rcx [vp-acc]", va, vb), 0);
    ck_assert_int_eq(dcpi_diff_finish(&d), 0);
    ck_assert_uint_eq(d.n, 5);
    check_vrow(&d, "0xa", 600, 800, 60.0, 40.0);
    check_vrow(&d, "0x7", 200, 400, 20.0, 20.0);
    check_vrow(&d, "0x3", 100, 600, 10.0, 30.0);
    check_vrow(&d, "0x5 @0x10,0x20", 100, 0, 10.0, 0.0);
    check_vrow(&d, "missing", 0, 200, 0.0, 10.0);
    ck_assert(row_named(&d, "0x7")->p == 1.0);
    ck_assert(fabs(d.rows[0].delta) == 20.0 && fabs(d.rows[1].delta) == 20.0);
    ck_assert(fabs(d.rows[4].delta) == 0.0);
    dcpi_diff_free(&d);
    free(va);
    free(vb);
}
END_TEST

static dcpi_profset_image_t fake_image(const char *name)
{
    return (dcpi_profset_image_t){
        .kind = DCPI_PSET_FILE, .name = (char *)name, .path = (char *)name};
}

START_TEST(test_image_keys)
{
    dcpi_profset_image_t ia[] = {fake_image("/a/prog"), fake_image("/lib/libc.so.6"),
                                 fake_image("/a/tool")};
    dcpi_profset_image_t ib[] = {fake_image("/b/prog"), fake_image("/lib/libc.so.6"),
                                 fake_image("/b/tool"), fake_image("/c/tool")};
    dcpi_profset_t A = {.images = ia, .nimages = 3}, B = {.images = ib, .nimages = 4};
    const char *ka[3], *kb[4];
    dcpi_diff_image_keys(&A, &B, ka, kb);
    ck_assert_str_eq(ka[0], "/a/prog");
    ck_assert_str_eq(kb[0], "/a/prog"); /* two builds in two directories */
    ck_assert_str_eq(ka[1], "/lib/libc.so.6");
    ck_assert_str_eq(kb[1], "/lib/libc.so.6");
    ck_assert_str_eq(ka[2], "/a/tool"); /* two candidates in B: not matched */
    ck_assert_str_eq(kb[2], "/b/tool");
    ck_assert_str_eq(kb[3], "/c/tool");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("diff");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, test_binom_tails);
    tcase_add_test(tc, test_pvalue);
    tcase_add_test(tc, test_bh);
    tcase_add_test(tc, test_format);
    suite_add_tcase(s, tc);
    tc = tcase_create("rows");
    tcase_add_test(tc, test_rows);
    tcase_add_test(tc, test_rows_own_totals);
    tcase_add_test(tc, test_value_rows);
    tcase_add_test(tc, test_image_keys);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
