/*
 * ctlserver.c - the server side of dcpid's control socket (protocol in control.h): the socket,
 * one client at a time (peer credentials, one command line, a 2 s limit), the commands flush,
 * epoch, quit, status and top (top.c), and the status answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/store/tracefile.h"
#include "dcpi/errno.h"

void dcpi__daemon_say(dcpi__answer_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->buf + a->len, sizeof a->buf - a->len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    a->len += (size_t)n < sizeof a->buf - a->len - 2 ? (size_t)n : sizeof a->buf - a->len - 2;
    a->buf[a->len++] = '\n';
    a->buf[a->len] = 0;
}

static double current_rate(const daemon_t *d)
{
    double now = dcpi__monotonic_s();
    double since = d->last_flush > 0 && now - d->last_flush >= 1 ? d->last_flush : d->start;
    uint64_t base = since == d->start ? 0 : d->samples_at_flush;
    return now > since ? (double)(d->total_samples - base) / (now - since) : 0;
}

static void status_events(const daemon_t *d, dcpi__answer_t *a)
{
    dcpi_sampler_stats_t ss;
    dcpi_sampler_stats(d->smp, &ss);
    for (int i = 0; i < d->nev; i++) {
        const dcpi_event_spec_t *e = &d->evs[i];
        char period[32];
        if (e->period)
            snprintf(period, sizeof period, "%" PRIu64, e->period);
        else
            snprintf(period, sizeof period, "freq:%" PRIu64, e->freq);
        dcpi__daemon_say(
            a, "event %s period %s samples %" PRIu64 " lost %" PRIu64 " throttled %" PRIu64,
            e->name, period, d->st[i].samples, d->st[i].lost, d->st[i].throttled);
    }
    if (ss.bad_records)
        dcpi__daemon_say(a, "bad records %" PRIu64, ss.bad_records);
}

int dcpi__daemon_loss_warning(const daemon_t *d, int ev, char *buf, size_t len)
{
    const ev_stats_t *st = &d->st[ev];
    uint64_t all = st->samples + st->lost;
    if (all == 0 || (st->lost + st->unknown) * 100 <= all) /* up to 1%: no warning */
        return 0;
    snprintf(buf, len,
             "warning: event %s lost %.1f%% of its samples (%" PRIu64 " of %" PRIu64
             ": ring overflow or throttling, %" PRIu64 " throttle records) and left %.1f%% "
             "unattributed (%" PRIu64 " outside every known image)",
             d->evs[ev].name, 100.0 * (double)st->lost / (double)all, st->lost, all, st->throttled,
             100.0 * (double)st->unknown / (double)all, st->unknown);
    return 1;
}

/* Resident memory (kB, /proc/self/statm) and the heap's bytes in use and held (mallinfo2). */
static void status_memory(dcpi__answer_t *a)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    if (f)
        fclose(f);
    struct mallinfo2 mi = mallinfo2();
    dcpi__daemon_say(a, "memory rss %ld kB heap %zu kB in use %zu kB mmapped %zu kB",
                     rss * (sysconf(_SC_PAGESIZE) / 1024), mi.arena / 1024, mi.uordblks / 1024,
                     mi.hblkhd / 1024);
}

static void status(daemon_t *d, dcpi__answer_t *a)
{
    dcpi_loadmap_stats_t ls;
    dcpi_loadmap_stats(d->lm, &ls);
    uint64_t unknown = 0;
    for (int i = 0; i < d->nev; i++)
        unknown += d->st[i].unknown;
    dcpi__daemon_say(a, "epoch %s", d->epoch);
    dcpi__daemon_say(a, "platform %s", d->platform);
    dcpi__daemon_say(a, "pid %d", (int)getpid());
    dcpi__daemon_say(a, "uptime %.0f s", dcpi__monotonic_s() - d->start);
    status_events(d, a);
    dcpi__daemon_say(a, "images %lu", ls.images);
    dcpi__daemon_say(a, "processes %lu", ls.processes);
    if (dcpi_proctab_failed(d->procs)) /* the process table could not grow: not split */
        dcpi__daemon_say(
            a, "processes without an id %" PRIu64 " (their samples count as no process's)",
            dcpi_proctab_failed(d->procs));
    dcpi__daemon_say(a, "unknown %" PRIu64, unknown);
    for (int i = 0; i < d->nev; i++) {
        char w[512];
        if (dcpi__daemon_loss_warning(d, i, w, sizeof w))
            dcpi__daemon_say(a, "%s", w);
    }
    dcpi__daemon_say(a, "rate %.0f samples/s", current_rate(d));
    dcpi__daemon_say(a, "hash %zu/%zu", dcpi_agg_used(d->agg), dcpi_agg_capacity(d->agg));
    status_memory(a);
    dcpi__parts_status(d, a); /* push.c's line, vtrace.c's values and backend */
    if (d->stk) {
        dcpi_dstacks_stats_t ss;
        dcpi_dstacks_stats(d->stk, &ss);
        dcpi__daemon_say(a, "stacks chains %" PRIu64 " lost %" PRIu64 " truncated %" PRIu64,
                         ss.chains, ss.lost, ss.truncated);
    }
    dcpi__daemon_say(a, "flushes %" PRIu64 " every %u s last %.0f ms mean %.0f ms max %.0f ms",
                     d->flushes, d->o->flush_s, d->flush_ms_last,
                     d->flushes ? d->flush_ms_total / (double)d->flushes : 0.0, d->flush_ms_max);
    if (d->flush_error[0]) {
        dcpi__daemon_say(a, "last flush error: %s", d->flush_error);
    } else if (d->last_flush_wall) {
        char t[64];
        struct tm tm;
        gmtime_r(&d->last_flush_wall, &tm);
        strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
        dcpi__daemon_say(a, "last flush: %s (%" PRIu64 " profiles)", t, d->flushed_profiles);
    } else {
        dcpi__daemon_say(a, "last flush: never");
    }
    dcpi__daemon_say(a, "ok");
}

static int flush_answer(daemon_t *d, dcpi__answer_t *a)
{
    flush_result_t r;
    dcpi__daemon_drain_all(d);
    if (dcpi__daemon_flush(d, &r) < 0) {
        dcpi__daemon_say(a, "error: flush failed: %s", d->flush_error);
        return -1;
    }
    dcpi__daemon_say(a, "flushed %zu profiles, %" PRIu64 " samples to %s", r.profiles, r.samples,
                     d->epoch);
    return 0;
}

static void run_command(daemon_t *d, const char *cmd, dcpi__answer_t *a)
{
    char err[DCPI_ERRLEN];
    dcpi__log(DCPI_LOG_INFO, "control: %s", cmd);
    if (strcmp(cmd, "status") == 0) {
        dcpi__daemon_drain_all(d);
        status(d, a);
    } else if (strcmp(cmd, "flush") == 0) {
        if (flush_answer(d, a) == 0)
            dcpi__daemon_say(a, "ok");
    } else if (strcmp(cmd, "epoch") == 0) {
        if (flush_answer(d, a) < 0)
            return;
        if (dcpi__daemon_rotate(d, err) < 0)
            dcpi__daemon_say(a, "error: %s", err);
        else
            dcpi__daemon_say(a, "new epoch %s", d->epoch), dcpi__daemon_say(a, "ok");
    } else if (dcpi__parts_control(d, cmd, a)) {
        /* a part's command (top.c: the live view) */
    } else if (strcmp(cmd, "quit") == 0) {
        d->quit = 1;
        dcpi__parts_stop(d); /* ptrace: detach first, the target runs on while we flush */
        d->exit_code = flush_answer(d, a) == 0 ? 0 : 1;
        if (d->exit_code == 0)
            dcpi__daemon_say(a, "ok");
    } else {
        dcpi__daemon_say(a, "error: unknown command '%.60s' (flush, epoch, quit, status, top)",
                         cmd);
    }
}

static int peer_allowed(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return 0;
    return cr.uid == 0 || cr.uid == getuid();
}

/* One line from the client, waiting at most 2 s (the loop is blocked meanwhile). */
static int read_command(int fd, char *buf, size_t size)
{
    size_t n = 0;
    while (n < size - 1) {
        ssize_t r = recv(fd, buf + n, size - 1 - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = 0;
        char *nl = strchr(buf, '\n');
        if (nl) {
            *nl = 0;
            return 0;
        }
    }
    return -1;
}

void dcpi__daemon_serve_client(daemon_t *d)
{
    int fd = accept4(d->sock_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    static dcpi__answer_t a;
    a.len = 0;
    a.buf[0] = 0;
    char cmd[128];
    if (!peer_allowed(fd))
        dcpi__daemon_say(&a, "error: permission denied");
    else if (read_command(fd, cmd, sizeof cmd) < 0)
        dcpi__daemon_say(&a, "error: no command received");
    else
        run_command(d, cmd, &a);
    if (send(fd, a.buf, a.len, MSG_NOSIGNAL) < 0)
        dcpi__log(DCPI_LOG_WARN, "control: answer not sent: %s", strerror(errno));
    close(fd);
}

int dcpi__daemon_open_socket(daemon_t *d, char *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    dcpi_db_daemon_path(d->db, d->platform, "sock", d->sock_path, sizeof d->sock_path);
    if (strlen(d->sock_path) >= sizeof sa.sun_path)
        return dcpi__errf(err, DCPI_EINVAL, "%s: path too long for a socket", d->sock_path);
    memcpy(sa.sun_path, d->sock_path, strlen(d->sock_path) + 1);
    unlink(d->sock_path); /* a stale socket: we hold the platform lock */
    d->sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(0177); /* srw------- */
    int rc = d->sock_fd < 0 ? -1 : bind(d->sock_fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(d->sock_fd, 16) < 0) {
        d->sock_path[0] = 0;
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", sa.sun_path, strerror(errno));
    }
    return 0;
}
