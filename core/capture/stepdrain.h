/*
 * stepdrain.h - dcpid's side of the step backend: find and map the agent's ring files
 * (core/capture/stepring.h), drain their records, and turn step records (from the agent or from
 * core/capture/ptstep.h) into value-trace entries for a trace specification.
 *
 * Use (one thread): dcpi_stepdrain_open(prefix) with the prefix that dcpid put in
 * DCPI_AGENT_RING; then periodically dcpi_stepdrain_scan (maps rings of new processes, forked
 * children and exec'd images), dcpi_stepdrain_poll (hands every new record to a callback, in
 * order per thread), dcpi_stepdrain_reap (frees drained rings of processes that are gone) and
 * dcpi_stepdrain_stats (bursts, steps, lost bursts for dcpictl status).
 * The first record of each burst (STEP_REC_FIRST) is the instruction the agent's timer
 * interrupted; a slow instruction is interrupted more often than its share of executions, so
 * that record is biased (docs/step-backend.md). The drain consumes it without handing it to the
 * callback (counted in first_dropped) unless dcpi_stepdrain_keep_first(d, 1).
 * Records become trace entries with dcpi_step_encode: one trace_encoder_t per pid (a trace
 * holds one process), a burst header whenever the thread or burst changes.
 */
#ifndef DCPI_CORE_STEPDRAIN_H
#define DCPI_CORE_STEPDRAIN_H

#include <stdint.h>
#include "core/capture/capture.h"
#include "core/capture/stepring.h"
#include "dcpi/trace-vlist.h"
#include "trace/trace.h"

typedef struct dcpi_stepdrain dcpi_stepdrain_t;

typedef struct dcpi_step_stats {
    unsigned rings;         /* ring files mapped now */
    uint64_t bursts;        /* bursts started (all rings, including reaped ones) */
    uint64_t steps;         /* records written by the agents */
    uint64_t drained;       /* records handed to callbacks */
    uint64_t first_dropped; /* first records of bursts consumed, not handed to callbacks */
    uint64_t lost_bursts;   /* bursts skipped because a ring was full: lost value traces */
    uint64_t lost_threads;  /* threads that found no free slot */
    uint64_t no_decoder;    /* steps recorded without memory operand information */
    uint64_t end_count[STEP_END_COUNT];
    /* arm mode (stepring.h): ticks, arms, hits, expired and dropped over all threads, and the
     * ticks that only closed the arms left waiting (closes); rings
     * whose agent runs the arm mode; the first perf errno an agent met (0: none); the fewest
     * breakpoints a thread got (STEP_ARM_SLOTS: all); the time spent in the agent's arm-mode
     * handlers over the handler runs measured */
    uint64_t ticks, arms, hits, expired, dropped, handler_ns, handler_n, closes;
    uint64_t gap_ns, gap_n; /* the gaps between an arm's hits under STEP_GAP_MAX_NS */
    unsigned arm_rings;
    int arm_errno;
    unsigned arm_bps;
} dcpi_step_stats_t;

/* Open a drain for ring files "<prefix>.<pid>.<gen>". The prefix's directory must exist.
 * 0, DCPI_EINVAL, DCPI_ENOMEM; err gets "stepdrain: reason". */
int dcpi_stepdrain_open(const char *prefix, dcpi_stepdrain_t **out, char *err);
/* Unmap everything; remove_files: also unlink the ring files. NULL is fine. */
void dcpi_stepdrain_close(dcpi_stepdrain_t *d, int remove_files);
/* Map ring files not mapped yet (ones not ready yet are retried next time). Returns the number
 * of rings newly mapped, or a negative DCPI_E* (err: "stepdrain: ..."). Invalid files are
 * skipped. */
int dcpi_stepdrain_scan(dcpi_stepdrain_t *d, char *err);

/* keep != 0: hand the first record of each burst (the interrupted instruction) to the callback
 * too; 0 (the default): consume it unseen and count it in first_dropped. */
void dcpi_stepdrain_keep_first(dcpi_stepdrain_t *d, int keep);

/* Called for each record; a non-zero return stops the poll, leaving that record unread. */
typedef int (*dcpi_step_record_fn)(unsigned pid, const step_record_t *rec, void *arg);
/* Hand every published record of every ring to fn (per thread in order; first records of bursts
 * only with dcpi_stepdrain_keep_first). Returns the number of records handed to fn. */
long dcpi_stepdrain_poll(dcpi_stepdrain_t *d, dcpi_step_record_fn fn, void *arg);
/* Free slots of exited threads and unmap (and unlink) rings that are drained and whose process
 * is gone or was replaced by a newer image (exec). Returns the number of rings released. */
int dcpi_stepdrain_reap(dcpi_stepdrain_t *d);
/* fn for every ring mapped now (not released): its process and header (the arm mode's table
 * is written there: step_arm_publish). */
typedef void (*dcpi_step_ring_fn)(unsigned pid, step_ring_header_t *h, void *arg);
void dcpi_stepdrain_each(dcpi_stepdrain_t *d, dcpi_step_ring_fn fn, void *arg);
/* Add one ring's counters to st (start from a zeroed st for that ring's own). */
void dcpi_stepdrain_add_ring(dcpi_step_stats_t *st, const step_ring_header_t *h);
/* Totals over all rings ever mapped. */
void dcpi_stepdrain_stats(const dcpi_stepdrain_t *d, dcpi_step_stats_t *st);

/* Values of kinds for one executed instruction (insn decoded from rec->insn at the record's
 * pc): registers and rflags AFTER the instruction, REGA/REGB from the registers before (a
 * memory source: the value read), REGC the destination after it (register: the whole 64-bit
 * register; memory: the value stored; cmp/test: rflags; one-operand mul: rax), EA and MEMVAL
 * from the record (MEMVAL: the value stored for writes, loaded for reads), BR_TAKEN from the
 * next pc, BR_TARGET the next pc when taken (else the computed target). LATENCY is missing. */
void dcpi_step_values(const step_record_t *rec, const dcpi_insn_t *insn, const trace_value_t *kinds,
                      int n, uint64_t *values, unsigned *missing);

/* The CPU state before rec's instruction as a sample of the value sink takes it: its registers
 * and, when the agent read it (STEP_REC_MEMRD), its memory operand (the arm mode's hits). */
void dcpi_step_regs_before(const step_record_t *rec, dcpi_regs_t *out);

typedef struct dcpi_step_encoder {
    trace_encoder_t *enc;
    unsigned pid;
    uint32_t tid;
    uint64_t burst;
    int open;           /* a burst header for (tid, burst) was written */
    uint64_t entries;   /* entries written */
    uint64_t missing;   /* of them, entries with a missing value */
    uint64_t skipped;   /* records whose key has no vlist */
    uint64_t undecoded; /* records whose bytes do not decode */
} dcpi_step_encoder_t;

/* Encode records of process pid into enc (which the caller initialised with
 * trace_encoder_init). Call again after re-initialising enc (flush): the next record starts a
 * new burst. */
void dcpi_step_encoder_init(dcpi_step_encoder_t *se, trace_encoder_t *enc, unsigned pid);
/* 1: entry written, 0: nothing to write (no vlist for its key, or undecodable: counted),
 * DCPI_EFULL: does not fit (nothing written: flush, re-init, retry), DCPI_EINVAL. */
int dcpi_step_encode(dcpi_step_encoder_t *se, const trace_vlist_table_t *spec,
                     const step_record_t *rec);

#endif
