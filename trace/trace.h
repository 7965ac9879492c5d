/*
 * trace/trace.h - the value trace (docs/trace-format.md) as dcpi's own code uses it: the
 * encoder the capture backends and dcpireplay write traces with, the parser struct (so a caller
 * can place a parser on its stack or in shared memory, and name its backend), and the
 * SDK-2 selection a specification carries (its filter, symbol and range), read back by
 * core/values/select. Plugins see only the public half (dcpi/trace-parse.h,
 * dcpi/trace-vlist.h). The wire format's constants and helpers stay inside trace/
 * (trace/trace-int.h).
 *
 * The encoder and the parser keep the same direct-mapped instruction cache of
 * TRACE_ICACHE_SIZE slots and update it identically, so instruction bytes, keys and value kinds
 * travel only on a miss. Neither allocates. Not thread-safe: one encoder/parser per thread.
 */
#ifndef DCPI_TRACE_TRACE_H
#define DCPI_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/insn.h"
#include "dcpi/trace-parse.h"
#include "dcpi/trace-vlist.h"

/* Largest encoded entry: tag, pc, fill (1+15+5+1+7), contexts, mask, mode, 7 values; largest
 * burst header. A buffer of TRACE_BURST_MAX + TRACE_ENTRY_MAX bytes always takes one entry. */
#define TRACE_ENTRY_MAX (1 + 10 + 29 + 20 + 1 + 1 + 7 * 10)
#define TRACE_BURST_MAX (1 + 1 + 5 + 5 + 10)

/* One instruction-cache slot. inst.length == 0: empty. */
typedef struct trace_icache_slot {
    uint64_t pc;
    uint64_t prev[TRACE_VLIST_MAX]; /* last value of each index, base for deltas */
    trace_inst_t inst;
    uint8_t nvalues;
    uint8_t kinds[TRACE_VLIST_MAX];
} trace_icache_slot_t;

struct trace_parser {
    const uint8_t *pos, *end, *start;
    uint64_t prev_end; /* pc + length of the previous entry of the burst */
    uint64_t c0, c1;
    uint64_t time;
    unsigned pid, tid;
    unsigned missing;
    int has_context;
    int state;                       /* 0, TRACE_PARSE_END or TRACE_PARSE_ERROR (sticky) */
    int in_burst;                    /* a burst header was read */
    int have_pid;                    /* the trace's pid is known (first burst) */
    unsigned in_burst_entries;       /* entries of the current burst returned so far */
    unsigned burst_index;            /* the last returned entry's index in its burst */
    const char *backend;             /* trace_parser_backend ("" unknown) */
    const trace_icache_slot_t *last; /* slot of the entry last returned */
    uint64_t values[TRACE_VLIST_MAX];
    char error[160];
    trace_icache_slot_t icache[TRACE_ICACHE_SIZE];
};

typedef struct trace_encoder {
    uint8_t *buf;
    size_t cap, len;
    unsigned entries;
    unsigned pid;
    int have_pid, in_burst, has_context;
    uint64_t prev_end, c0, c1;
    trace_icache_slot_t icache[TRACE_ICACHE_SIZE];
} trace_encoder_t;

/* Start an empty trace in buf[0..cap). */
void trace_encoder_init(trace_encoder_t *e, void *buf, size_t cap);
/* Start a burst. 0, DCPI_EFULL (does not fit; encoder unchanged), DCPI_EINVAL (a pid other than
 * the trace's, or has_context not 0/1). */
int trace_encoder_burst(trace_encoder_t *e, unsigned pid, unsigned tid, uint64_t time_ns,
                        int has_context);
/* Append one entry: inst (length 1..15, a valid key), pc, contexts (ignored without context),
 * nvalues (0..TRACE_VLIST_MAX) values of the given kinds; bit i of missing_mask marks value i
 * as not captured (its values[i] is not encoded). 0, DCPI_EFULL when it does not fit (the
 * encoder is unchanged: flush and retry), DCPI_EINVAL on bad arguments or before any burst. */
int trace_encoder_entry(trace_encoder_t *e, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                        uint64_t c1, int nvalues, const trace_value_t *kinds,
                        const uint64_t *values, unsigned missing_mask);
/* Bytes written so far / entries written so far. */
size_t trace_encoder_size(const trace_encoder_t *e);
unsigned trace_encoder_entries(const trace_encoder_t *e);

/* Start parsing buf[0..len). */
void trace_parser_init(trace_parser_t *p, const void *buf, size_t len);
/* The backend that captured the trace, as trace_parser_backend reports it (a static string:
 * "bp", "regs", "step", "replay"); "" when not set. */
void trace_parser_set_backend(trace_parser_t *p, const char *backend);

/* A specification's SDK-2 selection: its instruction filter (NULL: none) and symbol (NULL:
 * anywhere). */
trace_inst_filter_fn trace_vlist_table_get_filter(const trace_vlist_table_t *spec);
const char *trace_vlist_table_get_symbol(const trace_vlist_table_t *spec);
/* Its ELF address range: 1 with [*lo, *hi), 0 when it has none. */
int trace_vlist_table_get_range(const trace_vlist_table_t *spec, uint64_t *lo, uint64_t *hi);

/* What an instruction does to the control flow: the one classification of dcpicalc's blocks
 * (core/calc/cfg.c) and of the value backends' (core/values/bp.c). */
typedef enum trace_flow {
    TRACE_FLOW_NONE, /* falls through */
    TRACE_FLOW_COND, /* conditional branch (jcc, loop, jrcxz) */
    TRACE_FLOW_JUMP, /* direct unconditional jump */
    TRACE_FLOW_IND,  /* indirect jump (a jump table or a tail call through a pointer) */
    TRACE_FLOW_RET,  /* return */
    TRACE_FLOW_STOP, /* never falls through: ud2, ud0, ud1, hlt, int3 */
    TRACE_FLOW_CALL  /* call, direct or indirect */
} trace_flow_t;

/* inst's flow when it runs at pc; *target (may be NULL): a direct branch's or call's target,
 * else 0. An instruction that does not decode is TRACE_FLOW_NONE. */
trace_flow_t trace_inst_flow(const trace_inst_t *inst, uint64_t pc, uint64_t *target);

#endif
