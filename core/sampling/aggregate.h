/*
 * aggregate.h - dcpid's in-memory sample counts: an open-addressing hash table keyed by
 * (image index, event index, offset, process) with 64-bit counts, preallocated once so that adding
 * a sample never allocates. The daemon flushes when the table is 75% full; the table itself accepts
 * keys up to a hard limit (capacity - 1 slots) and reports DCPI_EFULL beyond it, so a caller can
 * never lose a sample without knowing.
 *
 * Flushing: dcpi_agg_sort() copies the used slots into a preallocated array sorted by
 * (image, event, offset), so each (image, event) profile is one contiguous run. Runs written
 * successfully are zeroed with dcpi_agg_clear(); dcpi_agg_reset() empties everything.
 * Not thread-safe.
 */
#ifndef DCPI_CORE_AGGREGATE_H
#define DCPI_CORE_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

/* Default number of entries (dcpid -hash). */
#define DCPI_AGG_DEFAULT_ENTRIES 262144
/* Reserved image indexes that are not loadmap images. */
#define DCPI_AGG_IMAGE_KERNEL 0xfffffffeu
/* Samples outside every image, kept per process (offset 0) for the per-process counts. */
#define DCPI_AGG_IMAGE_UNKNOWN 0xfffffffdu

typedef struct dcpi_agg dcpi_agg_t;

typedef struct dcpi_agg_entry {
    uint32_t image;
    uint16_t event;
    uint32_t offset;
    uint32_t proc; /* the process (core/sampling/proctab id; 0 when not kept) */
    uint64_t count;
    size_t slot; /* for dcpi_agg_clear */
} dcpi_agg_entry_t;

/* A table with room for at least entries keys (rounded up to a power of two, minimum 16).
 * Returns 0, DCPI_EINVAL or DCPI_ENOMEM. */
int dcpi_agg_new(size_t entries, dcpi_agg_t **out);
void dcpi_agg_free(dcpi_agg_t *a);

/* Add count to key (process proc). Returns 0, or DCPI_EFULL when the key is new and the table
 * has no free slot left (nothing is added then). Never allocates. */
int dcpi_agg_add_proc(dcpi_agg_t *a, uint32_t image, uint16_t event, uint32_t offset, uint32_t proc,
                      uint64_t count);
/* Current count of (image, event, offset) over every process (0 if absent; scans the table:
 * for tests and status). */
uint64_t dcpi_agg_get(const dcpi_agg_t *a, uint32_t image, uint16_t event, uint32_t offset);

size_t dcpi_agg_used(const dcpi_agg_t *a);     /* keys stored (including zeroed ones) */
size_t dcpi_agg_capacity(const dcpi_agg_t *a); /* slots */
uint64_t dcpi_agg_total(const dcpi_agg_t *a);  /* sum of all counts */
/* 1 when used >= 75% of capacity: time to flush. */
int dcpi_agg_needs_flush(const dcpi_agg_t *a);

/* Sorted copy (by image, event, offset, process) of the keys with a non-zero count, valid until the
 * next add/sort/reset/free. Never allocates (the array is preallocated). */
const dcpi_agg_entry_t *dcpi_agg_sort(dcpi_agg_t *a, size_t *n);
/* Zero the counts of the n sorted entries e (after they were written). */
void dcpi_agg_clear(dcpi_agg_t *a, const dcpi_agg_entry_t *e, size_t n);
/* Forget every key. */
void dcpi_agg_reset(dcpi_agg_t *a);

/* Double the capacity (allocates: only for the rare case where a flush failed and the table
 * filled up). Returns 0 or DCPI_ENOMEM (the table is then unchanged). */
int dcpi_agg_grow(dcpi_agg_t *a);

#endif
