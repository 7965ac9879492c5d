/*
 * declare-int.h - the inside of a declarative plugin (declare.h), shared by declare.c (its
 * entries as libffi closures) and declspec.c (the specification's parser). Private to
 * core/plugin/.
 */
#ifndef DCPI_CORE_PLUGIN_DECLARE_INT_H
#define DCPI_CORE_PLUGIN_DECLARE_INT_H

#include <ffi.h>
#include <stdint.h>

#include "dcpi/errno.h"
#include "dcpi/vprofiler.h"

typedef struct dcpi_decl dcpi_decl_t; /* as in declare.h */

#define MAXSEL   16
#define MAXLABEL 16
#define RELATIVE (1ull << 63) /* reduce=relative: an image-relative ELF address */

enum { R_VALUE, R_RELATIVE, R_BITS, R_DIFF };
enum { F_HEX, F_DEC, F_SIGNED, F_SYMBOL, F_FLOAT };
enum { E_NAME, E_INIT, E_DONE, E_PROCESS, E_PREFACE, E_FORMAT2, E_SELECT, E_FILTER, E_COUNT };

struct dcpi_decl {
    char name[256], preface[64];
    char sel[MAXSEL][32];
    int nsel, by_class, memform; /* memform -1: any */
    unsigned operands;           /* the first operand's kinds admitted (bit per kind), 0: any */
    int conditional;             /* -1 any, 0 not, 1 conditional only */
    char symbol[128];            /* "" anywhere */
    unsigned long long lo, hi;   /* range=LO-HI (ELF addresses), lo == hi anywhere */
    trace_value_t kinds[2];
    int nkinds, reduce, format;
    int show_missing; /* missing=show: a vp_missing() vsample instead of nothing */
    unsigned bit_lo, bit_n;
    uint64_t label_v[MAXLABEL]; /* label=V:TEXT: the values printed as TEXT */
    char label_t[MAXLABEL][32];
    int nlabel;
    uint64_t keep[MAXLABEL]; /* keep=V,...: every other value is counted as "other" */
    int nkeep;
    uint64_t other;        /* the value standing for "other": one keep= does not name */
    unsigned seen;         /* keys given (bit per key of set_key's table): each only once */
    char why[DCPI_ERRLEN]; /* why init returned no specification */
    trace_vlist_table_t *spec;
    vsample_t *out;
    char text[128];
    vp_dispatch_t table;
    ffi_closure *cl[E_COUNT];
    void *code[E_COUNT];
    ffi_cif cif[E_COUNT];
    ffi_type *args[E_COUNT][3];
};

/* Parse text (label names it in messages) into d, whose defaults are set: 0, or DCPI_EINVAL
 * with "LABEL: reason" in err. */
int dcpi__decl_parse(dcpi_decl_t *d, const char *text, const char *label, char *err);

#endif
