/*
 * listsel.h - dcpilist's work between its flags and a printed listing (docs/dcpilist.md): from
 * an epoch's profile set and the operands (a procedure, an image) to a filled listing
 * (core/listing/listing.h). The image file is found (a bare basename that is no file here
 * names the profiled image of that basename, preferring one whose file still has the profiled
 * id) and must still be the one profiled; the procedure is a symbol name or an address inside
 * one; the samples of every event of the image are attributed to its instructions; with value
 * profiles (dcpi_lstsel_values) the plugins are loaded and the image's value profiles of every
 * platform merged and attached. listsel.c holds the image, procedure and samples, listvals.c
 * the value profiles.
 *
 * Flow: fill tool, set, db, epoch, platform of a zeroed dcpi_lstsel_t, then dcpi_lstsel_open,
 * (dcpi_lstsel_values,) dcpi_lstsel_build, dcpi_lstsel_print, dcpi_lstsel_free.
 *
 * Errors: a negative DCPI_E* with one line "reason" (no tool name; empty when out of memory)
 * in err (DCPI_ERRLEN); the caller prints it. Warnings that do not stop the listing go to
 * stderr as "TOOL: reason".
 */
#ifndef DCPI_CORE_LISTING_LISTSEL_H
#define DCPI_CORE_LISTING_LISTSEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/listing/listing.h"
#include "core/model/profset.h"
#include "core/image/image.h"
#include "core/image/srclines.h"
#include "core/image/symbols.h"
#include "core/plugin/vploader.h"
#include "core/store/vprof.h"

/* The views of dcpilist: -best (source when possible, else asm), -asm, -source, -both. */
enum dcpi_lst_mode { DCPI_LST_BEST, DCPI_LST_ASM, DCPI_LST_SOURCE, DCPI_LST_BOTH };

typedef struct dcpi_lstsel {
    /* Set by the caller (borrowed). */
    const char *tool;          /* the name in front of warnings */
    const dcpi_profset_t *set; /* the epoch's profile set */
    const char *db, *epoch;    /* where value profiles are read */
    const char *platform;      /* NULL: every platform */
    const char *const *epochs; /* the epochs read (-epoch all, A..B), ascending; NULL: epoch */
    size_t nepochs;

    /* dcpi_lstsel_open */
    char path[4096]; /* the image file listed */
    char kept[4096]; /* "" or the profiled path whose code path holds (DB/.codecache copy) */
    dcpi_image_info_t info;
    dcpi_symtab_t *st;
    const char *proc; /* the procedure's name (in st) and its range [lo, hi) */
    uint64_t lo, hi;

    /* dcpi_lstsel_values */
    dcpi_vp_set_t *plugins;
    char **vpnames;        /* [nvp]: value profiles shown ("vp-classic") */
    dcpi_vprof_t **vprofs; /* [nvp]: merged over the platforms, NULL when none */
    char **vmiss;          /* [nvp]: their <name>.vmiss files' lines ("0xOFF reason"), or NULL */
    size_t nvp;

    /* dcpi_lstsel_build */
    const char **events; /* names of the events this image has */
    int *event_idx;      /* their index in set->events */
    size_t nevents;
    dcpi_listing_t *ls;

    /* dcpi_lstsel_print */
    dcpi_srclines_t *sl;
} dcpi_lstsel_t;

/* The longest address range a procedure operand "0xA:0xB" may name (bytes). */
#define DCPI_LSTSEL_RANGE_MAX (16 << 20)

/*
 * Find the image file (pfile, else the image operand) and check that the set has samples of it
 * (else "PATH changed since it was profiled (id X, profile Y in epoch E)" or "no profile of
 * PATH (id X) in epoch E"), then the procedure proc ("no procedure 'P' in PATH"): a symbol
 * name, an address inside one ("0x..."), or a range "0xA:0xB" of ELF addresses (the range
 * [A, B), named after the symbol holding A, else after the operand; "bad range ..." when A >= B).
 */
int dcpi_lstsel_open(dcpi_lstsel_t *s, const char *proc, const char *image, const char *pfile,
                     char *err);

/*
 * The procedure a names in st (path only for err): the symbol containing the address a
 * ("0x..."), else the symbol named a, else the one function whose C++ short name (without
 * parameters, template arguments and return type; "geo::norm2", "tally") is a. 0,
 * DCPI_ENOENT (err untouched), or DCPI_EINVAL with "procedure 'A' is ambiguous in PATH: ...".
 * Also dcpicoverage's (covsel.c).
 */
int dcpi_lstsel_lookup(const dcpi_symtab_t *st, const char *a, const char *path,
                       const dcpi_symbol_t **out, char *err);
/* The end of sym's code: addr + size, else the next symbol's address, else the end of the text
 * (info). */
uint64_t dcpi_lstsel_symbol_end(const dcpi_symtab_t *st, const dcpi_symbol_t *sym,
                                const dcpi_image_info_t *info);

/*
 * Load the n plugins names (-vtrace; searched in dirs, then as dcpi_vp_load does; insecure:
 * -vtrace-insecure) and read the value profiles to show: those plugins' profiles, else every
 * value profile of the image in the epoch (warning "TOOL: no value profiles of PATH in epoch E"
 * when there is none, "TOOL: no value profile 'NAME' of PATH in epoch E" per missing one).
 */
int dcpi_lstsel_values(dcpi_lstsel_t *s, const char *const *dirs, const char *const *names,
                       size_t n, int insecure, char *err);

/* dcpi_lstsel_values with the image's value profiles given instead of read from the epoch
 * (the fleet's, merged over its hosts): vps[i] is the profile of plugin vpnames[i], with its
 * missing-value marks (dcpi_vprof_marks; a profile without hotlists is marks only); every vps[i]
 * is taken (freed with s, or here when not shown), vpnames stays the caller's. */
int dcpi_lstsel_values_given(dcpi_lstsel_t *s, const char *const *dirs, const char *const *names,
                             size_t n, int insecure, char **vpnames, dcpi_vprof_t **vps,
                             size_t nvps, char *err);

/* The listing of the procedure: decoded, its samples of every event of the image attributed,
 * the value profiles attached. */
int dcpi_lstsel_build(dcpi_lstsel_t *s, char *err);
/* Hand the hotlists of every value profile to s->ls (part of dcpi_lstsel_build). Error: "value
 * profile NAME of PATH: bad tstart 'T'". */
int dcpi_lstsel_attach_values(dcpi_lstsel_t *s, char *err);

/*
 * Print the listing to f: "PROC  PATH  (0xLO..0xHI)  epoch E", then the view of mode (-best
 * with vo: asm; else source when the procedure has line information and a readable source
 * file; -source/-both without line information: warning on stderr), with the value columns
 * when vo is not NULL (asm view).
 */
void dcpi_lstsel_print(dcpi_lstsel_t *s, enum dcpi_lst_mode mode, const dcpi_lst_vopts_t *vo,
                       FILE *f);

/*
 * dcpilist -json: the listing built by dcpi_lstsel_build as one JSON object on one line (schema
 * dcpilist/1, docs/dcpilist.md): the procedure, its events, every instruction with its counts
 * and source position (when the file has line information), and with values (-vprof, after
 * dcpi_listing_prepare_values) each value profile's hotlist at each instruction with its
 * figures, bound (dcpi_listing_share_bound), the text the asm view shows and every entry with
 * the plugin's text of its value. Nothing is written when a plugin call faults (DCPI_EPLUGIN,
 * err as dcpi_listing_hotlist). 0, DCPI_ENOMEM, DCPI_EPLUGIN or DCPI_EIO.
 */
int dcpi_lstsel_json(dcpi_lstsel_t *s, int values, FILE *f, char *err);

/* Release what the dcpi_lstsel_* functions made (not the borrowed fields). */
void dcpi_lstsel_free(dcpi_lstsel_t *s);

#endif
