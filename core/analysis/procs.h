/*
 * procs.h - dcpiprof's views of a profile set (docs/dcpiprof.md): a histogram of the samples by
 * procedure (each image's samples named by its symbols, DCPI_UNKNOWN_ROUTINE outside them) or
 * by image (-i) or by process (-procs), one "samples % cum%" group per event, sorted by one event;
 * with a "children" column (the samples whose call chain passes through the procedure) when the
 * epoch has a stack profile of the sort event. Printed as an aligned table or as CSV (-csl).
 *
 * Messages go to stderr, one line each with the tool's name in front: "TOOL: reason".
 * Not thread-safe (the row sort keeps its event in a static).
 */
#ifndef DCPI_CORE_ANALYSIS_PROCS_H
#define DCPI_CORE_ANALYSIS_PROCS_H

#include <stdio.h>
#include "core/analysis/profset.h"

typedef struct dcpi_procs_opts {
    const char *tool;       /* the name in front of every message */
    int by_image;           /* 1: one row per image (-i) */
    int by_process;         /* 1: one row per process, "PID COMMAND" (-procs; the set is loaded
                               with DCPI_PSET_LOAD_PROCS) */
    int no_header;          /* 1: no event summary block (-no_header) */
    int csl;                /* 1: comma-separated output (-csl; no summary block either) */
    int wide;               /* 1: procedure names printed whole (-wide), else cut to 50 columns */
    const char *sort_event; /* the event rows are sorted by; NULL: the one with most samples */
    double keep;            /* print rows until the sort event's cum% reaches it (100: all) */
    int no_children;        /* 1: no children column (-pid/-comm: stacks are not per process) */
    const char *db;         /* where the stack profile of the sort event is looked for */
    const char *epoch;
    const char *platform; /* NULL: every platform */
} dcpi_procs_opts_t;

/*
 * Print set's report to f: the event summary block ("Column Total Period Lost"), then the
 * header line and the rows, sorted by decreasing count of the sort event (ties: procedure, then
 * image name). A set without samples prints "no samples" on stderr after the summary. Returns
 * 0, or a negative DCPI_E* after its message on stderr (DCPI_ENOENT: no samples of
 * o->sort_event in the epoch).
 */
int dcpi_procs_report(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, FILE *f);

#endif
