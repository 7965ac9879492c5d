/*
 * export.h - writing one epoch's samples in another profiler's format (dcpiexport): the common
 * driver (event choice, image order and load addresses, the event's stack profile mapped onto
 * the profile set) and the three exporters: gperftools' CPU profile (export_gperf.c), gprof's
 * gmon.out for one program (export_gmon.c) and pprof's profile.proto (export_pprof.c).
 *
 * Flow of dcpiexport's main():
 *
 *     dcpi_cli_load(&cli, &set, err);                  // and dcpi_profset_filter by operands
 *     dcpi_export_src_t src = {TOOL, cli.db, cli.epoch, cli.platform, cli.args, cli.nargs};
 *     dcpi_export_t x;
 *     rc = dcpi_export_open(&x, &src, set, event, out, err);
 *     rc = rc ? rc : dcpi_export_gperf(&x, err);       // or _gmon, _pprof
 *     dcpi_export_close(&x);
 *
 * Every message written into err (DCPI_ERRLEN bytes) is one line "TOOL: reason", TOOL being
 * src->tool.
 */
#ifndef DCPI_CORE_FORMATS_EXPORT_H
#define DCPI_CORE_FORMATS_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "core/model/profset.h"
#include "core/model/stackview.h"
#include "core/store/vprof.h"

/* Load addresses given to images after the first one (the program, kept at its ELF vaddrs). */
#define DCPI_EXPORT_LIB_BASE   0x7f0000000000ull
#define DCPI_EXPORT_LIB_STRIDE 0x100000000ull
/* Where samples outside every image go (no symbol there). */
#define DCPI_EXPORT_UNKNOWN_PC 0x10ull

/* Where the exported set comes from (no argv: the tool fills it from its flags). */
typedef struct dcpi_export_src {
    const char *tool;          /* the name in front of every message */
    const char *db;            /* the database directory */
    const char *epoch;         /* the epoch exported (stack and value profiles are read from it) */
    const char *const *epochs; /* several epochs exported (-epoch all, A..B): their stack and */
    size_t nepochs;            /*   value profiles merged; NULL, 0: epoch only */
    const char *platform;      /* NULL: every platform */
    char *const *names; /* image names given by the user; the first one that matches is the */
    int nnames;         /*   program (gmon's image, the first mapping of pprof and gperftools) */
    const dcpi_procsel_t *procsel; /* -pid/-comm (NULL: every process): pprof labels only the
                                      selected processes' samples from the .procs splits */
    /* NULL, or where the stack profile of an event comes from instead of db (the fleet's) */
    int (*stacks)(void *arg, const dcpi_profset_t *set, const char *event, dcpi_stackprof_t **sp,
                  char *err);
    /* NULL, or where an image's value profiles come from instead of db's .vprof files (the
     * fleet's, merged over hosts): every plugin's profile of image id, names[i] and vps[i] the
     * caller's */
    int (*vprofs)(void *arg, const char *id, char ***names, dcpi_vprof_t ***vps, size_t *n,
                  char *err);
    void *source_arg;
} dcpi_export_src_t;

/* Samples of chains whose leaf is at (set image img, offset). */
typedef struct dcpi_export_leaf {
    long img; /* set image index */
    uint32_t offset;
    uint64_t count;
} dcpi_export_leaf_t;

/* An event's stack profile, its images mapped to the set and to exported addresses. */
typedef struct dcpi_export_stacks {
    dcpi_stackprof_t *sp; /* NULL: the epoch has no stacks for the event */
    size_t nimg;
    long *pset;                 /* per stack image: set image index or -1 */
    dcpi_symtab_t **tabs;       /* per stack image: symbols or NULL */
    uint64_t *base;             /* per stack image: exported address = base + tstart + offset */
    dcpi_export_leaf_t *leaves; /* chain leaves in set images, sorted, counts summed */
    size_t nleaves;
    uint64_t noimage; /* samples of chains whose leaf is in no image */
    int has_unknown;  /* the set holds an unknown image (chains with such leaves count) */
} dcpi_export_stacks_t;

/* One export: what is exported, where to, and the chosen event's stacks. */
typedef struct dcpi_export {
    const dcpi_export_src_t *src; /* tool name (messages), db, epoch, platform, image names */
    const dcpi_profset_t *set;    /* the (filtered) profile set */
    const char *out;              /* the output file */
    int ev;                       /* index of the exported event in set->events */
    size_t *order;                /* image order: the program first (its place k = 0) */
    dcpi_export_stacks_t xs;      /* the event's stacks */
    int symbolized;               /* gperftools: a "--- symbol" section first (-symbols) */
    int block_counts; /* llvm, afdo: a line counts its block's estimated executions (-counts) */
} dcpi_export_t;

/*
 * Pick the event (name, or NULL for the one with the most samples), order the images (the
 * first image named by an operand, else the first file, is the program) and load the event's
 * stacks. DCPI_ENOENT when the set has no samples ("TOOL: no samples in epoch E" in err) or
 * none of event name (err left empty: dcpi_profset_pick_event already said so on stderr);
 * the stack profile's error; DCPI_ENOMEM. Call dcpi_export_close in every case.
 */
int dcpi_export_open(dcpi_export_t *x, const dcpi_export_src_t *src, const dcpi_profset_t *set,
                     const char *event, const char *out, char *err);
void dcpi_export_close(dcpi_export_t *x);

/* The three formats: write x->out. 0 or a negative DCPI_E* with "TOOL: reason" in err. */
/* gperftools' CPU profile: a record per chain (leaf first) and one-PC records for the PC
 * samples no chain accounts for; images get load addresses by their place in x->order. */
int dcpi_export_gperf(const dcpi_export_t *x, char *err);
/* gprof's gmon.out of the program (x->order[0]): histogram of its PC samples, arcs from the
 * stacks inside it. DCPI_ENOENT when it is no file image with samples of the event. */
int dcpi_export_gmon(const dcpi_export_t *x, char *err);
/* pprof: every event (count and count x period), stacks and PC samples, and the epoch's value
 * profiles as "values" samples labelled with the value. Mappings do not overlap: the program
 * (first) and the kernel keep their addresses, the other images are shifted by page multiples
 * from DCPI_EXPORT_LIB_BASE up (docs/dcpiexport.md). */
int dcpi_export_pprof(const dcpi_export_t *x, char *err);

/* LLVM's sample profile (text, docs/dcpiexport.md "-format llvm"): per function of every
 * image with samples (by DWARF linkage name), body samples per line offset and base
 * discriminator, inlined functions as nested sections, and call targets: indirect calls' from
 * the vp-calls value profiles, direct calls' from the instruction. DCPI_ENOENT when no function
 * has samples of the event. */
int dcpi_export_llvm(const dcpi_export_t *x, char *err);
/* The same profile in GCC's AutoFDO form (gcov, version 2: gcc 12's -fauto-profile). */
int dcpi_export_afdo(const dcpi_export_t *x, char *err);

/* ---- shared by the exporters ---- */

/* The exported epochs' value profiles (of plugin, or all with NULL): the source's (the
 * fleet's) or the database's .vprof files (a damaged one is named on stderr and left out, as
 * dcpi__damage_skip says). Free with dcpi_export_vprofs_free. 0 or a negative DCPI_E* with
 * "TOOL: reason" in err. */
int dcpi_export_vprofs(const dcpi_export_src_t *src, const dcpi_profset_t *set, const size_t *order,
                       const char *plugin, dcpi_vprof_t ***all, size_t *n, char *err);
void dcpi_export_vprofs_free(dcpi_vprof_t **vps, size_t n);

/* Load event ev's stacks into xs (xs->sp NULL when there are none), images based by order. */
int dcpi_export_stacks_load(const dcpi_export_src_t *src, const dcpi_profset_t *set,
                            const size_t *order, int ev, dcpi_export_stacks_t *xs, char *err);
void dcpi_export_stacks_free(dcpi_export_stacks_t *xs);
/* Samples of chains whose leaf is (set image img, offset). */
uint64_t dcpi_export_leaf_count(const dcpi_export_stacks_t *xs, long img, uint32_t offset);
/* 1 when the chain's samples belong to the exported set: its leaf is in one of the set's
 * images (or in no image, and the set holds the unknown samples). */
int dcpi_export_chain_in_set(const dcpi_export_stacks_t *xs, const dcpi_frame_t *f);
/* Exported address of frame f. */
uint64_t dcpi_export_frame_pc(const dcpi_export_stacks_t *xs, dcpi_frame_t f);
/* File offset of tstart in img's file (for mapping lines), tstart when it cannot tell. */
uint64_t dcpi_export_text_offset(const dcpi_profset_image_t *img);

#endif
