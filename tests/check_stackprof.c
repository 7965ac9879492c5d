/*
 * check_stackprof.c - stack profiles (core/store/stackprof-chains.c, stackprof-file.c): round trip,
 * merge in memory and into a file, limits (lost, truncated, needs_flush), loading from a database,
 * and each malformed-file error by name.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/base/fsutil.h"
#include "core/store/stackprof.h"
#include "dcpi/errno.h"

static dcpi_stackprof_t *sample_sp(void)
{
    dcpi_stackprof_t *sp = NULL;
    ck_assert_int_eq(dcpi_stackprof_new(0, &sp), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "epoch", "202601010000"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "platform", "host"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "period", "1000000"), 0);
    int a = dcpi_stackprof_image(sp, "ab12", "prog_ab12", "/bin/prog", 0x1000, 0x500);
    int b = dcpi_stackprof_image(sp, "cd34", "libc.so.6_cd34", "/lib/libc.so.6", 0x2000, 0x900);
    ck_assert_int_eq(a, 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(dcpi_stackprof_image(sp, "ab12", "prog_ab12", "/bin/prog", 0x1000, 0x500), 0);
    dcpi_frame_t c1[] = {{1, 0x10}, {0, 0x40}, {0, 0x80}};
    dcpi_frame_t c2[] = {{0, 0x20}, {0, 0x80}};
    dcpi_frame_t c3[] = {{DCPI_STACK_NOIMAGE, 0x1234}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, c1, 3, 5), 0);
    ck_assert_int_eq(dcpi_stackprof_add(sp, c2, 2, 7), 0);
    ck_assert_int_eq(dcpi_stackprof_add(sp, c1, 3, 2), 0);
    ck_assert_int_eq(dcpi_stackprof_add(sp, c3, 1, 1), 0);
    return sp;
}

/* Count of the chain f[0..n-1] in sp (0 when absent). */
static uint64_t chain_count(const dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n)
{
    for (size_t i = 0; i < dcpi_stackprof_count(sp); i++) {
        const dcpi_frame_t *g;
        unsigned m;
        uint64_t c;
        dcpi_stackprof_chain(sp, i, &g, &m, &c);
        if (m == n && !memcmp(f, g, n * sizeof(*f)))
            return c;
    }
    return 0;
}

static int parse_buf(const void *b, size_t len, char *err)
{
    dcpi_stackprof_t *sp = NULL;
    int rc = dcpi_stackprof_parse(b, len, "x.stk", &sp, err);
    dcpi_stackprof_free(sp);
    return rc;
}

START_TEST(test_add_and_roundtrip)
{
    dcpi_stackprof_t *sp = sample_sp(), *back = NULL;
    ck_assert_uint_eq(dcpi_stackprof_count(sp), 3);
    ck_assert_uint_eq(dcpi_stackprof_total(sp), 15);
    dcpi_frame_t c1[] = {{1, 0x10}, {0, 0x40}, {0, 0x80}};
    ck_assert_uint_eq(chain_count(sp, c1, 3), 7);
    void *buf = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_stackprof_encode(sp, &buf, &len, err), 0);
    ck_assert_int_eq(memcmp(buf, "version stk-0.01\n", 17), 0);
    ck_assert_int_eq(dcpi_stackprof_parse(buf, len, "x.stk", &back, err), 0);
    ck_assert_uint_eq(dcpi_stackprof_count(back), 3);
    ck_assert_uint_eq(dcpi_stackprof_total(back), 15);
    ck_assert_uint_eq(chain_count(back, c1, 3), 7);
    dcpi_frame_t c3[] = {{DCPI_STACK_NOIMAGE, 0x1234}};
    ck_assert_uint_eq(chain_count(back, c3, 1), 1);
    ck_assert_uint_eq(dcpi_stackprof_nimages(back), 2);
    const dcpi_stack_image_t *im = dcpi_stackprof_image_get(back, 1);
    ck_assert_str_eq(im->id, "cd34");
    ck_assert_str_eq(im->dir, "libc.so.6_cd34");
    ck_assert_str_eq(im->path, "/lib/libc.so.6");
    ck_assert_uint_eq(im->tstart, 0x2000);
    ck_assert_uint_eq(im->tsize, 0x900);
    ck_assert_str_eq(dcpi_stackprof_get(back, "event"), "cpu-clock");
    /* Encoding is canonical: the re-encoded bytes are the same. */
    void *buf2 = NULL;
    size_t len2 = 0;
    ck_assert_int_eq(dcpi_stackprof_encode(back, &buf2, &len2, err), 0);
    ck_assert_uint_eq(len2, len);
    ck_assert_int_eq(memcmp(buf, buf2, len), 0);
    free(buf2);
    free(buf);
    dcpi_stackprof_free(back);
    dcpi_stackprof_free(sp);
}
END_TEST

START_TEST(test_bad_add)
{
    dcpi_stackprof_t *sp = sample_sp();
    dcpi_frame_t bad[] = {{2, 0}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, bad, 1, 1), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_stackprof_add(sp, bad, 0, 1), DCPI_EINVAL);
    dcpi_frame_t ok[] = {{0, 0}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, ok, 1, 0), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_stackprof_image(sp, "XY", "d", NULL, 0, 0), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_stackprof_image(sp, "ab", "a/b", NULL, 0, 0), DCPI_EINVAL);
    ck_assert_uint_eq(dcpi_stackprof_total(sp), 15);
    dcpi_stackprof_free(sp);
}
END_TEST

START_TEST(test_limits)
{
    dcpi_stackprof_t *sp = NULL;
    ck_assert_int_eq(dcpi_stackprof_new(8, &sp), 0);
    ck_assert_int_eq(dcpi_stackprof_image(sp, "ab", "p_ab", "/p", 0, 0x1000), 0);
    for (uint32_t i = 0; i < 8; i++) {
        dcpi_frame_t f[] = {{0, i}, {0, 0x100}};
        ck_assert_int_eq(dcpi_stackprof_needs_flush(sp), i >= 6);
        ck_assert_int_eq(dcpi_stackprof_add(sp, f, 2, 1), 0);
    }
    dcpi_frame_t nf[] = {{0, 99}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, nf, 1, 3), DCPI_EFULL);
    ck_assert_uint_eq(dcpi_stackprof_lost(sp), 3);
    dcpi_frame_t old[] = {{0, 0}, {0, 0x100}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, old, 2, 4), 0); /* existing chain: still counted */
    ck_assert_uint_eq(dcpi_stackprof_total(sp), 12);
    /* A deep chain keeps its innermost frames and counts as truncated. */
    dcpi_stackprof_reset(sp);
    ck_assert_uint_eq(dcpi_stackprof_count(sp), 0);
    ck_assert_uint_eq(dcpi_stackprof_lost(sp), 0);
    dcpi_frame_t deep[DCPI_STACK_MAXFRAMES + 5];
    for (unsigned i = 0; i < DCPI_STACK_MAXFRAMES + 5; i++)
        deep[i] = (dcpi_frame_t){0, i};
    ck_assert_int_eq(dcpi_stackprof_add(sp, deep, DCPI_STACK_MAXFRAMES + 5, 2), 0);
    ck_assert_uint_eq(chain_count(sp, deep, DCPI_STACK_MAXFRAMES), 2);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "epoch", "202601010000"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "platform", "h"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "period", "1"), 0);
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(dcpi_stackprof_encode(sp, &buf, &len, NULL), 0);
    ck_assert_ptr_nonnull(memmem(buf, len, "truncated 2\n", 12));
    free(buf);
    dcpi_stackprof_free(sp);
}
END_TEST

START_TEST(test_merge_write)
{
    char dir[] = "/tmp/check_stackprof.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char db[512], path[1024], err[DCPI_ERRLEN] = "";
    snprintf(db, sizeof(db), "%s/db", dir);
    dcpi_stackprof_path(db, "202601010000", "host", "cpu-clock", path, sizeof(path));
    dcpi_stackprof_t *a = sample_sp(), *b = sample_sp(), *back = NULL;
    ck_assert_int_eq(dcpi_stackprof_merge_write(path, a, err), 0);
    ck_assert_int_eq(dcpi_stackprof_merge_write(path, b, err), 0);
    ck_assert_int_eq(dcpi_stackprof_load(db, "202601010000", NULL, "cpu-clock", &back, err), 0);
    ck_assert_ptr_nonnull(back);
    ck_assert_uint_eq(dcpi_stackprof_total(back), 30);
    dcpi_frame_t c2[] = {{0, 0x20}, {0, 0x80}};
    ck_assert_uint_eq(chain_count(back, c2, 2), 14);
    dcpi_stackprof_free(back);
    back = NULL;
    ck_assert_int_eq(dcpi_stackprof_load(db, "202601010000", NULL, "task-clock", &back, err), 0);
    ck_assert_ptr_null(back);
    /* Another period: the file is left as it is. */
    ck_assert_int_eq(dcpi_stackprof_set(b, "period", "5"), 0);
    ck_assert_int_eq(dcpi_stackprof_merge_write(path, b, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "period"));
    ck_assert_int_eq(dcpi_stackprof_read(path, &back, err), 0);
    ck_assert_uint_eq(dcpi_stackprof_total(back), 30);
    dcpi_stackprof_free(back);
    dcpi_stackprof_free(a);
    dcpi_stackprof_free(b);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_merge_remaps_images)
{
    dcpi_stackprof_t *a = sample_sp(), *b = NULL;
    ck_assert_int_eq(dcpi_stackprof_new(0, &b), 0);
    ck_assert_int_eq(
        dcpi_stackprof_image(b, "cd34", "libc.so.6_cd34", "/lib/libc.so.6", 0x2000, 0x900), 0);
    dcpi_frame_t f[] = {{0, 0x10}};
    ck_assert_int_eq(dcpi_stackprof_add(b, f, 1, 4), 0);
    ck_assert_int_eq(dcpi_stackprof_merge(a, b), 0);
    dcpi_frame_t g[] = {{1, 0x10}};
    ck_assert_uint_eq(chain_count(a, g, 1), 4);
    ck_assert_uint_eq(dcpi_stackprof_nimages(a), 2);
    ck_assert_int_eq(dcpi_stackprof_set(b, "event", "task-clock"), 0);
    ck_assert_int_eq(dcpi_stackprof_merge(a, b), DCPI_EINVAL);
    dcpi_stackprof_free(a);
    dcpi_stackprof_free(b);
}
END_TEST

/* The encoding of sample_sp, to corrupt. */
static unsigned char *good(size_t *len, size_t *body)
{
    dcpi_stackprof_t *sp = sample_sp();
    void *buf = NULL;
    ck_assert_int_eq(dcpi_stackprof_encode(sp, &buf, len, NULL), 0);
    dcpi_stackprof_free(sp);
    char *s = strstr(buf, "samples");
    *body = (size_t)(strchr(s, '\n') + 1 - (char *)buf);
    return buf;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Offset of the first chain: body head, then two images (ids/dirs/paths of sample_sp). */
static size_t first_chain(size_t body)
{
    size_t i1 = 32 + ((4 + 9 + 9 + 3) & ~3u), i2 = 32 + ((4 + 14 + 14 + 3) & ~3u);
    return body + 8 + i1 + i2;
}

START_TEST(test_malformed)
{
    size_t len, body;
    unsigned char *b = good(&len, &body);
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse_buf(b, len, err), 0);
    size_t c0 = first_chain(body);
    /* chain order in sample_sp's encoding: {0,0x20}.., {1,0x10}.., {NOIMAGE,..} */
    ck_assert_uint_eq(b[c0 + 8], 2);

    /* truncated body */
    ck_assert_int_eq(parse_buf(b, len - 5, err), DCPI_ETRUNC);
    ck_assert_ptr_nonnull(strstr(err, "x.stk: truncated"));
    /* trailing bytes */
    unsigned char *t = malloc(len + 4);
    memcpy(t, b, len);
    memset(t + len, 0, 4);
    ck_assert_int_eq(parse_buf(t, len + 4, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "trailing bytes"));
    free(t);
    /* footer mismatch */
    b[len - 16] ^= 1;
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "footer"));
    b[len - 16] ^= 1;
    /* zero-frame chain */
    put32(b + c0 + 8, 0);
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "chain 0: 0 frames"));
    put32(b + c0 + 8, 2);
    /* zero count */
    memset(b + c0, 0, 8);
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "count 0"));
    b[c0] = 7;
    ck_assert_int_eq(parse_buf(b, len, err), 0);
    /* image index out of range */
    put32(b + c0 + 12, 5);
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "image index 5 out of range"));
    /* unsorted chains: first chain's leaf image becomes 1 with an offset above the second's */
    put32(b + c0 + 12, 1);
    put32(b + c0 + 16, 0x11);
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "unsorted or repeated"));
    free(b);

    /* wrong version, missing key, bad image id */
    const char *v2 = "version stk-0.02\nepoch 202601010000\nplatform h\nevent e\nperiod 1\n"
                     "samples\n";
    ck_assert_int_eq(parse_buf(v2, strlen(v2), err), DCPI_EVERSION);
    const char *nokey = "version stk-0.01\nepoch 202601010000\nplatform h\nevent e\nsamples\n";
    ck_assert_int_lt(parse_buf(nokey, strlen(nokey), err), 0);
    ck_assert_ptr_nonnull(strstr(err, "period"));
    b = good(&len, &body);
    b[body + 8 + 32] = 'Z'; /* first image id "ab12" -> "Zb12" */
    ck_assert_int_eq(parse_buf(b, len, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "image 0"));
    free(b);
    ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

static Suite *stackprof_suite(void)
{
    Suite *s = suite_create("stackprof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_add_and_roundtrip);
    tcase_add_test(tc, test_bad_add);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_merge_write);
    tcase_add_test(tc, test_merge_remaps_images);
    tcase_add_test(tc, test_malformed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stackprof_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
