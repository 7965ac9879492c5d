/*
 * trace/trace-int.h - the inside of the value trace, private to trace/ (the encoder, the parser
 * and the plugin test kit): the wire format's constants (docs/trace-format.md) and the small
 * helpers the encoder and the parser share. Everything other folders need is in trace/trace.h;
 * tests/e2e/deps.sh refuses an include of this file from outside trace/.
 */
#ifndef DCPI_TRACE_INT_H
#define DCPI_TRACE_INT_H

#include <stdint.h>

#include "trace/trace.h"

/* Format constants (docs/trace-format.md). */
#define TRACE_MAGIC_BURST  0xD1u /* burst header byte; any other byte >= 0x80 is invalid */
#define TRACE_TAG_PC       0x01u /* pc delta follows (else pc = previous entry's end) */
#define TRACE_TAG_INST     0x02u /* icache fill follows */
#define TRACE_TAG_MISSING  0x04u /* missing-mask byte follows */
#define TRACE_TAG_ABS0     0x08u /* bits 3..5: values 0..2 are absolute (else deltas) */
#define TRACE_TAG_RESERVED 0x40u
#define TRACE_FLAG_CONTEXT 0x01u /* burst flags: entries carry two contexts */

/* The icache slot of pc (the encoder's and the parser's, identical). */
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

#endif
