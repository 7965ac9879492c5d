/*
 * setup.c - dcpid's set-up and teardown: the database, log and platform lock, the events
 * (probed), the tables (loadmap, count table, stacks), the value profilers (-vtrace) and the
 * step backend (-vstep), then the perf events, the first epoch, the /proc scan, the control
 * socket and the loop's fds (epoll, timerfd, signalfd, pidfd); and freeing all of it.
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
    dcpi_vbackend_sampler_opts(d->vb, &x); /* registers, contexts, an arm trigger */
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
    if (rc == 0 && dcpi_vbackend_wake_fd(d->vb) >= 0)
        rc = epoll_add(d, dcpi_vbackend_wake_fd(d->vb), TAG_VWAKE);
    for (int i = 0; rc == 0 && i < dcpi_sampler_nrings(d->smp); i++)
        rc = epoll_add(d, dcpi_sampler_ring_fd(d->smp, i), TAG_RING + (uint64_t)i);
    return rc < 0 ? dcpi__errf(err, dcpi__errno_code(errno), "epoll_ctl: %s", strerror(errno)) : 0;
}

static int setup_tables(daemon_t *d, char *err)
{
    int cpus[1024];
    d->cpucount = dcpi_online_cpus(cpus, 1024);
    d->cpuspeed = dcpi__daemon_cpuspeed();
    int rc = dcpi_loadmap_new(&d->lm);
    if (rc == 0)
        dcpi_loadmap_on_unnamed(d->lm, dcpi__daemon_keep_unnamed, d);
    if (rc == 0)
        rc = dcpi_agg_new(d->o->hash ? d->o->hash : DCPI_AGG_DEFAULT_ENTRIES, &d->agg);
    if (rc == 0) /* the flush's: its pages are touched only while a flush runs */
        rc = dcpi_agg_new(d->o->hash ? d->o->hash : DCPI_AGG_DEFAULT_ENTRIES, &d->agg_spare);
    if (rc == 0)
        rc = dcpi_proctab_new(&d->procs);
    if (rc < 0)
        return dcpi__errf(err, rc, "setup: %s", dcpi_strerror(rc));
    dcpi__daemon_kernel_range(d);
    if (d->o->callgraph) {
        dcpi_dstacks_kernel_t k = {d->kern.ok, d->kern.id, d->kern.tstart, d->kern.tsize};
        if ((rc = dcpi_dstacks_new(d->lm, d->nev, &k, &d->stk)) < 0)
            return dcpi__errf(err, rc, "-g: %s", dcpi_strerror(rc));
    }
    return 0;
}

/* Instructions per -vstep burst: -vburst, else the agent's or ptrace's default. */
static unsigned vburst(const daemon_t *d)
{
    if (d->o->vburst)
        return d->o->vburst;
    return d->mode == DCPI_SAMPLE_COMMAND ? DCPI_DAEMON_DEFAULT_VBURST
                                          : DCPI_DAEMON_DEFAULT_VBURST_PTRACE;
}

/* cmd as execvp finds it: the first executable DIR/cmd of PATH when cmd has no '/', else cmd. */
static void in_path(const char *cmd, char *path, size_t len)
{
    const char *env = getenv("PATH");
    for (const char *p = env && !strchr(cmd, '/') ? env : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(path, len, "%.*s/%s", (int)n, p, cmd);
        if (access(path, X_OK) == 0)
            return;
        p += n + (p[n] == ':');
    }
    snprintf(path, len, "%s", cmd);
}

/* Whether the command can take the agent (a dynamic executable, or a script: its interpreter);
 * why not into why. The command is looked up in PATH as execvp does. */
static int command_takes_agent(const daemon_t *d, char *why, size_t len)
{
    const char *cmd = d->o->argv ? d->o->argv[0] : NULL;
    char path[4096];
    if (!cmd)
        return 0;
    in_path(cmd, path, sizeof path);
    if (dcpi_image_dynamic(path) == 0) {
        snprintf(why, len, "%.400s is statically linked (LD_PRELOAD cannot load the agent)", path);
        return 0;
    }
    return 1;
}

/* Whether the inproc backend applies: a command that takes the agent, neither -vbp nor
 * -vbp-first, the agent found (its path into agent). Why not into why when it does not. */
static int wants_inproc(const daemon_t *d, char *agent, size_t alen, char *why, size_t len)
{
    const dcpi_daemon_opts_t *o = d->o;
    char err[DCPI_ERRLEN];
    if (d->mode != DCPI_SAMPLE_COMMAND || o->vbp || o->vbp_first)
        return 0;
    if (!command_takes_agent(d, why, len))
        return 0;
    if (dcpi__vagent_find(o->plugin_dirs, "-vtrace", agent, alen, err) < 0) {
        snprintf(why, len, "%s", err);
        return 0;
    }
    return 1;
}

/* -vtrace's plugins, loaded into d->vps. */
static int load_plugins(daemon_t *d, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    int rc = dcpi_vp_set_new(&d->vps);
    if (rc < 0)
        return dcpi__errf(err, rc, "-vtrace: %s", dcpi_strerror(rc));
    dcpi_vp_set_allow_insecure(d->vps, o->vinsecure);
    for (int i = 0; i < o->nvtrace; i++) {
        dcpi_vp_t *vp;
        if ((rc = dcpi_vp_load(d->vps, o->vtrace[i], &vp, err)) < 0)
            return rc;
        dcpi__log(DCPI_LOG_INFO, "value profiler %s loaded from %s", dcpi_vp_name(vp),
                  dcpi_vp_path(vp));
    }
    return 0;
}

/* Which backend: "step", "inproc", "bp" or "regs"; why (DCPI_ERRLEN) says why not bp. */
static const char *choose_backend(daemon_t *d, char *why)
{
    const dcpi_daemon_opts_t *o = d->o;
    int use_bp = 0;
    if (!o->vstep && !o->vregs) {
        use_bp = dcpi_bp_probe(why) == 0;
        if (!use_bp)
            dcpi__log(DCPI_LOG_WARN,
                      "value profiling: execute breakpoints unavailable (%s): using the regs "
                      "backend, whose shares are biased by interrupt skid (see status)",
                      why);
    } else {
        snprintf(why, DCPI_ERRLEN, "%s", o->vstep ? "-vstep" : "-vregs");
    }
    char agent[4096], nowhy[DCPI_ERRLEN] = "";
    int inproc = use_bp && wants_inproc(d, agent, sizeof agent, nowhy, sizeof nowhy);
    if (use_bp && !inproc && nowhy[0])
        dcpi__log(DCPI_LOG_WARN, "value profiling: the bp backend, not the inproc one (%s)", nowhy);
    return o->vstep ? "step" : inproc ? "inproc" : use_bp ? "bp" : "regs";
}

/* -voracle: its backend chained before d->vb (its breakpoints' samples come first). */
static int chain_oracle(daemon_t *d)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vbackend_oracle_opts_t oo = {
        .spec = o->voracle,
        .on_ms = o->voracle_on_ms ? o->voracle_on_ms : DCPI_ORACLE_ON_MS,
        .every_ms = o->voracle_every_ms ? o->voracle_every_ms : DCPI_ORACLE_EVERY_MS,
        .target = d->mode == DCPI_SAMPLE_PID ? o->pid : 0};
    dcpi_vbackend_t *orc;
    int rc = dcpi_vbackend_oracle_new(d->vt, &oo, &orc);
    if (rc == 0) {
        dcpi_vbackend_chain(&orc, d->vb);
        d->vb = orc;
    }
    return rc;
}

/* The backend named (choose_backend) into d->vb, the oracle beside it; -vstep's is made later
 * (the agent before the command runs, or ptrace with -p). */
static int new_backend(daemon_t *d, const char *backend, const char *why, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vbackend_bp_opts_t bo = {.budget_pct =
                                      o->vbudget > 0 ? o->vbudget : DCPI_DAEMON_DEFAULT_VBUDGET,
                                  .keep_first = o->vbp_first};
    if (d->evs[0].type == PERF_TYPE_SOFTWARE) /* cpu-clock, task-clock: ns */
        bo.pc_ns = d->evs[0].period;
    bo.pc_tick_ns = bo.pc_ns ? bo.pc_ns : d->evs[0].freq ? 1000000000ull / d->evs[0].freq : 0;
    dcpi_vbackend_inproc_opts_t io = {
        .budget_pct = o->vbudget > 0 ? o->vbudget : DCPI_DAEMON_DEFAULT_VBUDGET_INPROC,
        .pc_ns = bo.pc_ns,
        .plugin_dirs = o->plugin_dirs,
        .max_bps = o->voracle ? 3 : 4}; /* the oracle's breakpoint takes a debug register */
    int rc = 0;
    if (!strcmp(backend, "inproc")) /* the budget measured here sets the ticks' period */
        rc = dcpi_vbackend_inproc_new(d->vt, &io, &d->vb, err);
    else if (!strcmp(backend, "bp")) /* the budget measured here sets the arm trigger's period */
        rc = dcpi_vbackend_bp_new(d->vt, &bo, &d->vb);
    else if (!strcmp(backend, "regs"))
        rc = dcpi_vbackend_regs_new(d->vt, why, &d->vb);
    if (rc == 0 && o->voracle)
        rc = chain_oracle(d);
    if (rc < 0)
        return err[0] ? rc : dcpi__errf(err, rc, "-vtrace: %s", dcpi_strerror(rc));
    return 0;
}

/* -vtrace: load the plugins and ask each what to capture. */
static int setup_values(daemon_t *d, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    if (o->nvtrace == 0)
        return 0;
    int rc = load_plugins(d, err);
    if (rc < 0)
        return rc;
    dcpi_values_opts_t vo = {
        .rate = o->vrate, .hotsize = o->vhot, .max_summaries = o->vhash, .contexts = o->vcontext};
    vo.isolate = !o->vinproc;
    vo.timeout_ms = o->vtimeout_s * 1000u;
    vo.record = o->vrecord;
    vo.oracle = o->voracle != NULL;
    char why[DCPI_ERRLEN] = ""; /* why not the bp backend */
    vo.backend = choose_backend(d, why);
    vo.record_max = (uint64_t)(o->vrecord_max ? o->vrecord_max : DCPI_DAEMON_DEFAULT_VRECORD_MB)
                    << 20;
    if ((rc = dcpi_values_new(d->vps, d->lm, &vo, &d->vt, err)) < 0)
        return rc;
    if ((rc = new_backend(d, vo.backend, why, err)) < 0)
        return rc;
    if (o->vstep)
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, step backend, bursts of %u, %u bursts/s per "
                  "thread",
                  dcpi_values_nplugins(d->vt), vburst(d),
                  o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE);
    else
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, %s backend, regs mask 0x%" PRIx64
                  ", %u value samples/s per CPU%s",
                  dcpi_values_nplugins(d->vt), vo.backend, dcpi_values_regs_mask(d->vt),
                  dcpi_values_rate(d->vt), o->vcontext ? ", contexts" : "");
    return 0;
}

static uint64_t ns_per_sample(const daemon_t *d)
{
    const dcpi_event_spec_t *e = &d->evs[0];
    if (e->type == PERF_TYPE_SOFTWARE && e->period)
        return e->period; /* cpu-clock, task-clock: nanoseconds */
    return 1000000000ull / (e->freq ? e->freq : d->o->freq ? d->o->freq : 1000);
}

/* -vstep: the agent (before the command is spawned) or ptrace (target: the -p process). */
int dcpi__daemon_setup_vstep(daemon_t *d, pid_t target, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vstep_opts_t so = {.burst = vburst(d),
                            .rate = o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE,
                            .keep_first = o->vstep_first,
                            .plugin_dirs = o->plugin_dirs,
                            .ns_per_sample = ns_per_sample(d)};
    dcpi_vbackend_t *b = NULL;
    int rc = d->mode == DCPI_SAMPLE_COMMAND ? dcpi_vstep_agent_new(d->vt, &so, &b, err)
                                            : dcpi_vstep_ptrace_new(d->vt, &so, target, &b, err);
    if (rc == 0)
        dcpi_vbackend_chain(&d->vb, b);
    return rc;
}

/* The part of the setup before the target runs: database, log, lock, events, plugins. */
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
    rc = rc < 0 ? rc : setup_values(d, err);
    if (rc == 0 && d->o->vstep && d->mode == DCPI_SAMPLE_COMMAND)
        rc = dcpi__daemon_setup_vstep(d, 0, err);
    return rc;
}

/* Events, epoch, loadmap scan, socket, fds, enable. */
int dcpi__daemon_setup_sampling(daemon_t *d, pid_t target, const sigset_t *sigs, char *err)
{
    if (d->mode == DCPI_SAMPLE_PID && kill(target, 0) < 0 && errno == ESRCH)
        return dcpi__errf(err, DCPI_ESRCH, "-p %d: no such process", (int)target);
    int rc = open_sampler(d, target, err);
    rc = rc < 0 ? rc : dcpi_vbackend_start(d->vb, d->smp, err);
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
    return rc < 0 ? rc : dcpi__daemon_push_start(d, err);
}

void dcpi__daemon_cleanup(daemon_t *d)
{
    dcpi__daemon_push_stop(d); /* sends what the last flush spooled (at most 5 s) */
    dcpi__parts_exit(d);       /* the parts' own states: the cache writer waited for, ... */
    if (d->sock_path[0])
        unlink(d->sock_path);
    int fds[] = {d->sock_fd, d->epfd, d->tfd, d->sfd, d->pidfd, d->lock_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    /* the backend before the sampler (its breakpoints write into the rings) and the sink (its
     * step encoders write into the sink's traces) */
    dcpi_vbackend_free(d->vb);
    dcpi_sampler_close(d->smp);
    dcpi_values_free(d->vt); /* vp_prof_done, before the plugins are unloaded */
    dcpi_vp_set_free(d->vps);
    dcpi_dstacks_free(d->stk);
    dcpi_loadmap_free(d->lm);
    dcpi_agg_free(d->agg);
    dcpi_agg_free(d->agg_spare);
    dcpi_proctab_free(d->procs);
}
