/*
 * check_llvmprof.c - LLVM's sample profile (core/formats/llvmprof.c): the base discriminator
 * decoding (LLVM 14's getUnsignedFromPrefixEncoding), line offsets, and the exact text of a
 * profile with body lines, discriminators, call targets, nested inlined sections, heads from
 * calls and from entry samples, and functions ordered by total; the AutoFDO form read back
 * the way GCC 12 reads it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/formats/llvmprof.h"

START_TEST(test_base_discriminator)
{
    /* clang -fdebug-info-for-profiling writes base 3 as 6, base 1 as 2 */
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(0), 0);
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(2), 1);
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(6), 3);
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(1), 0); /* odd: no base component */
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(7), 0);
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(62), 31); /* 5 bits, no continuation */
    /* a base of 32 or more: prefix 0x20 set, the high bits one place further up */
    ck_assert_uint_eq(
        dcpi_llvm_base_discriminator(((((40u >> 5) << 6) | (40u & 0x1f) | 0x20) << 1)), 40);
    /* the duplication factor and copy id above the base are dropped */
    ck_assert_uint_eq(dcpi_llvm_base_discriminator(6 | (5u << 8)), 3);
}
END_TEST

START_TEST(test_line_offset)
{
    ck_assert_uint_eq(dcpi_llvm_line_offset(16, 11), 5);
    ck_assert_uint_eq(dcpi_llvm_line_offset(11, 11), 0);
    ck_assert_uint_eq(dcpi_llvm_line_offset(10, 11), 0xffff); /* LLVM keeps 16 bits */
}
END_TEST

static char *write_text(dcpi_llvmprof_t *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(dcpi_llvmprof_write(p, m), 0);
    fclose(m);
    return text;
}

START_TEST(test_write)
{
    dcpi_llvmprof_t *p;
    ck_assert_int_eq(dcpi_llvmprof_new(&p), 0);
    dcpi_llvmfn_t *run = dcpi_llvmprof_func(p, "run", 1);
    ck_assert_ptr_eq(dcpi_llvmprof_func(p, "run", 0), run);
    ck_assert_ptr_null(dcpi_llvmprof_func(p, "nope", 0));
    ck_assert_int_eq(dcpi_llvmfn_body(run, 3, 0, 300), 0);
    ck_assert_int_eq(dcpi_llvmfn_body(run, 2, 1, 40), 0);
    ck_assert_int_eq(dcpi_llvmfn_body(run, 3, 0, 5), 0); /* summed */
    ck_assert_uint_eq(dcpi_llvmfn_body_at(run, 3, 0), 305);
    ck_assert_int_eq(dcpi_llvmfn_body(run, 5, 0, 10), 0);
    ck_assert_int_eq(dcpi_llvmfn_target(run, 5, 0, "f_mul", 3), 0);
    ck_assert_int_eq(dcpi_llvmfn_target(run, 5, 0, "f_add", 7), 0);
    ck_assert_int_eq(dcpi_llvmfn_target(run, 6, 0, "f_add", 4), 0); /* no body: one made */
    dcpi_llvmfn_t *mix = dcpi_llvmfn_inlined(run, 5, 1, "mix");
    ck_assert_ptr_eq(dcpi_llvmfn_inlined(run, 5, 1, "mix"), mix);
    ck_assert_int_eq(dcpi_llvmfn_body(mix, 1, 0, 20), 0);
    dcpi_llvmfn_t *deep = dcpi_llvmfn_inlined(mix, 2, 0, "deep");
    ck_assert_int_eq(dcpi_llvmfn_body(deep, 0, 0, 2), 0);
    dcpi_llvmfn_t *add = dcpi_llvmprof_func(p, "f_add", 1);
    ck_assert_int_eq(dcpi_llvmfn_body(add, 0, 0, 500), 0);
    dcpi_llvmfn_add_entry(add, 2); /* the calls into it (11) are more */
    dcpi_llvmfn_t *mul = dcpi_llvmprof_func(p, "f_mul", 1);
    ck_assert_int_eq(dcpi_llvmfn_body(mul, 0, 0, 9), 0);
    dcpi_llvmfn_add_entry(mul, 9);     /* more than its calls (3) */
    dcpi_llvmprof_func(p, "empty", 1); /* no samples: not written */
    char *text = write_text(p);
    ck_assert_str_eq(text, "f_add:500:11\n"
                           " 0: 500\n"
                           "run:381:0\n"
                           " 2.1: 40\n"
                           " 3: 305\n"
                           " 5: 10 f_add:7 f_mul:3\n"
                           " 6: 4 f_add:4\n"
                           " 5.1: mix:22\n"
                           "  1: 20\n"
                           "  2: deep:2\n"
                           "   0: 2\n"
                           "f_mul:9:9\n"
                           " 0: 9\n");
    free(text);
    dcpi_llvmprof_free(p);
}
END_TEST

/* A little reader of the AutoFDO form, as GCC 12's auto-profile.cc reads it. */
typedef struct rd {
    const unsigned char *b;
    size_t n, at;
} rd_t;

static uint32_t rd_u32(rd_t *r)
{
    ck_assert_uint_le(r->at + 4, r->n);
    uint32_t v = (uint32_t)r->b[r->at] | (uint32_t)r->b[r->at + 1] << 8 |
                 (uint32_t)r->b[r->at + 2] << 16 | (uint32_t)r->b[r->at + 3] << 24;
    r->at += 4;
    return v;
}

static uint64_t rd_ctr(rd_t *r)
{
    uint64_t lo = rd_u32(r);
    return lo | (uint64_t)rd_u32(r) << 32;
}

static const char *rd_str(rd_t *r)
{
    uint32_t len = rd_u32(r);
    ck_assert_uint_le(r->at + len, r->n);
    const char *s = (const char *)r->b + r->at;
    ck_assert_uint_eq(strlen(s) + 1, len);
    r->at += len;
    return s;
}

START_TEST(test_write_afdo)
{
    dcpi_llvmprof_t *p;
    ck_assert_int_eq(dcpi_llvmprof_new(&p), 0);
    dcpi_llvmfn_t *run = dcpi_llvmprof_func(p, "run", 1);
    dcpi_llvmfn_body(run, 3, 0, 300);
    dcpi_llvmfn_body(run, 3, 2, 5); /* one position for GCC: the line */
    dcpi_llvmfn_body(run, 5, 0, 10);
    dcpi_llvmfn_target(run, 5, 0, "f_add", 7);
    dcpi_llvmfn_target(run, 5, 0, "f_mul", 3);
    dcpi_llvmfn_body(dcpi_llvmfn_inlined(run, 6, 1, "mix"), 1, 0, 20);
    dcpi_llvmfn_body(dcpi_llvmprof_func(p, "f_add", 1), 0, 0, 2);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_int_eq(dcpi_llvmprof_write_afdo(p, m), 0);
    fclose(m);
    rd_t r = {(const unsigned char *)buf, len, 0};
    ck_assert_uint_eq(rd_u32(&r), 0x67636461); /* "gcda" */
    ck_assert_uint_eq(rd_u32(&r), 2);
    rd_u32(&r);
    ck_assert_uint_eq(rd_u32(&r), 0xaa000000);
    rd_u32(&r);
    ck_assert_uint_eq(rd_u32(&r), 4); /* run, f_add, f_mul, mix */
    const char *names[4];
    for (int i = 0; i < 4; i++)
        names[i] = rd_str(&r);
    ck_assert_uint_eq(rd_u32(&r), 0xac000000);
    rd_u32(&r);
    ck_assert_uint_eq(rd_u32(&r), 2);
    ck_assert_uint_eq(rd_ctr(&r), 0); /* run: head */
    ck_assert_str_eq(names[rd_u32(&r)], "run");
    ck_assert_uint_eq(rd_u32(&r), 2); /* positions 3 and 5 */
    ck_assert_uint_eq(rd_u32(&r), 1); /* mix */
    ck_assert_uint_eq(rd_u32(&r), 3u << 16);
    ck_assert_uint_eq(rd_u32(&r), 0);
    ck_assert_uint_eq(rd_ctr(&r), 305);
    ck_assert_uint_eq(rd_u32(&r), 5u << 16);
    ck_assert_uint_eq(rd_u32(&r), 2);
    ck_assert_uint_eq(rd_ctr(&r), 10);
    rd_u32(&r);
    ck_assert_str_eq(names[rd_ctr(&r)], "f_add");
    ck_assert_uint_eq(rd_ctr(&r), 7);
    rd_u32(&r);
    ck_assert_str_eq(names[rd_ctr(&r)], "f_mul");
    ck_assert_uint_eq(rd_ctr(&r), 3);
    ck_assert_uint_eq(rd_u32(&r), 6u << 16); /* the inlined mix */
    ck_assert_str_eq(names[rd_u32(&r)], "mix");
    ck_assert_uint_eq(rd_u32(&r), 1);
    ck_assert_uint_eq(rd_u32(&r), 0);
    ck_assert_uint_eq(rd_u32(&r), 1u << 16);
    ck_assert_uint_eq(rd_u32(&r), 0);
    ck_assert_uint_eq(rd_ctr(&r), 20);
    ck_assert_uint_eq(rd_ctr(&r), 7); /* f_add: head from the calls into it */
    ck_assert_str_eq(names[rd_u32(&r)], "f_add");
    rd_u32(&r);
    rd_u32(&r);
    rd_u32(&r);
    rd_u32(&r);
    ck_assert_uint_eq(rd_ctr(&r), 2);
    rd_u32(&r); /* the module section: none */
    rd_u32(&r);
    ck_assert_uint_eq(rd_u32(&r), 0);
    ck_assert_uint_eq(rd_u32(&r), 0xaf000000);
    rd_u32(&r);
    uint32_t last = 0;
    for (int i = 0; i < 128; i++) { /* the working set grows to every position */
        uint32_t n = rd_u32(&r);
        ck_assert_uint_ge(n, last);
        last = n;
        rd_ctr(&r);
    }
    ck_assert_uint_eq(last, 4);
    ck_assert_uint_eq(r.at, len);
    free(buf);
    dcpi_llvmprof_free(p);
}
END_TEST

START_TEST(test_many_functions)
{
    dcpi_llvmprof_t *p;
    ck_assert_int_eq(dcpi_llvmprof_new(&p), 0);
    char name[32];
    for (int i = 0; i < 5000; i++) { /* the index grows; every name still found */
        snprintf(name, sizeof name, "f%d", i);
        ck_assert_int_eq(dcpi_llvmfn_body(dcpi_llvmprof_func(p, name, 1), 0, 0, (uint64_t)i + 1),
                         0);
    }
    ck_assert_uint_eq(dcpi_llvmprof_count(p), 5000);
    for (int i = 0; i < 5000; i += 499) {
        snprintf(name, sizeof name, "f%d", i);
        ck_assert_uint_eq(dcpi_llvmfn_body_at(dcpi_llvmprof_func(p, name, 0), 0, 0),
                          (uint64_t)i + 1);
    }
    char *text = write_text(p);
    ck_assert(strncmp(text, "f4999:5000:0\n", 13) == 0); /* the largest total first */
    free(text);
    ck_assert_ptr_nonnull(dcpi_llvmprof_func(p, "f17", 0)); /* found after the reorder */
    dcpi_llvmprof_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("llvmprof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_base_discriminator);
    tcase_add_test(tc, test_line_offset);
    tcase_add_test(tc, test_write);
    tcase_add_test(tc, test_write_afdo);
    tcase_add_test(tc, test_many_functions);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
