/*
 * fsutil.h - internal file helpers shared by every writer of the database.
 */
#ifndef DCPI_CORE_FSUTIL_H
#define DCPI_CORE_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/api.h"

/*
 * Replace path with buf atomically: create "<dir>/.<base>.tmp.XXXXXX" with O_EXCL|O_NOFOLLOW,
 * write all, fsync, rename over path, fsync the directory. On any failure the temporary file is
 * removed, path is untouched, and err (DCPI_ERRLEN, may be NULL) gets "PATH: reason".
 * Returns 0 or a negative DCPI_E* (DCPI_ENOSPC for a full disk).
 */
int dcpi__write_atomic(const char *path, const void *buf, size_t len, char *err);
/* dcpi__write_atomic's steps for a file written in pieces (a copy, a stream) that must not
 * be built in memory first: dcpi__atomic_open creates the temporary file next to path (fd: write
 * it; tmp: its name, to read it back before it is put in place), dcpi__atomic_commit makes it
 * durable and renames it over path (the fd is closed), dcpi__atomic_abort closes and removes it.
 * path must stay valid until commit or abort. 0 or a negative DCPI_E*, "PATH: reason" in err. */
typedef struct dcpi__atomic {
    int fd;
    const char *path;
    char dir[4096], tmp[4352];
} dcpi__atomic_t;
int dcpi__atomic_open(dcpi__atomic_t *a, const char *path, char *err);
int dcpi__atomic_commit(dcpi__atomic_t *a, char *err);
void dcpi__atomic_abort(dcpi__atomic_t *a);

/* Copy the rest of file in into out (copy_file_range, else through a 64 KiB buffer): nothing
 * of its size in memory. 0 or a negative DCPI_E* from the errno. */
int dcpi__copy_fd(int in, int out);

/* While on, dcpi__write_atomic skips its two fsyncs; the writer then calls dcpi__sync_fs once
 * for all its files (dcpid's flush). Whole files either way: the rename is atomic. */
void dcpi__sync_defer(int on);
/* Write len bytes of buf at offset off of the open file fd (path for messages), then
 * fdatasync it unless dcpi__sync_defer is on: an in-place append (a crash may leave a prefix
 * of buf; the format must tell). 0 or DCPI_E* with "PATH: reason" in err. */
int dcpi__write_at(const char *path, int fd, uint64_t off, const void *buf, size_t len, char *err);
/* syncfs(2) of the filesystem holding path: 0 or a negative DCPI_E*. */
int dcpi__sync_fs(const char *path);

/* A tool's output file: "-" is standard output (all of buf written, then flushed; err gets
 * "standard output: reason"), any other path dcpi__write_atomic. */
int dcpi__write_output(const char *path, const void *buf, size_t len, char *err);

/* Read a whole file into a malloc'd buffer (NUL-terminated, *len excludes the NUL). Refuses a
 * symlink at path when nofollow is set. Returns 0 or a negative DCPI_E* (an errno through
 * dcpi__errno_code, DCPI_EINVAL for a directory); err gets "PATH: reason". */
int dcpi__read_file(const char *path, int nofollow, void **buf, size_t *len, char *err);

/* buf[0..len) gzip-compressed (deflate with a gzip header: zcat reads it) into a malloc'd
 * *out[0..*outlen). 0, DCPI_ENOMEM, or DCPI_ERANGE for an input over 4 GiB. */
int dcpi__gzip(const void *buf, size_t len, void **out, size_t *outlen);

/* Inflate a gzip stream (or several concatenated, as gzip -c a b > c writes; a zlib stream too)
 * into a malloc'd, NUL-terminated *out (*outlen excludes the NUL). 0, DCPI_ENOMEM, DCPI_ETRUNC
 * (the stream ends early), DCPI_ERANGE (over 1 GiB inflated: a gzip bomb) or DCPI_EFORMAT
 * (corrupt; *why, when why is not NULL, gets zlib's static reason). */
int dcpi__gunzip(const void *buf, size_t len, void **out, size_t *outlen, const char **why);

/* dcpi__read_file, gunzipped when the file starts with the gzip magic (1f 8b): readers of files
 * dcpid may have compressed read plain and compressed copies alike. A corrupt or truncated one
 * gives DCPI_EFORMAT, DCPI_ETRUNC or DCPI_ERANGE with "PATH: corrupt gzip data (REASON)", "PATH:
 * truncated gzip data" or "PATH: over 1 GiB once gunzipped" in err. */
int dcpi__read_file_gz(const char *path, int nofollow, void **buf, size_t *len, char *err);

/* dcpi__write_atomic of buf gzip-compressed (streamed to the file: no compressed copy in
 * memory). */
int dcpi__write_atomic_gz(const char *path, const void *buf, size_t len, char *err);
/* dcpi__write_atomic of what fill(arg, out) passes to dcpi__gzput, gzip-compressed as it comes:
 * the file's text is never whole in memory. fill returns 0 or a negative DCPI_E* (then path is
 * untouched). dcpi__gzput: 0 or a negative DCPI_E*. */
typedef struct dcpi__gzout dcpi__gzout_t;
int dcpi__write_atomic_gz_fill(const char *path, int (*fill)(void *arg, dcpi__gzout_t *out),
                               void *arg, char *err);
int dcpi__gzput(dcpi__gzout_t *out, const void *buf, size_t len);

/* snprintf of a path into out[len]: 0, or DCPI_ERANGE when it did not fit (out is then cut). */
int dcpi__pathf(char *out, size_t len, const char *fmt, ...) DCPI_PRINTF(3, 4);

/* mkdir -p with mode; existing directories are fine. */
int dcpi__mkdirs(const char *path, unsigned mode);

/* rm -rf path: everything under it, then path itself, not following symbolic links; what
 * cannot be removed stays. */
void dcpi__remove_tree(const char *path);

#endif
