/*
 * setup.c - dcpid's set-up and teardown: the database, log and platform lock, the events
 * (probed), the tables (loadmap, count table), the parts' setup (part.h: the kernel's range, the
 * value profilers of -vtrace, ...), the stacks (-g), then the perf events, the parts' start,
 * the first epoch, the /proc scan, the control socket and the loop's fds (epoll, timerfd,
 * signalfd, pidfd, the parts' own); and freeing all of it.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/image/debuginfod.h"
#include "core/image/image.h"
#include "core/sampling/bpslots.h"
#include "dcpi/errno.h"

static int absolute(const char *path, char *out, size_t len)
{
    char cwd[4096];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return snprintf(out, len, "%s", path) >= (int)len ? -1 : 0;
    return snprintf(out, len, "%s/%s", cwd, path) >= (int)len ? -1 : 0;
}

/* A system-wide database holds every user's command names and per-process counts: readable by
 * root and the group "dcpi" only. Files 0640 and directories 0750 (umask 027); the database
 * directory belongs to group dcpi (when it exists) with the set-group-id bit, so everything
 * created below it does too. */
static void system_db_access(const daemon_t *d)
{
    struct stat st;
    struct group *g = getgrnam("dcpi");
    if (stat(d->db, &st) < 0)
        return;
    if (g && geteuid() == 0 && st.st_gid != g->gr_gid && chown(d->db, (uid_t)-1, g->gr_gid) < 0)
        dcpi__log(DCPI_LOG_WARN, "%s: chown to group dcpi: %s", d->db, strerror(errno));
    mode_t want = (st.st_mode & 07777 & ~(mode_t)027) | (g ? S_ISGID : 0);
    if ((st.st_mode & 07777) != want && chmod(d->db, want) < 0)
        dcpi__log(DCPI_LOG_WARN, "%s: chmod %o: %s", d->db, (unsigned)want, strerror(errno));
}

static int setup_db(daemon_t *d, char *err)
{
    const char *db = dcpi_db_default(d->o->db);
    if (absolute(db, d->db, sizeof d->db) < 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: path too long", db);
    struct stat st;
    if (stat(d->db, &st) == 0 && !S_ISDIR(st.st_mode))
        return dcpi__errf(err, DCPI_EEXIST,
                          "%s: not a directory; the database is a directory (dcpid creates it "
                          "when missing): name another with -db DIR",
                          d->db);
    if (d->mode == DCPI_SAMPLE_SYSTEM) {
        mode_t m = umask(027);
        umask(m | 027);
    }
    int rc = dcpi__mkdirs(d->db, 0755);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", d->db, dcpi_strerror(rc));
    if (d->mode == DCPI_SAMPLE_SYSTEM)
        system_db_access(d);
    rc = dcpi_db_platform(d->db, d->platform, err);
    return rc < 0 ? rc : 0;
}

static int setup_log(daemon_t *d, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi__log_level(o->verbose ? DCPI_LOG_DEBUG : o->quiet ? DCPI_LOG_WARN : DCPI_LOG_INFO);
    if (o->log && !strcmp(o->log, "-"))
        d->log_path[0] = '\0'; /* -log -: standard error */
    else if (o->log)
        absolute(o->log, d->log_path, sizeof d->log_path);
    else if (d->mode != DCPI_SAMPLE_SYSTEM || !o->nodaemon)
        dcpi_db_daemon_path(d->db, d->platform, "log", d->log_path, sizeof d->log_path);
    if (d->log_path[0] && dcpi__log_open(d->log_path) < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", d->log_path, strerror(errno));
    if (!d->log_path[0] && dcpi__log_stderr_is_journal())
        dcpi__log_journal(1); /* run by systemd: priorities, the journal adds the time */
    return 0;
}

static int add_event(daemon_t *d, const char *arg, char *err)
{
    dcpi_event_spec_t *e = &d->evs[d->nev];
    char why[DCPI_ERRLEN];
    int rc = dcpi_event_parse(arg, d->o->freq, e, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < d->nev; i++)
        if (strcmp(d->evs[i].name, e->name) == 0)
            return dcpi__errf(err, DCPI_EINVAL, "event %s: given twice", e->name);
    rc = dcpi_event_probe(e, why);
    if (rc < 0 && rc != -EACCES && rc != -EPERM)
        return dcpi__errf(err, DCPI_ENOTSUP, "event %s: not supported on this machine (%s)",
                          e->name, why);
    d->nev++;
    return 0;
}

static int setup_events(daemon_t *d, char *err)
{
    if (d->o->nevents == 0) {
        char why[DCPI_ERRLEN];
        if (dcpi_event_parse("cycles", d->o->freq, &d->evs[0], err) < 0)
            return DCPI_EINVAL;
        if (dcpi_event_probe(&d->evs[0], why) == 0) {
            d->nev = 1;
            return 0;
        }
        dcpi__log(DCPI_LOG_INFO, "event cycles not supported here (%s), using cpu-clock", why);
        if (d->log_path[0] && !d->o->quiet && isatty(2)) /* on the terminal, where one looks */
            fprintf(stderr, "dcpid: event cycles not supported here (%s), using cpu-clock\n", why);
        return add_event(d, "cpu-clock", err);
    }
    for (int i = 0; i < d->o->nevents; i++) {
        int rc = add_event(d, d->o->events[i], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int open_sampler(daemon_t *d, pid_t target, char *err)
{
    char why[DCPI_ERRLEN] = "";
    int no_kernel = 0;
    dcpi_sampler_opts_t x = {0};
    dcpi__parts_sampler(d, &x); /* vtrace.c: registers, contexts, an arm trigger */
    if (d->o->callgraph) {
        x.callchain = x.callchain_kernel = 1;
        x.max_stack = DCPI_DSTACKS_MAX_STACK;
    }
    int rc = dcpi_sampler_open(d->evs, d->nev, d->mode, target, &x, &d->smp, &no_kernel, why);
    if (rc == DCPI_ESRCH && d->mode == DCPI_SAMPLE_PID)
        return dcpi__errf(err, rc, "-p %d: no such process", (int)target);
    if ((rc == -EACCES || rc == -EPERM) && d->mode == DCPI_SAMPLE_SYSTEM)
        return dcpi__errf(err, rc, "system-wide sampling needs root or CAP_PERFMON (%s)", why);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s", why);
    if (no_kernel)
        dcpi__log(DCPI_LOG_INFO, "kernel samples not allowed here: sampling user mode only");
    dcpi__log(DCPI_LOG_INFO, "%d events on %d rings", dcpi_sampler_nfds(d->smp),
              dcpi_sampler_nrings(d->smp));
    return 0;
}

static int epoll_add(daemon_t *d, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int setup_fds(daemon_t *d, const sigset_t *sigs, char *err)
{
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    d->sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (d->mode == DCPI_SAMPLE_PID)
        d->pidfd = (int)syscall(SYS_pidfd_open, d->o->pid, 0);
    if (d->epfd < 0 || d->tfd < 0 || d->sfd < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "epoll/timerfd/signalfd: %s",
                          strerror(errno));
    long ms = d->mode == DCPI_SAMPLE_PID && d->pidfd < 0 ? 100 : 250;
    struct itimerspec it = {.it_interval = {0, ms * 1000000}, .it_value = {0, ms * 1000000}};
    int rc = timerfd_settime(d->tfd, 0, &it, NULL);
    rc = rc ? rc : epoll_add(d, d->tfd, TAG_TIMER);
    rc = rc ? rc : epoll_add(d, d->sfd, TAG_SIGNAL);
    rc = rc ? rc : epoll_add(d, d->sock_fd, TAG_SOCK);
    if (rc == 0 && d->pidfd >= 0)
        rc = epoll_add(d, d->pidfd, TAG_PIDFD);
    for (size_t i = 0; rc == 0 && i < DCPI__MAXPARTS; i++) /* vtrace.c's wake fd */
        if (dcpi__parts_fd(d, i) >= 0)
            rc = epoll_add(d, dcpi__parts_fd(d, i), TAG_PART + (uint64_t)i);
    for (int i = 0; rc == 0 && i < dcpi_sampler_nrings(d->smp); i++)
        rc = epoll_add(d, dcpi_sampler_ring_fd(d->smp, i), TAG_RING + (uint64_t)i);
    return rc < 0 ? dcpi__errf(err, dcpi__errno_code(errno), "epoll_ctl: %s", strerror(errno)) : 0;
}

static int setup_tables(daemon_t *d, char *err)
{
    int cpus[1024];
    d->cpucount = dcpi_online_cpus(cpus, 1024);
    int rc = dcpi_loadmap_new(&d->lm);
    if (rc == 0)
        rc = dcpi_agg_new(d->o->hash ? d->o->hash : DCPI_AGG_DEFAULT_ENTRIES, &d->agg);
    if (rc == 0) /* the flush's: its pages are touched only while a flush runs */
        rc = dcpi_agg_new(d->o->hash ? d->o->hash : DCPI_AGG_DEFAULT_ENTRIES, &d->agg_spare);
    if (rc == 0)
        rc = dcpi_proctab_new(&d->procs);
    return rc < 0 ? dcpi__errf(err, rc, "setup: %s", dcpi_strerror(rc)) : 0;
}

/* -g: the stacks' tables (after kernel.c's setup: the kernel's range). */
static int setup_stacks(daemon_t *d, char *err)
{
    if (!d->o->callgraph)
        return 0;
    dcpi_dstacks_kernel_t k = {d->kern.ok, d->kern.id, d->kern.tstart, d->kern.tsize};
    int rc = dcpi_dstacks_new(d->lm, d->nev, &k, &d->stk);
    return rc < 0 ? dcpi__errf(err, rc, "-g: %s", dcpi_strerror(rc)) : 0;
}

/* The part of the setup before the target runs: database, log, lock, events, tables, the parts'
 * setup (-vtrace's plugins), stacks. */
int dcpi__daemon_setup_base(daemon_t *d, char *err)
{
    int rc = setup_db(d, err);
    /* The symbols dcpid reads (values, DB/.symcache) never wait on a debuginfod server: a fetch
     * would stall the loop. The analysis tools ask it; the workload keeps DEBUGINFOD_URLS. */
    dcpi_debuginfod_off();
    rc = rc < 0 ? rc : setup_log(d, err);
    rc = rc < 0 ? rc : dcpi_db_lock(d->db, d->platform, &d->lock_fd, err);
    rc = rc < 0 ? rc : setup_events(d, err);
    rc = rc < 0 ? rc : setup_tables(d, err);
    if (rc == 0) {
        char names[512];
        dcpi__parts_names(names, sizeof names);
        dcpi__log(DCPI_LOG_INFO, "parts: %s", names);
    }
    rc = rc < 0 ? rc : dcpi__parts_setup(d, err); /* the kernel, the caches, the values, ... */
    rc = rc < 0 ? rc : setup_stacks(d, err);
    return rc;
}

/* Events, epoch, loadmap scan, socket, fds, enable. */
int dcpi__daemon_setup_sampling(daemon_t *d, pid_t target, const sigset_t *sigs, char *err)
{
    if (d->mode == DCPI_SAMPLE_PID && kill(target, 0) < 0 && errno == ESRCH)
        return dcpi__errf(err, DCPI_ESRCH, "-p %d: no such process", (int)target);
    int rc = open_sampler(d, target, err);
    rc = rc < 0 ? rc : dcpi__parts_start(d, err); /* the value backend, the pusher, ... */
    rc = rc < 0 ? rc : dcpi__daemon_new_epoch(d, err);
    if (rc < 0)
        return rc;
    dcpi__daemon_retain(d);
    if (d->mode != DCPI_SAMPLE_COMMAND)
        dcpi_loadmap_scan_proc(d->lm, d->mode == DCPI_SAMPLE_SYSTEM ? -1 : target);
    rc = dcpi__daemon_open_socket(d, err);
    rc = rc < 0 ? rc : setup_fds(d, sigs, err);
    if (rc == 0 && d->mode != DCPI_SAMPLE_COMMAND && (rc = dcpi_sampler_enable(d->smp)) < 0)
        return dcpi__errf(err, rc, "PERF_EVENT_IOC_ENABLE: %s", strerror(-rc));
    d->start = dcpi__monotonic_s();
    d->next_flush = d->start + d->o->flush_s;
    return rc;
}

void dcpi__daemon_cleanup(daemon_t *d)
{
    /* the parts' own states: the pusher's last sends (at most 5 s), the cache writer waited for,
     * the value backend before the sampler (its breakpoints write into the rings) */
    dcpi__parts_exit(d);
    if (d->sock_path[0])
        unlink(d->sock_path);
    int fds[] = {d->sock_fd, d->epfd, d->tfd, d->sfd, d->pidfd, d->lock_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    dcpi_sampler_close(d->smp);
    dcpi_dstacks_free(d->stk);
    dcpi_loadmap_free(d->lm);
    dcpi_agg_free(d->agg);
    dcpi_agg_free(d->agg_spare);
    dcpi_proctab_free(d->procs);
}
