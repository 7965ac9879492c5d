/*
 * dstacks.h - dcpid -g: call chains of every sample (PERF_SAMPLE_CALLCHAIN, kernel and user
 * part) resolved to (image, offset) frames and counted in one stack profile per event
 * (core/store/stackprof.h, docs/stackformat.md), written into DB/<epoch>/<platform>/stacks/
 * <event>.stk with the PC profiles. Not thread-safe; nothing allocated per sample except the
 * first time a chain or an image is seen.
 */
#ifndef DCPI_CORE_DSTACKS_H
#define DCPI_CORE_DSTACKS_H

#include <stdint.h>

#include "core/image/loadmap.h"
#include "core/sampling/sampler.h"

#define DCPI_DSTACKS_MAX_STACK 64 /* sample_max_stack asked of perf */

typedef struct dcpi_dstacks dcpi_dstacks_t;

/* The running kernel's text (kernel frames); ok 0: kernel frames are outside every image. */
typedef struct dcpi_dstacks_kernel {
    int ok;
    const char *id;
    uint64_t tstart, tsize;
} dcpi_dstacks_kernel_t;

/* What a flush needs besides the chains. */
typedef struct dcpi_dstacks_flush_info {
    const char *db, *epoch, *platform;
    const char *const *events; /* nev names */
    const uint64_t *periods;   /* nev periods */
    unsigned cpuspeed;
} dcpi_dstacks_flush_info_t;

/* Cumulative counters for dcpictl status. */
typedef struct dcpi_dstacks_stats {
    uint64_t chains;     /* samples whose chain was counted */
    uint64_t lost;       /* samples whose chain was not kept (no chain, limit, no memory) */
    uint64_t truncated;  /* chains that reached sample_max_stack (perf cut them) */
    uint64_t unresolved; /* frames outside every known image (kept as such) */
} dcpi_dstacks_stats_t;

/* nev events; lm resolves user frames. 0 or DCPI_ENOMEM. */
int dcpi_dstacks_new(dcpi_loadmap_t *lm, int nev, const dcpi_dstacks_kernel_t *k,
                     dcpi_dstacks_t **out);
void dcpi_dstacks_free(dcpi_dstacks_t *ds);
/* Count the chain of one sample (no-op without one). */
void dcpi_dstacks_add(dcpi_dstacks_t *ds, const dcpi_sample_t *s);
/* 1 when a stack profile is 75% full (flush early). */
int dcpi_dstacks_needs_flush(const dcpi_dstacks_t *ds);
/* Merge every event's chains into its file; written ones are reset, failed ones kept for the
 * next flush. Returns the number of files written, or the last error (err: "path: reason")
 * with *failed (may be NULL) the number of failures. */
int dcpi_dstacks_flush(dcpi_dstacks_t *ds, const dcpi_dstacks_flush_info_t *fi, size_t *failed,
                       char *err);
void dcpi_dstacks_stats(const dcpi_dstacks_t *ds, dcpi_dstacks_stats_t *out);

#endif
