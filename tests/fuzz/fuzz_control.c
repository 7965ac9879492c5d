/*
 * tests/fuzz/fuzz_control.c - libFuzzer harness for the client side of dcpid's control
 * protocol: the answer reader of dcpi_control_request (core/daemon/control.c). A thread plays the
 * daemon on a socket in a private directory: it accepts the request, reads the command line,
 * sends the input as the answer and closes. Checks: the result is 0 ("ok" line seen) or
 * DCPI_EIO with a one-line reason, and every line handed to the callback is one input line
 * (no '\n', never more lines than the input has).
 *
 * The daemon's side (command reading in core/daemon/ctlserver.c) has no separate parser function:
 * its command is compared with strcmp only, so it is not fuzzed here.
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/daemon/control.h"
#include "core/store/db.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define PLATFORM "fuzz"

typedef struct server {
    int listen_fd;
    const uint8_t *data;
    size_t size;
} server_t;

static int listen_fd = -1;

static int open_listener(void)
{
    const char *dir = fuzz_tmpdir();
    if (!dir)
        return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    dcpi_db_daemon_path(dir, PLATFORM, "sock", sa.sun_path, sizeof sa.sun_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Remove the socket file at exit (before fuzz_util's cleanup removes the directory). */
static void remove_socket(void)
{
    char path[128];
    dcpi_db_daemon_path(fuzz_tmpdir(), PLATFORM, "sock", path, sizeof path);
    unlink(path);
}

static void *serve(void *arg)
{
    const server_t *s = arg;
    struct pollfd pfd = {.fd = s->listen_fd, .events = POLLIN};
    if (poll(&pfd, 1, 5000) <= 0)
        return NULL;
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return NULL;
    char cmd[64];
    size_t got = 0;
    while (got < sizeof cmd && !memchr(cmd, '\n', got)) {
        ssize_t r = recv(fd, cmd + got, sizeof cmd - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    size_t sent = 0;
    while (sent < s->size) {
        ssize_t w = send(fd, s->data + sent, s->size - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the client stopped reading after its final line */
        sent += (size_t)w;
    }
    close(fd);
    return NULL;
}

typedef struct lines {
    size_t n;
} lines_t;

static void on_line(void *arg, const char *text)
{
    lines_t *l = arg;
    FUZZ_CHECK(strchr(text, '\n') == NULL);
    l->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (listen_fd < 0) {
        listen_fd = open_listener();
        if (listen_fd < 0)
            return 0;
        atexit(remove_socket);
    }
    server_t s = {listen_fd, data, size};
    pthread_t t;
    if (pthread_create(&t, NULL, serve, &s) != 0)
        return 0;
    char err[DCPI_ERRLEN] = "";
    lines_t l = {0};
    int rc = dcpi_control_request(fuzz_tmpdir(), PLATFORM, "status", on_line, &l, err);
    pthread_join(t, NULL);
    size_t nl = 0;
    for (size_t i = 0; i < size; i++)
        nl += data[i] == '\n';
    FUZZ_CHECK(l.n <= nl);
    FUZZ_CHECK(rc == 0 || rc == DCPI_EIO);
    if (rc == DCPI_EIO) {
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK(strchr(err, '\n') == NULL);
    }
    return 0;
}
