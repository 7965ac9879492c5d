/*
 * err.c - dcpi__errf (the one printf into a caller's error buffer), dcpi__err_prefix (a name in
 * front of it) and dcpi__errno_code (the one errno -> DCPI_E* mapping), see err.h.
 */
#include "core/base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/damage.h"
#include "dcpi/errno.h"

int dcpi__errf(char *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    char raw[DCPI_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    dcpi__escape(err, DCPI_ERRLEN, raw); /* a corrupt file's bytes never reach a terminal */
    return code;
}

void dcpi__err_prefix(char *err, const char *who)
{
    if (!err || !who)
        return;
    size_t tl = strlen(who) + 2;
    if (tl >= DCPI_ERRLEN - 1)
        return;
    size_t ml = strnlen(err, DCPI_ERRLEN - 1);
    if (ml > DCPI_ERRLEN - 1 - tl)
        ml = DCPI_ERRLEN - 1 - tl;
    memmove(err + tl, err, ml);
    err[tl + ml] = '\0';
    memcpy(err, who, tl - 2);
    memcpy(err + tl - 2, ": ", 2);
}

int dcpi__errno_code(int errnum)
{
    switch (errnum) {
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
    case ENAMETOOLONG:
        return DCPI_ENOENT;
    case ENOSPC:
    case EDQUOT:
        return DCPI_ENOSPC;
    case EPERM:
    case EROFS:
        return DCPI_EPERM;
    case EINVAL:
    case EISDIR:
        return DCPI_EINVAL;
    case ENOMEM:
        return DCPI_ENOMEM;
    case EEXIST:
        return DCPI_EEXIST;
    case EACCES:
        return DCPI_EACCES;
    case EBUSY:
        return DCPI_EBUSY;
    case ESRCH: /* reading /proc/PID files of a process that is going away */
        return DCPI_ESRCH;
    default:
        return DCPI_EIO;
    }
}
