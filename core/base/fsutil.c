/*
 * fsutil.c - atomic file replacement, whole-file reads (gunzipped when the file is gzip: the
 * symbol cache dcpid writes compressed), gzip in memory, and mkdir -p for every database writer.
 *
 * dcpi__write_atomic never leaves a half-written file at the target: the data goes to a fresh
 * temporary file in the same directory, is fsync'd, and is renamed over the target, after which
 * the directory is fsync'd so the rename itself is durable. dcpid's flush defers both fsyncs to
 * one syncfs at its end (dcpi__sync_defer): a process killed at any moment still leaves whole
 * files (the rename is atomic), and one flush costs one sync instead of two per file.
 * The new file's mode is 0644 less the process's umask (dcpid's system-wide database: 0640).
 */
#include "core/base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/base/err.h"
#include "core/base/mem.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define TMP_ATTEMPTS 100
#define GUNZIP_MAX   ((size_t)1 << 30) /* 1 GiB: more is no file of dcpi's, but a gzip bomb */

static int sync_deferred; /* dcpi__sync_defer */

void dcpi__sync_defer(int on)
{
    sync_deferred = on;
}

int dcpi__sync_fs(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dcpi__errno_code(errno);
    int rc = syncfs(fd) < 0 ? dcpi__errno_code(errno) : 0;
    close(fd);
    return rc;
}

/* 0644 less the umask (read without changing it for long: dcpid is one thread). */
static mode_t file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0644 & ~m;
}

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

int dcpi__write_output(const char *path, const void *buf, size_t len, char *err)
{
    if (!path || strcmp(path, "-") != 0)
        return dcpi__write_atomic(path, buf, len, err);
    fflush(stdout);
    for (size_t off = 0; off < len;) {
        ssize_t n = write(STDOUT_FILENO, (const char *)buf + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? dcpi__errno_code(errno) : DCPI_EIO;
            return dcpi__errf(err, rc, "standard output: %s",
                              n < 0 ? strerror(errno) : "short write");
        }
        off += (size_t)n;
    }
    return 0;
}

int dcpi__write_at(const char *path, int fd, uint64_t off, const void *buf, size_t len, char *err)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail_errno(err, path, n < 0 ? errno : EIO);
        done += (size_t)n;
    }
    if (!sync_deferred && fdatasync(fd) < 0)
        return fail_errno(err, path, errno);
    return 0;
}

int dcpi__atomic_open(dcpi__atomic_t *a, const char *path, char *err)
{
    a->fd = -1;
    a->path = path;
    const char *base;
    if (!path)
        return dcpi__errf(err, DCPI_EINVAL, "(null): invalid argument");
    if (split_path(path, a->dir, sizeof a->dir, &base) < 0 || base[0] == '\0')
        return dcpi__errf(err, DCPI_EINVAL, "%s: not a file path", path);
    int rc = check_target(path, err);
    if (rc < 0)
        return rc;
    a->fd = open_temp(a->dir, base, a->tmp, sizeof a->tmp);
    if (a->fd < 0)
        return fail_errno(err, path, errno);
    if (fchmod(a->fd, file_mode()) < 0) {
        int e = errno;
        dcpi__atomic_abort(a);
        return fail_errno(err, path, e);
    }
    return 0;
}

void dcpi__atomic_abort(dcpi__atomic_t *a)
{
    if (a->fd < 0)
        return;
    close(a->fd);
    unlink(a->tmp);
    a->fd = -1;
}

int dcpi__atomic_commit(dcpi__atomic_t *a, char *err)
{
    if (!sync_deferred && fsync(a->fd) < 0) {
        int e = errno;
        dcpi__atomic_abort(a);
        return fail_errno(err, a->path, e);
    }
    int rc = close(a->fd);
    a->fd = -1;
    if (rc < 0 || rename(a->tmp, a->path) < 0) {
        int e = errno;
        unlink(a->tmp);
        return fail_errno(err, a->path, e);
    }
    if (!sync_deferred && sync_dir(a->dir) < 0)
        return fail_errno(err, a->path,
                          errno); /* the new file is in place, only durability failed */
    return 0;
}

int dcpi__write_atomic(const char *path, const void *buf, size_t len, char *err)
{
    if (!path || (!buf && len))
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    dcpi__atomic_t a;
    int rc = dcpi__atomic_open(&a, path, err);
    if (rc < 0)
        return rc;
    if (write_all(a.fd, buf, len) < 0) {
        int e = errno;
        dcpi__atomic_abort(&a);
        return fail_errno(err, path, e);
    }
    return dcpi__atomic_commit(&a, err);
}

int dcpi__copy_fd(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)1 << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return dcpi__errno_code(errno);
        break; /* not between these files: copy through a buffer from where it stopped */
    }
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return dcpi__errno_code(errno);
        if (n == 0)
            return 0;
        if (write_all(out, buf, (size_t)n) < 0)
            return dcpi__errno_code(errno);
    }
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

/* ---- gzip ---------------------------------------------------------------------------- */

int dcpi__gzip(const void *buf, size_t len, void **out, size_t *outlen)
{
    if (len > UINT_MAX / 2)
        return DCPI_ERANGE;
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return DCPI_ENOMEM;
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *o = malloc(cap);
    int rc = o ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        z.next_in = (Bytef *)buf;
        z.avail_in = (uInt)len;
        z.next_out = o;
        z.avail_out = (uInt)cap;
        rc = deflate(&z, Z_FINISH) == Z_STREAM_END ? 0 : DCPI_ENOMEM;
    }
    if (rc == 0) {
        *out = o;
        *outlen = cap - z.avail_out;
        o = NULL;
    }
    free(o);
    deflateEnd(&z);
    return rc;
}

/* After one member's end: 0 to go on with the next member, 1 at the end of the input, or
 * DCPI_EFORMAT for bytes that do not start another member. */
static int next_member(z_stream *z, size_t left)
{
    if (z->avail_in == 0 && left == 0)
        return 1;
    if (z->avail_in >= 2 && z->next_in[0] == 0x1f && z->next_in[1] == 0x8b)
        return inflateReset(z) == Z_OK ? 0 : DCPI_EFORMAT;
    return DCPI_EFORMAT;
}

/* After inflate returned zr: 0 to go on, 1 at the end of the input, or an error (why: what
 * zlib said, when it said something). */
static int inflated(z_stream *z, int zr, size_t left, const char **why)
{
    if (zr == Z_STREAM_END) {
        int rc = next_member(z, left);
        if (rc == DCPI_EFORMAT && why)
            *why = "data after the end of the gzip stream";
        return rc;
    }
    if (zr == Z_BUF_ERROR && z->avail_in == 0 && left == 0)
        return DCPI_ETRUNC; /* it wants more input: there is none */
    if (zr == Z_MEM_ERROR)
        return DCPI_ENOMEM;
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
        if (why)
            *why = z->msg ? z->msg : "invalid deflate data";
        return DCPI_EFORMAT;
    }
    return 0;
}

int dcpi__gunzip(const void *buf, size_t len, void **out, size_t *outlen, const char **why)
{
    z_stream z = {0};
    if (why)
        *why = NULL;
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return DCPI_ENOMEM;
    const unsigned char *in = buf;
    unsigned char *o = NULL;
    size_t cap = 0, n = 0, left = len;
    int rc = 0;
    for (;;) {
        if (n + 1 >= cap && dcpi__grow((void **)&o, &cap, n + 4096 + left, 1) < 0) {
            rc = DCPI_ENOMEM;
            break;
        }
        if (z.avail_in == 0 && left) {
            z.next_in = (Bytef *)in;
            z.avail_in = (uInt)(left > UINT_MAX ? UINT_MAX : left);
            in += z.avail_in;
            left -= z.avail_in;
        }
        size_t room = cap - n - 1; /* one byte kept for the NUL */
        if (room > GUNZIP_MAX + 1 - n)
            room = GUNZIP_MAX + 1 - n;
        z.next_out = o + n;
        z.avail_out = (uInt)(room > UINT_MAX ? UINT_MAX : room);
        uInt before = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        n += before - z.avail_out;
        if (n > GUNZIP_MAX) {
            rc = DCPI_ERANGE;
            break;
        }
        if ((rc = inflated(&z, zr, left, why)) != 0)
            break;
    }
    inflateEnd(&z);
    if (rc < 0) {
        free(o);
        return rc;
    }
    o[n] = '\0';
    *out = o;
    *outlen = n;
    return 0;
}

int dcpi__read_file_gz(const char *path, int nofollow, void **buf, size_t *len, char *err)
{
    void *raw = NULL;
    size_t n = 0;
    int rc = dcpi__read_file(path, nofollow, &raw, &n, err);
    if (rc < 0)
        return rc;
    const unsigned char *b = raw;
    if (n < 2 || b[0] != 0x1f || b[1] != 0x8b) {
        *buf = raw;
        *len = n;
        return 0;
    }
    const char *why = NULL;
    rc = dcpi__gunzip(raw, n, buf, len, &why);
    free(raw);
    if (rc == DCPI_ETRUNC)
        return dcpi__errf(err, rc, "%s: truncated gzip data", path);
    if (rc == DCPI_EFORMAT)
        return dcpi__errf(err, rc, "%s: corrupt gzip data (%s)", path, why);
    if (rc == DCPI_ERANGE)
        return dcpi__errf(err, rc, "%s: over 1 GiB once gunzipped", path);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    return 0;
}

struct dcpi__gzout {
    z_stream z;
    int fd;
    unsigned char buf[65536];
};

/* Deflate what z holds with flush, writing every full output buffer to the file. */
static int gz_pump(dcpi__gzout_t *g, int flush)
{
    for (;;) {
        g->z.next_out = g->buf;
        g->z.avail_out = sizeof g->buf;
        int zr = deflate(&g->z, flush);
        if (zr == Z_STREAM_ERROR)
            return DCPI_ENOMEM;
        if (write_all(g->fd, g->buf, sizeof g->buf - g->z.avail_out) < 0)
            return dcpi__errno_code(errno);
        if (flush == Z_FINISH ? zr == Z_STREAM_END : g->z.avail_out != 0)
            return 0;
    }
}

int dcpi__gzput(dcpi__gzout_t *g, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        uInt n = len > UINT_MAX / 2 ? UINT_MAX / 2 : (uInt)len;
        g->z.next_in = (Bytef *)p;
        g->z.avail_in = n;
        int rc = gz_pump(g, Z_NO_FLUSH);
        if (rc < 0)
            return rc;
        p += n;
        len -= n;
    }
    return 0;
}

int dcpi__write_atomic_gz_fill(const char *path, int (*fill)(void *arg, dcpi__gzout_t *out),
                               void *arg, char *err)
{
    dcpi__gzout_t *g = calloc(1, sizeof *g);
    if (!g)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    if (deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    }
    dcpi__atomic_t a;
    int rc = dcpi__atomic_open(&a, path, err);
    if (rc < 0)
        goto out;
    g->fd = a.fd;
    rc = fill(arg, g);
    if (rc == 0)
        rc = gz_pump(g, Z_FINISH);
    if (rc < 0) {
        dcpi__atomic_abort(&a);
        rc = dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    } else {
        rc = dcpi__atomic_commit(&a, err);
    }
out:
    deflateEnd(&g->z);
    free(g);
    return rc;
}

typedef struct gz_buf {
    const void *buf;
    size_t len;
} gz_buf_t;

static int put_buf(void *arg, dcpi__gzout_t *out)
{
    const gz_buf_t *b = arg;
    return dcpi__gzput(out, b->buf, b->len);
}

int dcpi__write_atomic_gz(const char *path, const void *buf, size_t len, char *err)
{
    if (!path || (!buf && len))
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    gz_buf_t b = {buf, len};
    return dcpi__write_atomic_gz_fill(path, put_buf, &b, err);
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

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0;
}

void dcpi__remove_tree(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
