/*
 * check_db.c - the profile database layout: epoch naming and selection, platform filter,
 * hosts file, the per-platform daemon lock, listing profile files, the default db path.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/store/db.h"
#include "core/store/epochs.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

/* 2023-11-14 22:13:20 UTC */
#define T0 ((time_t)1700000000)

static char db[256];

static void make_db(void)
{
    snprintf(db, sizeof db, "/tmp/check_db.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(db));
}

static void remove_db(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", db);
    ck_assert_int_eq(system(cmd), 0);
}

static void put_file(const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", db, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void put_dir(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", db, rel);
    ck_assert_int_eq(mkdir(path, 0755), 0);
}

static int exists_dir(const char *rel)
{
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", db, rel);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(test_epoch_naming)
{
    make_db();
    char sub[300], name[DCPI_NAMELEN], err[DCPI_ERRLEN] = "";
    /* The database itself is created, mode 0755. */
    snprintf(sub, sizeof sub, "%s/new/db", db);
    ck_assert_int_eq(dcpi_db_new_epoch(sub, "alpha", T0, name, err), 0);
    struct stat st;
    ck_assert_int_eq(stat(sub, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0755);

    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0, name, err), 0);
    ck_assert_str_eq(name, "20231114221320"); /* always 14 digits, with the seconds */
    ck_assert(exists_dir("20231114221320/alpha"));
    /* Another second: its own name. */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0 + 5, name, err), 0);
    ck_assert_str_eq(name, "20231114221325");
    /* Same second again: the next free second. */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0 + 5, name, err), 0);
    ck_assert_str_eq(name, "20231114221326");
    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0 + 5, name, err), 0);
    ck_assert_str_eq(name, "20231114221327");
    /* Another platform in the same second shares the epoch. */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "beta", T0, name, err), 0);
    ck_assert_str_eq(name, "20231114221320");
    ck_assert(exists_dir("20231114221320/beta"));
    time_t t;
    ck_assert_int_eq(dcpi_db_epoch_start("20231114221320", &t), 0);
    ck_assert_int_eq((long long)t, (long long)T0);
    ck_assert_int_eq(dcpi_db_epoch_start("202311142213", &t), 0); /* the older form */
    ck_assert_int_eq((long long)t, (long long)T0 - 20);
    ck_assert_int_eq(dcpi_db_epoch_start("2023111422132", &t), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_db_epoch_start("20231314221320", &t), DCPI_EINVAL);
    /* Platform names must be one path component. */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "a/b", T0, name, err), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_db_new_epoch(db, "..", T0, name, err), DCPI_EINVAL);
    remove_db();
}
END_TEST

/* Concurrent daemons starting epochs at the same second get distinct names. */
START_TEST(test_epoch_race)
{
    make_db();
    enum { NCHILD = 4, EACH = 5 };
    pid_t kids[NCHILD];
    for (int i = 0; i < NCHILD; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            char name[DCPI_NAMELEN];
            for (int k = 0; k < EACH; k++)
                if (dcpi_db_new_epoch(db, "alpha", T0, name, NULL) < 0)
                    _exit(1);
            _exit(0);
        }
    }
    for (int i = 0; i < NCHILD; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char **v, err[DCPI_ERRLEN] = "";
    size_t n;
    ck_assert_int_eq(dcpi_db_epochs(db, &v, &n, err), 0);
    ck_assert_uint_eq(n, NCHILD * EACH);
    ck_assert_str_eq(v[0], "20231114221320");
    ck_assert_str_eq(v[n - 1], "20231114221339"); /* seconds 20..39 */
    dcpi_db_free_list(v, n);
    remove_db();
}
END_TEST

START_TEST(test_epoch_sorting)
{
    make_db();
    /* Created out of order; with a few names that are not epochs. */
    put_dir("20231114221325");
    put_dir("202311142214");
    put_dir("202311142213");
    put_dir("20231114221359");
    put_dir("202301010000");
    put_dir("2023111422");       /* 10 digits: not an epoch */
    put_dir("20231114221a");     /* not all digits */
    put_dir("2023111422131500"); /* 16 digits */
    put_file("202312312359", "a file, not a directory");
    put_file("hosts", "");
    char **v = NULL, err[DCPI_ERRLEN] = "";
    size_t n = 0;
    ck_assert_int_eq(dcpi_db_epochs(db, &v, &n, err), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(v[0], "202301010000");
    ck_assert_str_eq(v[1], "202311142213");
    ck_assert_str_eq(v[2], "20231114221325");
    ck_assert_str_eq(v[3], "20231114221359");
    ck_assert_str_eq(v[4], "202311142214");
    dcpi_db_free_list(v, n);
    remove_db();
}
END_TEST

START_TEST(test_select_epoch)
{
    make_db();
    char name[DCPI_NAMELEN], err[DCPI_ERRLEN] = "", want[512];
    ck_assert_int_eq(dcpi_db_select_epoch(db, NULL, NULL, name, err), DCPI_ENOENT);
    snprintf(want, sizeof want, "%s: no epochs", db);
    ck_assert_str_eq(err, want);

    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0, name, err), 0);      /* ..221320 */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0 + 1, name, err), 0);  /* ..221321 */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "beta", T0 + 120, name, err), 0); /* ..221520 */
    ck_assert_int_eq(dcpi_db_select_epoch(db, NULL, NULL, name, err), 0);
    ck_assert_str_eq(name, "20231114221520");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest", NULL, name, err), 0);
    ck_assert_str_eq(name, "20231114221520");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-1", NULL, name, err), 0);
    ck_assert_str_eq(name, "20231114221321");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-2", NULL, name, err), 0);
    ck_assert_str_eq(name, "20231114221320");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "20231114221320", NULL, name, err), 0);
    ck_assert_str_eq(name, "20231114221320");

    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-5", NULL, name, err), DCPI_ENOENT);
    snprintf(want, sizeof want, "%s: latest-5: only 3 epochs", db);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(dcpi_db_select_epoch(db, "202001010000", NULL, name, err), DCPI_ENOENT);
    snprintf(want, sizeof want, "%s: epoch '202001010000' not found", db);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-x", NULL, name, err), DCPI_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "latest-x"));

    /* Platform filter: only epochs holding the platform count. */
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest", "alpha", name, err), 0);
    ck_assert_str_eq(name, "20231114221321");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-1", "alpha", name, err), 0);
    ck_assert_str_eq(name, "20231114221320");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-0", "beta", name, err), 0);
    ck_assert_str_eq(name, "20231114221520");
    ck_assert_int_eq(dcpi_db_select_epoch(db, "latest-1", "beta", name, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "latest-1: only 1 epoch for platform beta"));
    ck_assert_int_eq(dcpi_db_select_epoch(db, "20231114221320", "beta", name, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "epoch '20231114221320' not found"));
    ck_assert_int_eq(dcpi_db_select_epoch(db, NULL, "gamma", name, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, ": no epochs for platform gamma"));

    /* Platforms of an epoch. */
    char **v;
    size_t n;
    ck_assert_int_eq(dcpi_db_new_epoch(db, "beta", T0, name, err), 0);
    ck_assert_int_eq(dcpi_db_platforms(db, "20231114221320", &v, &n, err), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(v[0], "alpha");
    ck_assert_str_eq(v[1], "beta");
    dcpi_db_free_list(v, n);
    remove_db();
}
END_TEST

START_TEST(test_hosts)
{
    make_db();
    char out[DCPI_NAMELEN], err[DCPI_ERRLEN] = "", want[512];
    /* No hosts file: the hostname itself. */
    ck_assert_int_eq(dcpi_db_platform_for(db, "walnut", out, err), 0);
    ck_assert_str_eq(out, "walnut");

    put_file("hosts", "# host platform\n"
                      "\n"
                      "walnut   alpha-farm   # the build box\n"
                      "\tpecan\tpecan-v2\n"
                      "   # indented comment\n"
                      "walnut other\n");
    ck_assert_int_eq(dcpi_db_platform_for(db, "walnut", out, err), 0);
    ck_assert_str_eq(out, "alpha-farm"); /* the first mapping wins */
    ck_assert_int_eq(dcpi_db_platform_for(db, "pecan", out, err), 0);
    ck_assert_str_eq(out, "pecan-v2");
    ck_assert_int_eq(dcpi_db_platform_for(db, "hazel", out, err), 0);
    ck_assert_str_eq(out, "hazel");

    put_file("hosts", "walnut alpha\n# fine\nlonely\n");
    ck_assert_int_eq(dcpi_db_platform_for(db, "walnut", out, err), DCPI_EFORMAT);
    snprintf(want, sizeof want, "%s/hosts:3: expected 'hostname platform', got one word", db);
    ck_assert_str_eq(err, want);
    put_file("hosts", "\n\nwalnut alpha beta\n");
    ck_assert_int_eq(dcpi_db_platform_for(db, "walnut", out, err), DCPI_EFORMAT);
    snprintf(want, sizeof want, "%s/hosts:3: expected 'hostname platform', got more than two words",
             db);
    ck_assert_str_eq(err, want);

    /* This host: gethostname, unmapped. */
    char host[DCPI_NAMELEN];
    ck_assert_int_eq(gethostname(host, sizeof host), 0);
    put_file("hosts", "some-other-host p\n");
    ck_assert_int_eq(dcpi_db_platform(db, out, err), 0);
    ck_assert_str_eq(out, host);
    remove_db();
}
END_TEST

START_TEST(test_lock)
{
    make_db();
    char err[DCPI_ERRLEN] = "", want[512], path[1024];
    int fd = -1;
    ck_assert_int_eq(dcpi_db_lock(db, "alpha", &fd, err), 0);
    ck_assert_int_ge(fd, 0);
    /* The lock file holds our pid. */
    dcpi_db_daemon_path(db, "alpha", "lock", path, sizeof path);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long pid = 0;
    ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    ck_assert_int_eq(pid, getpid());
    close(fd);

    /* Held by a forked child: EBUSY naming the child. */
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int cfd;
        char c = dcpi_db_lock(db, "alpha", &cfd, NULL) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    int rc = dcpi_db_lock(db, "alpha", &fd, err);
    snprintf(want, sizeof want, "%s: platform alpha is locked by dcpid pid %ld", db, (long)child);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(rc, DCPI_EBUSY);
    ck_assert_str_eq(err, want);
    /* Another platform is not affected; after the child died the lock is free again. */
    ck_assert_int_eq(dcpi_db_lock(db, "beta", &fd, err), 0);
    close(fd);
    ck_assert_int_eq(dcpi_db_lock(db, "alpha", &fd, err), 0);
    close(fd);
    dcpi_db_daemon_path(db, "alpha", "sock", path, sizeof path);
    snprintf(want, sizeof want, "%s/dcpid-alpha.sock", db);
    ck_assert_str_eq(path, want);
    remove_db();
}
END_TEST

/* A child takes alpha's lock and forks an orphan sharing it (as dcpid's command child between
 * fork and exec does), then exits and is reaped: the orphan holds the lock until go[1], the
 * write end the caller keeps, is closed. Returns the child's pid, gone by then. */
static pid_t orphan_holds_lock(int go[2])
{
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        close(go[1]);
        int fd;
        char c = 'n';
        if (dcpi_db_lock(db, "alpha", &fd, NULL) == 0) {
            c = 'y';
            if (fork() == 0) { /* the orphan */
                char x;
                while (read(go[0], &x, 1) > 0)
                    ;
                _exit(0);
            }
        }
        _exit(write(ready[1], &c, 1) == 1 ? 0 : 1);
    }
    char c = 0;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    ck_assert_int_eq(waitpid(p, NULL, 0), p);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    return p;
}

static void *close_later(void *arg)
{
    usleep(100000);
    close(*(int *)arg);
    return NULL;
}

/* A lock left held by the children of a dcpid that is gone (killed with its process group, they
 * exit a moment later): dcpi_db_lock waits for them instead of reporting a running dcpid; held
 * on past the wait, the error says the holder is gone. */
START_TEST(test_lock_orphan)
{
    make_db();
    char err[DCPI_ERRLEN] = "", want[512];
    int go[2], fd = -1;
    orphan_holds_lock(go);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, close_later, &go[1]), 0);
    ck_assert_int_eq(dcpi_db_lock(db, "alpha", &fd, err), 0); /* once the orphan exited */
    pthread_join(t, NULL);
    close(fd);

    /* an orphan that does not exit: EBUSY after the wait, naming the dcpid that is gone */
    pid_t dead = orphan_holds_lock(go);
    ck_assert_int_eq(dcpi_db_lock(db, "alpha", &fd, err), DCPI_EBUSY);
    snprintf(want, sizeof want,
             "%s: platform alpha is locked by a process that dcpid pid %ld (gone) left running", db,
             (long)dead);
    ck_assert_str_eq(err, want);
    close(go[1]); /* the orphan exits */
    remove_db();
}
END_TEST

START_TEST(test_list_files)
{
    make_db();
    const char *e = "202311142213";
    put_dir(e);
    put_dir("202311142213/beta");
    put_dir("202311142213/alpha");
    put_dir("202311142213/alpha/libc.so.6_00ff");
    put_dir("202311142213/alpha/a.out_1234");
    put_dir("202311142213/alpha/unknown@alpha");
    put_dir("202311142213/beta/a.out_1234");
    put_file("202311142213/alpha/libc.so.6_00ff/task-clock.prof", "x");
    put_file("202311142213/alpha/libc.so.6_00ff/cpu-clock.prof", "x");
    put_file("202311142213/alpha/libc.so.6_00ff/.cpu-clock.prof.tmp.abc123", "x");
    put_file("202311142213/alpha/libc.so.6_00ff/.hidden.prof", "x");
    put_file("202311142213/alpha/libc.so.6_00ff/vp-addr.vprof", "x");
    put_file("202311142213/alpha/a.out_1234/cpu-clock.prof", "x");
    put_file("202311142213/alpha/unknown@alpha/cpu-clock.prof", "x");
    put_file("202311142213/beta/a.out_1234/cpu-clock.prof", "x");
    put_file("202311142213/alpha/stray.prof", "a file beside the image dirs");

    dcpi_db_file_t *v = NULL;
    size_t n = 0;
    char err[DCPI_ERRLEN] = "", want[1024];
    ck_assert_int_eq(dcpi_db_list_files(db, e, NULL, ".prof", &v, &n, err), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(v[0].platform, "alpha");
    ck_assert_str_eq(v[0].imagedir, "a.out_1234");
    ck_assert_str_eq(v[0].file, "cpu-clock.prof");
    ck_assert_str_eq(v[1].imagedir, "libc.so.6_00ff");
    ck_assert_str_eq(v[1].file, "cpu-clock.prof");
    ck_assert_str_eq(v[2].imagedir, "libc.so.6_00ff");
    ck_assert_str_eq(v[2].file, "task-clock.prof");
    ck_assert_str_eq(v[3].imagedir, "unknown@alpha");
    ck_assert_str_eq(v[4].platform, "beta");
    ck_assert_str_eq(v[4].imagedir, "a.out_1234");
    snprintf(want, sizeof want, "%s/%s/beta/a.out_1234/cpu-clock.prof", db, e);
    ck_assert_str_eq(v[4].path, want);
    free(v);

    ck_assert_int_eq(dcpi_db_list_files(db, e, "beta", ".prof", &v, &n, err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].platform, "beta");
    free(v);
    ck_assert_int_eq(dcpi_db_list_files(db, e, NULL, ".vprof", &v, &n, err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(v[0].file, "vp-addr.vprof");
    free(v);
    ck_assert_int_eq(dcpi_db_list_files(db, "202001010000", NULL, ".prof", &v, &n, err),
                     DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "202001010000"));
    remove_db();
}
END_TEST

START_TEST(test_default)
{
    unsetenv("DCPIDB");
    ck_assert_str_eq(dcpi_db_default(NULL), "./dcpidb");
    ck_assert_str_eq(dcpi_db_default("/x/db"), "/x/db");
    setenv("DCPIDB", "", 1);
    ck_assert_str_eq(dcpi_db_default(NULL), "./dcpidb");
    setenv("DCPIDB", "/var/dcpi", 1);
    ck_assert_str_eq(dcpi_db_default(NULL), "/var/dcpi");
    ck_assert_str_eq(dcpi_db_default("/x/db"), "/x/db");
    unsetenv("DCPIDB");
}
END_TEST

/* epoch.info written and read back; an epoch without it (or with a damaged one) is described
 * from its files; listing by platform; removal leaves other platforms and epochs alone. */
START_TEST(test_epoch_info)
{
    make_db();
    char name[DCPI_NAMELEN], err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_db_new_epoch(db, "alpha", T0, name, err), 0);
    dcpi_epoch_info_t in = {.start = T0, .end = T0 + 90, .samples = 1234, .lost = 5, .open = 1};
    snprintf(in.name, sizeof in.name, "%s", name);
    ck_assert_int_eq(dcpi_epoch_info_write(db, "alpha", &in, err), 0);
    put_dir("20231114221320/alpha/img_00ff");
    put_file("20231114221320/alpha/img_00ff/cpu-clock.prof", "x");
    dcpi_epoch_info_t out;
    ck_assert_int_eq(dcpi_epoch_stat(db, name, "alpha", &out, err), 0);
    ck_assert_int_eq(out.has_info, 1);
    ck_assert_int_eq(out.open, 1);
    ck_assert_int_eq((long long)out.start, (long long)T0);
    ck_assert_int_eq((long long)out.end, (long long)T0 + 90);
    ck_assert_uint_eq(out.samples, 1234);
    ck_assert_uint_eq(out.lost, 5);
    ck_assert_uint_gt(out.bytes, 0);
    /* a second platform and an older-format epoch without epoch.info */
    ck_assert_int_eq(dcpi_db_new_epoch(db, "beta", T0, name, err), 0);
    put_dir("202311142200");
    put_dir("202311142200/alpha");
    put_file("202311142200/alpha/" DCPI_EPOCH_INFO_FILE, "dcpi-epoch 1\nstart 12\n"); /* damaged */
    dcpi_epoch_info_t *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dcpi_epoch_list(db, "alpha", &v, &n, err), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(v[0].name, "202311142200");
    ck_assert_int_eq(v[0].has_info, 0);
    ck_assert_int_eq((long long)v[0].start, (long long)T0 - 800); /* 22:00:00 */
    ck_assert_uint_eq(v[0].samples, 0);
    ck_assert_str_eq(v[1].name, "20231114221320");
    free(v);
    ck_assert_int_eq(dcpi_epoch_list(db, "gamma", &v, &n, err), 0);
    ck_assert_uint_eq(n, 0);
    free(v);
    ck_assert_int_eq(dcpi_epoch_stat(db, "20231114221320", "gamma", &out, err), DCPI_ENOENT);
    ck_assert_int_eq(dcpi_epoch_stat(db, "../x", NULL, &out, err), DCPI_EINVAL);
    /* removal: alpha goes, beta stays (and the epoch directory with it) */
    ck_assert_int_eq(dcpi_epoch_remove(db, "20231114221320", "alpha", err), 0);
    ck_assert(!exists_dir("20231114221320/alpha"));
    ck_assert(exists_dir("20231114221320/beta"));
    ck_assert_int_eq(dcpi_epoch_remove(db, "20231114221320", "beta", err), 0);
    ck_assert(!exists_dir("20231114221320"));
    ck_assert_int_eq(dcpi_epoch_remove(db, "20231114221320", "beta", err), DCPI_ENOENT);
    ck_assert_int_eq(dcpi_epoch_remove(db, "20231114221320", "..", err), DCPI_EINVAL);
    /* leftovers of an interrupted removal are swept */
    put_dir(".expire-202311142200-alpha");
    put_file(".expire-202311142200-alpha/f", "x");
    dcpi_epoch_sweep(db);
    ck_assert(!exists_dir(".expire-202311142200-alpha"));
    ck_assert(exists_dir("202311142200/alpha"));
    remove_db();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("db");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_epoch_naming);
    tcase_add_test(tc, test_epoch_race);
    tcase_add_test(tc, test_epoch_sorting);
    tcase_add_test(tc, test_select_epoch);
    tcase_add_test(tc, test_hosts);
    tcase_add_test(tc, test_lock);
    tcase_add_test(tc, test_list_files);
    tcase_add_test(tc, test_default);
    tcase_add_test(tc, test_epoch_info);
    suite_add_tcase(s, tc);
    TCase *slow = tcase_create("lock_orphan"); /* waits out dcpi_db_lock's 3 s once */
    tcase_set_timeout(slow, 30);
    tcase_add_test(slow, test_lock_orphan);
    suite_add_tcase(s, slow);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
