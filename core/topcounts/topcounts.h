/*
 * topcounts.h - dcpitopcounts' report (docs/dcpitopcounts.md): the N instructions of a profile
 * set with the most samples of one event, over every image of the set, each with its share,
 * the running share, its procedure, address, instruction text (decoded from the image file
 * through dcpilist's listing, core/listing/listing.h; "-" where the code bytes cannot be read:
 * kernel, changed or deleted files), image and source position (DWARF, "-" without), and the
 * counts of the other events. Printed as an aligned table or as CSV (-csl).
 *
 * Messages go to stderr, one line each: "TOOL: reason". Not thread-safe (the row sort keeps
 * its event in a static).
 */
#ifndef DCPI_CORE_TOPCOUNTS_TOPCOUNTS_H
#define DCPI_CORE_TOPCOUNTS_TOPCOUNTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/model/profset.h"

typedef struct dcpi_top_opts {
    const char *tool;       /* the name in front of every message */
    size_t n;               /* instructions printed at most (-n) */
    const char *sort_event; /* -s; NULL: the event with the most samples */
    int period;             /* 1: counts are samples x the profile's period (-period) */
    int csl;                /* 1: comma-separated output */
    const char *epoch;      /* named in messages */
    int json;               /* 1: one JSON object (schema dcpitopcounts/1, docs/dcpitopcounts.md) */
    const char *const *epochs; /* -json: the epochs read, listed in the object */
    size_t nepochs;
} dcpi_top_opts_t;

/* One sampled instruction: image index in the set, offset from the image's tstart. */
typedef struct dcpi_top_row {
    uint32_t image;
    uint64_t offset;
    const uint64_t *counts; /* [set->nevents], samples (x period with -period) */
} dcpi_top_row_t;

/* The rows of the set (one per sampled (image, offset)) with samples of event sort, in
 * decreasing order of that count (ties: image name, then offset). *nrows gets at most n of them
 * (n 0: all); *counts holds their counts (free both). 0 or DCPI_ENOMEM. */
int dcpi_top_collect(const dcpi_profset_t *set, int sort, int period, size_t n,
                     dcpi_top_row_t **rows, size_t *nrows, uint64_t **counts);

/* Print the report to f. 0, or a negative DCPI_E* after its message on stderr (DCPI_ENOENT:
 * no samples of o->sort_event). A set without samples prints "TOOL: no samples" on stderr. */
int dcpi_top_report(const dcpi_profset_t *set, const dcpi_top_opts_t *o, FILE *f);

#endif
