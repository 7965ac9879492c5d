/*
 * tracefile-int.h - what the writer (tracefile-write.c) and the reader (tracefile-read.c) of
 * recorded value traces share: the header's keys, record sizes, the records' CRC-32. The format
 * is in tracefile.h and docs/dcpireplay.md. Not part of the API: only core/store/ includes it.
 */
#ifndef DCPI_CORE_TRACEFILE_INT_H
#define DCPI_CORE_TRACEFILE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "core/store/header.h"
#include "core/store/tracefile.h"

#define DCPI_TF_SEEN_PAIR    16 /* SEEN: pc u64, key u32, count u32 */
#define DCPI_TF_TRAILER_BODY 40 /* END: maps, traces, seen, refused, refused_bytes u64 */
#define DCPI_TF_MAP_FIXED    48 /* MAP: pid, zero u32, start, end, delta, tstart, tsize u64 */
#define DCPI_TF_CLUSTER_NUM  8  /* CLUSTER: one cluster number u64 (after pid u32, n u32) */

static const dcpi_hdr_key_t dcpi__tracefile_keys[] = {
    {"epoch", DCPI_HDR_EPOCH, true},      {"platform", DCPI_HDR_ANY, true},
    {"event", DCPI_HDR_ANY, true},        {"period", DCPI_HDR_DIGITS, true},
    {"cpuspeed", DCPI_HDR_DIGITS, true},  {"contexts", DCPI_HDR_BIT, true},
    {"cpucount", DCPI_HDR_DIGITS, false}, {"hotsize", DCPI_HDR_DIGITS, false},
    {"writer", DCPI_HDR_DIGITS, false},
};

static const dcpi_hdr_spec_t dcpi__tracefile_spec = {
    DCPI_TRACEFILE_VERSION, "dtr-", dcpi__tracefile_keys,
    sizeof(dcpi__tracefile_keys) / sizeof(dcpi__tracefile_keys[0]), NULL};

/* Records are checksummed with zlib's CRC-32 (and compressed with zlib's compress2 when that
 * pays; libdcpi links zlib). */
static inline uint32_t dcpi__tracefile_crc32(const uint8_t *p, size_t len)
{
    return (uint32_t)crc32(0L, p, (uInt)len);
}

#endif
