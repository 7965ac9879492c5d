/*
 * replay.h - run value-profiler plugins over recorded value traces (dcpireplay(1),
 * docs/dcpireplay.md): read every segment of DB/<epoch>/<platform>/values.trace
 * (core/store/tracefile.h), give each plugin the recorded entries its specification selects
 * (key, filter, symbol, range, as dcpid decides them) re-encoded with its own vlist, and write
 * the per-(image, plugin) value profiles into the database as dcpid would, marked "origin
 * values.replay".
 *
 * The plugins run in dcpid's value pipeline (core/values/values.h): each in its own worker
 * process with dcpid's watchdog (core/plugin/vpworker.h), the vsamples resolved through the
 * recording's MAP records. A plugin that crashes, hangs or breaks the buffer contract is
 * disabled with one line, "NAME: disabled: REASON; its value profiles are not written", through
 * say(); the others go on and their profiles are written.
 *
 * A plugin only gets values that were recorded: a value kind its vlist asks for that the
 * recorded entry does not carry (or carries as missing) is given to it as missing. Keys that
 * were not recorded give it no entries.
 */
#ifndef DCPI_CORE_REPLAY_H
#define DCPI_CORE_REPLAY_H

#include <stdint.h>

#include "core/plugin/vploader.h"

#define DCPI_REPLAY_ORIGIN "values.replay" /* value of the "origin" header line */

typedef struct dcpi_replay_opts {
    const char *db, *epoch, *platform; /* resolved names */
    unsigned hotsize;                  /* 0: the recording's hotsize, else 16 */
    int merge;           /* 1: merge into existing .vprof files; 0: an existing one is an error */
    unsigned timeout_ms; /* the workers' watchdog (0: DCPI_VPWORKER_DEFAULT_TIMEOUT_MS) */
    /* Called with one line per problem (level DCPI_LOG_ERR: a plugin disabled or failing;
     * DCPI_LOG_WARN: a torn tail, a bad record); may be NULL. */
    void (*say)(void *arg, int level, const char *line);
    void *say_arg;
} dcpi_replay_opts_t;

typedef struct dcpi_replay_stats {
    uint64_t segments;      /* segment files read */
    uint64_t torn;          /* segments ending in a torn tail (their prefix was used) */
    uint64_t bad;           /* segments with a malformed record (their prefix was used) */
    uint64_t maps, traces;  /* records read */
    uint64_t seen;          /* SEEN pairs read */
    uint64_t entries;       /* recorded trace entries */
    uint64_t bad_traces;    /* recorded traces that did not parse to their end */
    uint64_t fed;           /* entries handed to plugins (all plugins) */
    uint64_t values;        /* vsamples merged */
    uint64_t lost;          /* vsamples or entries lost (no MAP for the pc, plugin error) */
    uint64_t plugin_errors; /* vp_prof_process failures (a disabled plugin counts one) */
    uint64_t disabled;      /* plugins disabled (crashed, hung, broke the buffer contract) */
    uint64_t not_recorded;  /* records the recorder refused (bound), from the trailers */
    uint64_t files;         /* value-profile files written */
    uint64_t clusters;      /* CLUSTER records read (the clusters of their TRACE's entries) */
    uint64_t bad_clusters;  /* CLUSTER records ignored: not followed by a TRACE of their pid
                               with as many entries (said once, as a warning) */
} dcpi_replay_stats_t;

/*
 * Replay every plugin of set (vp_prof_init and vp_prof_done are called here, vp_prof_process in
 * the workers) over the epoch's recording and write the value profiles. Returns 0 when every
 * file of every plugin not disabled was written (torn or bad segments are warnings, counted in
 * st; disabled plugins are counted in st->disabled and said), or: DCPI_ENOENT (no values.trace
 * or no segment), DCPI_EFORMAT (segments disagree on event, period or contexts, or no header is
 * readable), DCPI_EPLUGIN (vp_prof_init returned NULL), DCPI_EEXIST (a .vprof exists and
 * !merge: nothing is written), or a write error; err gets one line. st may be NULL.
 */
int dcpi_replay_run(dcpi_vp_set_t *set, const dcpi_replay_opts_t *o, dcpi_replay_stats_t *st,
                    char *err);

#endif
