/*
 * err.h - the plumbing of a failed call: its one-line reason printf'd into the caller's
 * DCPI_ERRLEN buffer, and an errno value carried into the dcpi error space (DCPI_E*).
 */
#ifndef DCPI_CORE_BASE_ERR_H
#define DCPI_CORE_BASE_ERR_H

#include "dcpi/api.h"

/* Printf the reason ("NAME: reason", no newline) into err (DCPI_ERRLEN bytes, may be NULL;
 * truncated to fit; non-printable bytes escaped as "\xNN" by dcpi__escape, core/base/damage.h).
 * Returns code, so a failure reads "return dcpi__errf(err, DCPI_E..., ...)". */
int dcpi__errf(char *err, int code, const char *fmt, ...) DCPI_PRINTF(3, 4);

/* Put "WHO: " in front of the message already in err (may be NULL), truncating the message to
 * fit DCPI_ERRLEN: a tool's name in front of a library's "NAME: reason". */
void dcpi__err_prefix(char *err, const char *who);

/*
 * An errno value (positive, as in errno) as a negative DCPI_E* code:
 *   ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG -> DCPI_ENOENT (the path does not lead to a file)
 *   ENOSPC, EDQUOT                       -> DCPI_ENOSPC
 *   EPERM, EROFS                         -> DCPI_EPERM
 *   EINVAL, EISDIR                       -> DCPI_EINVAL
 *   ENOMEM, EEXIST, EACCES, EBUSY, ESRCH -> the same code (DCPI_ENOMEM, ...)
 *   anything else                        -> DCPI_EIO
 */
int dcpi__errno_code(int errnum);

#endif
