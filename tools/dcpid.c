/*
 * dcpid - the dcpi daemon: continuous PC sampling (and -vtrace value profiling) with perf_event
 * into the profile database.
 * This file only parses the command line (the tools' one grammar, cli/cli.h); core/daemon/ does
 * the work (dcpi_daemon_run in daemon.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/units.h"
#include "core/sampling/aggregate.h"
#include "core/daemon/daemon.h"
#include "core/plugin/vploader.h"
#include "core/store/vsummary.h"
#include "core/values/values.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

static dcpi_daemon_opts_t o = {.freq = DCPI_DAEMON_DEFAULT_FREQ,
                               .flush_s = DCPI_DAEMON_DEFAULT_FLUSH,
                               .hash = DCPI_AGG_DEFAULT_ENTRIES};

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "dcpid: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try -h)\n");
    return 2;
}

/* -log: "-" and the names of the standard error stream: the log goes to stderr. */
static int set_log(void *dst, const char *v)
{
    static const char *err_names[] = {"-", "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"};
    *(const char **)dst = v;
    for (size_t i = 0; i < sizeof err_names / sizeof err_names[0]; i++)
        if (!strcmp(v, err_names[i]))
            *(const char **)dst = "-";
    return 0;
}

/* One more value of a repeatable flag with a bound (-e: 8, -vtrace: 16). */
static int append(const char **v, int *n, int max, const char *flag, const char *val)
{
    if (*n == max) {
        fprintf(stderr, "dcpid: too many %s flags (at most %d) (try -h)\n", flag, max);
        return 2;
    }
    v[(*n)++] = val;
    return 0;
}

static int add_event(void *dst, const char *v)
{
    dcpi_daemon_opts_t *d = dst;
    return append(d->events, &d->nevents, DCPI_SAMPLER_MAXEV, "-event", v);
}

static int add_vtrace(void *dst, const char *v)
{
    dcpi_daemon_opts_t *d = dst;
    return append(d->vtrace, &d->nvtrace, DCPI_DAEMON_MAXVP, "-vtrace", v);
}

static int set_pid(void *dst, const char *v)
{
    unsigned long n;
    if (dcpi_cli_flag_uint("dcpid", "-p", v, 1, 1UL << 30, &n))
        return 2;
    *(pid_t *)dst = (pid_t)n;
    return 0;
}

static int set_epoch_every(void *dst, const char *v)
{
    uint64_t x;
    if (dcpi__parse_duration(v, 1, &x) < 0 || x > 86400u * 365)
        return bad("-epoch-every: bad duration '%s' (30s, 10m, 1h, 1d)", v);
    *(unsigned *)dst = (unsigned)x;
    return 0;
}

static int set_keep(void *dst, const char *v)
{
    dcpi_daemon_opts_t *d = dst;
    uint64_t x;
    if (dcpi__parse_duration(v, 0, &x) == 0)
        d->keep_s = x;
    else if (dcpi__parse_size(v, &x) == 0)
        d->keep_bytes = x;
    else
        return bad("-keep: '%s' is neither a duration (12h, 7d, 2w) nor a size (500M, 2G)", v);
    return 0;
}

static int set_vbudget(void *dst, const char *v)
{
    char *end;
    double pct = strtod(v, &end);
    if (end == v || *end || !(pct >= 0.01 && pct <= 100))
        return bad("-vbudget: '%s' is not a percentage from 0.01 to 100", v);
    *(double *)dst = pct;
    return 0;
}

static int set_voracle_duty(void *dst, const char *v)
{
    dcpi_daemon_opts_t *d = dst;
    unsigned on = 0, every = 0;
    char c;
    if (sscanf(v, "%u/%u%c", &on, &every, &c) != 2 || on == 0 || every < on || every > 3600000)
        return bad("-voracle-duty wants ON/EVERY in ms, 0 < ON <= EVERY, not '%s'", v);
    d->voracle_on_ms = on;
    d->voracle_every_ms = every;
    return 0;
}

static int set_duty(void *dst, const char *v)
{
    char *end;
    double *duty = dst;
    *duty = strtod(v, &end);
    if (*end || !(*duty > 0 && *duty <= 1))
        return bad("-duty wants a fraction above 0 and at most 1, not '%s'", v);
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    {"-e", "E[:P]",
     "sample event E (cpu-clock task-clock cycles instructions branch-misses\n"
     "cache-misses), every P events; repeatable (default: cycles if the machine\n"
     "has it, else cpu-clock)",
     "-event --event", DCPI_CLI_CALL, &o, 0, 0, add_event},
    {"-freq", "HZ",
     "samples per second per CPU when no period is given (" STR(DCPI_DAEMON_DEFAULT_FREQ) ")",
     "-F --freq", DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.freq), 1, 1000000, NULL},
    {"-flush", "SECONDS", "write the profiles every SECONDS (" STR(DCPI_DAEMON_DEFAULT_FLUSH) ")",
     NULL, DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.flush_s), 1, 86400 * 365, NULL},
    {"-epoch-every", "DURATION", "start a new epoch every DURATION (30s, 10m, 1h, 1d, 1w)", NULL,
     DCPI_CLI_CALL, &o.epoch_every_s, 0, 0, set_epoch_every},
    {"-keep", "D|SIZE",
     "remove the platform's oldest epochs once they ended more than D ago\n"
     "(12h, 7d, 2w), or while all of them take more than SIZE on disk (500M,\n"
     "2G); never the current one; both may be given",
     NULL, DCPI_CLI_CALL, &o, 0, 0, set_keep},
    {"-hash", "ENTRIES",
     "in-memory table size (" STR(DCPI_AGG_DEFAULT_ENTRIES) "); flushed early at 75%", NULL,
     DCPI_CLI_SIZE, DCPI_CLI_DST(size_t, &o.hash), 1, 1UL << 30, NULL},
    {"-nodaemon", NULL, "system-wide, but stay in the foreground and log to stderr", NULL,
     DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.nodaemon), 0, 0, NULL},
    {"-log", "FILE",
     "log file (default DB/dcpid-<platform>.log; '-' or /dev/stderr: standard\nerror)", NULL,
     DCPI_CLI_CALL, &o.log, 0, 0, set_log},
    {"-verbose", NULL, "more logging", NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.verbose), 0, 0,
     NULL},
    {"-quiet", NULL, "less logging (warnings and errors)", NULL, DCPI_CLI_BOOL,
     DCPI_CLI_DST(int, &o.quiet), 0, 0, NULL},
    {"-vtrace", "PLUGIN", "value-profile with PLUGIN (name or path); repeatable", NULL,
     DCPI_CLI_CALL, &o, 0, 0, add_vtrace},
    {"-vcontext", NULL, "value samples carry the return addresses of two callers", NULL,
     DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vcontext), 0, 0, NULL},
    {"-vrate", "N",
     "at most N value samples per second per CPU (" STR(DCPI_VALUES_DEFAULT_RATE) ")", NULL,
     DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.vrate), 1, 1000000, NULL},
    {"-vbudget", "PCT",
     "the breakpoints' triggers or ticks, arms and hits take at most PCT% of each\n"
     "thread's CPU time (inproc " STR(DCPI_DAEMON_DEFAULT_VBUDGET_INPROC) ", bp " STR(
         DCPI_DAEMON_DEFAULT_VBUDGET) "; their costs are measured at start)",
     NULL, DCPI_CLI_CALL, &o.vbudget, 0, 0, set_vbudget},
    {"-voracle", "ADDR:IMAGE",
     "every execution of the instruction at ADDR (ELF address as dcpilist\n"
     "shows it, or SYMBOL[+OFF]) of IMAGE, in windows: its exact values in\n"
     "value profiles NAME.oracle beside each plugin's (slows the target)",
     NULL, DCPI_CLI_STR, DCPI_CLI_DST(const char *, &o.voracle), 0, 0, NULL},
    {"-voracle-duty", "ON/EVERY",
     "-voracle's windows: ON ms in every EVERY ms (" STR(DCPI_ORACLE_ON_MS) "/" STR(
         DCPI_ORACLE_EVERY_MS) "; ON = EVERY: the whole run)",
     NULL, DCPI_CLI_CALL, &o, 0, 0, set_voracle_duty},
    {"-vhot", "N", "hotlist size per instruction (" STR(DCPI_VSUMMARY_DEFAULT_CAP) ")", NULL,
     DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.vhot), 1, DCPI_VSUMMARY_MAX_CAP, NULL},
    {"-vhash", "N",
     "value summaries in memory (" STR(DCPI_VALUES_DEFAULT_HASH) "); flushed early at 75%", NULL,
     DCPI_CLI_SIZE, DCPI_CLI_DST(size_t, &o.vhash), 1, 1UL << 26, NULL},
    {"-vregs", NULL,
     "values from the PC samples' registers (the regs backend) instead of\n"
     "execute breakpoints (the bp backend, the default where perf_event\n"
     "breakpoints work): biased by interrupt skid",
     NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vregs), 0, 0, NULL},
    {"-vbp", NULL,
     "with a command: the bp backend (dcpid arms a breakpoint after a PC\n"
     "sample) instead of the inproc one (the command's threads arm their own)",
     NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vbp), 0, 0, NULL},
    {"-vbp-first", NULL,
     "keep each breakpoint's first sample (dropped by default: it is the\n"
     "execution right after the interrupt, skid-biased)",
     NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vbp_first), 0, 0, NULL},
    {"-g", NULL, "record the call chain of every sample (stack profiles)", NULL, DCPI_CLI_BOOL,
     DCPI_CLI_DST(int, &o.callgraph), 0, 0, NULL},
    {"-vstep", NULL,
     "value traces by single-stepping bursts (exact values): an agent preloaded\n"
     "into the command, ptrace with -p; -vrate N is then bursts per second of\n"
     "each thread's CPU time (100)",
     NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vstep), 0, 0, NULL},
    {"-vburst", "N", "instructions per -vstep burst (32 with a command, 16 with -p; at most 256)",
     NULL, DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.vburst), 1, 256, NULL},
    {"-vstep-first", NULL,
     "also trace each burst's first instruction, the one the timer interrupted\n"
     "(dropped by default: it over-represents slow ones)",
     NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vstep_first), 0, 0, NULL},
    {"-vrecord", NULL, "record the value traces for dcpireplay (values.trace)", NULL, DCPI_CLI_BOOL,
     DCPI_CLI_DST(int, &o.vrecord), 0, 0, NULL},
    {"-vrecord-max", "MB", "bound of the recording (256)", NULL, DCPI_CLI_UINT,
     DCPI_CLI_DST(unsigned, &o.vrecord_max), 1, 1UL << 20, NULL},
    {"-vinproc", NULL, "run plugins in dcpid, not one worker process per plugin", NULL,
     DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vinproc), 0, 0, NULL},
    {"-vtimeout", "S", "a plugin whose vp_prof_process runs S seconds is disabled (2)", NULL,
     DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.vtimeout_s), 1, 3600, NULL},
    {"-vtrace-insecure", NULL, "as root, load plugins that others could have written", NULL,
     DCPI_CLI_BOOL, DCPI_CLI_DST(int, &o.vinsecure), 0, 0, NULL},
    {"-p", "PID", "profile one running process until it exits", "--pid", DCPI_CLI_CALL, &o.pid, 0,
     0, set_pid},
    {"-push", "URL",
     "ship every flush to the fleet store at URL (ClickHouse, docs/fleet.md),\n"
     "spooled on disk while it is down",
     NULL, DCPI_CLI_STR, DCPI_CLI_DST(const char *, &o.push), 0, 0, NULL},
    {"-duty", "FRACTION",
     "sample only that share of the time, in randomly placed windows (fleets:\n"
     "-fleet queries weight each host by 1/FRACTION); 0 < FRACTION <= 1",
     NULL, DCPI_CLI_CALL, &o.duty, 0, 0, set_duty},
    {"-push-spool", "MB", "bound of the push spool (64); batches beyond it are dropped, counted",
     NULL, DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.push_spool_mb), 1, 1UL << 20, NULL},
    DCPI_OPT_END,
};

/* The flags that need each other or exclude each other; the command after "--". */
static int check(dcpi_cli_t *cli, void *arg)
{
    dcpi_daemon_opts_t *o = arg;
    o->db = cli->db_arg;
    if (cli->dashdash && cli->nargs == 0)
        return bad("-- needs a command after it%s", "");
    if (cli->nargs > 0)
        o->argv = cli->args;
    if (o->log && !strcmp(o->log, "-") && !o->argv && !o->pid && !o->nodaemon)
        return bad("-log -: the daemon has no standard error; add -nodaemon, or give -log FILE%s",
                   "");
    if (o->pid && o->argv)
        return bad("-p and a command exclude each other%s", "");
    if (o->nvtrace == 0 && (o->vcontext || o->vrate || o->vhot || o->vhash || o->vbudget))
        return bad("-vcontext, -vrate, -vbudget, -vhot and -vhash need -vtrace%s", "");
    if (o->vstep && o->vcontext)
        return bad("-vcontext does not combine with -vstep%s", "");
    if (o->vstep && o->nvtrace == 0)
        return bad("-vstep needs -vtrace%s", "");
    if (o->vstep && !o->pid && !o->argv)
        return bad("-vstep needs -p PID or a command%s", "");
    if (o->nvtrace == 0 && (o->vrecord || o->vrecord_max || o->vinproc || o->vtimeout_s))
        return bad("-vrecord, -vrecord-max, -vinproc and -vtimeout need -vtrace%s", "");
    if (o->vrecord_max && !o->vrecord)
        return bad("-vrecord-max needs -vrecord%s", "");
    if (o->vburst && !o->vstep)
        return bad("-vburst needs -vstep%s", "");
    if ((o->vregs || o->vbp_first || o->vbp) && o->nvtrace == 0)
        return bad("-vregs, -vbp and -vbp-first need -vtrace%s", "");
    if (o->vstep && (o->vregs || o->vbp_first || o->vbp))
        return bad("-vregs, -vbp and -vbp-first do not combine with -vstep%s", "");
    if (o->vregs && (o->vbp_first || o->vbp))
        return bad("-vbp and -vbp-first do not combine with -vregs%s", "");
    if (o->push_spool_mb && !o->push)
        return bad("-push-spool needs -push%s", "");
    if (o->voracle && (o->nvtrace == 0 || o->vstep || (!o->pid && !o->argv)))
        return bad("-voracle needs -vtrace, -p PID or a command, and not -vstep%s", "");
    if (o->voracle_on_ms && !o->voracle)
        return bad("-voracle-duty needs -voracle%s", "");
    if (o->vstep_first && !o->vstep)
        return bad("-vstep-first needs -vstep%s", "");
    return 0;
}

/* The daemon, with the plugin directories of this program. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    dcpi_daemon_opts_t *o = arg;
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    o->plugin_dirs = dirs;
    if (dcpi_vp_set_search_dirs(dirs) < 0) {
        fprintf(stderr, "dcpid: out of memory\n");
        return 1;
    }
    return dcpi_daemon_run(o);
}

int main(int argc, char **argv)
{
    if (getenv("DCPI__CACHE_WRITER")) /* the daemon's cache writer (core/daemon/cachejob.c) */
        return dcpi_daemon_cache_writer(argc, argv);
    dcpi_cli_t cli = {.tool = "dcpid",
                      .flags = flags,
                      .omit = DCPI_CLI_EPOCH | DCPI_CLI_PLATFORM,
                      .command = 1,
                      .footer =
                          "  -- command args           run command, profile it and its children, "
                          "exit with its status\n\nWithout -p or a command dcpid samples the "
                          "whole system as a daemon; control it\nwith dcpictl (flush, "
                          "epoch, quit, status, epochs)."};
    dcpi_cli_main_t m = {.check = check, .run = run, .raw_status = 1};
    return dcpi_cli_main(&cli, argc, argv, &m, &o);
}
