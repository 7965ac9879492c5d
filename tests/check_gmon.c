/*
 * check_gmon.c - gprof's gmon.out (core/formats/gmon.c): encode/parse round trip, bin addresses,
 * and every malformed-file error (magic, version, truncation, histogram range, tags, mixed rates).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "core/formats/gmon.h"
#include "dcpi/errno.h"

static size_t put(unsigned char *b, size_t pos, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        b[pos + i] = (unsigned char)(v >> (8 * i));
    return pos + (size_t)n;
}

static size_t header(unsigned char *b, uint32_t version)
{
    memset(b, 0, 20);
    memcpy(b, "gmon", 4);
    put(b, 4, version, 4);
    return 20;
}

static size_t hist(unsigned char *b, size_t pos, uint64_t low, uint64_t high, uint32_t n,
                   uint32_t rate)
{
    b[pos++] = 0;
    pos = put(b, pos, low, 8);
    pos = put(b, pos, high, 8);
    pos = put(b, pos, n, 4);
    pos = put(b, pos, rate, 4);
    memset(b + pos, 0, 16);
    memcpy(b + pos, "seconds", 7);
    b[pos + 15] = 's';
    pos += 16;
    for (uint32_t i = 0; i < n; i++)
        pos = put(b, pos, i + 1, 2);
    return pos;
}

static int parse(const unsigned char *b, size_t len, char *err)
{
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_parse(b, len, "gmon.out", &g, err);
    dcpi_gmon_free(g);
    return rc;
}

START_TEST(test_roundtrip)
{
    dcpi_gmon_t *g = NULL, *h = NULL;
    dcpi_gmon_hist_t *hs = NULL;
    ck_assert_int_eq(dcpi_gmon_new(&g), 0);
    ck_assert_int_eq(dcpi_gmon_add_hist(g, 0x1000, 0x1000, 4, 100, &hs), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_gmon_add_hist(g, 0x1000, 0x1010, 4, 100, &hs), 0);
    hs->bins[1] = 7;
    hs->bins[3] = 65535;
    ck_assert_int_eq(dcpi_gmon_add_arc(g, 0x1004, 0x100c, 3), 0);
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(dcpi_gmon_encode(g, &buf, &len), 0);
    ck_assert_uint_eq(len, 20 + 1 + 40 + 8 + 1 + 20);
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_gmon_parse(buf, len, "rt", &h, err), 0);
    ck_assert_uint_eq(h->nhists, 1);
    ck_assert_uint_eq(h->hists[0].low, 0x1000);
    ck_assert_uint_eq(h->hists[0].high, 0x1010);
    ck_assert_uint_eq(h->hists[0].rate, 100);
    ck_assert_str_eq(h->hists[0].dimen, "seconds");
    ck_assert_int_eq(h->hists[0].abbrev, 's');
    ck_assert_uint_eq(h->hists[0].bins[1], 7);
    ck_assert_uint_eq(h->hists[0].bins[3], 65535);
    ck_assert_uint_eq(dcpi_gmon_bin_addr(&h->hists[0], 3), 0x100c);
    ck_assert_uint_eq(h->narcs, 1);
    ck_assert_uint_eq(h->arcs[0].from, 0x1004);
    ck_assert_uint_eq(h->arcs[0].self, 0x100c);
    ck_assert_uint_eq(h->arcs[0].count, 3);
    free(buf);
    dcpi_gmon_free(g);
    dcpi_gmon_free(h);
}
END_TEST

START_TEST(test_malformed)
{
    unsigned char b[4096];
    char err[DCPI_ERRLEN];
    size_t n = header(b, 1);
    size_t ok = hist(b, n, 0x1000, 0x1010, 4, 100);
    ck_assert_int_eq(parse(b, ok, err), 0);
    ck_assert_int_eq(parse(b, ok - 1, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "gmon.out: truncated histogram at byte 20 (4 bins)");
    ck_assert_int_eq(parse(b, 30, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "gmon.out: truncated histogram record at byte 20");

    memcpy(b, "gmoN", 4);
    ck_assert_int_eq(parse(b, ok, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "gmon.out: not a gmon.out file (no \"gmon\" magic)");
    header(b, 2);
    ck_assert_int_eq(parse(b, ok, err), DCPI_EVERSION);
    ck_assert_str_eq(err, "gmon.out: gmon version 2, want 1");
    header(b, 1);
    ck_assert_int_eq(parse(b, 10, err), DCPI_ETRUNC);

    size_t bad = hist(b, n, 0x1010, 0x1000, 1, 100);
    ck_assert_int_eq(parse(b, bad, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "gmon.out: histogram at byte 20 out of range (low_pc 0x1010, high_pc "
                          "0x1000, 1 bins)");

    hist(b, n, 0x1000, 0x1010, 4, 100);
    size_t two = hist(b, ok, 0x2000, 0x2008, 2, 1000);
    ck_assert_int_eq(parse(b, two, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "gmon.out: histogram at byte 69 disagrees on rate or dimension");

    b[ok] = 9;
    ck_assert_int_eq(parse(b, ok + 1, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "gmon.out: unknown record tag 9 at byte 69");
    b[ok] = 1;
    ck_assert_int_eq(parse(b, ok + 10, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "gmon.out: truncated arc record at byte 69");
    b[ok] = 2;
    put(b, ok + 1, 3, 4);
    ck_assert_int_eq(parse(b, ok + 5 + 16 * 2, err), DCPI_ETRUNC);
    ck_assert_int_eq(parse(b, ok + 5 + 16 * 3, err), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gmon");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_malformed);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
