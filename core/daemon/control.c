/*
 * control.c - the client side of dcpid's control socket (see control.h).
 */
#include "core/daemon/control.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/store/db.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

int dcpi_control_valid(const char *cmd)
{
    static const char *cmds[] = {"flush", "epoch", "quit", "status"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i]) == 0)
            return 1;
    return strncmp(cmd, "top", 3) == 0 && (cmd[3] == 0 || cmd[3] == ' ') && strlen(cmd) < 100;
}

static int connect_daemon(const char *db, const char *platform, char *err)
{
    char path[4096];
    dcpi_db_daemon_path(db, platform, "sock", path, sizeof path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int e = ENAMETOOLONG;
    if (strlen(path) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        e = errno;
        if (fd >= 0)
            close(fd);
    }
    return dcpi__errf(err, DCPI_ENOENT, "no dcpid for platform %s in %s (%s: %s)", platform, db,
                      path, strerror(e));
}

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Hand one complete line to the caller or recognize the final one. 1 = final ok,
 * 2 = final error, 0 = more. */
static int handle_line(char *text, void (*line)(void *, const char *), void *arg, char *err)
{
    if (strcmp(text, "ok") == 0)
        return 1;
    if (strncmp(text, "error: ", 7) == 0) {
        dcpi__errf(err, DCPI_EIO, "%s", text[7] ? text + 7 : "dcpid: error without a reason");
        return 2;
    }
    if (line)
        line(arg, text);
    return 0;
}

static int read_answer(int fd, void (*line)(void *, const char *), void *arg, char *err)
{
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return dcpi__errf(err, DCPI_EIO, "dcpid: %s",
                              r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
                                  ? "no answer (timed out)"
                                  : "connection closed without an answer");
        have += (size_t)r;
        buf[have] = 0;
        char *nl, *start = buf;
        while ((nl = strchr(start, '\n'))) {
            *nl = 0;
            int fin = handle_line(start, line, arg, err);
            if (fin)
                return fin == 1 ? 0 : DCPI_EIO;
            start = nl + 1;
        }
        have = (size_t)(buf + have - start);
        memmove(buf, start, have);
        if (have == sizeof buf - 1)
            have = 0; /* an absurdly long line: drop it */
    }
}

int dcpi_control_request(const char *db, const char *platform, const char *cmd,
                         void (*line)(void *arg, const char *text), void *arg, char *err)
{
    if (!dcpi_control_valid(cmd))
        return dcpi__errf(err, DCPI_EINVAL, "%s: unknown command (flush, epoch, quit, status)",
                          cmd);
    int fd = connect_daemon(db, platform, err);
    if (fd < 0)
        return fd;
    struct timeval tv = {.tv_sec = DCPI_CONTROL_TIMEOUT};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char msg[128];
    int len = snprintf(msg, sizeof msg, "%s\n", cmd);
    int rc;
    if (send_all(fd, msg, (size_t)len) < 0) {
        /* The daemon may have answered and closed before reading (a refused peer gets
         * "error: permission denied" at once): its answer is still queued for us. */
        int e = errno;
        rc = read_answer(fd, line, arg, err);
        if (rc == DCPI_EIO && err && strstr(err, "without an answer"))
            dcpi__errf(err, rc, "dcpid: %s", strerror(e));
    } else {
        rc = read_answer(fd, line, arg, err);
    }
    close(fd);
    /* quit: return once the daemon has flushed, exited and released the database, so that a
     * new dcpid on it can start at once */
    if (rc == 0 && strcmp(cmd, "quit") == 0)
        rc = dcpi_db_wait_unlocked(db, platform, DCPI_CONTROL_TIMEOUT * 1000u, err);
    return rc;
}
