/*
 * check_aggregate.c - dcpid's in-memory count table (core/sampling/aggregate.c): counting,
 * collisions, the 75% threshold, the hard limit, sorted iteration grouped per (image, event),
 * clear, reset and growth, and the process key (samples of one offset kept per process).
 */
#include <check.h>
#include <stdlib.h>

#include "core/sampling/aggregate.h"
#include "dcpi/errno.h"

START_TEST(test_counts)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(100, &a), 0);
    ck_assert_uint_eq(dcpi_agg_capacity(a), 128);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 0, 1), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 0, 2), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 1, 0x40, 0, 5), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 2, 0, 0x40, 0, 7), 0);
    ck_assert_uint_eq(dcpi_agg_get(a, 1, 0, 0x40), 3);
    ck_assert_uint_eq(dcpi_agg_get(a, 1, 1, 0x40), 5);
    ck_assert_uint_eq(dcpi_agg_get(a, 2, 0, 0x40), 7);
    ck_assert_uint_eq(dcpi_agg_get(a, 2, 0, 0x44), 0);
    ck_assert_uint_eq(dcpi_agg_used(a), 3);
    ck_assert_uint_eq(dcpi_agg_total(a), 15);
    dcpi_agg_free(a);
    ck_assert_int_eq(dcpi_agg_new(0, &a), DCPI_EINVAL);
}
END_TEST

/* A full 16-slot table: every key collides with some other one and all must stay distinct. */
START_TEST(test_collisions_and_limit)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(16, &a), 0);
    for (uint32_t i = 0; i < 15; i++)
        ck_assert_int_eq(dcpi_agg_add_proc(a, 0, 0, i * 4, 0, i + 1), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 0, 0, 999, 0, 1), DCPI_EFULL);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 0, 0, 8, 0, 10), 0); /* existing keys still count */
    for (uint32_t i = 0; i < 15; i++)
        ck_assert_uint_eq(dcpi_agg_get(a, 0, 0, i * 4), i + 1 + (i == 2 ? 10 : 0));
    ck_assert_uint_eq(dcpi_agg_get(a, 0, 0, 999), 0);
    dcpi_agg_free(a);
}
END_TEST

START_TEST(test_threshold)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(64, &a), 0);
    for (uint32_t i = 0; i < 47; i++) {
        ck_assert_int_eq(dcpi_agg_add_proc(a, i % 3, (uint16_t)(i % 2), i, 0, 1), 0);
        ck_assert_int_eq(dcpi_agg_needs_flush(a), 0);
    }
    ck_assert_int_eq(dcpi_agg_add_proc(a, 9, 0, 9, 0, 1), 0);
    ck_assert_uint_eq(dcpi_agg_used(a), 48);
    ck_assert_int_eq(dcpi_agg_needs_flush(a), 1);
    dcpi_agg_free(a);
}
END_TEST

START_TEST(test_sorted_groups)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(1024, &a), 0);
    /* Insert in scrambled order. */
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t k = (i * 7919) % 300;
        ck_assert_int_eq(dcpi_agg_add_proc(a, k % 5, (uint16_t)(k % 3), k * 16, 0, k + 1), 0);
    }
    dcpi_agg_add_proc(a, DCPI_AGG_IMAGE_KERNEL, 0, 4, 0, 2);
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(a, &n);
    ck_assert_uint_eq(n, 301);
    size_t groups = 1;
    for (size_t i = 1; i < n; i++) {
        int same = e[i].image == e[i - 1].image && e[i].event == e[i - 1].event;
        ck_assert(e[i].image > e[i - 1].image ||
                  (e[i].image == e[i - 1].image && e[i].event > e[i - 1].event) ||
                  (same && e[i].offset > e[i - 1].offset));
        groups += !same;
        ck_assert_uint_eq(e[i].count,
                          e[i].image == DCPI_AGG_IMAGE_KERNEL ? 2 : e[i].offset / 16 + 1);
    }
    ck_assert_uint_eq(groups, 16); /* 5 images x 3 events + the kernel */
    ck_assert_uint_eq(e[n - 1].image, DCPI_AGG_IMAGE_KERNEL);
    dcpi_agg_free(a);
}
END_TEST

START_TEST(test_clear_and_reset)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(64, &a), 0);
    dcpi_agg_add_proc(a, 1, 0, 0, 0, 3);
    dcpi_agg_add_proc(a, 1, 0, 4, 0, 4);
    dcpi_agg_add_proc(a, 2, 0, 0, 0, 5);
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(a, &n);
    ck_assert_uint_eq(n, 3);
    dcpi_agg_clear(a, e, 2); /* image 1 written */
    ck_assert_uint_eq(dcpi_agg_total(a), 5);
    e = dcpi_agg_sort(a, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(e[0].image, 2);
    ck_assert_uint_eq(e[0].count, 5);
    dcpi_agg_reset(a);
    ck_assert_uint_eq(dcpi_agg_used(a), 0);
    ck_assert_uint_eq(dcpi_agg_total(a), 0);
    ck_assert_uint_eq(dcpi_agg_get(a, 2, 0, 0), 0);
    e = dcpi_agg_sort(a, &n);
    ck_assert_uint_eq(n, 0);
    dcpi_agg_free(a);
}
END_TEST

START_TEST(test_grow)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(16, &a), 0);
    for (uint32_t i = 0; i < 15; i++)
        dcpi_agg_add_proc(a, 3, 1, i, 0, i + 100);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 3, 1, 500, 0, 1), DCPI_EFULL);
    ck_assert_int_eq(dcpi_agg_grow(a), 0);
    ck_assert_uint_eq(dcpi_agg_capacity(a), 32);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 3, 1, 500, 0, 1), 0);
    for (uint32_t i = 0; i < 15; i++)
        ck_assert_uint_eq(dcpi_agg_get(a, 3, 1, i), i + 100);
    ck_assert_uint_eq(dcpi_agg_used(a), 16);
    dcpi_agg_free(a);
}
END_TEST

/* The same offset in three processes: three keys, sorted by process inside the offset, and
 * growth keeps the process of each key. */
START_TEST(test_process_key)
{
    dcpi_agg_t *a = NULL;
    ck_assert_int_eq(dcpi_agg_new(16, &a), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 7, 2), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 3, 5), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 0, 1), 0); /* process 0 */
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x40, 7, 1), 0);
    ck_assert_int_eq(dcpi_agg_add_proc(a, 1, 0, 0x20, 9, 4), 0);
    ck_assert_uint_eq(dcpi_agg_used(a), 4);
    ck_assert_uint_eq(dcpi_agg_get(a, 1, 0, 0x40), 9); /* every process */
    ck_assert_int_eq(dcpi_agg_grow(a), 0);
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(a, &n);
    ck_assert_uint_eq(n, 4);
    uint32_t off[] = {0x20, 0x40, 0x40, 0x40}, proc[] = {9, 0, 3, 7};
    uint64_t cnt[] = {4, 1, 5, 3};
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(e[i].offset, off[i]);
        ck_assert_uint_eq(e[i].proc, proc[i]);
        ck_assert_uint_eq(e[i].count, cnt[i]);
    }
    dcpi_agg_free(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("aggregate");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_collisions_and_limit);
    tcase_add_test(tc, test_threshold);
    tcase_add_test(tc, test_sorted_groups);
    tcase_add_test(tc, test_clear_and_reset);
    tcase_add_test(tc, test_grow);
    tcase_add_test(tc, test_process_key);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
