/*
 * daemon.c - dcpid (see daemon.h): dcpi_daemon_run, its modes (system-wide daemon behind a
 * double fork, -p PID, a command spawned once sampling is set up), the epoll loop (rings,
 * control socket, timerfd, signalfd, pidfd) and the final drain and flush. The rest of dcpid is
 * in this folder, around the state in daemon-int.h: setup.c, records.c, flush.c, ctlserver.c,
 * kernel.c. perf details live in core/sampling/samp*.c, the count table in aggregate.c, the
 * database layout in db.c.
 *
 * Value profiling (-vtrace) lives in core/values/: setup.c loads the plugins, makes the sink
 * (values.h) and chooses the backend (backend.h), which says what it needs of perf; records.c
 * hands the backend every user-mode sample of the first event and every sample of no PC event,
 * and drains it after each ring drain; flush.c flushes the sink with the PC profiles.
 */
#include "core/daemon/daemon.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"

/* ---------------------------------------------------------------- helpers */

/* ---------------------------------------------------------------- the loop */

static void child_exited(daemon_t *d)
{
    int st;
    if (d->child <= 0 || waitpid(d->child, &st, WNOHANG) != d->child)
        return;
    d->child = 0;
    d->quit = 1;
    d->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    dcpi__log(DCPI_LOG_INFO, "command exited with status %d", d->exit_code);
}

static void on_signal(daemon_t *d)
{
    struct signalfd_siginfo si;
    while (read(d->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            child_exited(d);
            dcpi__parts_child(d); /* cachejob.c: the code and symbol caches' writer */
        } else if (sig == SIGHUP) {
            if (d->log_path[0] && dcpi__log_open(d->log_path) == 0)
                dcpi__log(DCPI_LOG_INFO, "SIGHUP: log reopened");
        } else if (d->child > 0) {
            kill(d->child, sig); /* the command decides; we exit with its status */
        } else {
            dcpi__log(DCPI_LOG_INFO, "signal %d: flushing and exiting", sig);
            d->quit = 1;
        }
    }
}

static void pid_check(daemon_t *d)
{
    if (d->mode == DCPI_SAMPLE_PID && d->pidfd < 0 && kill(d->o->pid, 0) < 0 && errno == ESRCH) {
        dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
        d->quit = 1;
    }
}

static void on_timer(daemon_t *d)
{
    uint64_t ticks;
    if (read(d->tfd, &ticks, sizeof ticks) < 0)
        return;
    dcpi__daemon_drain_all(d);
    pid_check(d);
    if (dcpi__monotonic_s() >= d->next_flush) {
        flush_result_t r;
        d->flush_async = 1; /* nobody waits for this flush: the caches' writer may run on */
        dcpi__daemon_flush(d, &r);
        d->flush_async = 0;
        d->next_flush = dcpi__monotonic_s() + d->o->flush_s;
        dcpi__daemon_retain(d); /* -keep: epochs aged, the current one grew */
    }
    dcpi__daemon_rotate_if_due(d);
    dcpi__parts_tick(d); /* top.c's idle view, push.c's duty cycle */
}

static void on_ring(daemon_t *d, int ring, uint32_t events)
{
    /* every ring, in time order (see records.c) */
    dcpi__daemon_drain_all(d);
    if (events & (EPOLLHUP | EPOLLERR))
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, dcpi_sampler_ring_fd(d->smp, ring), NULL);
}

static void dispatch_event(daemon_t *d, const struct epoll_event *ev)
{
    uint64_t tag = ev->data.u64;
    if (tag >= TAG_RING)
        on_ring(d, (int)(tag - TAG_RING), ev->events);
    else if (tag == TAG_TIMER)
        on_timer(d);
    else if (tag == TAG_SIGNAL)
        on_signal(d);
    else if (tag == TAG_SOCK)
        dcpi__daemon_serve_client(d);
    else if (tag >= TAG_PART)
        dcpi__daemon_drain_all(d); /* a part's fd (vtrace.c's wake fd): read in its drain */
    else if (tag == TAG_PIDFD) {
        dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
        d->quit = 1;
    }
}

static void loop(daemon_t *d)
{
    struct epoll_event evs[64];
    while (!d->quit) {
        int timeout = dcpi__parts_timeout(d);
        int n = epoll_wait(d->epfd, evs, 64, timeout);
        if (n < 0 && errno != EINTR) {
            dcpi__log(DCPI_LOG_ERR, "epoll_wait: %s", strerror(errno));
            d->exit_code = 1;
            break;
        }
        for (int i = 0; i < n && !d->quit; i++)
            dispatch_event(d, &evs[i]);
        /* -vstep -p: samples admit bursts, run them soon; -vstep: the step records of exited
         * processes are drained (with every ring's mappings applied) before they are forgotten */
        if (dcpi__parts_polls(d) && !d->quit && (timeout >= 0 || dcpi__daemon_exits_pending(d)))
            dcpi__daemon_drain_all(d);
        dcpi__daemon_apply_exits(d);
        dcpi__daemon_flush_if_full(d);
    }
}

/* Image directories of the current epoch (the images that got samples, unknown@ included). */
static unsigned epoch_images(const daemon_t *d)
{
    char dir[8400];
    unsigned n = 0;
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s", d->db, d->epoch, d->platform);
    DIR *dp = opendir(dir);
    struct dirent *de;
    while (dp && (de = readdir(dp)) != NULL)
        n += de->d_type == DT_DIR && de->d_name[0] != '.' && strcmp(de->d_name, "stacks") != 0;
    if (dp)
        closedir(dp);
    return n;
}

/* -- command / -p: one line on stderr at exit saying what was recorded and where, like perf
 * record's "[ perf record: ... ]". */
static void summary(const daemon_t *d)
{
    uint64_t lost = 0;
    for (int i = 0; i < d->nev; i++)
        lost += d->st[i].lost;
    fprintf(stderr, "dcpid: %" PRIu64 " samples (%" PRIu64 " lost) in %u images, epoch %s/%s/%s\n",
            d->total_samples, lost, epoch_images(d), d->db, d->epoch, d->platform);
}

/* The final drain and flush at exit. */
static void finish(daemon_t *d)
{
    flush_result_t r;
    sd_notify(0, "STOPPING=1\nSTATUS=flushing"); /* (under systemd, Type=notify) */
    dcpi__parts_stop(d); /* ptrace: the target runs on undisturbed while we flush */
    dcpi__daemon_drain_all(d);
    /* what was drained while a flush wrote (into the other table) needs one more: at most a
     * few, the rings being nearly quiet by then */
    for (int i = 0; i < 4; i++) {
        if (dcpi__daemon_flush(d, &r) < 0) {
            if (d->exit_code == 0)
                d->exit_code = 1;
            break;
        }
        if (dcpi_agg_total(d->agg) == 0)
            break;
    }
    if (dcpi_agg_total(d->agg))
        dcpi__log(DCPI_LOG_WARN,
                  "exit: %" PRIu64 " samples taken during the last flush not written",
                  dcpi_agg_total(d->agg));
    dcpi__daemon_epoch_info(d, 0); /* the epoch ended */
    dcpi__parts_ended(d);          /* -push: its hotlists and chains */
    if (d->mode != DCPI_SAMPLE_SYSTEM && !d->o->quiet)
        summary(d);
    dcpi__parts_report(d); /* vtrace.c: the value profilers and the backend */
    for (int i = 0; d->mode != DCPI_SAMPLE_SYSTEM && i < d->nev; i++) {
        char w[512];
        if (dcpi__daemon_loss_warning(d, i, w, sizeof w))
            fprintf(stderr, "dcpid: %s\n", w);
    }
    dcpi__log(DCPI_LOG_INFO, "exiting with status %d", d->exit_code);
}

/* ---------------------------------------------------------------- modes */

/* Fork twice; the original process waits on a pipe for the daemon's "ok" or error line and
 * returns the exit status (>= 0). In the daemon returns -1 with *notify set. */
static int daemonize(int *notify)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return fprintf(stderr, "dcpid: pipe: %s\n", strerror(errno)), 1;
    pid_t pid = fork();
    if (pid < 0)
        return fprintf(stderr, "dcpid: fork: %s\n", strerror(errno)), 1;
    if (pid > 0) {
        close(p[1]);
        char msg[12800] = "";
        size_t n = 0;
        ssize_t r;
        while (n < sizeof msg - 1 && (r = read(p[0], msg + n, sizeof msg - 1 - n)) > 0)
            n += (size_t)r;
        msg[n] = 0;
        waitpid(pid, NULL, 0);
        if (strncmp(msg, "ok", 2) == 0 && (msg[2] == 0 || msg[2] == '\n')) {
            fputs(msg[2] ? msg + 3 : "", stderr); /* what was started (see started) */
            return 0;
        }
        fprintf(stderr, "%s\n", n ? msg : "dcpid: the daemon died during start-up");
        return 1;
    }
    close(p[0]);
    setsid();
    if (fork() != 0)
        _exit(0);
    *notify = p[1];
    return -1;
}

static void detach_stdio(void)
{
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
        return;
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
        close(fd);
    if (chdir("/") < 0)
        dcpi__log(DCPI_LOG_WARN, "chdir /: %s", strerror(errno));
}

static void report(int notify, const char *msg)
{
    if (notify < 0) {
        fprintf(stderr, "%s\n", msg);
        return;
    }
    ssize_t w = write(notify, msg, strlen(msg));
    (void)w;
}

/* The command's child could not run it: say so on the exec pipe (closed unwritten by a
 * successful exec), then exit 127. */
_Noreturn static void not_started(int fd, int e)
{
    ssize_t w = write(fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The command's child: waits for the go byte, then execs. *go is the pipe that starts it,
 * *exec the one that reports an exec failure (see command_started). */
static pid_t spawn(daemon_t *d, char **argv, const sigset_t *orig, int *go, int *exec)
{
    int p[2], x[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(x, O_CLOEXEC) < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        close(x[0]);
        sigprocmask(SIG_SETMASK, orig, NULL);
        char c;
        if (read(p[0], &c, 1) != 1)
            not_started(x[1], ECANCELED);
        if (dcpi__parts_spawned(d) < 0) /* vtrace.c: -vstep's agent in its environment */
            not_started(x[1], ENOMEM);
        execvp(argv[0], argv);
        int e = errno;
        fprintf(stderr, "dcpid: %s: %s\n", argv[0], strerror(e));
        not_started(x[1], e);
    }
    close(p[0]);
    close(x[1]);
    if (pid < 0) {
        close(p[1]);
        close(x[0]);
        return -1;
    }
    *go = p[1];
    *exec = x[0];
    return pid;
}

/* Start the command (the go byte) and wait for its exec: 0 when it runs; -1 when it could not
 * be started (reaped, exit status 127; its epoch is removed: nothing was profiled). */
static int command_started(daemon_t *d, int go, int exec)
{
    int e = 0;
    if (write(go, "g", 1) != 1 || close(go) < 0)
        dcpi__log(DCPI_LOG_WARN, "could not start the command: %s", strerror(errno));
    ssize_t r;
    while ((r = read(exec, &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(exec);
    if (r != (ssize_t)sizeof e)
        return 0;
    dcpi__log(DCPI_LOG_INFO, "the command could not be started: %s", strerror(e));
    waitpid(d->child, NULL, 0);
    d->child = 0;
    d->exit_code = 127;
    dcpi__daemon_drop_epoch(d);
    return -1;
}

/* The system-wide daemon's "ok" for its starter, with what it started and how to stop it. */
static void started(const daemon_t *d, char *buf, size_t len)
{
    char evs[256] = "";
    size_t n = 0;
    for (int i = 0; i < d->nev && n < sizeof evs; i++)
        n += (size_t)snprintf(evs + n, sizeof evs - n, "%s%s", i ? ", " : "", d->evs[i].name);
    const char *log = d->log_path[0] ? d->log_path : "stderr";
    if (d->o->quiet) {
        snprintf(buf, len, "ok");
        return;
    }
    snprintf(buf, len,
             "ok\ndcpid: sampling the whole system (%s, %u Hz per CPU, %d CPUs) into %s, "
             "epoch %s\ndcpid: daemon pid %d, log %s; stop it with: dcpictl -db %s quit\n",
             evs, d->o->freq, d->cpucount, d->db, d->epoch, (int)getpid(), log, d->db);
}

static void init_daemon(daemon_t *d, const dcpi_daemon_opts_t *o)
{
    d->o = o;
    d->mode = o->argv ? DCPI_SAMPLE_COMMAND : o->pid > 0 ? DCPI_SAMPLE_PID : DCPI_SAMPLE_SYSTEM;
    d->lock_fd = d->sock_fd = d->epfd = d->tfd = d->sfd = d->pidfd = -1;
}

/* Everything after the (possible) daemonizing fork. */
static int run(daemon_t *d, int notify, const sigset_t *sigs, const sigset_t *orig)
{
    char err[DCPI_ERRLEN] = "", msg[DCPI_ERRLEN + 16];
    int go = -1, exec = -1;
    int rc = dcpi__daemon_setup_base(d, err);
    if (rc == 0 && d->mode == DCPI_SAMPLE_COMMAND) {
        d->child = spawn(d, d->o->argv, orig, &go, &exec);
        if (d->child < 0)
            rc = dcpi__errf(err, dcpi__errno_code(errno), "fork: %s", strerror(errno));
    }
    pid_t target = d->mode == DCPI_SAMPLE_COMMAND ? d->child : d->o->pid;
    rc = rc < 0 ? rc : dcpi__daemon_setup_sampling(d, target, sigs, err);
    if (rc == 0 && d->mode == DCPI_SAMPLE_PID)
        rc = dcpi__parts_target(d, target, err); /* vtrace.c: -vstep's ptrace */
    if (rc < 0) {
        snprintf(msg, sizeof msg, "dcpid: %s", err);
        if (d->log_path[0]) /* else the log is stderr, where msg goes too */
            dcpi__log(DCPI_LOG_ERR, "%s", err);
        report(notify, msg);
        if (go >= 0)
            close(go); /* the child exits without running the command */
        if (exec >= 0)
            close(exec);
        if (d->child > 0)
            waitpid(d->child, NULL, 0);
        dcpi__daemon_drop_epoch(d); /* (when it was made before the failure) */
        return 1;
    }
    dcpi__log(DCPI_LOG_INFO, "dcpid ready: db %s platform %s epoch %s", d->db, d->platform,
              d->epoch);
    sd_notifyf(0, "READY=1\nSTATUS=sampling into %s, epoch %s\nMAINPID=%d", d->db, d->epoch,
               (int)getpid());
    if (notify >= 0) {
        char ok[12800];
        started(d, ok, sizeof ok);
        report(notify, ok);
        close(notify);
        detach_stdio();
    }
    if (go >= 0 && command_started(d, go, exec) < 0)
        return d->exit_code;
    loop(d);
    finish(d);
    return d->exit_code;
}

int dcpi_daemon_run(const dcpi_daemon_opts_t *o)
{
    sigset_t sigs, orig;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &orig);
    int notify = -1;
    dcpi_daemon_opts_t own = *o;
    if (!o->argv && o->pid <= 0 && getenv("NOTIFY_SOCKET"))
        own.nodaemon = 1; /* run by systemd (Type=notify): stay its main process */
    o = &own;
    if (!o->argv && o->pid <= 0 && !o->nodaemon) {
        int status = daemonize(&notify);
        if (status >= 0)
            return status;
    }
    daemon_t *d = calloc(1, sizeof *d);
    if (!d) {
        report(notify, "dcpid: out of memory");
        return 1;
    }
    init_daemon(d, o);
    int status = run(d, notify, &sigs, &orig);
    dcpi__daemon_cleanup(d);
    free(d);
    return status; /* signals stay blocked: a late SIGTERM must not kill us before exit */
}
