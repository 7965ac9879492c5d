/*
 * trace/trace-int.h - internal side of the value trace (docs/trace-format.md): the encoder used
 * by the capture backends, and the parser struct so dcpid can place a parser on its stack.
 *
 * Both keep the same direct-mapped instruction cache of TRACE_ICACHE_SIZE slots, indexed by
 * trace_icache_index(pc), and update it identically, so instruction bytes, keys and value kinds
 * travel only on a miss. Neither allocates. Not thread-safe: one encoder/parser per thread.
 */
#ifndef DCPI_TRACE_INT_H
#define DCPI_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/insn.h"
#include "dcpi/trace-parse.h"
#include "dcpi/trace-vlist.h"

/* Format constants (docs/trace-format.md). */
#define TRACE_MAGIC_BURST  0xD1u /* burst header byte; any other byte >= 0x80 is invalid */
#define TRACE_TAG_PC       0x01u /* pc delta follows (else pc = previous entry's end) */
#define TRACE_TAG_INST     0x02u /* icache fill follows */
#define TRACE_TAG_MISSING  0x04u /* missing-mask byte follows */
#define TRACE_TAG_ABS0     0x08u /* bits 3..5: values 0..2 are absolute (else deltas) */
#define TRACE_TAG_RESERVED 0x40u
#define TRACE_FLAG_CONTEXT 0x01u /* burst flags: entries carry two contexts */
/* Largest encoded entry: tag, pc, fill (1+15+5+1+7), contexts, mask, mode, 7 values. */
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

static inline unsigned trace_icache_index(uint64_t pc)
{
    return (unsigned)((pc ^ (pc >> 8) ^ (pc >> 16)) & (TRACE_ICACHE_SIZE - 1));
}

/* Zigzag mapping of a signed 64-bit delta (two's complement in a uint64_t). */
static inline uint64_t trace_zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t trace_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

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

/* A specification's SDK-2 selection: its instruction filter (NULL: none) and symbol (NULL:
 * anywhere). */
trace_inst_filter_fn trace__vlist_filter(const trace_vlist_table_t *spec);
const char *trace__vlist_symbol(const trace_vlist_table_t *spec);
/* Its ELF address range: 1 with [*lo, *hi), 0 when it has none. */
int trace__vlist_range(const trace_vlist_table_t *spec, uint64_t *lo, uint64_t *hi);

/* Start parsing buf[0..len). */
void trace_parser_init(trace_parser_t *p, const void *buf, size_t len);
/* The backend that captured the trace, as trace_parser_backend reports it (a static string:
 * "bp", "regs", "step", "replay"); "" when not set. */
void trace_parser_set_backend(trace_parser_t *p, const char *backend);

#endif
