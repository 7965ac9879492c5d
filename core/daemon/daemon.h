/*
 * daemon.h - dcpid itself: setup (database, lock, epoch, events, loadmap, control socket),
 * the epoll loop that drains the perf rings into the aggregate table, flushing into the
 * profile database, epochs, the control socket server and status. tools/dcpid.c only parses
 * the command line into dcpi_daemon_opts_t and calls dcpi_daemon_run.
 */
#ifndef DCPI_CORE_DAEMON_H
#define DCPI_CORE_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

#include "core/sampling/sampler.h"

#define DCPI_DAEMON_DEFAULT_FREQ       1000
#define DCPI_DAEMON_DEFAULT_FLUSH      60  /* at most this much is lost to a SIGKILL */
#define DCPI_DAEMON_MAXVP              16  /* -vtrace plugins */
#define DCPI_DAEMON_DEFAULT_VRECORD_MB 256 /* -vrecord-max */
/* -vburst defaults: the agent's 32 give >= 1000 value samples per hot instruction of a loop in
 * 6 s at 100 bursts/s (bench/hotlist_accuracy.sh); ptrace steps cost ~4x more: 16 */
#define DCPI_DAEMON_DEFAULT_VBURST         32
#define DCPI_DAEMON_DEFAULT_VBURST_PTRACE  16
#define DCPI_DAEMON_DEFAULT_VSTEP_RATE     100 /* -vrate with -vstep: bursts/s per thread */
#define DCPI_DAEMON_DEFAULT_VBUDGET        1.0 /* -vbudget: % of a thread's CPU for bp capture */
#define DCPI_DAEMON_DEFAULT_VBUDGET_INPROC 3.0 /* -vbudget with the inproc backend (a command) */
#define DCPI_ORACLE_ON_MS                  20  /* -voracle-duty: windows of 20 ms ... */
#define DCPI_ORACLE_EVERY_MS               200 /* ... one in every 200 ms */

typedef struct dcpi_daemon_opts {
    const char *db;                         /* NULL: $DCPIDB, else ./dcpidb */
    const char *events[DCPI_SAMPLER_MAXEV]; /* "name[:period]"; none: cycles or cpu-clock */
    int nevents;
    unsigned freq;          /* samples per second per CPU (default 1000) */
    unsigned flush_s;       /* flush interval (default DCPI_DAEMON_DEFAULT_FLUSH) */
    unsigned epoch_every_s; /* -epoch-every: a new epoch every so many seconds (0: never) */
    uint64_t keep_s;        /* -keep DURATION: remove epochs that ended longer ago (0: keep) */
    uint64_t keep_bytes;    /* -keep SIZE: remove the oldest epochs beyond this size (0: keep) */
    size_t hash;            /* aggregate table entries (default DCPI_AGG_DEFAULT_ENTRIES) */
    int nodaemon;           /* system-wide: stay in the foreground, log to stderr */
    const char *log; /* log file (NULL: DB/dcpid-<platform>.log, or stderr with nodaemon; "-":
                        stderr) */
    int verbose, quiet;
    pid_t pid; /* -p PID (0: none) */
    /* value profiling (docs/dcpid.md): -vtrace plugins, -vcontext, -vrate, -vhot, -vhash */
    const char *vtrace[DCPI_DAEMON_MAXVP];
    int nvtrace;
    int vcontext;
    unsigned vrate;  /* value traces per second per CPU (0: DCPI_VALUES_DEFAULT_RATE) */
    double vbudget;  /* bp backend: % of each thread's CPU time its breakpoint hits may take
                        (0: DCPI_DAEMON_DEFAULT_VBUDGET) */
    unsigned vhot;   /* hotlist size (0: 16) */
    size_t vhash;    /* summaries in memory (0: DCPI_VALUES_DEFAULT_HASH) */
    char **argv;     /* -- command args (NULL: none), NULL-terminated */
    int callgraph;   /* -g: call chains of every sample into stack profiles */
    int vstep;       /* -vstep: the step backend (agent with a command, ptrace with -p) */
    int vregs;       /* -vregs: the regs backend even where execute breakpoints work */
    int vbp;         /* -vbp: the bp backend (dcpid arms) even for a command (inproc otherwise) */
    int vbp_first;   /* -vbp-first: keep each breakpoint arm's first (skid-biased) sample */
    int vstep_first; /* -vstep-first: keep each burst's first (interrupted) instruction */
    unsigned vburst; /* -vburst: instructions per burst (0: DCPI_DAEMON_DEFAULT_VBURST[_PTRACE]) */
    const char *const *plugin_dirs; /* NULL-terminated; -vstep finds the agent in their parents */
    /* plugin isolation and recording (docs/vprofiler.md, docs/dcpireplay.md) */
    int vinproc;            /* -vinproc: vp_prof_process in dcpid itself (no worker processes) */
    unsigned vtimeout_s;    /* -vtimeout: worker watchdog in seconds (0: 2) */
    int vinsecure;          /* -vtrace-insecure: no root ownership check of plugins */
    int vrecord;            /* -vrecord: record value traces into values.trace */
    unsigned vrecord_max;   /* -vrecord-max MB (0: DCPI_DAEMON_DEFAULT_VRECORD_MB) */
    const char *push;       /* -push URL: every flush to the fleet store (docs/fleet.md) */
    unsigned push_spool_mb; /* -push-spool MB: bound of the spool (0: 64) */
    double duty;            /* -duty FRACTION: sample in random windows of this share (0: 1) */
    const char *voracle;    /* -voracle ADDR:IMAGE: every execution of one instruction */
    unsigned voracle_on_ms, voracle_every_ms; /* -voracle-duty ON/EVERY (0: 20/200) */
} dcpi_daemon_opts_t;

/*
 * Run dcpid as described by o and return the process exit status: 0 (quit, signal), 1 (an
 * error, printed on stderr as one line "dcpid: reason"), or the command's status
 * (128 + signal when it was killed, 127 when it could not be executed). In the default
 * system-wide mode the calling process returns once the daemon is ready (or failed).
 */
int dcpi_daemon_run(const dcpi_daemon_opts_t *o);
/* dcpid run again as the writer of the code and symbol caches (DCPI__CACHE_WRITER is set; argv
 * "dcpid DB PATH ID [PATH ID]...", core/daemon/cachejob.c): writes them, returns the exit status.
 */
int dcpi_daemon_cache_writer(int argc, char **argv);

#endif
