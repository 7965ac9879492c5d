/*
 * values.h - dcpid's value profiling (dcpid -vtrace / -vstep, docs/dcpid.md,
 * vprofiler(5)): the division of labour of the seed. dcpid asks each plugin what to capture
 * (vp_prof_init); each backend appends entries to the plugins' traces, full traces go to the
 * plugin (vp_prof_process), and the vsamples it returns are merged into per-(image, plugin)
 * value profiles (core/store/vprof.h) that are written into the database with the PC profiles.
 *
 * One object, dcpi_values_t, the sink every backend (core/values/backend.h) feeds, in these
 * files (core/values/values-int.h is its inside):
 *   pipeline.c  what every backend feeds: plugins (in process or in worker processes),
 *               hand-over, merge, summaries, flush, counters;
 *   entry.c     a CPU state (dcpi_values_sample): read the instruction's bytes, decode it, and
 *               for each plugin whose specification has a vlist for its key compute the values
 *               from the user registers (core/capture/capture.h) and append an entry to that
 *               plugin's trace;
 *   step.c      the step backend's entry (dcpi_values_step, driven by core/values/vstep.h);
 *   record.c    -vrecord: the admitted samples into values.trace (core/store/tracefile.h).
 *
 * Rate (regs backend): at most `rate` sampled instructions per second per CPU become value-trace
 * entries (token bucket per CPU refilled by sample time; one admission covers every plugin). The
 * other candidates only count as "seen" (dcpi_vsummary_seen), so seen / vtot estimates the
 * thinning.
 *
 * No allocation per sample except a new summary the first time an instruction is seen; the
 * number of summaries is bounded (max_summaries): dcpi_values_needs_flush says when 75% are in
 * use, and vsamples that find the table full are counted as lost. Not thread-safe.
 */
#ifndef DCPI_CORE_VALUES_H
#define DCPI_CORE_VALUES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/capture/capture.h"
#include "core/image/loadmap.h"
#include "core/image/symbols.h"
#include "core/plugin/vploader.h"
#include "trace/trace.h"

#define DCPI_VALUES_DEFAULT_RATE 1000  /* -vrate: value traces per second per CPU */
#define DCPI_VALUES_DEFAULT_HASH 65536 /* -vhash: summaries in memory */
#define DCPI_VALUES_MAXCPU       1024

typedef struct dcpi_values dcpi_values_t;

/* Where vsamples resolve and which images the value profiles are about: dcpid's loadmap
 * (opts.images NULL), or another source such as dcpireplay's recorded MAP records
 * (core/values/replay.c). Images are numbered densely from 0 and live as long as the pipeline. */
typedef struct dcpi_values_images {
    void *arg;
    /* As dcpi_loadmap_resolve: 0 with the image and the offset of pc from its tstart. */
    int (*resolve)(void *arg, pid_t pid, uint64_t pc, dcpi_image_t **img, uint32_t *offset);
    /* The image of an index resolve gave. */
    dcpi_image_t *(*image)(void *arg, unsigned index);
} dcpi_values_images_t;

typedef struct dcpi_values_opts {
    unsigned rate;        /* per CPU per second (0: DCPI_VALUES_DEFAULT_RATE) */
    unsigned hotsize;     /* hotlist size per instruction (0: 16) */
    size_t max_summaries; /* 0: DCPI_VALUES_DEFAULT_HASH */
    int contexts;         /* -vcontext */
    /* Isolation (core/plugin/vpworker.h): 1 runs each plugin's vp_prof_process in its own worker
     * process with a watchdog of timeout_ms (0: DCPI_VPWORKER_DEFAULT_TIMEOUT_MS); 0 runs it
     * in this process (dcpid -vinproc). */
    int isolate;
    unsigned timeout_ms;
    /* -vrecord (docs/dcpireplay.md): record every admitted sample into the epoch's
     * values.trace (opened by dcpi_values_new_epoch); record_max bounds it in bytes (0: none). */
    int record;
    uint64_t record_max;
    /* The backend feeding this pipeline, written as "backend" into every .vprof header and
     * shown by dcpilist: "regs" (NULL) or "step". */
    const char *backend;
    /* NULL: the loadmap given to dcpi_values_new. */
    const dcpi_values_images_t *images;
    /* Where the pipeline's one-line messages go (a plugin disabled or failing, a failed flush):
     * report(report_arg, DCPI_LOG_ERR or _WARN, line); NULL: the log (core/base/log.h). */
    void (*report)(void *arg, int level, const char *line);
    void *report_arg;
    /* Appended to the line that says a plugin was disabled (NULL: nothing), e.g. dcpireplay's
     * "; its value profiles are not written". */
    const char *disable_note;
    /* dcpid -voracle: every plugin gets an oracle twin: the same plugin (dispatch and
     * specification), its own trace and worker, its vsamples in value profiles named
     * "NAME.oracle" (header backend "oracle"), fed only by dcpi_values_oracle_sample. */
    int oracle;
} dcpi_values_opts_t;

/* One user-mode sample as the regs backend sees it. */
typedef struct dcpi_values_sample {
    uint32_t pid, tid, cpu;
    uint64_t time; /* ns */
    uint64_t ip;
    uint64_t context0, context1; /* return addresses of the first two callers (0: none) */
    uint64_t cluster; /* not 0: the samples with this number are one cluster of consecutive
                         executions of the instruction (an arm's hits, inproc.c) */
    dcpi_regs_t regs; /* before the sampled instruction */
} dcpi_values_sample_t;

/* Per-plugin counters (status). */
typedef struct dcpi_values_stats {
    uint64_t traces;  /* traces handed to vp_prof_process */
    uint64_t values;  /* vsamples merged */
    uint64_t seen;    /* candidate samples (admitted or not) */
    uint64_t missing; /* trace entries with at least one missing value */
    uint64_t lost;    /* entries or vsamples lost (plugin error, table full, unresolved pc) */
    uint64_t errors;  /* vp_prof_process calls that failed */
    int disabled;
} dcpi_values_stats_t;

/* What the value-profile headers need besides the image (set by the daemon at each flush). */
typedef struct dcpi_values_flush_info {
    const char *db, *epoch, *platform, *event;
    uint64_t period;
    unsigned cpuspeed;
    int cpucount;
    const char *origin; /* the "origin" header line (NULL: none), e.g. "values.replay" */
    /* 1: an existing .vprof is an error (DCPI_EEXIST, "FILE: exists"), checked for every file
     * before any is written; 0: merge into it (dcpid). */
    int exclusive;
    int skip_disabled; /* 1: a disabled plugin's value profiles are not written */
} dcpi_values_flush_info_t;

/*
 * Call vp_prof_init of every plugin of set (the set stays the caller's; it must outlive vt)
 * and build the per-key tables. A plugin returning NULL: DCPI_EPLUGIN with "NAME: vp_prof_init
 * returned no specification" in err. lm is the daemon's loadmap (used to resolve pcs; NULL with
 * opts.images and no backend that reads code). On failure vp_prof_done has been called for the
 * plugins already initialized.
 */
int dcpi_values_new(dcpi_vp_set_t *set, dcpi_loadmap_t *lm, const dcpi_values_opts_t *o,
                    dcpi_values_t **out, char *err);
/* Hand pending traces to the plugins, call vp_prof_done, free (the set is not unloaded). */
void dcpi_values_free(dcpi_values_t *vt);

/* sample_regs_user for perf: the union of dcpi_capture_perf_mask over every vlist of every
 * plugin. */
uint64_t dcpi_values_regs_mask(const dcpi_values_t *vt);
unsigned dcpi_values_rate(const dcpi_values_t *vt);
int dcpi_values_contexts(const dcpi_values_t *vt);

/* One user-mode sample (see the steps in regs.c). */
void dcpi_values_sample(dcpi_values_t *vt, const dcpi_values_sample_t *s);
/* Hand every pending trace to its plugin (end of a ring drain, before a flush). */
void dcpi_values_end_drain(dcpi_values_t *vt);
/* The same, at most every DCPI_VALUES_BATCH_MS (now_ns: CLOCK_MONOTONIC) unless a trace is
 * half full: the bp backend drains at each arm trigger, and a plugin worker's round trip per
 * drain would keep dcpid from its next arm for as long as the worker waits for a CPU. */
#define DCPI_VALUES_BATCH_MS 50
void dcpi_values_end_drain_batched(dcpi_values_t *vt, uint64_t now_ns);
/* Hand pending traces of pid to their plugins (before its mappings change: exec, mmap, exit). */
void dcpi_values_pid_event(dcpi_values_t *vt, pid_t pid);

/* Whether 75% of the summaries are in use (flush early). */
int dcpi_values_needs_flush(const dcpi_values_t *vt);
/* Summaries in use / the bound. */
size_t dcpi_values_used(const dcpi_values_t *vt);
size_t dcpi_values_capacity(const dcpi_values_t *vt);

/*
 * Hand pending traces over, then write every (image, plugin) value profile into
 * DB/<epoch>/<platform>/<imagedir>/<vp_name>.vprof with dcpi_vprof_merge_write. Written ones
 * are released; a failed one stays in memory for the next flush (err gets the last failure).
 * Returns the number of files written, or a negative DCPI_E* when any failed. *failed (may be
 * NULL) gets the number of failures.
 */
int dcpi_values_flush(dcpi_values_t *vt, const dcpi_values_flush_info_t *fi, size_t *failed,
                      char *err);

/*
 * A new epoch (fi: its names and the profile header facts): with record, hand the recorder's
 * trace over, close its segment (logging refusals or errors) and open a new one in
 * DB/<epoch>/<platform>/values.trace. 0 (also without record) or a negative DCPI_E* with err.
 */
int dcpi_values_new_epoch(dcpi_values_t *vt, const dcpi_values_flush_info_t *fi, char *err);
/* The recorder's counters (dcpi_tracefile_stats of the open segment); DCPI_ENOENT without. */
struct dcpi_tracefile_stats;
int dcpi_values_record_stats(const dcpi_values_t *vt, struct dcpi_tracefile_stats *out);

/* Counters. */
unsigned dcpi_values_nplugins(const dcpi_values_t *vt);
const char *dcpi_values_plugin_name(const dcpi_values_t *vt, unsigned i);
void dcpi_values_plugin_stats(const dcpi_values_t *vt, unsigned i, dcpi_values_stats_t *out);
/* Why plugin i was disabled ("" when it is not), e.g. "vp_prof_process crashed (SIGSEGV)". */
const char *dcpi_values_plugin_why(const dcpi_values_t *vt, unsigned i);
/* A warning about plugin i's selection ("" none): "NAME: symbol=foo matched none of the
 * sampled instructions its keys select (...)", the same for range= and the instruction filter,
 * when it refused every instruction its keys select: a misspelt symbol, a range outside the
 * image. Valid until the next call. */
const char *dcpi_values_plugin_note(dcpi_values_t *vt, unsigned i);
/* The pid of plugin i's worker process (0: none; tests). */
int dcpi_values_plugin_worker(const dcpi_values_t *vt, unsigned i);
/* User samples whose instruction bytes could not be read (counted, skipped). */
uint64_t dcpi_values_nocode(const dcpi_values_t *vt);
/* User samples whose pc is in no known image, or undecodable bytes (counted, skipped). */
uint64_t dcpi_values_unresolved(const dcpi_values_t *vt);

/* The in-memory value profile of (image index, plugin i), NULL when none (tests). */
struct dcpi_vprof *dcpi_values_vprof(const dcpi_values_t *vt, unsigned image, unsigned i);

/* ---- the oracle (dcpid -voracle, opts.oracle) ----
 * A sample of the oracle's period-1 breakpoint into the oracle twins' traces only (always
 * admitted): 1 when some twin took it, 0 when none has a vlist for the instruction (or it could
 * not be resolved or decoded). Twins are indexed after the plugins: dcpi_values_plugin_name
 * and _stats take nplugins() + i for the i-th of dcpi_values_noracles(). */
int dcpi_values_oracle_sample(dcpi_values_t *vt, const dcpi_values_sample_t *s);
unsigned dcpi_values_noracles(const dcpi_values_t *vt);

/* The oracle's windows so far (cumulative over the run): windows that took executions, the
 * executions they took and the sum of the squares of each window's executions; all: 1 when one
 * window is the whole run (-voracle-duty 1/1: every execution, no sampling). The twins' value
 * profiles carry what was added since their last write (header keys oracle-windows,
 * oracle-execs, oracle-sumsq, oracle-all; docs/dcpiformat.md), from which dcpilist takes a
 * cluster bound: a window's executions are one draw, not many. */
void dcpi_values_oracle_windows(dcpi_values_t *vt, uint64_t windows, uint64_t execs, uint64_t sumsq,
                                int all);

/* ---- step backend entry points (dstep, step.c) ----
 * The step backend (dcpid -vstep, core/values/vstep.c) hands over step records
 * (core/capture/stepring.h) instead of samples: each goes into every enabled plugin's trace with
 * dcpi_step_encode (its vlists' values are exact), and the traces take the regs backend's path
 * (hand-over when full, on another pid, at dcpi_values_end_drain / _pid_event / _flush), so
 * vsamples land in the same per-(image, plugin) value profiles. se holds dcpi_values_nplugins()
 * step encoders, the caller's, zeroed before the first call. Returns the entries written over all
 * plugins. */
struct dcpi_step_encoder;
struct step_record;
int dcpi_values_step(dcpi_values_t *vt, struct dcpi_step_encoder *se, unsigned pid,
                     const struct step_record *rec);

/* ---- the inward interface: what a backend (backend.h) may do with the sink (sinkin.c). A
 * backend names a plugin by its index, 0 to dcpi_values_nplugins - 1. */

/* One trace entry as a backend gives it to the sink: its burst (pid, tid, time, whether the
 * entry carries contexts) and the entry (instruction, pc, callers, the plugin's vlist values). */
typedef struct dcpi_values_put {
    uint32_t pid, tid;
    uint64_t time;
    int contexts;
    const trace_inst_t *inst;
    uint64_t pc, c0, c1;
    int n;
    const trace_value_t *kinds;
    const uint64_t *values;
    unsigned missing;
    uint64_t cluster; /* dcpi_values_sample_t's */
} dcpi_values_put_t;
/* A candidate entry of plugin (counted as seen) into its trace, the one way entries of a backend
 * that has them ready (replay) reach a plugin: the trace is handed over first when it holds
 * another pid or VSAMPLE_BUFFER_SIZE entries, and when it is full; an entry that cannot be
 * written (or whose plugin was disabled meanwhile) is lost at image. 1 written, 0 lost. */
int dcpi_values_put(dcpi_values_t *vt, unsigned plugin, const dcpi_values_put_t *e, unsigned image);
/* A breakpoint's hit (a user-mode CPU state before the instruction) into the traces, always
 * admitted (dcpi_values_sample's are admitted by the per-CPU rate). */
void dcpi_values_hit(dcpi_values_t *vt, const dcpi_values_sample_t *s);
/* How alike the values of the clusters taken at pc in pid are (core/store/vsummary.h,
 * dcpi_vsummary_icc), in the hotlist with the most value samples among the plugins' since the
 * last flush: 0, or -1 when pc is in no known image or no plugin has a hotlist there. */
struct dcpi_vsummary_icc;
int dcpi_values_icc(dcpi_values_t *vt, unsigned pid, uint64_t pc, struct dcpi_vsummary_icc *out);
/* Whether plugin takes instructions of key: it is enabled and has a vlist for the key. */
int dcpi_values_takes(const dcpi_values_t *vt, unsigned plugin, trace_opc_t key);
/* Whether plugin's specification (symbol, range, instruction filter) admits the instruction at
 * (img, off) (bytes from tstart). inst NULL: known by its key only; a plugin with an
 * instruction filter then answers with the decision it cached there (none cached: no). */
int dcpi_values_admits(dcpi_values_t *vt, unsigned plugin, const dcpi_image_t *img, uint32_t off,
                       const trace_inst_t *inst);
/* count candidates of plugin at (img, off) that were not admitted: seen by its hotlist there
 * (lost when the hotlist cannot be made). */
void dcpi_values_seen(dcpi_values_t *vt, unsigned plugin, const dcpi_image_t *img, uint32_t off,
                      uint32_t count);
/* One entry of plugin lost without an image (its pc in no known mapping). */
void dcpi_values_lost(dcpi_values_t *vt, unsigned plugin);
/* plugin's vlist for key: its value kinds into kinds[TRACE_VLIST_MAX], their number (-1: the
 * plugin has none for key). */
int dcpi_values_vlist(const dcpi_values_t *vt, unsigned plugin, trace_opc_t key,
                      trace_value_t *kinds);
/* The keys the sink knows: an instruction whose key is at or above it is nobody's. */
trace_opc_t dcpi_values_nkeys(const dcpi_values_t *vt);
/* Whether the recorder (-vrecord) records instructions of key. */
int dcpi_values_records(const dcpi_values_t *vt, trace_opc_t key);
/* The loadmap the sink resolves pcs with (NULL: images given by its opts). */
dcpi_loadmap_t *dcpi_values_loadmap(const dcpi_values_t *vt);
/* The fd (kept open by the sink) to read img's code from, or a negative value when it cannot
 * be read. */
int dcpi_values_image_fd(dcpi_values_t *vt, const dcpi_image_t *img);
/* img's symbol table (opened on first use, kept by the sink), NULL when it has none. */
const dcpi_symtab_t *dcpi_values_symtab(dcpi_values_t *vt, const dcpi_image_t *img);

#endif
