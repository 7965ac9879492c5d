/*
 * check_procprof.c - per-process counts: the daemon's process table (core/sampling/proctab.c:
 * ids by pid and name, fork, exec, exit, compaction) and the "<event>.procs" files
 * (core/store/procprof.c: encoding, merge, and the rejection of every kind of corrupt file).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static size_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static uint64_t count_of(const dcpi_procprof_t *q, uint32_t pid, uint32_t off)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->e[i].pid == pid && q->e[i].offset == off)
            return q->e[i].count;
    return 0;
}

/* Version 2: appends add chunks in place (the file only grows by the new chunk), readers add
 * them up; a torn last chunk is left out and cut off by the next append; every
 * DCPI_PROCPROF_MAX_CHUNKS appends the file is rewritten as one chunk; a version 1 file is
 * converted by its first append. */
START_TEST(test_file_append)
{
    char *path = tmpfile_path(), err[256] = "";
    uint64_t torn = 1;
    dcpi_procprof_t p = {0}, q = {0};
    ck_assert_int_eq(dcpi_procprof_add(&p, 42, "sha256sum", 0x40, 3), 0);
    ck_assert_int_eq(dcpi_procprof_add(&p, 7, "bash", 0x10, 1), 0);
    ck_assert_int_eq(dcpi_procprof_append(path, &p, &torn, err), 0); /* created */
    ck_assert_uint_eq(torn, 0);
    size_t one = file_size(path);
    dcpi_procprof_t r = {0};
    ck_assert_int_eq(dcpi_procprof_add(&r, 42, "sha256sum", 0x40, 5), 0);
    ck_assert_int_eq(dcpi_procprof_append(path, &r, &torn, err), 0);
    size_t two = file_size(path);
    ck_assert_uint_gt(two, one);
    ck_assert_uint_lt(two - one, one); /* the new chunk only, not the file again */
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    dcpi_procprof_normalize(&q);
    ck_assert_uint_eq(q.n, 2);
    ck_assert_uint_eq(count_of(&q, 42, 0x40), 8);
    ck_assert_uint_eq(count_of(&q, 7, 0x10), 1);
    ck_assert_uint_eq(q.torn, 0);
    dcpi_procprof_free(&q);
    /* a writer killed in its append: the last chunk cut short */
    ck_assert_int_eq(truncate(path, (off_t)two - 3), 0);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    ck_assert_uint_eq(q.torn, two - 3 - one);
    ck_assert_uint_eq(count_of(&q, 42, 0x40), 3);
    dcpi_procprof_free(&q);
    ck_assert_int_eq(dcpi_procprof_append(path, &r, &torn, err), 0);
    ck_assert_uint_eq(torn, two - 3 - one);
    ck_assert_uint_eq(file_size(path), two);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    ck_assert_uint_eq(q.torn, 0);
    dcpi_procprof_normalize(&q);
    ck_assert_uint_eq(count_of(&q, 42, 0x40), 8);
    dcpi_procprof_free(&q);
    /* a whole chunk whose bytes changed: damage */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, (long)two - 1, SEEK_SET), 0);
    int c = fgetc(f);
    ck_assert_int_eq(fseek(f, (long)two - 1, SEEK_SET), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), DCPI_EFORMAT);
    ck_assert_msg(strstr(err, "bad checksum"), "%s", err);
    dcpi_procprof_free(&q);
    /* compaction: one chunk again after DCPI_PROCPROF_MAX_CHUNKS */
    unlink(path);
    for (int i = 0; i < DCPI_PROCPROF_MAX_CHUNKS + 1; i++)
        ck_assert_int_eq(dcpi_procprof_append(path, &r, &torn, err), 0);
    size_t compacted = file_size(path);
    char path2[64];
    strcpy(path2, path);
    strcat(path2, ".one");
    dcpi_procprof_t big = {0};
    ck_assert_int_eq(
        dcpi_procprof_add(&big, 42, "sha256sum", 0x40, 5 * (DCPI_PROCPROF_MAX_CHUNKS + 1)), 0);
    ck_assert_int_eq(dcpi_procprof_append(path2, &big, &torn, err), 0);
    ck_assert_uint_eq(compacted, file_size(path2)); /* one chunk, as if written at once */
    unlink(path2);
    dcpi_procprof_free(&big);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    ck_assert_uint_eq(count_of(&q, 42, 0x40), 5ull * (DCPI_PROCPROF_MAX_CHUNKS + 1));
    dcpi_procprof_free(&q);
    /* a version 1 file: its first append rewrites it as version 2 */
    unlink(path);
    ck_assert_int_eq(dcpi_procprof_merge_write(path, &p, err), 0);
    ck_assert_int_eq(dcpi_procprof_append(path, &r, &torn, err), 0);
    ck_assert_int_eq(dcpi_procprof_read(path, &q, err), 0);
    dcpi_procprof_normalize(&q);
    ck_assert_uint_eq(count_of(&q, 42, 0x40), 8);
    ck_assert_uint_eq(count_of(&q, 7, 0x10), 1);
    FILE *g = fopen(path, "rb");
    char magic[13] = "";
    ck_assert_uint_eq(fread(magic, 1, 12, g), 12);
    fclose(g);
    ck_assert_str_eq(magic, "dcpiprocs 2\n");
    unlink(path);
    dcpi_procprof_free(&q);
    dcpi_procprof_free(&p);
    dcpi_procprof_free(&r);
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
    tcase_add_test(tc, test_file_append);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
