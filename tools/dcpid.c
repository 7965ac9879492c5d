/*
 * dcpid - the dcpi daemon: continuous PC sampling (and -vtrace value profiling) with perf_event
 * into the profile database.
 * This file only parses the DCPI-style single-dash command line; core/daemon/ does the work
 * (dcpi_daemon_run in daemon.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampling/aggregate.h"
#include "core/daemon/daemon.h"
#include "core/plugin/vploader.h"
#include "core/store/vsummary.h"
#include "core/values/vtrace.h"
#include "dcpi/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dcpid [-db DIR] [-event name[:period]]... [-freq HZ] [-flush SECONDS]\n"
            "             [-hash ENTRIES] [-nodaemon] [-log FILE] [-verbose] [-quiet]\n"
            "             [-vtrace PLUGIN]... [-vcontext] [-vrate N] [-vhot N] [-vhash N]\n"
            "             [-g] [-vstep [-vburst N] [-vstep-first] | -vregs | -vbp-first]\n"
            "             [-vrecord [-vrecord-max MB]] [-vinproc] [-vtimeout S]\n"
            "             [-vtrace-insecure]\n"
            "             [-p PID | -- command args...]\n"
            "  -db DIR          profile database (default $DCPIDB, else ./dcpidb)\n"
            "  -event E[:P]     sample event E (cpu-clock task-clock cycles instructions\n"
            "                   branch-misses cache-misses), every P events; repeatable\n"
            "                   (default: cycles if the machine has it, else cpu-clock)\n"
            "  -freq HZ         samples per second per CPU when no period is given (1000)\n"
            "  -flush SECONDS   write the profiles every SECONDS (600)\n"
            "  -hash ENTRIES    in-memory table size (262144); flushed early at 75%%\n"
            "  -nodaemon        system-wide, but stay in the foreground and log to stderr\n"
            "  -log FILE        log file (default DB/dcpid-<platform>.log)\n"
            "  -verbose, -quiet more or less logging\n"
            "  -vtrace PLUGIN   value-profile with PLUGIN (name or path); repeatable\n"
            "  -vcontext        value samples carry the return addresses of two callers\n"
            "  -vrate N         at most N value samples per second per CPU (%d)\n"
            "  -vhot N          hotlist size per instruction (%d)\n"
            "  -vhash N         value summaries in memory (%d); flushed early at 75%%\n"
            "  -vregs           values from the PC samples' registers (the regs backend)\n"
            "                   instead of execute breakpoints (the bp backend, the default\n"
            "                   where perf_event breakpoints work): biased by interrupt skid\n"
            "  -vbp-first       keep each breakpoint's first sample (dropped by default: it is\n"
            "                   the execution right after the interrupt, skid-biased)\n"
            "  -g               record the call chain of every sample (stack profiles)\n"
            "  -vstep           value traces by single-stepping bursts (exact values): an\n"
            "                   agent preloaded into the command, ptrace with -p; -vrate N is\n"
            "                   then bursts per second of each thread's CPU time (100)\n"
            "  -vburst N        instructions per -vstep burst (32 with a command, 16 with -p;\n"
            "                   at most 256)\n"
            "  -vstep-first     also trace each burst's first instruction, the one the timer\n"
            "                   interrupted (dropped by default: it over-represents slow ones)\n"
            "  -vrecord         record the value traces for dcpireplay (values.trace)\n"
            "  -vrecord-max MB  bound of the recording (256)\n"
            "  -vinproc         run plugins in dcpid, not one worker process per plugin\n"
            "  -vtimeout S      a plugin whose vp_prof_process runs S seconds is disabled (2)\n"
            "  -vtrace-insecure as root, load plugins that others could have written\n"
            "  -p PID           profile one running process until it exits\n"
            "  -- command args  run command, profile it and its children, exit with its status\n"
            "  -h, -V           help, version\n"
            "Without -p or a command dcpid samples the whole system as a daemon; control it\n"
            "with dcpictl (flush, epoch, quit, status).\n",
            DCPI_VTRACE_DEFAULT_RATE, DCPI_VSUMMARY_DEFAULT_CAP, DCPI_VTRACE_DEFAULT_HASH);
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "dcpid: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try -h)\n");
    return 2;
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v == 0 || v > max)
        return -1;
    *out = v;
    return 0;
}

/* A flag with a numeric value. */
static int numeric(const char *flag, const char *val, unsigned long max, unsigned long *out)
{
    if (parse_ulong(val, max, out) < 0) {
        fprintf(stderr, "dcpid: %s: bad value '%s' (try -h)\n", flag, val);
        return -1;
    }
    return 0;
}

static int flag_with_value(dcpi_daemon_opts_t *o, const char *f, const char *v)
{
    unsigned long n;
    if (strcmp(f, "-db") == 0)
        o->db = v;
    else if (strcmp(f, "-log") == 0)
        o->log = v;
    else if (strcmp(f, "-event") == 0) {
        if (o->nevents == DCPI_SAMPLER_MAXEV)
            return bad("too many -event flags (at most 8)%s", "");
        o->events[o->nevents++] = v;
    } else if (strcmp(f, "-freq") == 0) {
        if (numeric(f, v, 1000000, &n) < 0)
            return 2;
        o->freq = (unsigned)n;
    } else if (strcmp(f, "-flush") == 0) {
        if (numeric(f, v, 86400 * 365, &n) < 0)
            return 2;
        o->flush_s = (unsigned)n;
    } else if (strcmp(f, "-hash") == 0) {
        if (numeric(f, v, 1UL << 30, &n) < 0)
            return 2;
        o->hash = n;
    } else if (strcmp(f, "-vtrace") == 0) {
        if (o->nvtrace == DCPI_DAEMON_MAXVP)
            return bad("too many -vtrace flags (at most 16)%s", "");
        o->vtrace[o->nvtrace++] = v;
    } else if (strcmp(f, "-vrate") == 0) {
        if (numeric(f, v, 1000000, &n) < 0)
            return 2;
        o->vrate = (unsigned)n;
    } else if (strcmp(f, "-vhot") == 0) {
        if (numeric(f, v, DCPI_VSUMMARY_MAX_CAP, &n) < 0)
            return 2;
        o->vhot = (unsigned)n;
    } else if (strcmp(f, "-vhash") == 0) {
        if (numeric(f, v, 1UL << 26, &n) < 0)
            return 2;
        o->vhash = n;
    } else if (strcmp(f, "-vrecord-max") == 0) {
        if (numeric(f, v, 1UL << 20, &n) < 0)
            return 2;
        o->vrecord_max = (unsigned)n;
    } else if (strcmp(f, "-vtimeout") == 0) {
        if (numeric(f, v, 3600, &n) < 0)
            return 2;
        o->vtimeout_s = (unsigned)n;
    } else if (strcmp(f, "-vburst") == 0) {
        if (numeric(f, v, 256, &n) < 0)
            return 2;
        o->vburst = (unsigned)n;
    } else if (strcmp(f, "-p") == 0) {
        if (numeric(f, v, 1UL << 30, &n) < 0)
            return 2;
        o->pid = (pid_t)n;
    } else
        return bad("unknown flag '%s'", f);
    return 0;
}

static int is_valued(const char *f)
{
    static const char *v[] = {"-db",    "-log",    "-event",       "-freq",    "-flush",
                              "-hash",  "-p",      "-vtrace",      "-vrate",   "-vhot",
                              "-vhash", "-vburst", "-vrecord-max", "-vtimeout"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (strcmp(f, v[i]) == 0)
            return 1;
    return 0;
}

/* 0 to run, 1 when -h/-V was handled, 2 on a usage error. */
static int parse(dcpi_daemon_opts_t *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--") == 0) {
            if (i + 1 >= argc)
                return bad("%s needs a command", "--");
            o->argv = argv + i + 1;
            break;
        } else if (strcmp(f, "-h") == 0 || strcmp(f, "-help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(f, "-V") == 0 || strcmp(f, "-version") == 0) {
            printf("dcpid (dcpi) %s\n", DCPI_VERSION_STRING);
            return 1;
        } else if (strcmp(f, "-nodaemon") == 0) {
            o->nodaemon = 1;
        } else if (strcmp(f, "-verbose") == 0) {
            o->verbose = 1;
        } else if (strcmp(f, "-vcontext") == 0) {
            o->vcontext = 1;
        } else if (strcmp(f, "-g") == 0) {
            o->callgraph = 1;
        } else if (strcmp(f, "-vstep") == 0) {
            o->vstep = 1;
        } else if (strcmp(f, "-vregs") == 0) {
            o->vregs = 1;
        } else if (strcmp(f, "-vbp-first") == 0) {
            o->vbp_first = 1;
        } else if (strcmp(f, "-vstep-first") == 0) {
            o->vstep_first = 1;
        } else if (strcmp(f, "-vrecord") == 0) {
            o->vrecord = 1;
        } else if (strcmp(f, "-vinproc") == 0) {
            o->vinproc = 1;
        } else if (strcmp(f, "-vtrace-insecure") == 0) {
            o->vinsecure = 1;
        } else if (strcmp(f, "-quiet") == 0) {
            o->quiet = 1;
        } else if (is_valued(f)) {
            if (i + 1 >= argc)
                return bad("flag '%s' needs an argument", f);
            int rc = flag_with_value(o, f, argv[++i]);
            if (rc)
                return rc;
        } else {
            return bad(f[0] == '-' ? "unknown flag '%s'" : "unexpected argument '%s'", f);
        }
    }
    if (o->pid && o->argv)
        return bad("-p and a command exclude each other%s", "");
    if (o->nvtrace == 0 && (o->vcontext || o->vrate || o->vhot || o->vhash))
        return bad("-vcontext, -vrate, -vhot and -vhash need -vtrace%s", "");
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
    if ((o->vregs || o->vbp_first) && o->nvtrace == 0)
        return bad("-vregs and -vbp-first need -vtrace%s", "");
    if (o->vstep && (o->vregs || o->vbp_first))
        return bad("-vregs and -vbp-first do not combine with -vstep%s", "");
    if (o->vregs && o->vbp_first)
        return bad("-vbp-first does not combine with -vregs%s", "");
    if (o->vstep_first && !o->vstep)
        return bad("-vstep-first needs -vstep%s", "");
    return 0;
}

int main(int argc, char **argv)
{
    dcpi_daemon_opts_t o = {.freq = DCPI_DAEMON_DEFAULT_FREQ,
                            .flush_s = DCPI_DAEMON_DEFAULT_FLUSH,
                            .hash = DCPI_AGG_DEFAULT_ENTRIES};
    int rc = parse(&o, argc, argv);
    if (rc)
        return rc == 1 ? 0 : 2;
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    o.plugin_dirs = dirs;
    if (dcpi_vp_set_search_dirs(dirs) < 0) {
        fprintf(stderr, "dcpid: out of memory\n");
        return 1;
    }
    return dcpi_daemon_run(&o);
}
