/*
 * stackprof-int.h - the inside of dcpi_stackprof_t (stackprof.h), shared by the chain table
 * in memory (stackprof-chains.c: images, chains, merge) and the file side (stackprof-file.c:
 * encode, parse, write, merge into a file, load an epoch's). Not part of the API: only core/store/
 * includes it.
 */
#ifndef DCPI_CORE_STACKPROF_INT_H
#define DCPI_CORE_STACKPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/store/header.h"
#include "core/store/stackprof.h"

#define DCPI_STK_STR_MAX 4096 /* bound on an image's id and path lengths */

static const dcpi_hdr_key_t dcpi__stackprof_keys[] = {
    {"epoch", DCPI_HDR_EPOCH, true},      {"platform", DCPI_HDR_ANY, true},
    {"event", DCPI_HDR_ANY, true},        {"period", DCPI_HDR_DIGITS, true},
    {"lost", DCPI_HDR_DIGITS, false},     {"truncated", DCPI_HDR_DIGITS, false},
    {"cpuspeed", DCPI_HDR_DIGITS, false},
};

static const dcpi_hdr_spec_t dcpi__stackprof_spec = {
    DCPI_STACKPROF_VERSION, "stk-", dcpi__stackprof_keys,
    sizeof(dcpi__stackprof_keys) / sizeof(dcpi__stackprof_keys[0]), NULL};

struct dcpi_stackprof_chain {
    uint64_t count, hash;
    size_t first;
    uint32_t n;
};

struct dcpi_stackprof {
    dcpi_hdr_t hdr;
    dcpi_stack_image_t *img;
    size_t nimg, capimg;
    struct dcpi_stackprof_chain *ch;
    size_t nch, capch;
    dcpi_frame_t *fr;
    size_t nfr, capfr;
    uint32_t *slots; /* chain index + 1; 0 = free; nslots a power of two >= 2 x max_chains */
    size_t nslots;
    size_t max_chains, max_frames;
    uint64_t total, lost, truncated;
};

/* Add count samples of the chain f[0..n-1] (n <= DCPI_STACK_MAXFRAMES, images checked): 0,
 * DCPI_EFULL or DCPI_ENOMEM (both counted in lost). */
int dcpi__stackprof_add_chain(dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n,
                              uint64_t count);
/* Samples cut to DCPI_STACK_MAXFRAMES since the last reset, plus the "truncated" key. */
uint64_t dcpi__stackprof_truncated(const dcpi_stackprof_t *sp);

#endif
