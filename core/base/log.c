/*
 * log.c - a tiny line logger (see log.h). Each message is written with one write(2) call so
 * lines from concurrent processes do not interleave.
 */
#include "core/base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int log_fd = 2;
static int log_max = DCPI_LOG_INFO;
static int log_journal; /* "<N>" priority prefixes, no time: stderr is the journal */

int dcpi__log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void dcpi__log_journal(int on)
{
    log_journal = on;
}

int dcpi__log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    if (log_fd > 2)
        close(log_fd);
    log_fd = fd;
    return 0;
}

int dcpi__log_fd(void)
{
    return log_fd;
}

void dcpi__log_level(int level)
{
    log_max = level;
}

void dcpi__log(int level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    char line[1024];
    if (level > log_max)
        return;
    int lv = level < 0 ? 0 : level > 3 ? 3 : level;
    size_t n;
    if (log_journal && log_fd == 2) {
        static const int prio[] = {3, 4, 6, 7}; /* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */
        n = (size_t)snprintf(line, sizeof line, "<%d>%s: ", prio[lv], names[lv]);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
        n += (size_t)snprintf(line + n, sizeof line - n,
                              "%s[%d] %s: ", program_invocation_short_name, (int)getpid(),
                              names[lv]);
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : n + (size_t)m;
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, n);
    (void)w;
}
