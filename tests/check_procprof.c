/*
 * check_procprof.c - per-process counts: the daemon's process table (core/sampling/proctab.c:
 * ids by pid and name, fork, exec, exit, compaction) and the "<event>.procs" files
 * (core/store/procprof.c: encoding, merge, and the rejection of every kind of corrupt file).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sampling/proctab.h"
#include "core/store/procprof.h"
#include "dcpi/errno.h"

START_TEST(test_proctab_names)
{
    dcpi_proctab_t *pt = NULL;
    ck_assert_int_eq(dcpi_proctab_new(&pt), 0);
    ck_assert_uint_eq(dcpi_proctab_id(pt, 0), 0);
    ck_assert_str_eq(dcpi_proctab_name(pt, 0), "swapper");
    /* a pid seen first in a sample is named from /proc: this process */
    uint32_t self = dcpi_proctab_id(pt, getpid());
    ck_assert_uint_ne(self, 0);
    ck_assert_int_eq(dcpi_proctab_pid(pt, self), getpid());
    ck_assert_str_eq(dcpi_proctab_name(pt, self), "check_procprof");
    ck_assert_uint_eq(dcpi_proctab_id(pt, getpid()), self);
    /* fork: the child has the parent's name; exec: a new id, the old one keeps its name */
    dcpi_proctab_fork(pt, getpid(), 4000001);
    uint32_t child = dcpi_proctab_id(pt, 4000001);
    ck_assert_str_eq(dcpi_proctab_name(pt, child), "check_procprof");
    dcpi_proctab_comm(pt, 4000001, "sha256sum");
    uint32_t execd = dcpi_proctab_id(pt, 4000001);
    ck_assert_uint_ne(execd, child);
    ck_assert_str_eq(dcpi_proctab_name(pt, execd), "sha256sum");
    ck_assert_str_eq(dcpi_proctab_name(pt, child), "check_procprof");
    dcpi_proctab_comm(pt, 4000001, "sha256sum"); /* the same name: the same id */
    ck_assert_uint_eq(dcpi_proctab_id(pt, 4000001), execd);
    /* exit: the id stays valid through a compaction before the next mark (a flush under way) */
    dcpi_proctab_exit(pt, 4000001);
    ck_assert_str_eq(dcpi_proctab_name(pt, execd), "sha256sum");
    ck_assert_uint_eq(dcpi_proctab_count(pt), 4);
    dcpi_proctab_compact(pt);
    ck_assert_uint_eq(dcpi_proctab_count(pt), 4);
    ck_assert_str_eq(dcpi_proctab_name(pt, execd), "sha256sum");
    /* after a mark they are forgotten; the live id does not move */
    dcpi_proctab_mark(pt);
    dcpi_proctab_compact(pt);
    ck_assert_uint_eq(dcpi_proctab_count(pt), 2);
    uint32_t again = dcpi_proctab_id(pt, getpid());
    ck_assert_uint_eq(again, self);
    ck_assert_int_eq(dcpi_proctab_pid(pt, again), getpid());
    ck_assert_uint_eq(dcpi_proctab_count(pt), 2);
    /* a freed id is reused */
    dcpi_proctab_fork(pt, getpid(), 4000003);
    ck_assert_uint_lt(dcpi_proctab_id(pt, 4000003), execd + 1);
    ck_assert_uint_eq(dcpi_proctab_count(pt), 3);
    /* a vanished pid is named "?" */
    ck_assert_str_eq(dcpi_proctab_name(pt, dcpi_proctab_id(pt, 4000002)), "?");
    ck_assert_uint_eq(dcpi_proctab_failed(pt), 0);
    dcpi_proctab_free(pt);
}
END_TEST

/* Many pids added and removed in random order: every live pid keeps its id (the hash's
 * deletion keeps probe sequences unbroken through rehashes). */
START_TEST(test_proctab_many)
{
    dcpi_proctab_t *pt = NULL;
    ck_assert_int_eq(dcpi_proctab_new(&pt), 0);
    enum { N = 5000 };
    static uint32_t id[N];
    static int alive[N];
    srand(7);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            pid_t pid = 5000000 + i;
            if (rand() % 3 == 0 && alive[i]) {
                dcpi_proctab_exit(pt, pid);
                alive[i] = 0;
            } else if (!alive[i]) {
                dcpi_proctab_comm(pt, pid, "w");
                id[i] = dcpi_proctab_id(pt, pid);
                alive[i] = 1;
            }
        }
        for (int i = 0; i < N; i++)
            if (alive[i])
                ck_assert_uint_eq(dcpi_proctab_id(pt, 5000000 + i), id[i]);
        dcpi_proctab_mark(pt); /* a flush: the dead are freed, the live keep their ids */
        dcpi_proctab_compact(pt);
        for (int i = 0; i < N; i++)
            if (alive[i])
                ck_assert_uint_eq(dcpi_proctab_id(pt, 5000000 + i), id[i]);
    }
    dcpi_proctab_free(pt);
}
END_TEST

static char *tmpfile_path(void)
{
    static char path[] = "/tmp/check_procprof.XXXXXX";
    strcpy(path, "/tmp/check_procprof.XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(path);
    return path;
}

START_TEST(test_file_roundtrip_merge)
{
    dcpi_procprof_t p = {0}, q = {0};
    ck_assert_int_eq(dcpi_procprof_add(&p, 42, "sha256sum", 0x40, 3), 0);
    ck_assert_int_eq(dcpi_procprof_add(&p, 42, "sha256sum", 0x10, 1), 0);
    ck_assert_int_eq(dcpi_procprof_add(&p, 7, "a-very-long-command-name", 0xffffffff, 1ull << 40),
                     0);
    ck_assert_int_eq(dcpi_procprof_add(&p, 42, "sha256sum", 0x40, 2), 0);
    char *path = tmpfile_path();
    char err[256] = "";
    ck_assert_int_eq(dcpi_procprof_merge_write(path, &p, err), 0);
    ck_assert_int_eq(dcpi_procprof_merge_write(path, &p, err), 0); /* adds again */
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    ck_assert_uint_eq(q.n, 3);
    ck_assert_uint_eq(q.e[0].pid, 7);
    ck_assert_str_eq(q.e[0].comm, "a-very-long-co"
                                  "m"); /* 15 bytes */
    ck_assert_uint_eq(q.e[0].offset, 0xffffffff);
    ck_assert_uint_eq(q.e[0].count, 2ull << 40);
    ck_assert_uint_eq(q.e[1].offset, 0x10);
    ck_assert_uint_eq(q.e[1].count, 2);
    ck_assert_uint_eq(q.e[2].offset, 0x40);
    ck_assert_uint_eq(q.e[2].count, 10);
    unlink(path);
    dcpi_procprof_free(&p);
    dcpi_procprof_free(&q);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), DCPI_ENOENT);
}
END_TEST

/* Every corruption is a one-line DCPI_EFORMAT naming the file. */
START_TEST(test_file_corrupt)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *why;
    } bad[] = {
        {"dcpiprof 1\n", 11, "not a dcpi per-process profile"},
        {"dcpiprocs 1\n\x2a", 13, "bad command name"},
        {"dcpiprocs 1\n\x2a\x00", 14, "bad command name"},
        {"dcpiprocs 1\n\x2a\x10", 14, "bad command name"},
        {"dcpiprocs 1\n\x2a\x01x\x00", 16, "bad entry count"},
        {"dcpiprocs 1\n\x2a\x01x\x05\x01\x01", 18, "bad entry count"},
        {"dcpiprocs 1\n\x2a\x01x\x02\x01\x01\x00\x01", 20, "bad entry 1"},
        {"dcpiprocs 1\n\x2a\x01x\x01\x01\x00", 18, "bad entry 0"},
        {"dcpiprocs 1\n\x2a\x01x\x01\x80", 17, "bad entry count"},
        {"dcpiprocs 1\n\xff\xff\xff\xff\xff\x01", 18, "bad process id"},
        {"dcpiprocs 1\n\x2a\x01x\x01\xff\xff\xff\xff\x1f\x01", 22, "bad entry 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dcpi_procprof_t p = {0};
        char err[256] = "";
        ck_assert_int_eq(dcpi_procprof_parse(bad[i].bytes, bad[i].len, "F", &p, err), DCPI_EFORMAT);
        ck_assert_msg(strncmp(err, "F: ", 3) == 0 && strstr(err, bad[i].why), "%zu: %s", i, err);
        dcpi_procprof_free(&p);
    }
    dcpi_procprof_t p = {0};
    ck_assert_int_eq(dcpi_procprof_parse("dcpiprocs 1\n", 12, "F", &p, NULL), 0); /* empty */
    ck_assert_uint_eq(p.n, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("procprof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_proctab_names);
    tcase_add_test(tc, test_proctab_many);
    tcase_add_test(tc, test_file_roundtrip_merge);
    tcase_add_test(tc, test_file_corrupt);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
