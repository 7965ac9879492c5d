/*
 * fsutil.c - atomic file replacement, whole-file reads and mkdir -p for every database writer.
 *
 * dcpi__write_atomic never leaves a half-written file at the target: the data goes to a fresh
 * temporary file in the same directory, is fsync'd, and is renamed over the target, after which
 * the directory is fsync'd so the rename itself is durable.
 */
#include "core/base/fsutil.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/mem.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define TMP_ATTEMPTS 100

static int fail_errno(char *err, const char *path, int e)
{
    return dcpi__errf(err, dcpi__errno_code(e), "%s: %s", path, strerror(e));
}

/* Split path into its directory ("." when there is none) and its last component. */
static int split_path(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
        return 0;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/file" lives in "/" */
    if (n >= dlen)
        return DCPI_EINVAL;
    memcpy(dir, path, n);
    dir[n] = '\0';
    *base = slash + 1;
    return 0;
}

/* Create "<dir>/.<base>.tmp.XXXXXX" exclusively; the suffix is random enough to avoid races
 * between writers and retried on collision. */
static int open_temp(const char *dir, const char *base, char *tmp, size_t tlen)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_sec;
    for (int i = 0; i < TMP_ATTEMPTS; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL + counter++;
        unsigned r = (unsigned)(seed >> 40) & 0xffffffu;
        int n = snprintf(tmp, tlen, "%s/.%s.tmp.%06x", dir, base, r);
        if (n < 0 || (size_t)n >= tlen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Write all of buf, retrying on EINTR and short writes. Returns 0 or -1 with errno set. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync a directory so a rename inside it is durable. Filesystems that cannot sync a directory
 * (EINVAL) are accepted. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc < 0 && e != EINVAL) {
        errno = e;
        return -1;
    }
    return 0;
}

/* A symlink at path is never replaced: a rename would silently swap the link for a file. */
static int check_target(const char *path, char *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return fail_errno(err, path, errno);
    }
    if (S_ISLNK(st.st_mode))
        return dcpi__errf(err, DCPI_EPERM, "%s: is a symbolic link, refusing to replace it", path);
    if (!S_ISREG(st.st_mode))
        return dcpi__errf(err, DCPI_EINVAL, "%s: not a regular file, refusing to replace it", path);
    return 0;
}

/* Write buf into the open temporary file and make it durable; the fd is closed either way. */
static int fill_temp(int fd, const void *buf, size_t len)
{
    if (fchmod(fd, 0644) < 0 || write_all(fd, buf, len) < 0 || fsync(fd) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd);
}

int dcpi__write_atomic(const char *path, const void *buf, size_t len, char *err)
{
    if (!path || (!buf && len))
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    char dir[4096], tmp[4352];
    const char *base;
    if (split_path(path, dir, sizeof(dir), &base) < 0 || base[0] == '\0')
        return dcpi__errf(err, DCPI_EINVAL, "%s: not a file path", path);
    int rc = check_target(path, err);
    if (rc < 0)
        return rc;
    int fd = open_temp(dir, base, tmp, sizeof(tmp));
    if (fd < 0)
        return fail_errno(err, path, errno);
    if (fill_temp(fd, buf, len) < 0)
        goto out_unlink;
    if (rename(tmp, path) < 0)
        goto out_unlink;
    if (sync_dir(dir) < 0)
        return fail_errno(err, path, errno); /* the new file is in place, only durability failed */
    return 0;

out_unlink:;
    int e = errno;
    unlink(tmp);
    return fail_errno(err, path, e);
}

/* Read fd to EOF into a growing buffer (st_size is only a hint: /proc files report 0). */
static int read_all(int fd, size_t hint, char **out, size_t *len)
{
    size_t cap = hint + 1 > 4096 ? hint + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return DCPI_ENOMEM;
    for (;;) {
        if (n + 1 >= cap && dcpi__grow((void **)&buf, &cap, n + 2, 1) < 0)
            goto out_nomem;
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;

out_nomem:
    free(buf);
    return DCPI_ENOMEM;
}

int dcpi__read_file(const char *path, int nofollow, void **buf, size_t *len, char *err)
{
    if (!path || !buf || !len)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    int fd = open(path, O_RDONLY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0 && errno == ELOOP && nofollow)
        return dcpi__errf(err, DCPI_EPERM, "%s: is a symbolic link, refusing to follow it", path);
    if (fd < 0)
        return fail_errno(err, path, errno);
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        rc = fail_errno(err, path, errno);
        goto out_fd;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = dcpi__errf(err, DCPI_EINVAL, "%s: is a directory", path);
        goto out_fd;
    }
    char *data = NULL;
    rc = read_all(fd, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, &data, len);
    if (rc == DCPI_ENOMEM)
        rc = dcpi__errf(err, rc, "%s: out of memory", path);
    else if (rc < 0)
        rc = fail_errno(err, path, errno);
    else
        *buf = data;
out_fd:
    close(fd);
    return rc;
}

/* mkdir one component; an existing directory is fine, anything else in the way is not. */
static int mkdir_one(const char *path, unsigned mode)
{
    if (mkdir(path, (mode_t)mode) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    return e == EEXIST ? DCPI_EEXIST : dcpi__errno_code(e);
}

int dcpi__mkdirs(const char *path, unsigned mode)
{
    if (!path || !path[0])
        return DCPI_EINVAL;
    char *copy = strdup(path);
    if (!copy)
        return DCPI_ENOMEM;
    int rc = 0;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        rc = mkdir_one(copy, mode);
        *p = '/';
        if (rc < 0)
            goto out;
    }
    rc = mkdir_one(copy, mode);
out:
    free(copy);
    return rc;
}

int dcpi__pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= len ? DCPI_ERANGE : 0;
}
