/*
 * check_progress.c - core/base/progress: silent when the stream is not a terminal (a pipe, a
 * file), drawn on a pseudo-terminal (openpty) with the counts and the percentage, at most 10
 * lines a second however often it is updated, and cleared at the end.
 */
#include <check.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/progress.h"

/* everything readable from fd now (non-blocking) into buf */
static size_t drain(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (ssize_t r; n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0;)
        n += (size_t)r;
    buf[n] = 0;
    return n;
}

START_TEST(test_not_a_terminal)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    dcpi__progress_t p;
    dcpi__progress_start(&p, f, -1, 10, "x");
    for (int i = 0; i <= 10; i++)
        dcpi__progress_update(&p, (uint64_t)i);
    dcpi__progress_done(&p);
    ck_assert_int_eq(ftell(f), 0);
    ck_assert_uint_eq(p.draws, 0);
    fclose(f);
    /* forced off, even on a terminal-less stream: nothing either */
    dcpi__progress_start(&p, stderr, 0, 10, "x");
    dcpi__progress_update(&p, 5);
    ck_assert_uint_eq(p.draws, 0);
}
END_TEST

START_TEST(test_pty)
{
    int master, slave;
    ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
    FILE *out = fdopen(slave, "w");
    ck_assert_ptr_nonnull(out);
    ck_assert(isatty(fileno(out)));
    dcpi__progress_t p;
    dcpi__progress_start(&p, out, -1, 8, "dcpitest: images");
    dcpi__progress_update(&p, 2);
    char buf[4096];
    drain(master, buf, sizeof buf);
    ck_assert_str_eq(buf, "\rdcpitest: images: 2/8 (25%)\033[K");
    dcpi__progress_done(&p);
    drain(master, buf, sizeof buf);
    ck_assert_str_eq(buf, "\r\033[K");
    fclose(out);
    close(master);
}
END_TEST

START_TEST(test_throttled)
{
    FILE *f = tmpfile();
    dcpi__progress_t p;
    dcpi__progress_start(&p, f, 1, 0, "n");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t i = 0;
    do {
        dcpi__progress_update(&p, ++i);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 350000000L);
    /* 350 ms of updates: the first line at once, then at most one per 100 ms */
    ck_assert_uint_ge(p.draws, 1);
    ck_assert_uint_le(p.draws, 4);
    ck_assert_uint_gt(i, 100);
    dcpi__progress_done(&p);
    /* no total: the count alone */
    fflush(f);
    rewind(f);
    char buf[64] = "";
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    ck_assert_int_eq(strncmp(buf, "\rn: 1\033[K\r", 9), 0);
    fclose(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_not_a_terminal);
    tcase_add_test(tc, test_pty);
    tcase_add_test(tc, test_throttled);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
