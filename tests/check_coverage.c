/*
 * check_coverage.c - core/coverage/coverage, core/model/imagemap and core/topcounts/topcounts: the
 * basic-block split dcpicoverage takes from dcpicalc's graph (core/calc/cfg.h: leaders at the
 * start, at branch targets, after branches, returns, ud2 and calls that do not return), sampled /
 * total instructions, lines and blocks with the never-sampled ranges, the (1-s)^N note, map files
 * (format and errors), and the top instructions of a set (order, ties, -n, -period, rows of
 * other events only).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/coverage/coverage.h"
#include "core/model/imagemap.h"
#include "core/topcounts/topcounts.h"
#include "dcpi/errno.h"

/* xor eax,eax; test edi,edi; je 0x100a; inc eax; jmp 0x100c; dec eax; ret (at 0x1000) */
static const uint8_t code[] = {0x31, 0xc0, 0x85, 0xff, 0x74, 0x04, 0xff,
                               0xc0, 0xeb, 0x02, 0xff, 0xc8, 0xc3};

START_TEST(blocks_split_at_branches_and_targets)
{
    dcpi_cov_t cv = {0};
    ck_assert_int_eq(dcpi_cov_add_proc_bytes(&cv, "f", 0x1000, code, sizeof code), 0);
    const dcpi_cov_proc_t *p = &cv.procs[0];
    ck_assert_uint_eq(p->ls->n, 7);
    ck_assert_uint_eq(p->nblocks, 4);
    static const uint32_t want[7] = {0, 0, 0, 1, 1, 2, 3};
    for (int i = 0; i < 7; i++)
        ck_assert_uint_eq(p->block[i], want[i]);
    dcpi_cov_free(&cv);
}
END_TEST

/* call 0x3000; ud2; xor eax,eax; ret (at 0x2000) */
static const uint8_t stops[] = {0xe8, 0xfb, 0x0f, 0x00, 0x00, 0x0f, 0x0b, 0x31, 0xc0, 0xc3};

static int noreturn_3000(void *arg, uint64_t target)
{
    ++*(int *)arg;
    return target == 0x3000;
}

START_TEST(blocks_end_at_ud2_and_noreturn_calls)
{
    dcpi_cov_t cv = {0};
    ck_assert_int_eq(dcpi_cov_add_proc_bytes(&cv, "g", 0x2000, stops, sizeof stops), 0);
    ck_assert_uint_eq(cv.procs[0].ls->n, 4);
    ck_assert_uint_eq(cv.procs[0].nblocks, 2); /* every call returns: call+ud2, xor+ret */
    ck_assert_uint_eq(cv.procs[0].block[1], 0);
    ck_assert_uint_eq(cv.procs[0].block[2], 1);
    dcpi_cov_free(&cv);

    int asked = 0;
    cv.noreturn = noreturn_3000;
    cv.noreturn_arg = &asked;
    ck_assert_int_eq(dcpi_cov_add_proc_bytes(&cv, "g", 0x2000, stops, sizeof stops), 0);
    ck_assert_int_eq(asked, 1);
    ck_assert_uint_eq(cv.procs[0].nblocks, 3); /* call | ud2 | xor+ret */
    static const uint32_t want[4] = {0, 1, 2, 2};
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(cv.procs[0].block[i], want[i]);
    dcpi_cov_add_samples(&cv, 0x2005, 1); /* ud2 */
    ck_assert_int_eq(dcpi_cov_compute(&cv), 0);
    ck_assert_uint_eq(cv.total.blocks, 3);
    ck_assert_uint_eq(cv.total.blocks_hit, 1);
    dcpi_cov_free(&cv);
}
END_TEST

static const int lines[7] = {10, 10, 11, 12, 12, 14, 15};

START_TEST(coverage_counts_and_ranges)
{
    dcpi_cov_t cv = {0};
    ck_assert_int_eq(dcpi_cov_add_proc_bytes(&cv, "f", 0x1000, code, sizeof code), 0);
    dcpi_cov_add_samples(&cv, 0x1006, 3); /* inc eax (line 12) */
    dcpi_cov_add_samples(&cv, 0x100c, 2); /* ret (line 15) */
    dcpi_cov_add_samples(&cv, 0x2000, 7); /* outside */
    for (int i = 0; i < 7; i++) {
        cv.procs[0].ls->insns[i].file = "/src/f.c";
        cv.procs[0].ls->insns[i].line = lines[i];
    }
    ck_assert_int_eq(dcpi_cov_compute(&cv), 0);
    const dcpi_cov_counts_t *c = &cv.total;
    ck_assert_uint_eq(c->samples, 5);
    ck_assert_uint_eq(cv.outside, 7);
    ck_assert_uint_eq(c->insns, 7);
    ck_assert_uint_eq(c->insns_hit, 2);
    ck_assert_uint_eq(c->blocks, 4);
    ck_assert_uint_eq(c->blocks_hit, 2);
    ck_assert_uint_eq(c->lines, 5);
    ck_assert_uint_eq(c->lines_hit, 2);
    ck_assert_uint_eq(cv.nlranges, 2);
    ck_assert_int_eq(cv.lranges[0].first, 10);
    ck_assert_int_eq(cv.lranges[0].last, 11);
    ck_assert_uint_eq(cv.lranges[0].lines, 2);
    ck_assert_uint_eq(cv.lranges[0].insns, 3);
    ck_assert_int_eq(cv.lranges[1].first, 14);
    ck_assert_int_eq(cv.lranges[1].last, 14);
    ck_assert_str_eq(cv.lranges[1].proc, "f");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    static const char *const ep[] = {"e1", "e2"};
    dcpi_cov_popts_t o = {.image = "img", .event = "ev", .epochs = ep, .nepochs = 2, .csl = 1};
    dcpi_cov_print(&cv, &o, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\nproc,f,5,7,2,5,2,4,2,,,,,\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nlines,f,,3,,2,,,,,,/src/f.c,10,11\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\ninsns,f,,3,,,,,,0x1000,0x1006,/src/f.c,10,11\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\ninsns,f,,2,,,,,,0x1008,0x100c,/src/f.c,12,14\n"));
    free(buf);
    dcpi_cov_free(&cv);
}
END_TEST

START_TEST(miss_probability)
{
    ck_assert_double_eq_tol(dcpi_cov_miss_probability(0.01, 100), pow(0.99, 100), 1e-12);
    ck_assert_double_eq_tol(dcpi_cov_miss_probability(0.001, 0), 1.0, 1e-12);
    ck_assert_double_eq_tol(dcpi_cov_miss_probability(1.0, 5), 0.0, 1e-12);
    ck_assert_double_eq_tol(dcpi_cov_miss_probability(0.0, 5), 1.0, 1e-12);
}
END_TEST

START_TEST(map_file_format)
{
    static const char text[] = "# comment\n\n  ABCdef01  /opt/my prog \n"
                               "abcdef01 /second\n12\t/x/y\n";
    dcpi_imagemap_t m;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_imagemap_parse(text, strlen(text), "map", &m, err), 0);
    ck_assert_uint_eq(m.n, 2);
    ck_assert_str_eq(dcpi_imagemap_lookup(&m, "abcdef01"), "/opt/my prog");
    ck_assert_str_eq(dcpi_imagemap_lookup(&m, "ABCDEF01"), "/opt/my prog");
    ck_assert_str_eq(dcpi_imagemap_lookup(&m, "12"), "/x/y");
    ck_assert_ptr_null(dcpi_imagemap_lookup(&m, "13"));
    dcpi_imagemap_free(&m);

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"xyz /p\n", "map:1: the image id must be hex digits"},
        {"\nab12\n", "map:2: no path after the image id"},
        {"ab12/p\n", "map:1: the image id must be hex digits"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(dcpi_imagemap_parse(bad[i].text, strlen(bad[i].text), "map", &m, err),
                         DCPI_EFORMAT);
        ck_assert_str_eq(err, bad[i].msg);
    }
    ck_assert_int_eq(dcpi_imagemap_parse("a\0b", 3, "map", &m, err), DCPI_EFORMAT);
}
END_TEST

/* A set of two images ("b" and "a") and two events. */
static dcpi_profset_t *make_set(void)
{
    dcpi_profset_t *set = calloc(1, sizeof(*set));
    set->nevents = 2;
    set->events = calloc(2, sizeof(*set->events));
    set->events[0] = (dcpi_profset_event_t){.name = strdup("cycles"), .period = 100};
    set->events[1] = (dcpi_profset_event_t){.name = strdup("imiss"), .period = 10};
    set->nimages = 2;
    set->images = calloc(2, sizeof(*set->images));
    const char *names[2] = {"b", "a"};
    for (int i = 0; i < 2; i++) {
        dcpi_profset_image_t *img = &set->images[i];
        img->id = strdup("00");
        img->path = strdup(names[i]);
        img->name = strdup(names[i]);
        img->dir = strdup("/nonexistent");
        img->platform = strdup("p");
        img->kind = DCPI_PSET_UNKNOWN;
        img->prof = calloc(2, sizeof(*img->prof));
        for (int e = 0; e < 2; e++)
            ck_assert_int_eq(dcpi_profile_new(&img->prof[e]), 0);
    }
    dcpi_profile_add(set->images[0].prof[0], 0x10, 5);
    dcpi_profile_add(set->images[0].prof[0], 0x20, 9);
    dcpi_profile_add(set->images[0].prof[1], 0x20, 4);
    dcpi_profile_add(set->images[0].prof[1], 0x30, 8); /* imiss only */
    dcpi_profile_add(set->images[1].prof[0], 0x40, 5); /* ties with b+0x10: "a" first */
    dcpi_profile_set(set->images[1].prof[0], "period", "1000");
    set->events[0].total = 19;
    set->events[1].total = 12;
    return set;
}

START_TEST(top_rows_order)
{
    dcpi_profset_t *set = make_set();
    dcpi_top_row_t *r = NULL;
    uint64_t *c = NULL;
    size_t n = 0;
    ck_assert_int_eq(dcpi_top_collect(set, 0, 0, 0, &r, &n, &c), 0);
    ck_assert_uint_eq(n, 3); /* b+0x30 has no cycles */
    ck_assert_uint_eq(r[0].image, 0);
    ck_assert_uint_eq(r[0].offset, 0x20);
    ck_assert_uint_eq(r[0].counts[0], 9);
    ck_assert_uint_eq(r[0].counts[1], 4);
    ck_assert_uint_eq(r[1].image, 1); /* "a" before "b" at 5 samples each */
    ck_assert_uint_eq(r[2].offset, 0x10);
    free(r);
    free(c);
    ck_assert_int_eq(dcpi_top_collect(set, 0, 1, 2, &r, &n, &c), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(r[0].image, 1); /* 5 x 1000 */
    ck_assert_uint_eq(r[0].counts[0], 5000);
    ck_assert_uint_eq(r[1].counts[0], 900); /* 9 x the event's period: no header period */
    free(r);
    free(c);
    ck_assert_int_eq(dcpi_top_collect(set, 1, 0, 0, &r, &n, &c), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(r[0].offset, 0x30);
    free(r);
    free(c);
    dcpi_profset_free(set);
}
END_TEST

START_TEST(top_report_csv)
{
    dcpi_profset_t *set = make_set();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dcpi_top_opts_t o = {.tool = "t", .n = 2, .csl = 1, .sort_event = "cycles", .epoch = "e"};
    ck_assert_int_eq(dcpi_top_report(set, &o, f), 0);
    fclose(f);
    ck_assert_str_eq(buf, "cycles,cycles%,cyclescum%,procedure,pc,instruction,image,source,imiss\n"
                          "9,47.37,47.37,unknown_rou,0x20,-,b,-,4\n"
                          "5,26.32,73.68,unknown_rou,0x40,-,a,-,0\n");
    free(buf);
    dcpi_profset_free(set);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coverage");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, blocks_split_at_branches_and_targets);
    tcase_add_test(tc, blocks_end_at_ud2_and_noreturn_calls);
    tcase_add_test(tc, coverage_counts_and_ranges);
    tcase_add_test(tc, miss_probability);
    tcase_add_test(tc, map_file_format);
    tcase_add_test(tc, top_rows_order);
    tcase_add_test(tc, top_report_csv);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
