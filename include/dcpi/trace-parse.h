/*
 * dcpi/trace-parse.h - the value trace and its parser (docs/trace-format.md).
 *
 * A trace handed to vp_prof_process holds the entries captured for one process: one or more
 * bursts (a header with pid, tid, time and whether contexts are present), each a run of
 * entries encoded incrementally (pc as a delta from the previous instruction's end, values as
 * deltas where smaller). One entry per executed (step backend) or sampled (regs backend)
 * instruction that has a vlist.
 *
 * The encoder and the parser never allocate: both work on caller-provided memory. A corrupt
 * trace makes trace_parser_next return TRACE_PARSE_ERROR, never crash or read past the buffer.
 */
#ifndef DCPI_TRACE_PARSE_H
#define DCPI_TRACE_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include "api.h"
#include "insn.h"
#include "trace-vlist.h"

/* trace_parser_next results below zero. */
#define TRACE_PARSE_END   (-1) /* no more entries */
#define TRACE_PARSE_ERROR (-2) /* corrupt trace: see trace_parser_error */

/* Size of the instruction cache the encoder and parser share (entries, a power of two):
 * instruction bytes travel in the trace only the first time a pc is seen (per slot). */
#define TRACE_ICACHE_SIZE 256

/* Opaque to plugins; the struct lives in trace/trace.h so dcpid can place it on the stack. */
typedef struct trace_parser trace_parser_t;

/*
 * The next entry: fills *inst (may be NULL), *pc, *context0, *context1 (0 when the trace has no
 * contexts; any pointer may be NULL) and up to nwanted values through the varargs, which are
 * nwanted pointers of type uint64_t *. Returns the number of values the entry carries (which
 * may be more or fewer than nwanted; only min(nwanted, n) pointers are written), TRACE_PARSE_END
 * at the end, TRACE_PARSE_ERROR on a corrupt trace. A value the backend could not capture is
 * written as 0 and flagged in trace_parser_missing().
 */
DCPI_API int trace_parser_next(trace_parser_t *parser, trace_inst_t *inst, uint64_t *pc,
                               uint64_t *context0, uint64_t *context1, int nwanted, ...);
/* Bit i set: value i of the entry last returned is missing (not captured by the backend). */
DCPI_API unsigned trace_parser_missing(const trace_parser_t *parser);
/* The trace_value_t kinds of the last entry's values (TRACE_VLIST_MAX entries), so a plugin
 * can tell which value is which; returns the count. */
DCPI_API int trace_parser_kinds(const trace_parser_t *parser, trace_value_t *kinds);
/* Whether the current burst carries contexts (dcpid -vcontext). */
DCPI_API int trace_parser_has_context(const trace_parser_t *parser);
/* Process / thread / time (ns, CLOCK_MONOTONIC) of the current burst. */
DCPI_API unsigned trace_parser_get_pid(const trace_parser_t *parser);
DCPI_API unsigned trace_parser_get_tid(const trace_parser_t *parser);
DCPI_API uint64_t trace_parser_get_time(const trace_parser_t *parser);
/* A one-line description of the corruption after TRACE_PARSE_ERROR ("" otherwise). */
DCPI_API const char *trace_parser_error(const trace_parser_t *parser);

/* SDK 2 (libdcpi symbol version DCPI_0.2). The loop of most plugins: a vsample of each entry's
 * first value (pc, value, contexts) into out[0..max); an entry whose first value is missing
 * becomes vp_missing(pc) with TRACE_COLLECT_MISSING in flags, else is skipped. Returns the
 * count, or DCPI_EFORMAT on a corrupt trace (trace_parser_error says why). */
#define TRACE_COLLECT_MISSING 1u
struct vsample;
DCPI_API int trace_parser_collect(trace_parser_t *parser, struct vsample *out, int max,
                                  unsigned flags);
/* SDK 2. The backend that captured the trace: "bp" (execute
 * breakpoints: registers before the instruction, memory read at the sample), "regs" (the
 * registers of timer samples: skid-biased), "step" (single-stepped bursts: values after the
 * instruction), "replay" (dcpireplay of a recording), "" when unknown (e.g. a test kit trace
 * without trace_test_backend). Static storage. */
DCPI_API const char *trace_parser_backend(const trace_parser_t *parser);
/* The index of the entry last returned within its burst: 0 for a burst's first entry. A bp or
 * regs burst is one sample (always 0); a step burst's entries are consecutive instructions (the
 * interrupted one, skid-biased, is left out unless dcpid -vstep-first). */
DCPI_API unsigned trace_parser_burst_index(const trace_parser_t *parser);

#endif
