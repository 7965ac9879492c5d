/*
 * progress.h - a progress line on a terminal for the tools' long loops (dcpiexport, dcpiimport,
 * dcpireplay): "LABEL: DONE/TOTAL (PCT%)" rewritten in place on stderr at most 10 times a second,
 * cleared by dcpi__progress_done. Off (nothing written) when the stream is not a terminal, so
 * scripts and pipes see the tools' output unchanged.
 */
#ifndef DCPI_BASE_PROGRESS_H
#define DCPI_BASE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct dcpi__progress {
    FILE *out;         /* NULL: off */
    const char *label; /* what is counted, e.g. "dcpiexport: images" */
    uint64_t total;    /* 0: unknown (no percentage) */
    uint64_t done;
    uint64_t last_ns; /* CLOCK_MONOTONIC of the last line drawn */
    unsigned draws;   /* lines drawn (tests) */
    int drawn;        /* a line is on the terminal and needs clearing */
} dcpi__progress_t;

/* tty: -1 draws only when out is a terminal (isatty), 0 never, 1 always (tests). */
void dcpi__progress_start(dcpi__progress_t *p, FILE *out, int tty, uint64_t total,
                          const char *label);
/* done items of total; draws when 100 ms have passed since the last line */
void dcpi__progress_update(dcpi__progress_t *p, uint64_t done);
/* clears the line (the terminal is as before start) */
void dcpi__progress_done(dcpi__progress_t *p);

#endif
