/*
 * check_errors.c - the error space: every code has a distinct name and text.
 */
#include <check.h>
#include <string.h>
#include "dcpi/errno.h"
#include "dcpi/version.h"

START_TEST(test_names_and_texts)
{
    ck_assert_str_eq(dcpi_err_name(DCPI_EFORMAT), "EFORMAT");
    ck_assert_str_eq(dcpi_strerror(DCPI_ENOMEM), "out of memory");
    ck_assert_int_eq(DCPI_ENOENT, -ENOENT);
    ck_assert_str_eq(dcpi_strerror(12345), "unknown error");
    ck_assert_str_eq(dcpi_err_name(-99999), "EUNKNOWN");
}
END_TEST

START_TEST(test_version)
{
    ck_assert_uint_eq(dcpi_version(), DCPI_VERSION_HEX);
    ck_assert_str_eq(dcpi_version_string(), DCPI_VERSION_STRING);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_names_and_texts);
    tcase_add_test(tc, test_version);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
