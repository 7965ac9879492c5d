/*
 * vstep.h - dcpid -vstep: the step backend (backend.h; docs/step-backend.md, docs/dcpid.md).
 *
 * Agent mode (a command): the command runs with libdcpi-agent.so preloaded and
 * DCPI_AGENT_RING=/dev/shm/dcpi-step-<dcpid pid>; its rings are scanned and drained at each
 * drain. ptrace mode (-p PID): every thread is seized at start; PC samples of the target admit
 * bursts (token bucket per thread) that the drains single-step; the target is left running by
 * stop. In both modes the step records go to the sink through dcpi_values_step (step.c).
 * All calls from the thread that created it (ptrace is per tracer thread). Not thread-safe.
 */
#ifndef DCPI_CORE_VSTEP_H
#define DCPI_CORE_VSTEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/values/backend.h"
#include "core/values/values.h"

#define DCPI_VSTEP_AGENT        "libdcpi-agent.so"
#define DCPI_VSTEP_AGENT_ENV    "DCPI_AGENT_PATH" /* the agent library, overriding the search */
#define DCPI_VSTEP_TICK_MS      10                /* loop period while attached (ptrace) */
#define DCPI_VSTEP_MAX_PER_TICK 8                 /* ptrace bursts per loop iteration */

typedef struct dcpi_vstep_opts {
    unsigned burst; /* instructions per burst (1..256) */
    unsigned rate;  /* bursts per second of a thread's CPU time */
    /* 1: the first record of each burst (the instruction the timer or sample interrupted, which
     * over-represents slow executions) becomes a trace entry too; 0: it is dropped and counted */
    int keep_first;
    /* agent: plugin directories (NULL-terminated, may be NULL): the agent is looked up in their
     * parents (<build>/plugins -> <build>/libdcpi-agent.so, <libdir>/dcpi -> <libdir>/...) */
    const char *const *plugin_dirs;
    /* ptrace: CPU nanoseconds one PC sample stands for (credit of the thread's bucket) */
    uint64_t ns_per_sample;
} dcpi_vstep_opts_t;

/* Agent mode: find the agent, open the drain for /dev/shm/dcpi-step-<getpid()>. 0 or a
 * negative DCPI_E* with err "-vstep: reason". The backend (backend.h) then gives:
 *   child_env  in the command's process, between fork and exec: LD_PRELOAD (prepended),
 *              DCPI_AGENT_RING, DCPI_AGENT_BURST, DCPI_AGENT_RATE;
 *   pid_event  at an exec, every record of the rings mapped so far to the sink;
 *   drain      agent: the rings into the sink, then the rings of gone processes freed; ptrace:
 *              pending stops, the admitted bursts run; 1 once the ptrace target is gone;
 *   timeout_ms DCPI_VSTEP_TICK_MS while attached (ptrace), -1 otherwise;
 *   stop       ptrace: detach (every thread keeps running); agent: nothing;
 *   status     "vstep agent bursts B steps S lost L" or "vstep ptrace bursts B steps S", then
 *              "vstep records R entries E first-dropped F";
 *   free       stop, close the rings (unlinking their files). */
int dcpi_vstep_agent_new(dcpi_values_t *vt, const dcpi_vstep_opts_t *o, dcpi_vbackend_t **out,
                         char *err);
/* ptrace mode: seize every thread of pid; PC samples of the target (pc) admit bursts (token
 * bucket per thread) that drain single-steps. 0, DCPI_ESRCH, DCPI_EPERM (err says why),
 * DCPI_ENOMEM */
int dcpi_vstep_ptrace_new(dcpi_values_t *vt, const dcpi_vstep_opts_t *o, pid_t pid,
                          dcpi_vbackend_t **out, char *err);

/* The agent library (shared with the inproc backend): $DCPI_AGENT_PATH, else next to a plugin
 * directory's parent, into out. 0 or DCPI_ENOENT with err "FLAG: reason". */
int dcpi__vagent_find(const char *const *dirs, const char *flag, char *out, size_t len, char *err);
/* In the command's process between fork and exec: the agent prepended to LD_PRELOAD and
 * DCPI_AGENT_RING=prefix. 0 or -1. */
int dcpi__vagent_env(const char *agent, const char *prefix);

#endif
