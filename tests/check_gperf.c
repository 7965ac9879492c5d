/*
 * check_gperf.c - gperftools CPU profiles (core/formats/gperf.c): encode/parse round trips in 8-
 * and 4-byte slots, the mapped-objects text, every malformed-file error, and the real profiles of
 * tests/data/interop/gperftools (pprof's test data, Apache-2.0) read exactly as pprof reads them
 * (.string files).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check_skip.h"
#include "core/formats/gperf.h"
#include "dcpi/errno.h"

#define INTEROP DCPI_TEST_DATA "/interop/gperftools"

/* ---- helpers ---- */

static size_t put(unsigned char *b, size_t pos, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[pos + i] = (unsigned char)(v >> (8 * i));
    return pos + 8;
}

/* Build a file from 64-bit slots followed by text. */
static size_t build(unsigned char *b, const uint64_t *slots, size_t n, const char *text)
{
    size_t pos = 0;
    for (size_t i = 0; i < n; i++)
        pos = put(b, pos, slots[i]);
    memcpy(b + pos, text, strlen(text));
    return pos + strlen(text);
}

static int parse_slots(const uint64_t *slots, size_t n, char *err)
{
    unsigned char b[1024];
    size_t len = build(b, slots, n, "");
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_parse(b, len, "f.prof", &g, err);
    dcpi_gperf_free(g);
    return rc;
}

/* ---- round trips ---- */

START_TEST(test_roundtrip)
{
    int slots[2] = {8, 4};
    for (int s = 0; s < 2; s++) {
        dcpi_gperf_t *g = NULL, *h = NULL;
        ck_assert_int_eq(dcpi_gperf_new(1000, &g), 0);
        g->slot = slots[s];
        uint64_t a[3] = {0x401000, 0x401200, 0x401300}, b[1] = {0x402000};
        ck_assert_int_eq(dcpi_gperf_add(g, 5, a, 3), 0);
        ck_assert_int_eq(dcpi_gperf_add(g, 7, b, 1), 0);
        ck_assert_int_eq(dcpi_gperf_add(g, 0, b, 1), DCPI_EINVAL);
        ck_assert_int_eq(dcpi_gperf_add_text(g, "build=/opt/x"), 0);
        ck_assert_int_eq(
            dcpi_gperf_add_text(g, "00400000-00403000 r-xp 00001000 08:01 77 $build/prog"), 0);
        void *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(dcpi_gperf_encode(g, &buf, &len), 0);
        ck_assert_uint_eq(len, (size_t)slots[s] * (5 + 2 + 3 + 2 + 1 + 3) + strlen(g->text));
        char err[DCPI_ERRLEN];
        ck_assert_int_eq(dcpi_gperf_parse(buf, len, "rt", &h, err), 0);
        ck_assert_int_eq(h->slot, slots[s]);
        ck_assert_uint_eq(h->period_us, 1000);
        ck_assert_uint_eq(h->nrecs, 2);
        ck_assert_uint_eq(h->total, 12);
        ck_assert_uint_eq(h->recs[0].npcs, 3);
        ck_assert_uint_eq(h->pcs[h->recs[0].first + 2], 0x401300);
        ck_assert_uint_eq(h->pcs[h->recs[1].first], 0x402000);
        ck_assert_uint_eq(h->nmaps, 1);
        ck_assert_str_eq(h->maps[0].path, "/opt/x/prog");
        ck_assert_uint_eq(h->maps[0].offset, 0x1000);
        ck_assert_ptr_eq(dcpi_gperf_map_find(h, 0x402fff), &h->maps[0]);
        ck_assert_ptr_null(dcpi_gperf_map_find(h, 0x403000));
        free(buf);
        dcpi_gperf_free(g);
        dcpi_gperf_free(h);
    }
}
END_TEST

START_TEST(test_text_lines)
{
    uint64_t s[] = {0, 3, 0, 10000, 0, 1, 1, 0x500, 0, 1, 0};
    unsigned char b[2048];
    const char *text = "garbage line\n"
                       "  build=/b\n"
                       "00400000-00401000 r--p 00000000 08:01 77 /x/ro\n"
                       "00500000-00501000 r-xp 00000000 08:01 77 $build_not/a\n"
                       "00600000-00601000 r-xp 00002000 08:01 77 $build/lib.so\n"
                       "00700000-00701000 r-xp 00000000 00:00 0\n";
    size_t len = build(b, s, sizeof(s) / sizeof(s[0]), text);
    dcpi_gperf_t *g = NULL;
    ck_assert_int_eq(dcpi_gperf_parse(b, len, "t", &g, NULL), 0);
    ck_assert_uint_eq(g->nmaps, 3);
    ck_assert_str_eq(g->maps[0].path, "$build_not/a");
    ck_assert_str_eq(g->maps[1].path, "/b/lib.so");
    ck_assert_str_eq(g->maps[2].path, "");
    ck_assert_str_eq(g->text, text);
    dcpi_gperf_free(g);
}
END_TEST

/* ---- malformed files ---- */

START_TEST(test_malformed)
{
    char err[DCPI_ERRLEN];
    uint64_t ok[] = {0, 3, 0, 10000, 0, 2, 1, 0x500, 0, 1, 0};
    ck_assert_int_eq(parse_slots(ok, 11, err), 0);

    uint64_t bad_words[] = {0, 2, 0, 10000, 0, 0, 1, 0};
    ck_assert_int_eq(parse_slots(bad_words, 8, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "f.prof: not a CPU profile (header words are not 0, >=3 in 8- or "
                          "4-byte slots)");

    uint64_t version[] = {0, 3, 1, 10000, 0, 0, 1, 0};
    ck_assert_int_eq(parse_slots(version, 8, err), DCPI_EVERSION);
    ck_assert_str_eq(err, "f.prof: format version 1, want 0");

    uint64_t trunc[] = {0, 3, 0, 10000, 0, 2, 5, 0x500, 0x501};
    ck_assert_int_eq(parse_slots(trunc, 9, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "f.prof: truncated record at byte 40 (5 PCs)");

    uint64_t notrailer[] = {0, 3, 0, 10000, 0, 2, 1, 0x500};
    ck_assert_int_eq(parse_slots(notrailer, 8, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "f.prof: truncated record at byte 64 (no trailer)");

    uint64_t trailer[] = {0, 3, 0, 10000, 0, 0, 2, 0, 0};
    ck_assert_int_eq(parse_slots(trailer, 9, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "f.prof: bad trailer at byte 40 (0 2 0, want 0 1 0)");

    uint64_t nopc[] = {0, 3, 0, 10000, 0, 4, 0, 0, 1, 0};
    ck_assert_int_eq(parse_slots(nopc, 10, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "f.prof: record at byte 40 has no PC");

    uint64_t shorthdr[] = {0, 9, 0};
    ck_assert_int_eq(parse_slots(shorthdr, 3, err), DCPI_ETRUNC);
    ck_assert_str_eq(err, "f.prof: truncated header");

    dcpi_gperf_t *g = NULL;
    ck_assert_int_eq(dcpi_gperf_parse("", 0, "e", &g, err), DCPI_ETRUNC);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(dcpi_gperf_read("/nonexistent/x.prof", &g, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.prof: "));
}
END_TEST

/* ---- the interop profiles against pprof's reading ---- */

typedef struct leaf {
    uint64_t pc, count;
} leaf_t;

static int cmp_leaf(const void *a, const void *b)
{
    uint64_t x = ((const leaf_t *)a)->pc, y = ((const leaf_t *)b)->pc;
    return x < y ? -1 : x > y;
}

/* Sum counts per pc and sort; returns the number of distinct pcs. */
static size_t fold(leaf_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_leaf);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && v[k - 1].pc == v[i].pc)
            v[k - 1].count += v[i].count;
        else
            v[k++] = v[i];
    }
    return k;
}

/* pprof's reading (X.cpu.string): per-leaf-address counts and the period. */
static size_t read_string(const char *path, leaf_t *out, size_t max, uint64_t *period)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static uint64_t loc[100000];
    static struct {
        uint64_t count, id;
    } samp[100000];
    size_t ns = 0;
    char line[65536];
    int section = 0;
    while (fgets(line, sizeof(line), f)) {
        uint64_t a, b, c;
        if (!strncmp(line, "Period: ", 8))
            *period = strtoull(line + 8, NULL, 10);
        else if (!strncmp(line, "Samples:", 8))
            section = 1;
        else if (!strncmp(line, "Locations", 9))
            section = 2;
        else if (!strncmp(line, "Mappings", 8))
            section = 3;
        else if (section == 1 &&
                 sscanf(line, " %" SCNu64 " %" SCNu64 ": %" SCNu64, &a, &b, &c) == 3)
            samp[ns].count = a, samp[ns++].id = c;
        else if (section == 2 && sscanf(line, " %" SCNu64 ": 0x%" SCNx64, &a, &b) == 2 &&
                 a < 100000)
            loc[a] = b;
    }
    fclose(f);
    ck_assert_uint_le(ns, max);
    for (size_t i = 0; i < ns; i++)
        out[i] = (leaf_t){loc[samp[i].id], samp[i].count};
    return fold(out, ns);
}

/* The executable mappings equal pprof's (files without a text part: pprof's one fake mapping). */
static void check_maps(const dcpi_gperf_t *g, const char *spath)
{
    FILE *f = fopen(spath, "r");
    ck_assert_ptr_nonnull(f);
    char line[8192], path[4096];
    int section = 0;
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        uint64_t id, st, en, off;
        if (!strncmp(line, "Mappings", 8)) {
            section = 1;
            continue;
        }
        path[0] = 0;
        if (!section ||
            sscanf(line, "%" SCNu64 ": 0x%" SCNx64 "/0x%" SCNx64 "/0x%" SCNx64 " %4095s", &id, &st,
                   &en, &off, path) < 4)
            continue;
        if (g->nmaps == 0) {
            ck_assert_uint_eq(st, 0); /* pprof's catch-all for a profile without mappings */
            ck_assert_uint_eq(en, UINT64_MAX);
            n++;
            continue;
        }
        ck_assert_uint_lt(n, g->nmaps);
        ck_assert_uint_eq(g->maps[n].start, st);
        ck_assert_uint_eq(g->maps[n].end, en);
        ck_assert_uint_eq(g->maps[n].offset, off);
        ck_assert_str_eq(g->maps[n].path, path);
        n++;
    }
    fclose(f);
    ck_assert_uint_eq(n, g->nmaps ? g->nmaps : 1);
}

static void check_interop(const char *name)
{
    char path[4096], spath[4200], err[DCPI_ERRLEN];
    snprintf(path, sizeof(path), "%s/%s", INTEROP, name);
    snprintf(spath, sizeof(spath), "%s.string", path);
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_read(path, &g, err);
    ck_assert_msg(rc == 0, "%s", err);
    static leaf_t mine[100000], theirs[100000];
    ck_assert_uint_le(g->nrecs, 100000);
    for (size_t r = 0; r < g->nrecs; r++)
        mine[r] = (leaf_t){g->pcs[g->recs[r].first], g->recs[r].count};
    size_t nm = fold(mine, g->nrecs);
    uint64_t period = 0;
    size_t nt = read_string(spath, theirs, 100000, &period);
    ck_assert_uint_eq(g->period_us * 1000, period);
    uint64_t tm = 0, tt = 0;
    for (size_t i = 0; i < nt; i++)
        tt += theirs[i].count;
    for (size_t i = 0; i < nm; i++)
        tm += mine[i].count;
    ck_assert_uint_eq(tm, g->total);
    ck_assert_uint_eq(tm, tt);
    ck_assert_uint_eq(nm, nt);
    for (size_t i = 0; i < nm; i++) {
        ck_assert_uint_eq(mine[i].pc, theirs[i].pc);
        ck_assert_uint_eq(mine[i].count, theirs[i].count);
    }
    check_maps(g, spath);
    dcpi_gperf_free(g);
}

START_TEST(test_interop)
{
    check_interop("cppbench.cpu");
    check_interop("gobench.cpu");
    check_interop("go.crc32.cpu");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gperf");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_text_lines);
    tcase_add_test(tc, test_malformed);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, test_interop);
    return dcpi_check_run(s, NULL, 0);
}
