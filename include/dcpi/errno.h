/*
 * dcpi/errno.h - the one error space of dcpi.
 *
 * Every int-returning function returns 0 (or a non-negative count) on success and a negative
 * DCPI_E* code on failure. Codes that have an errno equivalent equal -errno; the others live
 * below -1000. dcpi_strerror() and dcpi_err_name() are generated from the same X-macro list.
 */
#ifndef DCPI_ERRNO_H
#define DCPI_ERRNO_H

#include <errno.h>
#include "api.h"

#define DCPI_ERRNO_MAP(X)                                                                          \
    X(EINVAL, -EINVAL, "invalid argument")                                                         \
    X(ENOMEM, -ENOMEM, "out of memory")                                                            \
    X(EIO, -EIO, "input/output error")                                                             \
    X(ENOENT, -ENOENT, "no such file or entry")                                                    \
    X(EEXIST, -EEXIST, "already exists")                                                           \
    X(EBUSY, -EBUSY, "in use by another process")                                                  \
    X(EPERM, -EPERM, "operation not permitted")                                                    \
    X(EACCES, -EACCES, "permission denied")                                                        \
    X(ENOSPC, -ENOSPC, "no space left on device")                                                  \
    X(ERANGE, -ERANGE, "value out of range")                                                       \
    X(ENOTSUP, -ENOTSUP, "not supported on this machine")                                          \
    X(ESRCH, -ESRCH, "no such process")                                                            \
    X(EFORMAT, -1001, "malformed data")                                                            \
    X(ETRUNC, -1002, "truncated data")                                                             \
    X(EVERSION, -1003, "unsupported version")                                                      \
    X(EPLUGIN, -1004, "bad plugin")                                                                \
    X(EFULL, -1005, "table full")                                                                  \
    X(EEND, -1006, "end of data")

enum dcpi_errno {
#define DCPI_ERR_ENUM(name, value, text) DCPI_##name = (value),
    DCPI_ERRNO_MAP(DCPI_ERR_ENUM)
#undef DCPI_ERR_ENUM
};

/* A static English description of err (never NULL; "unknown error" for unknown codes). */
DCPI_API const char *dcpi_strerror(int err);
/* The code's symbolic name, e.g. "EFORMAT" (never NULL). */
DCPI_API const char *dcpi_err_name(int err);

#endif
