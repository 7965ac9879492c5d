/*
 * replay.h - run value-profiler plugins over recorded value traces (dcpireplay(1),
 * docs/dcpireplay.md): read every segment of DB/<epoch>/<platform>/values.trace
 * (core/store/tracefile.h), give each plugin, for each recorded trace, the entries whose key its
 * specification selects re-encoded with its own vlist, resolve the vsamples it returns through
 * the trace's MAP records and write the per-(image, plugin) value profiles into the database as
 * dcpid would, marked "origin values.replay".
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
    int merge; /* 1: merge into existing .vprof files; 0: an existing one is an error */
    /* Called with one line per warning (torn tail, bad record, plugin error); may be NULL. */
    void (*warn)(void *arg, const char *line);
    void *warn_arg;
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
    uint64_t plugin_errors; /* vp_prof_process failures */
    uint64_t not_recorded;  /* records the recorder refused (bound), from the trailers */
    uint64_t files;         /* value-profile files written */
} dcpi_replay_stats_t;

/*
 * Replay every plugin of set (vp_prof_init and vp_prof_done are called here) over the epoch's
 * recording and write the value profiles. Returns 0 when every file was written (torn or bad
 * segments are warnings, counted in st), or: DCPI_ENOENT (no values.trace or no segment),
 * DCPI_EFORMAT (segments disagree on event, period or contexts, or no header is readable),
 * DCPI_EPLUGIN (vp_prof_init returned NULL, or vp_prof_process returned more than
 * VSAMPLE_BUFFER_SIZE vsamples: that plugin's profiles are not written), DCPI_EEXIST (a
 * .vprof exists and !merge), or a write error; err gets one line. st may be NULL.
 */
int dcpi_replay_run(dcpi_vp_set_t *set, const dcpi_replay_opts_t *o, dcpi_replay_stats_t *st,
                    char *err);

#endif
