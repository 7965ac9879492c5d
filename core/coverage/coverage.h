/*
 * coverage.h - dcpicoverage's model and report (docs/dcpicoverage.md): which instructions,
 * source lines and basic blocks (dcpicalc's split, core/calc/cfg.h) of some procedures of one
 * image got at least one sample of one event, summed over one or many epochs, and the ranges of
 * never-sampled lines and instructions. Sampling coverage is not execution coverage: code that
 * runs for a share s of the time gets no sample out of N with probability (1 - s)^N, and the
 * report says so with its own N.
 *
 * Flow: dcpi_cov_add_proc (or _add_proc_bytes) per procedure, in any order; dcpi_cov_add_samples
 * per sampled address; dcpi_cov_set_lines; dcpi_cov_compute; dcpi_cov_print. covsel.c builds
 * one from profile sets (dcpi_cov_build).
 */
#ifndef DCPI_CORE_COVERAGE_COVERAGE_H
#define DCPI_CORE_COVERAGE_COVERAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/calc/cfg.h"
#include "core/listing/listing.h"
#include "core/model/profset.h"
#include "core/image/image.h"
#include "core/image/srclines.h"

/* Sampled / total counts of one procedure or of all. */
typedef struct dcpi_cov_counts {
    uint64_t samples;
    size_t insns, insns_hit;
    size_t lines, lines_hit; /* distinct (file, line) of the instructions with a position */
    size_t blocks, blocks_hit;
} dcpi_cov_counts_t;

typedef struct dcpi_cov_proc {
    char *name;
    uint64_t lo, hi;
    dcpi_listing_t *ls; /* one count column: the event's samples */
    uint32_t *block;    /* [ls->n]: the block of each instruction (cfg.h's split) */
    size_t nblocks;
    dcpi_cov_counts_t c;
} dcpi_cov_proc_t;

/* A run of never-sampled source lines of one file (no sampled line between first and last). */
typedef struct dcpi_cov_lrange {
    const char *file;
    int first, last;
    size_t lines, insns;
    const char *proc; /* the procedure of its first instruction */
} dcpi_cov_lrange_t;

typedef struct dcpi_cov {
    dcpi_cov_proc_t *procs; /* address order after dcpi_cov_compute */
    size_t nprocs, cap;
    uint64_t outside; /* samples given outside every procedure */
    dcpi_cov_counts_t total;
    dcpi_cov_lrange_t *lranges;
    size_t nlranges;
    /* Set by the caller before adding procedures (NULL: every call returns): which calls end
     * a block, as dcpicalc's (dcpi_cfg_build) */
    dcpi_cfg_noreturn_fn noreturn;
    void *noreturn_arg;
} dcpi_cov_t;

/* What the report names in its head and how it prints. */
typedef struct dcpi_cov_popts {
    const char *image;         /* the file's path */
    const char *event;         /* the event counted */
    const char *const *epochs; /* epochs summed */
    size_t nepochs;
    int csl;     /* 1: one CSV table (see docs/dcpicoverage.md) */
    int summary; /* 1: no range lists */
} dcpi_cov_popts_t;

void dcpi_cov_free(dcpi_cov_t *cv);
/* Decode procedure name over [lo, hi) from the file at path and split it into basic blocks
 * (dcpi_cfg_build with cv->noreturn). DCPI_E* with "PATH: reason". */
int dcpi_cov_add_proc(dcpi_cov_t *cv, const char *name, uint64_t lo, uint64_t hi, const char *path,
                      const dcpi_image_info_t *info, char *err);
/* The same from the bytes of [lo, lo + len) (tests). 0, DCPI_ENOMEM, DCPI_EINVAL. */
int dcpi_cov_add_proc_bytes(dcpi_cov_t *cv, const char *name, uint64_t lo, const uint8_t *bytes,
                            size_t len);
/* count samples at ELF address vaddr (after every dcpi_cov_add_proc*: sorts the procedures). */
void dcpi_cov_add_samples(dcpi_cov_t *cv, uint64_t vaddr, uint64_t count);
/* Source positions of every instruction (sl NULL: none, so no line counts). */
void dcpi_cov_set_lines(dcpi_cov_t *cv, const dcpi_srclines_t *sl);
/* The counts of every procedure and in total, the blocks and the never-sampled line ranges.
 * 0 or DCPI_ENOMEM. */
int dcpi_cov_compute(dcpi_cov_t *cv);
/* P(no sample) = (1 - s)^n for a share s (0..1) of n samples. */
double dcpi_cov_miss_probability(double s, uint64_t n);
void dcpi_cov_print(const dcpi_cov_t *cv, const dcpi_cov_popts_t *o, FILE *f);

/* ---- covsel.c: from profile sets to a model ---- */

typedef struct dcpi_covsel {
    const char *tool;            /* in front of warnings */
    dcpi_profset_t *const *sets; /* one per epoch */
    const char *const *epochs;   /* their names */
    size_t nsets;
    const char *event; /* -s; NULL: the event with the most samples of the image */
    /* filled by dcpi_cov_build */
    char path[4096];
    dcpi_image_info_t info;
    char event_name[256];
} dcpi_covsel_t;

/*
 * Find the image (a path, or the basename of a profiled image, preferring one whose file still
 * has the profiled id), check that the sets hold samples of its id, pick the event, and fill cv
 * with procedure proc (a name, an address "0x..." inside one or a C++ short name, as
 * dcpi_lstsel_lookup takes it; NULL: every function of the image) and the samples of every
 * set. Errors: a negative DCPI_E* with one line in err ("no profile of PATH (id X) in the
 * epochs", "PATH changed since it was profiled (id X, profile Y)", "no procedure 'P' in PATH",
 * "procedure 'P' is ambiguous in PATH: ...", "no samples of event 'E' of PATH").
 */
int dcpi_cov_build(dcpi_covsel_t *s, const char *proc, const char *image, dcpi_cov_t *cv,
                   char *err);

#endif
