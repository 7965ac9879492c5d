/*
 * diff.h - dcpidiff's comparison of two profile sets (docs/dcpidiff.md): rows matched by name
 * between set A and set B (an image, a procedure of an image, a source line or an instruction of
 * one procedure, a value of one instruction), each with its count and share in both sets, the
 * difference of the shares in points and the significance of that difference
 * (core/diff/diffstat.h: the exact conditional test for two Poisson rates, Benjamini-Hochberg
 * over the rows), sorted by the absolute difference and printed as a table or CSV.
 *
 * Flow: a zeroed dcpi_diff_t with na and nb (the totals shares are of), then dcpi_diff_add for
 * every piece of both sets (pieces of one name are summed, names matched between the sets) or
 * dcpi_diff_add_row for rows with their own totals, then dcpi_diff_finish, dcpi_diff_print,
 * dcpi_diff_free. diff.c holds the table, diffset.c the rows made from profile sets (image,
 * procedure, line, instruction, value).
 *
 * Messages go to stderr as "TOOL: reason". Not thread-safe.
 */
#ifndef DCPI_CORE_DIFF_DIFF_H
#define DCPI_CORE_DIFF_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/model/profset.h"
#include "core/store/vsummary.h"

enum dcpi_diff_side { DCPI_DIFF_A = 0, DCPI_DIFF_B = 1 };

typedef struct dcpi_diff_row {
    char *image;     /* image (or group: an instruction for values); "" when none */
    char *name;      /* procedure, image, "file:line", "0xaddr insn", value */
    uint64_t a, b;   /* counts in A and B */
    uint64_t na, nb; /* the totals the shares are of */
    double pa, pb;   /* shares in percent */
    double delta;    /* pb - pa, points */
    double p, q;     /* raw and Benjamini-Hochberg adjusted p-values */
} dcpi_diff_row_t;

/* A piece of one set before names are matched. */
typedef struct dcpi_diff_piece {
    char *image, *name;
    int side;
    uint64_t count;
} dcpi_diff_piece_t;

typedef struct dcpi_diff {
    uint64_t na, nb; /* set by the caller: the totals of the compared event */
    dcpi_diff_piece_t *pieces;
    size_t npieces, cap_pieces;
    dcpi_diff_row_t *rows; /* made by dcpi_diff_finish, sorted by |delta| */
    size_t n, cap;
} dcpi_diff_t;

/* Add count samples of (image, name) in side's set (copied). 0 or DCPI_ENOMEM. */
int dcpi_diff_add(dcpi_diff_t *d, int side, const char *image, const char *name, uint64_t count);
/* Add a finished row with its own totals (value rows: the instruction's value samples). */
int dcpi_diff_add_row(dcpi_diff_t *d, const char *image, const char *name, uint64_t a, uint64_t na,
                      uint64_t b, uint64_t nb);
/* Sum the pieces by (image, name) into rows (a name missing in one set counts 0 there), compute
 * shares, p-values and their Benjamini-Hochberg adjustment over all rows, and sort the rows by
 * decreasing |delta| (ties: smaller q, then image and name). 0 or DCPI_ENOMEM. */
int dcpi_diff_finish(dcpi_diff_t *d);
void dcpi_diff_free(dcpi_diff_t *d);

typedef struct dcpi_diff_popts {
    const char *what;  /* the name column's title: "procedure", "image", "line", ... */
    const char *group; /* the image column's title ("image", "instruction"); NULL: no column */
    double alpha;      /* significance level of the adjusted p-values (-threshold) */
    int all;           /* 1: print noise rows too (-all) */
    double keep;       /* stop once the printed rows hold PCT % of the sum of |delta| (100: all) */
    int csl;           /* 1: comma-separated */
    int wide;          /* 1: names printed whole (else cut to 50 columns) */
    int json;          /* 1: dcpi_diff_json instead of the table (-json) */
} dcpi_diff_popts_t;

/* Print the rows to f: a header line, then the rows (significant ones, or all with o->all),
 * then in the table form one line saying how many rows were noise and hidden. Returns the
 * number of significant rows. */
size_t dcpi_diff_print(const dcpi_diff_t *d, const dcpi_diff_popts_t *o, FILE *f);

/* One compared set, as -json names it. */
typedef struct dcpi_diff_jside {
    const char *db, *epoch;
    uint64_t samples;  /* of the compared event */
    uint64_t share_of; /* the total its shares are of */
} dcpi_diff_jside_t;
/* dcpidiff -json: the rows dcpi_diff_print prints (same filters) as one JSON object, schema
 * dcpidiff/1 (docs/dcpidiff.md). Returns the number of significant rows. */
size_t dcpi_diff_json(const dcpi_diff_t *d, const dcpi_diff_popts_t *o, const char *event,
                      const dcpi_diff_jside_t side[2], FILE *f);

/*
 * The names images are matched by: ka[i] for A's image i and kb[j] for B's image j are their
 * names, except that an image whose name is in only one set is matched to the one image of the
 * other set, also unmatched by name, whose path has the same basename (two builds of one program
 * in two directories); both then get A's name. ka and kb have set->nimages entries (pointers
 * into the sets).
 */
void dcpi_diff_image_keys(const dcpi_profset_t *A, const dcpi_profset_t *B, const char **ka,
                          const char **kb);

/* Pieces of set (side) for event e: one per image (by_image) or per (image, procedure), the
 * images named by keys (dcpi_diff_image_keys). Images whose samples cannot be named get one
 * warning on stderr ("TOOL: why; its samples are shown as unknown_rou"). 0 or DCPI_ENOMEM. */
int dcpi_diff_add_set(dcpi_diff_t *d, int side, const dcpi_profset_t *set, int e,
                      const char *const *keys, int by_image, const char *tool);

/*
 * The rows of one instruction's two value hotlists (-vprof): one per key listed in either, named
 * "0xVALUE" (" @0xC0,0xC1" added when a context is non-zero; "missing" for the SDK-2 missing
 * value), with the instruction's label as the group; a key not listed in one hotlist counts 0
 * there. The totals are the hotlists' vtot (the instruction's value samples in each set), so the
 * shares are of the instruction's values. 0 or DCPI_ENOMEM.
 */
int dcpi_diff_add_values(dcpi_diff_t *d, const char *group, const dcpi_vsummary_t *va,
                         const dcpi_vsummary_t *vb);

/* One set for the views of one procedure (-source, -asm, -vprof). */
typedef struct dcpi_diff_set {
    const dcpi_profset_t *set;
    const char *db, *epoch, *platform; /* where its value profiles are read */
    int event;                         /* the compared event's index in set->events */
} dcpi_diff_set_t;

enum dcpi_diff_view { DCPI_DIFF_SOURCE, DCPI_DIFF_ASM, DCPI_DIFF_VPROF };

typedef struct dcpi_diff_proc {
    const char *tool;
    enum dcpi_diff_view view;
    const char *proc;               /* a procedure name or an address, as dcpilist takes */
    const char *image;              /* the image holding it (path or basename) */
    int within;                     /* 1: shares of the procedure's samples (-source, -asm) */
    const char *vpname;             /* -vprof: only this value profile (NULL: all in both) */
    const char *const *plugin_dirs; /* searched by the value-profile loader */
} dcpi_diff_proc_t;

/*
 * The rows of one procedure of image in both sets: per source line ("file:line", the file's
 * basename; DWARF lines of each set's own build), per instruction ("0xADDR  insn", only when
 * both sets profiled the same build of the image) or per (instruction, value) of the value
 * hotlists both sets have for an instruction (same build; the totals of a row are the
 * instruction's value samples vtot in each set). Sets d->na and d->nb for -source and -asm
 * (the set's event total, or with within the procedure's samples). Errors: a negative DCPI_E*
 * with one line "reason" in err (DCPI_ERRLEN), e.g. "set A: no procedure 'f' in PATH", "-asm
 * compares instructions of one build: set A profiled PATH id X, set B id Y (use -source or the
 * procedure view)".
 */
int dcpi_diff_add_proc(dcpi_diff_t *d, const dcpi_diff_proc_t *o, const dcpi_diff_set_t sets[2],
                       char *err);

#endif
