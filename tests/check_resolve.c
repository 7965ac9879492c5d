/*
 * check_resolve.c - core/image/resolve.c (dcpi_resolve, include/dcpi/resolve.h): a function of
 * this test program resolves to this program's file, its ELF address and its own name; code
 * mapped after the first lookup (dlopen) is found by reading the maps again; a vanished process
 * is DCPI_ESRCH, an unmapped address DCPI_ENOENT.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcpi/errno.h"
#include "dcpi/resolve.h"

__attribute__((noinline, used)) int dcpi_check_resolve_target(int x)
{
    return x * 3 + 1;
}

START_TEST(test_own_function)
{
    dcpi_resolved_t r;
    uint64_t a = (uint64_t)(uintptr_t)&dcpi_check_resolve_target;
    ck_assert_int_eq(dcpi_resolve((unsigned)getpid(), a + 2, &r), 0);
    ck_assert_ptr_nonnull(r.symbol);
    ck_assert_str_eq(r.symbol, "dcpi_check_resolve_target");
    ck_assert_uint_eq(r.symoff, 2);
    ck_assert_ptr_nonnull(strstr(r.path, "check_resolve"));
    ck_assert_uint_gt(strlen(r.build_id), 0);
    /* the ELF address is the run-time one minus the load bias: the same symbol, offset 2 */
    ck_assert_uint_ne(r.vaddr, 0);
    dcpi_resolve_reset();
}
END_TEST

START_TEST(test_mapped_later)
{
    dcpi_resolved_t r;
    uint64_t a = (uint64_t)(uintptr_t)&dcpi_check_resolve_target;
    ck_assert_int_eq(dcpi_resolve((unsigned)getpid(), a, &r), 0); /* maps read now */
    void *h = dlopen("libz.so.1", RTLD_NOW);
    ck_assert_ptr_nonnull(h);
    void *f = dlsym(h, "crc32");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(dcpi_resolve((unsigned)getpid(), (uint64_t)(uintptr_t)f, &r), 0);
    ck_assert_ptr_nonnull(strstr(r.path, "libz"));
    ck_assert_ptr_nonnull(r.symbol);
    ck_assert_str_eq(r.symbol, "crc32");
    dlclose(h);
    dcpi_resolve_reset();
}
END_TEST

START_TEST(test_errors)
{
    dcpi_resolved_t r;
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0); /* gone */
    ck_assert_int_eq(dcpi_resolve((unsigned)c, 0x401000, &r), DCPI_ESRCH);
    ck_assert_int_eq(dcpi_resolve((unsigned)getpid(), 0x10, &r), DCPI_ENOENT);
    ck_assert_int_eq(dcpi_resolve(0, 0x401000, &r), DCPI_EINVAL);
    dcpi_resolve_reset();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("resolve");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_own_function);
    tcase_add_test(tc, test_mapped_later);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
