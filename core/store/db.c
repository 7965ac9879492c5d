/*
 * db.c - the profile database layout (see db.h): DB/<epoch>/<platform>/<image dir>/<files>,
 * epoch naming and selection, the hosts file, the per-platform daemon lock and file listing.
 */
#include "core/store/db.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define EPOCH_SECOND_TRIES 3600 /* how many later seconds new_epoch tries before giving up */

/* snprintf into a path buffer: DCPI_ERANGE when it does not fit. */
/* A name usable as one directory component. */
static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= DCPI_NAMELEN || strchr(s, '/'))
        return 0;
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *dcpi_db_default(const char *dir)
{
    if (dir && *dir)
        return dir;
    const char *env = getenv("DCPIDB");
    if (env && *env)
        return env;
    return "./dcpidb";
}

/* ---- hosts file ------------------------------------------------------------------------- */

/* Check one hosts line (comment already cut off); on a match of hostname copy the platform.
 * Messages are "hosts:LINE: reason" (the caller prefixes the database). */
static int hosts_line(unsigned lineno, char *line, const char *hostname, char out[DCPI_NAMELEN],
                      int *found, char *err)
{
    char *save, *words[3];
    int n = 0;
    for (char *w = strtok_r(line, " \t\r\f\v", &save); w && n < 3;
         w = strtok_r(NULL, " \t\r\f\v", &save))
        words[n++] = w;
    if (n == 0)
        return 0;
    if (n == 1)
        return dcpi__errf(err, DCPI_EFORMAT, "hosts:%u: expected 'hostname platform', got one word",
                          lineno);
    if (n == 3)
        return dcpi__errf(err, DCPI_EFORMAT,
                          "hosts:%u: expected 'hostname platform', got more than two words",
                          lineno);
    if (!name_ok(words[1]))
        return dcpi__errf(err, DCPI_EFORMAT, "hosts:%u: bad platform name '%.64s'", lineno,
                          words[1]);
    if (!*found && strcmp(words[0], hostname) == 0) {
        snprintf(out, DCPI_NAMELEN, "%s", words[1]);
        *found = 1;
    }
    return 0;
}

int dcpi_db_hosts_parse(const char *buf, size_t len, const char *hostname, char out[DCPI_NAMELEN],
                        char *err)
{
    if ((!buf && len) || !hostname || !out)
        return dcpi__errf(err, DCPI_EINVAL, "hosts: invalid argument");
    const char *nul = len ? memchr(buf, '\0', len) : NULL;
    if (nul) {
        unsigned lineno = 1;
        for (const char *c = buf; c < nul; c++)
            lineno += *c == '\n';
        return dcpi__errf(err, DCPI_EFORMAT, "hosts:%u: NUL byte", lineno);
    }
    char *text = malloc(len + 1);
    if (!text)
        return dcpi__errf(err, DCPI_ENOMEM, "hosts: out of memory");
    if (len)
        memcpy(text, buf, len);
    text[len] = '\0';
    unsigned lineno = 0;
    int found = 0, rc = 0;
    char *line = text;
    while (rc == 0 && line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        rc = hosts_line(++lineno, line, hostname, out, &found, err);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return rc < 0 ? rc : found;
}

int dcpi_db_platform_for(const char *db, const char *hostname, char out[DCPI_NAMELEN], char *err)
{
    if (!db || !hostname || !out)
        return dcpi__errf(err, DCPI_EINVAL, "DB: no database or hostname given");
    char path[4096], *text = NULL, why[DCPI_ERRLEN];
    size_t len = 0;
    if (dcpi__pathf(path, sizeof path, "%s/hosts", db) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "DB: database path too long");
    char rerr[DCPI_ERRLEN];
    int rc = dcpi__read_file(path, 0, (void **)&text, &len, rerr);
    if (rc < 0 && rc != DCPI_ENOENT)
        return dcpi__errf(err, rc, "%s", rerr);
    int found = 0;
    if (text) {
        found = dcpi_db_hosts_parse(text, len, hostname, out, why);
        free(text);
        if (found < 0)
            return dcpi__errf(err, found, "%s/%s", db, why);
    }
    if (!found) {
        if (!name_ok(hostname))
            return dcpi__errf(err, DCPI_EINVAL, "%s: host name '%s' is not a usable platform name",
                              db, hostname);
        snprintf(out, DCPI_NAMELEN, "%s", hostname);
    }
    return 0;
}

int dcpi_db_platform(const char *db, char out[DCPI_NAMELEN], char *err)
{
    char host[DCPI_NAMELEN];
    if (gethostname(host, sizeof host) < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "DB: gethostname: %s", strerror(errno));
    host[sizeof host - 1] = '\0';
    return dcpi_db_platform_for(db, host, out, err);
}

/* ---- epochs ----------------------------------------------------------------------------- */

/* Claim DB/<name>/<platform> by creating it: 0, DCPI_EEXIST when taken, or an error. */
static int epoch_claim(const char *db, const char *name, const char *platform, char *err)
{
    char path[4096];
    if (dcpi__pathf(path, sizeof path, "%s/%s/%s", db, name, platform) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", db);
    dcpi__pathf(path, sizeof path, "%s/%s", db, name);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", path, strerror(errno));
    dcpi__pathf(path, sizeof path, "%s/%s/%s", db, name, platform);
    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno == EEXIST)
        return DCPI_EEXIST;
    return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", path, strerror(errno));
}

static int epoch_name(time_t t, char name[DCPI_NAMELEN])
{
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return DCPI_ERANGE;
    strftime(name, DCPI_NAMELEN, "%Y%m%d%H%M%S", &tm);
    return 0;
}

int dcpi_db_new_epoch(const char *db, const char *platform, time_t now, char name[DCPI_NAMELEN],
                      char *err)
{
    if (!db || !name || !name_ok(platform))
        return dcpi__errf(err, DCPI_EINVAL, "DB: bad platform name '%s'", platform ? platform : "");
    int rc = dcpi__mkdirs(db, 0755);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", db, dcpi_strerror(rc));
    for (int i = 0; i < EPOCH_SECOND_TRIES; i++) {
        rc = epoch_name(now + i, name);
        if (rc < 0)
            return dcpi__errf(err, rc, "%s: cannot name an epoch for time %lld", db,
                              (long long)now);
        rc = epoch_claim(db, name, platform, err);
        if (rc != DCPI_EEXIST)
            return rc;
    }
    return dcpi__errf(err, DCPI_EEXIST, "%s: no free epoch name for platform %s within %d seconds",
                      db, platform, EPOCH_SECOND_TRIES);
}

void dcpi_db_free_list(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int dcpi_db_is_epoch_name(const char *s)
{
    size_t n = strlen(s);
    if (n != 12 && n != 14)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static int is_visible_name(const char *s)
{
    return s[0] != '.';
}

/* Names of the subdirectories of dir accepted by keep(), sorted. */
static int list_dirs(const char *dir, int (*keep)(const char *), char ***names, size_t *n,
                     char *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", dir, strerror(errno));
    char **v = NULL, path[4096];
    size_t cnt = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!keep(de->d_name) || dcpi__pathf(path, sizeof path, "%s/%s", dir, de->d_name) < 0 ||
            !is_dir(path))
            continue;
        if (dcpi__grow((void **)&v, &cap, cnt + 1, sizeof *v) < 0)
            goto out_nomem;
        if (!(v[cnt] = strdup(de->d_name)))
            goto out_nomem;
        cnt++;
    }
    closedir(d);
    if (cnt)
        qsort(v, cnt, sizeof *v, cmp_str);
    *names = v;
    *n = cnt;
    return 0;
out_nomem:
    rc = dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", dir);
    dcpi_db_free_list(v, cnt);
    closedir(d);
    return rc;
}

int dcpi_db_epochs(const char *db, char ***names, size_t *n, char *err)
{
    if (!db || !names || !n)
        return dcpi__errf(err, DCPI_EINVAL, "DB: no database given");
    return list_dirs(db, dcpi_db_is_epoch_name, names, n, err);
}

int dcpi_db_platforms(const char *db, const char *epoch, char ***names, size_t *n, char *err)
{
    if (!db || !epoch || !names || !n)
        return dcpi__errf(err, DCPI_EINVAL, "DB: no database or epoch given");
    char path[4096];
    if (dcpi__pathf(path, sizeof path, "%s/%s", db, epoch) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", db);
    return list_dirs(path, is_visible_name, names, n, err);
}

/* Keep only the epochs holding platform (compacting the list). */
static void filter_platform(const char *db, const char *platform, char **v, size_t *n)
{
    size_t k = 0;
    char path[4096];
    for (size_t i = 0; i < *n; i++) {
        if (dcpi__pathf(path, sizeof path, "%s/%s/%s", db, v[i], platform) == 0 && is_dir(path))
            v[k++] = v[i];
        else
            free(v[i]);
    }
    *n = k;
}

/* Pick the epoch named by spec among v[0..n) (ascending). */
static int pick_epoch(const char *db, const char *spec, const char *platform, char **v, size_t n,
                      char out[DCPI_NAMELEN], char *err)
{
    const char *pf = platform ? " for platform " : "";
    const char *pn = platform ? platform : "";
    if (n == 0)
        return dcpi__errf(err, DCPI_ENOENT, "%s: no epochs%s%s", db, pf, pn);
    if (!spec || strcmp(spec, "latest") == 0) {
        snprintf(out, DCPI_NAMELEN, "%s", v[n - 1]);
        return 0;
    }
    if (strncmp(spec, "latest-", 7) == 0) {
        char *end;
        errno = 0;
        unsigned long long k = strtoull(spec + 7, &end, 10);
        if (!isdigit((unsigned char)spec[7]) || *end || errno)
            return dcpi__errf(err, DCPI_EINVAL, "%s: bad epoch spec '%s'", db, spec);
        if (k >= n)
            return dcpi__errf(err, DCPI_ENOENT, "%s: %s: only %zu epoch%s%s%s", db, spec, n,
                              n == 1 ? "" : "s", pf, pn);
        snprintf(out, DCPI_NAMELEN, "%s", v[n - 1 - k]);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i], spec) == 0) {
            snprintf(out, DCPI_NAMELEN, "%s", v[i]);
            return 0;
        }
    }
    return dcpi__errf(err, DCPI_ENOENT, "%s: epoch '%s' not found%s%s", db, spec, pf, pn);
}

int dcpi_db_select_epoch(const char *db, const char *spec, const char *platform,
                         char out[DCPI_NAMELEN], char *err)
{
    if (!db || !out)
        return dcpi__errf(err, DCPI_EINVAL, "DB: no database given");
    char **v;
    size_t n;
    int rc = dcpi_db_epochs(db, &v, &n, err);
    if (rc < 0)
        return rc;
    if (platform)
        filter_platform(db, platform, v, &n);
    rc = pick_epoch(db, spec, platform, v, n, out, err);
    dcpi_db_free_list(v, n);
    return rc;
}

int dcpi_db_epoch_start(const char *name, time_t *out)
{
    if (!name || !out || !dcpi_db_is_epoch_name(name))
        return DCPI_EINVAL;
    struct tm tm = {0};
    const char *fmt = strlen(name) == 14 ? "%Y%m%d%H%M%S" : "%Y%m%d%H%M";
    const char *end = strptime(name, fmt, &tm);
    if (!end || *end)
        return DCPI_EINVAL;
    *out = timegm(&tm);
    return 0;
}

/* ---- daemon files and lock -------------------------------------------------------------- */

void dcpi_db_daemon_path(const char *db, const char *platform, const char *kind, char *out,
                         size_t len)
{
    snprintf(out, len, "%s/dcpid-%s.%s", db, platform, kind);
}

/* The pid written in a lock file by its holder (0 when not written yet). */
static long lock_holder(int fd)
{
    char buf[32];
    for (int tries = 0; tries < 20; tries++) {
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        if (r > 0) {
            buf[r] = '\0';
            long pid = strtol(buf, NULL, 10);
            if (pid > 0)
                return pid;
        }
        usleep(1000); /* the holder may be between flock and write */
    }
    return 0;
}

int dcpi_db_wait_unlocked(const char *db, const char *platform, unsigned timeout_ms, char *err)
{
    char path[4096];
    if (!db || !name_ok(platform))
        return dcpi__errf(err, DCPI_EINVAL, "DB: bad platform name '%s'", platform ? platform : "");
    dcpi_db_daemon_path(db, platform, "lock", path, sizeof path);
    for (unsigned waited = 0;; waited += 10) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return 0; /* no lock file: nobody holds it */
        int free_now = flock(fd, LOCK_SH | LOCK_NB) == 0;
        long holder = free_now ? 0 : lock_holder(fd);
        close(fd); /* (also drops the shared lock just taken) */
        if (free_now)
            return 0;
        if (waited >= timeout_ms)
            return dcpi__errf(err, DCPI_EBUSY,
                              "%s: dcpid pid %ld still holds platform %s after %u s", db, holder,
                              platform, timeout_ms / 1000);
        usleep(10000);
    }
}

/* Whether the process pid (a lock file's holder) no longer exists. */
static int holder_gone(long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* flock(fd, LOCK_EX | LOCK_NB): 0, or its errno, with the pid written in the file in *holder
 * (EWOULDBLOCK). A lock whose dcpid is gone but still held is held by that dcpid's children,
 * which share its open lock file until they exit (the command between fork and exec, a plugin
 * worker before it closes its descriptors): killed with it, they release it a moment later, so
 * that is waited for (DB_LOCK_ORPHAN_MS), not reported as a running dcpid (e2e_fleet_daemon's
 * restarts right after kill -9 of dcpid's process group). */
#define DB_LOCK_ORPHAN_MS 3000
static int lock_now(int fd, long *holder)
{
    *holder = 0;
    for (unsigned waited = 0;; waited += 10) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        int e = errno;
        if (e != EWOULDBLOCK)
            return e;
        *holder = lock_holder(fd);
        if (waited >= DB_LOCK_ORPHAN_MS || !holder_gone(*holder))
            return e; /* a live holder (or one not known) */
        usleep(10000);
    }
}

int dcpi_db_lock(const char *db, const char *platform, int *fd, char *err)
{
    if (!db || !fd || !name_ok(platform))
        return dcpi__errf(err, DCPI_EINVAL, "DB: bad platform name '%s'", platform ? platform : "");
    char path[4096];
    dcpi_db_daemon_path(db, platform, "lock", path, sizeof path);
    int lfd = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lfd < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", path, strerror(errno));
    long holder;
    int e = lock_now(lfd, &holder);
    if (e != 0) {
        close(lfd);
        if (e != EWOULDBLOCK)
            return dcpi__errf(err, dcpi__errno_code(e), "%s: flock: %s", path, strerror(e));
        if (holder_gone(holder))
            return dcpi__errf(err, DCPI_EBUSY,
                              "%s: platform %s is locked by a process that dcpid pid %ld (gone) "
                              "left running",
                              db, platform, holder);
        if (holder > 0)
            return dcpi__errf(err, DCPI_EBUSY, "%s: platform %s is locked by dcpid pid %ld", db,
                              platform, holder);
        return dcpi__errf(err, DCPI_EBUSY, "%s: platform %s is locked by dcpid pid ?", db,
                          platform);
    }
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(lfd, 0) < 0 || pwrite(lfd, buf, (size_t)len, 0) != len) {
        int e = errno ? errno : EIO;
        close(lfd);
        return dcpi__errf(err, dcpi__errno_code(e), "%s: %s", path, strerror(e));
    }
    *fd = lfd;
    return 0;
}

/* ---- listing profile files -------------------------------------------------------------- */

typedef struct file_list {
    dcpi_db_file_t *v;
    size_t n, cap;
} file_list_t;

static int file_cmp(const void *a, const void *b)
{
    const dcpi_db_file_t *x = a, *y = b;
    int c = strcmp(x->platform, y->platform);
    if (c == 0)
        c = strcmp(x->imagedir, y->imagedir);
    return c ? c : strcmp(x->file, y->file);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int files_push(file_list_t *fl, const char *platform, const char *imagedir, const char *file,
                      const char *path)
{
    if (dcpi__grow((void **)&fl->v, &fl->cap, fl->n + 1, sizeof *fl->v) < 0)
        return DCPI_ENOMEM;
    dcpi_db_file_t *f = &fl->v[fl->n++];
    snprintf(f->platform, sizeof f->platform, "%s", platform);
    snprintf(f->imagedir, sizeof f->imagedir, "%s", imagedir);
    snprintf(f->file, sizeof f->file, "%s", file);
    snprintf(f->path, sizeof f->path, "%s", path);
    return 0;
}

/* Files ending in suffix directly inside dir (DB/epoch/platform/imagedir). */
static int list_image_dir(const char *dir, const char *platform, const char *imagedir,
                          const char *suffix, file_list_t *fl, char *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", dir, strerror(errno));
    int rc = 0;
    char path[4096];
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        if (de->d_name[0] == '.' || !has_suffix(de->d_name, suffix))
            continue;
        if (dcpi__pathf(path, sizeof path, "%s/%s", dir, de->d_name) < 0 || stat(path, &st) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        rc = files_push(fl, platform, imagedir, de->d_name, path);
    }
    closedir(d);
    return rc < 0 ? dcpi__errf(err, rc, "%s: out of memory", dir) : 0;
}

static int list_platform(const char *db, const char *epoch, const char *platform,
                         const char *suffix, file_list_t *fl, char *err)
{
    char dir[4096], sub[4096];
    char **dirs;
    size_t n;
    if (dcpi__pathf(dir, sizeof dir, "%s/%s/%s", db, epoch, platform) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", db);
    int rc = list_dirs(dir, is_visible_name, &dirs, &n, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (dcpi__pathf(sub, sizeof sub, "%s/%s", dir, dirs[i]) < 0) {
            rc = dcpi__errf(err, DCPI_ERANGE, "%s/%s: path too long", dir, dirs[i]);
            break;
        }
        rc = list_image_dir(sub, platform, dirs[i], suffix, fl, err);
    }
    dcpi_db_free_list(dirs, n);
    return rc;
}

int dcpi_db_list_files(const char *db, const char *epoch, const char *platform, const char *suffix,
                       dcpi_db_file_t **files, size_t *n, char *err)
{
    if (!db || !epoch || !suffix || !files || !n)
        return dcpi__errf(err, DCPI_EINVAL, "DB: no database, epoch or suffix given");
    char **plats = NULL;
    size_t np = 0;
    int rc = 0;
    if (!platform)
        rc = dcpi_db_platforms(db, epoch, &plats, &np, err);
    file_list_t fl = {0};
    for (size_t i = 0; rc == 0 && i < (platform ? 1 : np); i++)
        rc = list_platform(db, epoch, platform ? platform : plats[i], suffix, &fl, err);
    dcpi_db_free_list(plats, np);
    if (rc < 0) {
        free(fl.v);
        return rc;
    }
    if (fl.n)
        qsort(fl.v, fl.n, sizeof *fl.v, file_cmp);
    *files = fl.v;
    *n = fl.n;
    return 0;
}

int dcpi_db_list_files_epochs(const char *db, const char *const *epochs, size_t nepochs,
                              const char *platform, const char *suffix, dcpi_db_file_t **files,
                              size_t *n, char *err)
{
    *files = NULL;
    *n = 0;
    for (size_t k = 0; k < nepochs; k++) {
        dcpi_db_file_t *f = NULL;
        size_t m = 0;
        int rc = dcpi_db_list_files(db, epochs[k], platform, suffix, &f, &m, err);
        dcpi_db_file_t *all = rc == 0 && m ? reallocarray(*files, *n + m, sizeof(*all)) : *files;
        if (rc == 0 && m && !all)
            rc = DCPI_ENOMEM;
        if (rc < 0) {
            free(f);
            free(*files);
            *files = NULL;
            *n = 0;
            return rc;
        }
        if (m)
            memcpy(all + *n, f, m * sizeof(*all));
        *files = all;
        *n += m;
        free(f);
    }
    return 0;
}
