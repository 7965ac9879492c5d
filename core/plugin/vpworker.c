/*
 * vpworker.c - one worker process per value-profiler plugin (see vpworker.h).
 */
#include "core/plugin/vpworker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

#define NULL_BUFFER INT32_MIN /* the worker's answer when vsamples was left NULL */

/* The head of the shared region; the input and the output follow it. */
typedef struct shared_head {
    uint32_t pid, len;
    int32_t n;
    uint32_t pad;
} shared_head_t;

struct dcpi_vpworker {
    const vp_dispatch_t *d;
    char name[256];
    unsigned timeout_ms;
    size_t in_cap, map_len;
    void *map;
    shared_head_t *head;
    uint8_t *in;
    vsample_t *out;
    pid_t pid;
    int sock; /* dcpid's end, -1 when no worker runs */
    int started, dead;
    const char *backend;   /* trace_parser_backend in the worker */
    char why[DCPI_ERRLEN]; /* once dead: why */
};

int dcpi_vpworker_new(const vp_dispatch_t *d, const char *name, size_t in_cap, unsigned timeout_ms,
                      dcpi_vpworker_t **out, char *err)
{
    dcpi_vpworker_t *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->d = d;
    snprintf(w->name, sizeof w->name, "%s", name);
    w->timeout_ms = timeout_ms ? timeout_ms : DCPI_VPWORKER_DEFAULT_TIMEOUT_MS;
    w->in_cap = (in_cap + 63) & ~(size_t)63;
    w->map_len = 64 + w->in_cap + VSAMPLE_BUFFER_SIZE * sizeof(vsample_t);
    w->map = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w->map == MAP_FAILED)
        goto nomem;
    w->head = w->map;
    w->in = (uint8_t *)w->map + 64;
    w->out = (vsample_t *)(w->in + w->in_cap);
    w->sock = -1;
    *out = w;
    return 0;
nomem:
    free(w);
    return dcpi__errf(err, DCPI_ENOMEM, "%s: worker: out of memory", name);
}

uint8_t *dcpi_vpworker_inbuf(dcpi_vpworker_t *w)
{
    return w->in;
}

int dcpi_vpworker_pid(const dcpi_vpworker_t *w)
{
    return w->dead ? 0 : (int)w->pid;
}

/* ---------------------------------------------------------------- the worker side */

/* One request: run the plugin on the shared input, copy its vsamples out. */
static void serve_one(dcpi_vpworker_t *w)
{
    trace_parser_t parser;
    vsample_t *vs = NULL;
    trace_parser_init(&parser, w->in, w->head->len);
    trace_parser_set_backend(&parser, w->backend);
    int n = w->d->vp_prof_process(w->head->pid, &parser, &vs);
    if (n > 0 && n <= VSAMPLE_BUFFER_SIZE) {
        if (!vs)
            n = NULL_BUFFER;
        else /* a bad pointer faults here, in the worker */
            memcpy(w->out, vs, (size_t)n * sizeof *vs);
    }
    w->head->n = n;
}

/* A clean process for the plugin: default signals, no core files, only its socket open. */
static void worker_setup(int sock, pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    if (sock != 3) {
        dup2(sock, 3);
        close(sock);
    }
    close_range(4, ~0u, 0);
}

static void worker_main(dcpi_vpworker_t *w, pid_t parent)
{
    char c;
    worker_setup(w->sock, parent);
    char title[16];
    snprintf(title, sizeof title, "dcpivp-%.8s", w->name);
    prctl(PR_SET_NAME, title);
    for (;;) {
        ssize_t r = recv(3, &c, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 1)
            break;
        serve_one(w);
        if (send(3, &c, 1, MSG_NOSIGNAL) != 1)
            _exit(1);
    }
    if (w->d->vp_prof_done)
        w->d->vp_prof_done();
    _exit(0);
}

/* ---------------------------------------------------------------- dcpid's side */

void dcpi_vpworker_set_backend(dcpi_vpworker_t *w, const char *backend)
{
    w->backend = backend;
}

static int start(dcpi_vpworker_t *w)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(w->why, sizeof w->why, "could not start its worker: socketpair: %s",
                 strerror(errno));
        return DCPI_EPLUGIN;
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(w->why, sizeof w->why, "could not start its worker: fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return DCPI_EPLUGIN;
    }
    if (pid == 0) {
        close(sv[0]);
        w->sock = sv[1];
        worker_main(w, parent);
    }
    close(sv[1]);
    w->sock = sv[0];
    w->pid = pid;
    w->started = 1;
    return 0;
}

/* The worker is broken: kill it (if alive), reap it, remember why. */
static void bury(dcpi_vpworker_t *w, int kill_it)
{
    int st = 0;
    if (kill_it)
        kill(w->pid, SIGKILL);
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!w->why[0] && WIFSIGNALED(st)) {
        const char *s = sigabbrev_np(WTERMSIG(st));
        snprintf(w->why, sizeof w->why, "vp_prof_process crashed (SIG%s)", s ? s : "?");
    } else if (!w->why[0]) {
        snprintf(w->why, sizeof w->why, "its worker exited with status %d",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    close(w->sock);
    w->sock = -1;
    w->dead = 1;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Wait for the worker's answer: 1 answered, 0 timed out, -1 dead. */
static int await(dcpi_vpworker_t *w)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        long left = (long)w->timeout_ms - ms_since(&t0);
        struct pollfd p = {.fd = w->sock, .events = POLLIN};
        int r = poll(&p, 1, left > 0 ? (int)left : 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return 0;
        char c;
        ssize_t got = recv(w->sock, &c, 1, MSG_DONTWAIT);
        if (got == 1)
            return 1;
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return -1;
    }
}

static int check_answer(dcpi_vpworker_t *w, int *n, const vsample_t **vs)
{
    int32_t got = w->head->n;
    if (got == NULL_BUFFER) {
        snprintf(w->why, sizeof w->why, "vp_prof_process returned samples in a NULL buffer");
        return DCPI_EPLUGIN;
    }
    if (got > VSAMPLE_BUFFER_SIZE) {
        snprintf(w->why, sizeof w->why, "vp_prof_process returned %d samples (buffer holds %d)",
                 (int)got, VSAMPLE_BUFFER_SIZE);
        return DCPI_EPLUGIN;
    }
    *n = got;
    *vs = w->out;
    return 0;
}

static void timeout_why(dcpi_vpworker_t *w)
{
    if (w->timeout_ms % 1000 == 0)
        snprintf(w->why, sizeof w->why, "vp_prof_process did not return within %u s",
                 w->timeout_ms / 1000);
    else
        snprintf(w->why, sizeof w->why, "vp_prof_process did not return within %u ms",
                 w->timeout_ms);
}

int dcpi_vpworker_process(dcpi_vpworker_t *w, unsigned pid, size_t len, int *n,
                          const vsample_t **vs, char *why)
{
    int rc = w->dead ? DCPI_EPLUGIN : 0;
    if (!rc && !w->started && (rc = start(w)) < 0)
        w->dead = 1;
    if (rc == 0) {
        w->head->pid = pid;
        w->head->len = (uint32_t)(len < w->in_cap ? len : w->in_cap);
        w->head->n = 0;
        char c = 'p';
        int a = send(w->sock, &c, 1, MSG_NOSIGNAL) == 1 ? await(w) : -1;
        if (a == 0)
            timeout_why(w);
        if (a <= 0)
            bury(w, 1);
        else if ((rc = check_answer(w, n, vs)) < 0)
            bury(w, 1);
        rc = a <= 0 ? DCPI_EPLUGIN : rc;
    }
    if (rc < 0 && why)
        snprintf(why, DCPI_ERRLEN, "%s", w->why);
    return rc;
}

void dcpi_vpworker_free(dcpi_vpworker_t *w)
{
    if (!w)
        return;
    if (w->started && !w->dead) {
        close(w->sock); /* EOF: the worker calls vp_prof_done and exits */
        int st;
        pid_t r = 0;
        for (int i = 0; i < 100 && (r = waitpid(w->pid, &st, WNOHANG)) == 0; i++)
            usleep(10000);
        if (r == 0) {
            kill(w->pid, SIGKILL);
            waitpid(w->pid, &st, 0);
        }
    }
    munmap(w->map, w->map_len);
    free(w);
}
