/*
 * gperf.h - gperftools' legacy CPU profile (seeds/gperftools-cpuprofile-format.txt): a binary
 * header of slots (0, 3, 0, period in microseconds, 0), records <count><npcs><pc x npcs> with
 * the leaf first, the trailer (0, 1, 0), then the text list of mapped objects. Slots are 8 bytes
 * (64-bit programs) or 4 bytes (32-bit programs), little-endian; the reader detects which.
 */
#ifndef DCPI_CORE_GPERF_H
#define DCPI_CORE_GPERF_H

#include <stddef.h>
#include <stdint.h>

/* One record: count samples of the chain pcs[first .. first + npcs - 1] (leaf first). */
typedef struct dcpi_gperf_rec {
    uint64_t count;
    size_t first;
    uint32_t npcs;
} dcpi_gperf_rec_t;

/* One executable mapping line of the text part ("start-end r-xp offset dev inode path"). */
typedef struct dcpi_gperf_map {
    uint64_t start, end, offset;
    char *path; /* "$build" already replaced; may be "" for anonymous mappings */
} dcpi_gperf_map_t;

typedef struct dcpi_gperf {
    int slot;           /* 8 or 4 */
    uint64_t period_us; /* header slot 3 */
    dcpi_gperf_rec_t *recs;
    size_t nrecs, cap_recs;
    uint64_t *pcs; /* every record's PCs, records point into it */
    size_t npcs, cap_pcs;
    uint64_t total; /* sum of the counts */
    char *text;     /* the mapped objects text, NUL-terminated ("" when absent) */
    dcpi_gperf_map_t *maps;
    size_t nmaps;
} dcpi_gperf_t;

/* A new empty profile (64-bit slots) with the given period. 0 or DCPI_ENOMEM. */
int dcpi_gperf_new(uint64_t period_us, dcpi_gperf_t **out);
void dcpi_gperf_free(dcpi_gperf_t *g);

/* Append a record (pcs[0] is the leaf; no pc may be 0, n >= 1, count >= 1). */
int dcpi_gperf_add(dcpi_gperf_t *g, uint64_t count, const uint64_t *pcs, uint32_t n);
/* Append one line to the mapped-objects text (a '\n' is added). */
int dcpi_gperf_add_text(dcpi_gperf_t *g, const char *line);

/*
 * Parse a whole file. Errors (one line "NAME: reason" in err): DCPI_EFORMAT (not a CPU profile:
 * bad header words or slot size, record with no PC, a first PC of 0, a bad trailer),
 * DCPI_EVERSION (format version other than 0), DCPI_ETRUNC (header, record or trailer cut
 * short, or no trailer at all), DCPI_ENOMEM.
 */
int dcpi_gperf_parse(const void *buf, size_t len, const char *name, dcpi_gperf_t **out, char *err);
int dcpi_gperf_read(const char *path, dcpi_gperf_t **out, char *err);

/* Encode into a malloc'd buffer in g->slot slots. 0 or DCPI_ENOMEM / DCPI_ERANGE (a value
 * does not fit 4-byte slots). */
int dcpi_gperf_encode(const dcpi_gperf_t *g, void **buf, size_t *len);
/* Encode and write atomically ("-": standard output, dcpi__write_output). */
int dcpi_gperf_write(const char *path, const dcpi_gperf_t *g, char *err);

/* The mapping holding pc, or NULL. */
const dcpi_gperf_map_t *dcpi_gperf_map_find(const dcpi_gperf_t *g, uint64_t pc);

#endif
