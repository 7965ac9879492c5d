/*
 * vtrace.c - dcpid -vtrace: value profiling, a part (part.h) that owns the plugins, the sink
 * that runs them (core/values/values.h) and the backend that feeds it (core/values/backend.h:
 * which one is chosen here, from the options and what the machine allows); every daemon event
 * a backend takes (its sampler options, records, PC samples, mappings, losses, drains, its wake
 * descriptor, flushes, epochs, status, stop, report, exit) reaches it through this part's
 * hooks, so the core holds no value state.
 */
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/image/image.h"
#include "core/plugin/vploader.h"
#include "core/sampling/bpslots.h"
#include "core/store/tracefile.h"
#include "core/values/backend.h"
#include "core/values/vstep.h"
#include "dcpi/errno.h"

/* The part's state (NULL members without -vtrace). */
typedef struct vtrace {
    dcpi_vp_set_t *vps;
    dcpi_values_t *vt;
    dcpi_vbackend_t *vb;
} vtrace_t;

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

/* -vtrace's plugins, loaded into v->vps. */
static int load_plugins(daemon_t *d, vtrace_t *v, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    int rc = dcpi_vp_set_new(&v->vps);
    if (rc < 0)
        return dcpi__errf(err, rc, "-vtrace: %s", dcpi_strerror(rc));
    dcpi_vp_set_allow_insecure(v->vps, o->vinsecure);
    for (int i = 0; i < o->nvtrace; i++) {
        dcpi_vp_t *vp;
        if ((rc = dcpi_vp_load(v->vps, o->vtrace[i], &vp, err)) < 0)
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

/* -voracle: its backend chained before v->vb (its breakpoints' samples come first). */
static int chain_oracle(daemon_t *d, vtrace_t *v)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vbackend_oracle_opts_t oo = {
        .spec = o->voracle,
        .on_ms = o->voracle_on_ms ? o->voracle_on_ms : DCPI_ORACLE_ON_MS,
        .every_ms = o->voracle_every_ms ? o->voracle_every_ms : DCPI_ORACLE_EVERY_MS,
        .target = d->mode == DCPI_SAMPLE_PID ? o->pid : 0};
    dcpi_vbackend_t *orc;
    int rc = dcpi_vbackend_oracle_new(v->vt, &oo, &orc);
    if (rc == 0) {
        dcpi_vbackend_chain(&orc, v->vb);
        v->vb = orc;
    }
    return rc;
}

/* The backend named (choose_backend) into v->vb, the oracle beside it; -vstep's is made later
 * (the agent before the command runs, or ptrace with -p). */
static int new_backend(daemon_t *d, vtrace_t *v, const char *backend, const char *why, char *err)
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
        rc = dcpi_vbackend_inproc_new(v->vt, &io, &v->vb, err);
    else if (!strcmp(backend, "bp")) /* the budget measured here sets the arm trigger's period */
        rc = dcpi_vbackend_bp_new(v->vt, &bo, &v->vb);
    else if (!strcmp(backend, "regs"))
        rc = dcpi_vbackend_regs_new(v->vt, why, &v->vb);
    if (rc == 0 && o->voracle)
        rc = chain_oracle(d, v);
    if (rc < 0)
        return err[0] ? rc : dcpi__errf(err, rc, "-vtrace: %s", dcpi_strerror(rc));
    return 0;
}

/* -vtrace: load the plugins and ask each what to capture. */
static int setup_values(daemon_t *d, vtrace_t *v, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    if (o->nvtrace == 0)
        return 0;
    int rc = load_plugins(d, v, err);
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
    if ((rc = dcpi_values_new(v->vps, d->lm, &vo, &v->vt, err)) < 0)
        return rc;
    if ((rc = new_backend(d, v, vo.backend, why, err)) < 0)
        return rc;
    if (o->vstep)
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, step backend, bursts of %u, %u bursts/s per "
                  "thread",
                  dcpi_values_nplugins(v->vt), vburst(d),
                  o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE);
    else
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, %s backend, regs mask 0x%" PRIx64
                  ", %u value samples/s per CPU%s",
                  dcpi_values_nplugins(v->vt), dcpi_vbackend_name(v->vb),
                  dcpi_values_regs_mask(v->vt), dcpi_values_rate(v->vt),
                  o->vcontext ? ", contexts" : "");
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
static int setup_vstep(daemon_t *d, vtrace_t *v, pid_t target, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vstep_opts_t so = {.burst = vburst(d),
                            .rate = o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE,
                            .keep_first = o->vstep_first,
                            .plugin_dirs = o->plugin_dirs,
                            .ns_per_sample = ns_per_sample(d)};
    dcpi_vbackend_t *b = NULL;
    int rc = d->mode == DCPI_SAMPLE_COMMAND ? dcpi_vstep_agent_new(v->vt, &so, &b, err)
                                            : dcpi_vstep_ptrace_new(v->vt, &so, target, &b, err);
    if (rc == 0)
        dcpi_vbackend_chain(&v->vb, b);
    return rc;
}

static void status_values(const vtrace_t *v, dcpi__answer_t *a)
{
    for (unsigned i = 0; i < dcpi_values_nplugins(v->vt); i++) {
        dcpi_values_stats_t st;
        dcpi_values_plugin_stats(v->vt, i, &st);
        dcpi__daemon_say(a,
                         "vtrace %s traces %" PRIu64 " values %" PRIu64 " seen %" PRIu64
                         " lost %" PRIu64 " errors %" PRIu64 " missing %" PRIu64 "%s%s",
                         dcpi_values_plugin_name(v->vt, i), st.traces, st.values, st.seen, st.lost,
                         st.errors, st.missing, st.disabled ? " disabled: " : "",
                         st.disabled ? dcpi_values_plugin_why(v->vt, i) : "");
    }
    dcpi_tracefile_stats_t rs;
    if (dcpi_values_record_stats(v->vt, &rs) == 0)
        dcpi__daemon_say(a, "vrecord bytes %" PRIu64 " traces %" PRIu64 " refused %" PRIu64,
                         rs.bytes, rs.traces, rs.refused);
    dcpi__daemon_say(a, "vrate %u/s per CPU", dcpi_values_rate(v->vt));
    dcpi__daemon_say(a, "value samples without code %" PRIu64 " unresolved %" PRIu64,
                     dcpi_values_nocode(v->vt), dcpi_values_unresolved(v->vt));
    dcpi__daemon_say(a, "vhash %zu/%zu", dcpi_values_used(v->vt), dcpi_values_capacity(v->vt));
}

/* The value backend's lines ("vbp ...", "vstep ..."). */
static void status_backend(const vtrace_t *v, dcpi__answer_t *a)
{
    char buf[8192], *save = NULL;
    dcpi_vbackend_status(v->vb, buf, sizeof buf);
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        dcpi__daemon_say(a, "%s", l);
}

/* -- command / -p: one line per value profiler on stderr (where the user looks; the log has
 * the details), a disabled one with its reason; every one disabled fails the run. */
static void report_values(daemon_t *d, vtrace_t *v)
{
    unsigned n = dcpi_values_nplugins(v->vt), dead = 0;
    for (unsigned i = 0; i < n; i++) {
        dcpi_values_stats_t st;
        dcpi_values_plugin_stats(v->vt, i, &st);
        dead += st.disabled != 0;
        fprintf(stderr,
                "dcpid: value profiler %s: %" PRIu64 " traces, %" PRIu64 " vsamples, %" PRIu64
                " entries with missing values, %" PRIu64 " lost, %" PRIu64 " errors%s%s\n",
                dcpi_values_plugin_name(v->vt, i), st.traces, st.values, st.missing, st.lost,
                st.errors, st.disabled ? "; DISABLED: " : "",
                st.disabled ? dcpi_values_plugin_why(v->vt, i) : "");
        const char *note = dcpi_values_plugin_note(v->vt, i);
        if (note[0])
            fprintf(stderr, "dcpid: warning: %s\n", note);
    }
    if (n && dead == n) {
        fprintf(stderr, "dcpid: every value profiler was disabled: no value profile is complete\n");
        if (d->exit_code == 0)
            d->exit_code = 1;
    }
}

static int vtrace_setup(daemon_t *d, void *self, char *err)
{
    vtrace_t *v = self;
    int rc = setup_values(d, v, err);
    if (rc == 0 && d->o->vstep && d->mode == DCPI_SAMPLE_COMMAND)
        rc = setup_vstep(d, v, 0, err); /* the agent, before the command is spawned */
    return rc;
}

static void vtrace_sampler(daemon_t *d, void *self, dcpi_sampler_opts_t *x)
{
    dcpi_vbackend_sampler_opts(((vtrace_t *)self)->vb, x); /* registers, contexts, a trigger */
}

static int vtrace_start(daemon_t *d, void *self, char *err)
{
    return dcpi_vbackend_start(((vtrace_t *)self)->vb, d->smp, err);
}

/* -vstep -p: ptrace, once the target is known. */
static int vtrace_target(daemon_t *d, void *self, pid_t pid, char *err)
{
    if (!d->o->vstep || d->mode != DCPI_SAMPLE_PID)
        return 0;
    return setup_vstep(d, self, pid, err);
}

static int vtrace_spawned(daemon_t *d, void *self)
{
    if (dcpi_vbackend_child_env(((vtrace_t *)self)->vb) < 0) {
        fprintf(stderr, "dcpid: -vstep: cannot set the agent's environment\n");
        return -1;
    }
    return 0;
}

/* An arm trigger, a breakpoint, -voracle's: the backend's, not a PC sample. */
static int vtrace_record(daemon_t *d, void *self, const dcpi_sample_t *s, int ring)
{
    return dcpi_vbackend_record(((vtrace_t *)self)->vb, s, ring);
}

static void vtrace_user(daemon_t *d, void *self, const dcpi_sample_t *s, int ring)
{
    dcpi_vbackend_pc(((vtrace_t *)self)->vb, s, ring);
}

/* The values of pid resolve with its old mappings first. */
static void vtrace_pid(daemon_t *d, void *self, pid_t pid, int what)
{
    int w = what == DCPI__PID_MMAP   ? DCPI_VBACKEND_MMAP
            : what == DCPI__PID_EXEC ? DCPI_VBACKEND_EXEC
                                     : DCPI_VBACKEND_EXIT;
    dcpi_vbackend_pid_event(((vtrace_t *)self)->vb, pid, w);
}

static void vtrace_mmap(daemon_t *d, void *self, const dcpi__mmap_t *m)
{
    dcpi_vbackend_mmap(((vtrace_t *)self)->vb, m->pid, m->addr, m->len, m->pgoff, m->maj, m->min,
                       m->ino, m->prot, m->path);
}

static void vtrace_loss(daemon_t *d, void *self, int throttled, uint64_t n)
{
    dcpi_vbackend_loss(((vtrace_t *)self)->vb, (uint64_t)throttled, n);
}

/* The backend's own records (step rings, ptrace bursts) and the sink's traces. */
static int vtrace_drain(daemon_t *d, void *self, uint64_t now_ns)
{
    return dcpi_vbackend_drain(((vtrace_t *)self)->vb, now_ns);
}

static int vtrace_timeout(daemon_t *d, void *self)
{
    return dcpi_vbackend_timeout_ms(((vtrace_t *)self)->vb);
}

static int vtrace_polls(daemon_t *d, void *self)
{
    return dcpi_vbackend_polls(((vtrace_t *)self)->vb);
}

static int vtrace_fd(daemon_t *d, void *self)
{
    return dcpi_vbackend_wake_fd(((vtrace_t *)self)->vb); /* read by the backend's drain */
}

/* -vrecord: the recording goes on in the new epoch's values.trace. */
static int vtrace_epoch(daemon_t *d, void *self, char *err)
{
    vtrace_t *v = self;
    dcpi_values_flush_info_t fi = dcpi__daemon_flush_info(d);
    return v->vt ? dcpi_values_new_epoch(v->vt, &fi, err) : 0;
}

/* The value profiles (pipeline.c keeps what it could not write), the backend's own files. */
static void vtrace_flush(daemon_t *d, void *self, const uint64_t *periods, flush_result_t *r)
{
    vtrace_t *v = self;
    if (!v->vt)
        return;
    dcpi_values_flush_info_t fi = dcpi__daemon_flush_info(d);
    size_t failed = 0;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_values_flush(v->vt, &fi, &failed, err);
    if (rc >= 0)
        r->profiles += (size_t)rc;
    else {
        (void)dcpi__pathf(d->flush_error, sizeof d->flush_error, "%s", err);
        r->failures += failed;
    }
    if (dcpi_vbackend_flush(v->vb, &fi, err) < 0) /* bp: the missing marks, <plugin>.vmiss */
        dcpi__log(DCPI_LOG_WARN, "flush: %s", err);
}

static int vtrace_full(daemon_t *d, void *self, char *why, size_t len)
{
    vtrace_t *v = self;
    if (!v->vt || !dcpi_values_needs_flush(v->vt))
        return 0;
    snprintf(why, len, "value summaries 75%% full (%zu/%zu)", dcpi_values_used(v->vt),
             dcpi_values_capacity(v->vt));
    return 1;
}

static void vtrace_status(daemon_t *d, void *self, dcpi__answer_t *a)
{
    vtrace_t *v = self;
    if (v->vt)
        status_values(v, a);
    if (v->vb)
        status_backend(v, a);
}

/* ptrace: detach first, the target runs on undisturbed while we flush. */
static void vtrace_stop(daemon_t *d, void *self)
{
    dcpi_vbackend_stop(((vtrace_t *)self)->vb);
}

static void vtrace_report(daemon_t *d, void *self)
{
    vtrace_t *v = self;
    if (v->vt && d->mode != DCPI_SAMPLE_SYSTEM)
        report_values(d, v);
    dcpi_vbackend_report(v->vb, d->mode != DCPI_SAMPLE_SYSTEM);
}

/* The backend before the sink (its step encoders write into the sink's traces), the sink
 * (vp_prof_done) before the plugins are unloaded. */
static void vtrace_exit(daemon_t *d, void *self)
{
    vtrace_t *v = self;
    dcpi_vbackend_free(v->vb);
    dcpi_values_free(v->vt);
    dcpi_vp_set_free(v->vps);
}

DCPI_DAEMON_PART(vtrace, .order = 50, .size = sizeof(vtrace_t), .setup = vtrace_setup,
                 .sampler = vtrace_sampler, .start = vtrace_start, .target = vtrace_target,
                 .spawned = vtrace_spawned, .record = vtrace_record, .user = vtrace_user,
                 .pid = vtrace_pid, .mmap = vtrace_mmap, .loss = vtrace_loss, .drain = vtrace_drain,
                 .timeout = vtrace_timeout, .polls = vtrace_polls, .fd = vtrace_fd,
                 .epoch = vtrace_epoch, .flush = vtrace_flush, .full = vtrace_full,
                 .status = vtrace_status, .stop = vtrace_stop, .report = vtrace_report,
                 .exit = vtrace_exit);
