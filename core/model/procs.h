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
#ifndef DCPI_CORE_MODEL_PROCS_H
#define DCPI_CORE_MODEL_PROCS_H

#include <stdio.h>
#include "core/model/profset.h"
#include "core/store/stackprof.h"

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
    const char *const *epochs; /* several epochs read (-epoch all, A..B): their stacks merged */
    size_t nepochs;            /* (0 or 1: epoch's only) */
    const char *platform;      /* NULL: every platform */
    /* NULL, or where the stack profile of an event comes from instead of db (the fleet's):
     * 0 with *sp NULL when there is none, or DCPI_E* with its message in err */
    int (*stacks)(void *arg, const dcpi_profset_t *set, const char *event, dcpi_stackprof_t **sp,
                  char *err);
    void *stacks_arg;
} dcpi_procs_opts_t;

/* One row: a procedure of an image, an image (-i) or a process (-procs; proc NULL). */
typedef struct dcpi_procs_row {
    const char *proc;  /* procedure name; NULL in the image and process views */
    const char *image; /* image name, or "PID COMMAND" in the process view */
    uint64_t *counts;  /* [set->nevents] */
    uint64_t children; /* samples of the sort event whose chain passes through the procedure */
    uint64_t addr;     /* the procedure's symbol address (ELF vaddr); 0 when not known */
    long img;          /* index of the image in set->images; -1 in the process view */
} dcpi_procs_row_t;

typedef struct dcpi_procs_priv dcpi_procs_priv_t;

/* The rows of a report; names point into the set and into what priv keeps open. */
typedef struct dcpi_procs_table {
    dcpi_procs_row_t *v; /* sorted by decreasing count of the sort event */
    size_t n;
    int sort;     /* the sort event's index in set->events */
    int children; /* 1: the children column is filled (a stack profile of the sort event) */
    dcpi_procs_priv_t *priv;
} dcpi_procs_table_t;

/*
 * The rows dcpi_procs_report prints (all of them: o->keep, csl, wide and no_header are
 * ignored) into *out (an empty table when the set has no samples); free with
 * dcpi_procs_table_free. Warnings and errors as dcpi_procs_report. The set must outlive the table.
 */
int dcpi_procs_rows(const dcpi_profset_t *set, const dcpi_procs_opts_t *o,
                    dcpi_procs_table_t **out);
void dcpi_procs_table_free(dcpi_procs_table_t *t);

/* The warning line (no '\n') printed under the summary when ev lost more than 1% of its
 * samples, into buf: 1; 0 (buf untouched) when the loss is 1% or less. */
int dcpi_procs_loss_warning(const dcpi_profset_event_t *ev, char *buf, size_t len);

/*
 * Print set's report to f: the event summary block ("Column Total Period Lost"), then the
 * header line and the rows, sorted by decreasing count of the sort event (ties: procedure, then
 * image name). A set without samples prints "no samples" on stderr after the summary. Returns
 * 0, or a negative DCPI_E* after its message on stderr (DCPI_ENOENT: no samples of
 * o->sort_event in the epoch).
 */
int dcpi_procs_report(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, FILE *f);

/*
 * dcpiprof -json: set's events and rows (o->keep applies; csl, wide and no_header do not) as one
 * JSON object on one line (schema "dcpiprof/1", docs/dcpiprof.md JSON OUTPUT), naming the
 * epochs the set was read from. An empty set gives empty rows. 0, or a negative DCPI_E* (after
 * its message on stderr, as dcpi_procs_rows; DCPI_EIO when f cannot be written).
 */
int dcpi_procs_json(const dcpi_profset_t *set, const dcpi_procs_opts_t *o,
                    const char *const *epochs, size_t nepochs, FILE *f);

#endif
