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

static const dcpi_cli_flag_t flags[] = {
    {"-e", "E[:P]",
     "sample event E (cpu-clock task-clock cycles instructions branch-misses\n"
     "cache-misses), every P events; repeatable (default: cycles if the machine\n"
     "has it, else cpu-clock)",
     "-event --event"},
    {"-freq", "HZ",
     "samples per second per CPU when no period is given (" STR(DCPI_DAEMON_DEFAULT_FREQ) ")",
     "-F --freq"},
    {"-flush", "SECONDS", "write the profiles every SECONDS (" STR(DCPI_DAEMON_DEFAULT_FLUSH) ")",
     NULL},
    {"-epoch-every", "DURATION", "start a new epoch every DURATION (30s, 10m, 1h, 1d, 1w)", NULL},
    {"-keep", "D|SIZE",
     "remove the platform's oldest epochs once they ended more than D ago\n"
     "(12h, 7d, 2w), or while all of them take more than SIZE on disk (500M,\n"
     "2G); never the current one; both may be given",
     NULL},
    {"-hash", "ENTRIES",
     "in-memory table size (" STR(DCPI_AGG_DEFAULT_ENTRIES) "); flushed early at 75%", NULL},
    {"-nodaemon", NULL, "system-wide, but stay in the foreground and log to stderr", NULL},
    {"-log", "FILE",
     "log file (default DB/dcpid-<platform>.log; '-' or /dev/stderr: standard\nerror)", NULL},
    {"-verbose", NULL, "more logging", NULL},
    {"-quiet", NULL, "less logging (warnings and errors)", NULL},
    {"-vtrace", "PLUGIN", "value-profile with PLUGIN (name or path); repeatable", NULL},
    {"-vcontext", NULL, "value samples carry the return addresses of two callers", NULL},
    {"-vrate", "N",
     "at most N value samples per second per CPU (" STR(DCPI_VALUES_DEFAULT_RATE) ")", NULL},
    {"-vbudget", "PCT",
     "the breakpoints' triggers or ticks, arms and hits take at most PCT% of each\n"
     "thread's CPU time (inproc " STR(DCPI_DAEMON_DEFAULT_VBUDGET_INPROC) ", bp " STR(
         DCPI_DAEMON_DEFAULT_VBUDGET) "; their costs are measured at start)",
     NULL},
    {"-voracle", "ADDR:IMAGE",
     "every execution of the instruction at ADDR (ELF address as dcpilist\n"
     "shows it, or SYMBOL[+OFF]) of IMAGE, in windows: its exact values in\n"
     "value profiles NAME.oracle beside each plugin's (slows the target)",
     NULL},
    {"-voracle-duty", "ON/EVERY",
     "-voracle's windows: ON ms in every EVERY ms (" STR(DCPI_ORACLE_ON_MS) "/" STR(
         DCPI_ORACLE_EVERY_MS) "; ON = EVERY: the whole run)",
     NULL},
    {"-vhot", "N", "hotlist size per instruction (" STR(DCPI_VSUMMARY_DEFAULT_CAP) ")", NULL},
    {"-vhash", "N",
     "value summaries in memory (" STR(DCPI_VALUES_DEFAULT_HASH) "); flushed early at 75%", NULL},
    {"-vregs", NULL,
     "values from the PC samples' registers (the regs backend) instead of\n"
     "execute breakpoints (the bp backend, the default where perf_event\n"
     "breakpoints work): biased by interrupt skid",
     NULL},
    {"-vbp", NULL,
     "with a command: the bp backend (dcpid arms a breakpoint after a PC\n"
     "sample) instead of the inproc one (the command's threads arm their own)",
     NULL},
    {"-vbp-first", NULL,
     "keep each breakpoint's first sample (dropped by default: it is the\n"
     "execution right after the interrupt, skid-biased)",
     NULL},
    {"-g", NULL, "record the call chain of every sample (stack profiles)", NULL},
    {"-vstep", NULL,
     "value traces by single-stepping bursts (exact values): an agent preloaded\n"
     "into the command, ptrace with -p; -vrate N is then bursts per second of\n"
     "each thread's CPU time (100)",
     NULL},
    {"-vburst", "N", "instructions per -vstep burst (32 with a command, 16 with -p; at most 256)",
     NULL},
    {"-vstep-first", NULL,
     "also trace each burst's first instruction, the one the timer interrupted\n"
     "(dropped by default: it over-represents slow ones)",
     NULL},
    {"-vrecord", NULL, "record the value traces for dcpireplay (values.trace)", NULL},
    {"-vrecord-max", "MB", "bound of the recording (256)", NULL},
    {"-vinproc", NULL, "run plugins in dcpid, not one worker process per plugin", NULL},
    {"-vtimeout", "S", "a plugin whose vp_prof_process runs S seconds is disabled (2)", NULL},
    {"-vtrace-insecure", NULL, "as root, load plugins that others could have written", NULL},
    {"-p", "PID", "profile one running process until it exits", "--pid"},
    {"-push", "URL",
     "ship every flush to the fleet store at URL (ClickHouse, docs/fleet.md),\n"
     "spooled on disk while it is down",
     NULL},
    {"-duty", "FRACTION",
     "sample only that share of the time, in randomly placed windows (fleets:\n"
     "-fleet queries weight each host by 1/FRACTION); 0 < FRACTION <= 1",
     NULL},
    {"-push-spool", "MB", "bound of the push spool (64); batches beyond it are dropped, counted",
     NULL},
    {NULL, NULL, NULL, NULL},
};

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "dcpid: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try -h)\n");
    return 2;
}

/* "-" and the names of the standard error stream: the log goes to stderr. */
static const char *log_target(const char *v)
{
    static const char *err_names[] = {"-", "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"};
    for (size_t i = 0; i < sizeof err_names / sizeof err_names[0]; i++)
        if (!strcmp(v, err_names[i]))
            return "-";
    return v;
}

/* The flags with a whole-number value from 1 to max, each into its field of the options. */
#define NUM(flag, max, field)                                                                      \
    {                                                                                              \
        flag, max, offsetof(dcpi_daemon_opts_t, field), sizeof(((dcpi_daemon_opts_t *)0)->field)   \
    }
static const struct {
    const char *name;
    unsigned long max;
    size_t off, size;
} numerics[] = {
    NUM("-freq", 1000000, freq),
    NUM("-flush", 86400 * 365, flush_s),
    NUM("-hash", 1UL << 30, hash),
    NUM("-vrate", 1000000, vrate),
    NUM("-vhot", DCPI_VSUMMARY_MAX_CAP, vhot),
    NUM("-vhash", 1UL << 26, vhash),
    NUM("-vrecord-max", 1UL << 20, vrecord_max),
    NUM("-push-spool", 1UL << 20, push_spool_mb),
    NUM("-vtimeout", 3600, vtimeout_s),
    NUM("-vburst", 256, vburst),
    NUM("-p", 1UL << 30, pid),
};
#undef NUM

/* A flag of the numerics table: 1 (not one of them), 0, or 2 after a bad value. */
static int flag_numeric(dcpi_daemon_opts_t *o, const char *f, const char *v)
{
    for (size_t i = 0; i < sizeof numerics / sizeof numerics[0]; i++) {
        if (strcmp(f, numerics[i].name) != 0)
            continue;
        unsigned long n;
        if (dcpi_cli_flag_uint("dcpid", f, v, 1, numerics[i].max, &n))
            return 2;
        char *dst = (char *)o + numerics[i].off;
        if (numerics[i].size == sizeof(unsigned long)) {
            unsigned long x = n;
            memcpy(dst, &x, sizeof x);
        } else {
            unsigned x = (unsigned)n; /* unsigned and pid_t: n <= 2^30 */
            memcpy(dst, &x, sizeof x);
        }
        return 0;
    }
    return 1;
}

/* -epoch-every, -keep, -vbudget, -voracle-duty and -duty: values that are not whole numbers. */
static int flag_measure(dcpi_daemon_opts_t *o, const char *f, const char *v)
{
    uint64_t x;
    char *end, c;
    if (strcmp(f, "-epoch-every") == 0) {
        if (dcpi__parse_duration(v, 1, &x) < 0 || x > 86400u * 365)
            return bad("-epoch-every: bad duration '%s' (30s, 10m, 1h, 1d)", v);
        o->epoch_every_s = (unsigned)x;
    } else if (strcmp(f, "-keep") == 0) {
        if (dcpi__parse_duration(v, 0, &x) == 0)
            o->keep_s = x;
        else if (dcpi__parse_size(v, &x) == 0)
            o->keep_bytes = x;
        else
            return bad("-keep: '%s' is neither a duration (12h, 7d, 2w) nor a size (500M, 2G)", v);
    } else if (strcmp(f, "-vbudget") == 0) {
        double pct = strtod(v, &end);
        if (end == v || *end || !(pct >= 0.01 && pct <= 100))
            return bad("-vbudget: '%s' is not a percentage from 0.01 to 100", v);
        o->vbudget = pct;
    } else if (strcmp(f, "-voracle-duty") == 0) {
        unsigned on = 0, every = 0;
        if (sscanf(v, "%u/%u%c", &on, &every, &c) != 2 || on == 0 || every < on || every > 3600000)
            return bad("-voracle-duty wants ON/EVERY in ms, 0 < ON <= EVERY, not '%s'", v);
        o->voracle_on_ms = on;
        o->voracle_every_ms = every;
    } else if (strcmp(f, "-duty") == 0) {
        o->duty = strtod(v, &end);
        if (*end || !(o->duty > 0 && o->duty <= 1))
            return bad("-duty wants a fraction above 0 and at most 1, not '%s'", v);
    } else
        return bad("unknown flag '%s'", f);
    return 0;
}

static int flag_with_value(dcpi_daemon_opts_t *o, const char *f, const char *v)
{
    int rc = flag_numeric(o, f, v);
    if (rc != 1)
        return rc;
    if (strcmp(f, "-db") == 0)
        o->db = v;
    else if (strcmp(f, "-log") == 0)
        o->log = log_target(v);
    else if (strcmp(f, "-voracle") == 0)
        o->voracle = v;
    else if (strcmp(f, "-push") == 0)
        o->push = v;
    else if (strcmp(f, "-e") == 0) {
        if (o->nevents == DCPI_SAMPLER_MAXEV)
            return bad("too many -event flags (at most 8)%s", "");
        o->events[o->nevents++] = v;
    } else if (strcmp(f, "-vtrace") == 0) {
        if (o->nvtrace == DCPI_DAEMON_MAXVP)
            return bad("too many -vtrace flags (at most 16)%s", "");
        o->vtrace[o->nvtrace++] = v;
    } else
        return flag_measure(o, f, v);
    return 0;
}

/* A flag without a value. */
static void flag_alone(dcpi_daemon_opts_t *o, const char *f)
{
    static const struct {
        const char *name;
        size_t off;
    } b[] = {
        {"-nodaemon", offsetof(dcpi_daemon_opts_t, nodaemon)},
        {"-verbose", offsetof(dcpi_daemon_opts_t, verbose)},
        {"-quiet", offsetof(dcpi_daemon_opts_t, quiet)},
        {"-vcontext", offsetof(dcpi_daemon_opts_t, vcontext)},
        {"-g", offsetof(dcpi_daemon_opts_t, callgraph)},
        {"-vstep", offsetof(dcpi_daemon_opts_t, vstep)},
        {"-vregs", offsetof(dcpi_daemon_opts_t, vregs)},
        {"-vbp", offsetof(dcpi_daemon_opts_t, vbp)},
        {"-vbp-first", offsetof(dcpi_daemon_opts_t, vbp_first)},
        {"-vstep-first", offsetof(dcpi_daemon_opts_t, vstep_first)},
        {"-vrecord", offsetof(dcpi_daemon_opts_t, vrecord)},
        {"-vinproc", offsetof(dcpi_daemon_opts_t, vinproc)},
        {"-vtrace-insecure", offsetof(dcpi_daemon_opts_t, vinsecure)},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (!strcmp(f, b[i].name))
            *(int *)((char *)o + b[i].off) = 1;
}

/* One flag of the table, with its value or none (dcpi_cli_each). */
static int one_flag(void *arg, const char *f, const char *v)
{
    if (v)
        return flag_with_value(arg, f, v);
    flag_alone(arg, f);
    return 0;
}

/* 0 to run, 1 when -h/-V was handled, 2 on a usage error. */
static int parse(dcpi_daemon_opts_t *o, dcpi_cli_t *cli, int argc, char **argv)
{
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_parse(cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err) == 0 ? 1 : 2;
    o->db = cli->db_arg;
    if ((rc = dcpi_cli_each(cli, one_flag, o)) != 0)
        return rc;
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

int main(int argc, char **argv)
{
    if (getenv("DCPI__CACHE_WRITER")) /* the daemon's cache writer (core/daemon/cachejob.c) */
        return dcpi_daemon_cache_writer(argc, argv);
    dcpi_daemon_opts_t o = {.freq = DCPI_DAEMON_DEFAULT_FREQ,
                            .flush_s = DCPI_DAEMON_DEFAULT_FLUSH,
                            .hash = DCPI_AGG_DEFAULT_ENTRIES};
    dcpi_cli_t cli = {.tool = "dcpid",
                      .flags = flags,
                      .omit = DCPI_CLI_EPOCH | DCPI_CLI_PLATFORM,
                      .command = 1,
                      .footer =
                          "  -- command args           run command, profile it and its children, "
                          "exit with its status\n\nWithout -p or a command dcpid samples the "
                          "whole system as a daemon; control it\nwith dcpictl (flush, "
                          "epoch, quit, status, epochs)."};
    int rc = parse(&o, &cli, argc, argv);
    if (rc) {
        dcpi_cli_free(&cli);
        return rc == 1 ? 0 : 2;
    }
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    o.plugin_dirs = dirs;
    if (dcpi_vp_set_search_dirs(dirs) < 0) {
        fprintf(stderr, "dcpid: out of memory\n");
        dcpi_cli_free(&cli);
        return 1;
    }
    rc = dcpi_daemon_run(&o);
    dcpi_cli_free(&cli);
    return rc;
}
