/*
 * profset.h - the profile set the analysis tools work on: one epoch's PC profiles (all
 * platforms, or one) read into memory and grouped by image, one merged profile per event; and
 * the queries made on it (image names, filtering, events, totals, the symbols that name an
 * image's samples).
 *
 * Every message written into err (DCPI_ERRLEN bytes, may be NULL) is one complete line without
 * '\n': "FILE: reason" (no tool name, so any caller can reuse them; dcpi_cli_load in
 * cli/cli.h adds the tool's).
 */
#ifndef DCPI_CORE_MODEL_PROFSET_H
#define DCPI_CORE_MODEL_PROFSET_H

#include <stddef.h>
#include <stdint.h>
#include "core/image/symbols.h"
#include "core/store/procprof.h"
#include "dcpi/profile.h"

/* Procedure name for samples outside every known symbol (DCPI's catch-all). */
#define DCPI_UNKNOWN_ROUTINE "unknown_rou"

enum dcpi_pset_kind {
    DCPI_PSET_FILE = 0,    /* an ELF (or other) file at path */
    DCPI_PSET_KERNEL = 1,  /* path "[kernel.kallsyms]", symbols from the "kallsyms" file */
    DCPI_PSET_UNKNOWN = 2, /* samples outside every image: "unknown@<platform>" */
    DCPI_PSET_PSEUDO = 3,  /* another "[name]" mapping (vdso, ...): no file to read */
};

typedef struct dcpi_profset_event {
    char *name;         /* "cpu-clock" */
    uint64_t total;     /* samples over every image in the set */
    uint64_t period;    /* the period of the first profile read */
    int mixed_period;   /* 1 when profiles of this event disagree on the period */
    uint64_t lost;      /* sum of the "lost" header values (absent = 0) */
    uint64_t nfiles;    /* profile files merged into this event */
    uint64_t saturated; /* merges where a count saturated at UINT32_MAX */
} dcpi_profset_event_t;

typedef struct dcpi_profset_image {
    char *id;       /* header "image" value (lowercase hex) */
    int kind;       /* enum dcpi_pset_kind */
    char *path;     /* header "path" ("" when absent) */
    char *name;     /* what to show: path, or "unknown@<platform>" for unknown samples */
    char *dir;      /* image directory of the first profile read (holds "kallsyms") */
    char *platform; /* platform of the first profile read */
    int nplatforms; /* how many platforms contributed */
    uint64_t tstart, tsize;
    dcpi_profile_t **prof; /* [set->nevents]: merged profile per event, NULL when none */
    /* Loaded with DCPI_PSET_LOAD_PROCS: [set->nevents] the profiles' split by process (NULL:
     * none), and how many of the image's profile files had no split (written before dcpid kept
     * one, or imported). */
    dcpi_procprof_t **procs;
    size_t procs_missing;
    /* Symbols given with the set (the fleet store's, core/fleet/query.h): when nsyms > 0,
     * dcpi_profset_open_symbols builds the table from them instead of reading any file. Names
     * point into sympool; both are freed with the set. */
    dcpi_symbol_t *syms;
    size_t nsyms;
    char *sympool;
} dcpi_profset_image_t;

typedef struct dcpi_profset {
    dcpi_profset_event_t *events; /* sorted by name */
    size_t nevents;
    dcpi_profset_image_t *images; /* sorted by name, then id */
    size_t nimages;
} dcpi_profset_t;

/*
 * Read every "*.prof" file of epoch (one platform, or all when platform is NULL) into a new
 * set. Profiles of one image (same id and tstart; unknown samples: same platform) are merged
 * with dcpi_profile_add_all, per event. A file that cannot be read or parsed is damage: named in
 * a warning and left out (core/base/damage.h), or with -strict it stops the load (DCPI_E* with
 * "FILE: reason" in err). An epoch without profiles gives an empty set.
 */
int dcpi_profset_load(const char *db, const char *epoch, const char *platform, int flags,
                      dcpi_profset_t **out, char *err);
/* flags: with DCPI_PSET_LOAD_PROCS, also each profile's "<event>.procs" (core/store/procprof.h). */
#define DCPI_PSET_LOAD_PROCS 1
/* With DCPI_PSET_LOAD_PROCS: the caller reads only each process's total per image and event
 * (dcpiprof -procs, the report's processes): a loader may put each total at offset 0 (the
 * fleet's does: a row per process instead of per process and offset); a database's ignores it. */
#define DCPI_PSET_LOAD_PROCS_TOTALS 2
/* The profiles of several epochs (-epoch all, A..B, -since/-until) as one set: every file of
 * each is read as dcpi_profset_load reads one epoch's, so an image's profiles (and splits by
 * process) of all the epochs are added up, and the events' lost counts too. */
int dcpi_profset_load_epochs(const char *db, const char *const *epochs, size_t nepochs,
                             const char *platform, int flags, dcpi_profset_t **out, char *err);

/*
 * -strict: check that every other file of the epoch a tool may read parses (the profiles'
 * splits by process, value profiles, stack files, and the symbol snapshots dcpid kept for the
 * images of set), so that damage fails the tool before it prints anything. 0, or the first
 * damaged file's error with "FILE: reason" in err.
 */
int dcpi_profset_verify(const char *db, const char *epoch, const char *platform,
                        const dcpi_profset_t *set, char *err);

/* Which processes a tool looks at: -pid and -comm (both must match when both are given). */
typedef struct dcpi_procsel {
    long pid;         /* -1: any */
    const char *comm; /* NULL: any; compared on its first 15 bytes (the kernel's length) */
} dcpi_procsel_t;
/* 1 when pid/comm is selected by sel. */
int dcpi_procsel_matches(const dcpi_procsel_t *sel, uint32_t pid, const char *comm);
/* Replace every profile of a set loaded with DCPI_PSET_LOAD_PROCS by the samples of the
 * selected processes; images left without samples are dropped, event totals recomputed (lost
 * counts stay the epoch's). *missing gets the number of profile files without a split by
 * process (their samples are left out). 0 or DCPI_ENOMEM. */
int dcpi_profset_by_process(dcpi_profset_t *set, const dcpi_procsel_t *sel, size_t *missing);
void dcpi_profset_free(dcpi_profset_t *set);

/*
 * Build a set from another source than a database (the fleet store, core/fleet/query.h): a new
 * empty set; its events (add them all first: 0.. their index, or DCPI_ENOMEM); its images (the
 * strings of desc copied, prof and procs arrays of set->nevents NULL slots made: the caller
 * fills them with dcpi_profile_new / dcpi_procprof_add; returns the index or DCPI_ENOMEM); then
 * dcpi_profset_finish sorts events and images and computes the totals as a load does.
 */
int dcpi_profset_new(dcpi_profset_t **out);
int dcpi_profset_add_event(dcpi_profset_t *set, const char *name, uint64_t period, uint64_t lost);
int dcpi_profset_add_image(dcpi_profset_t *set, const dcpi_profset_image_t *desc);
int dcpi_profset_finish(dcpi_profset_t *set);

/* 1 when name designates img: equal to its path, its name or its path's basename. */
int dcpi_profset_image_matches(const dcpi_profset_image_t *img, const char *name);
/* Keep only the images matching one of names (n > 0; n == 0 keeps all) and recompute the event
 * totals. Returns the number of images kept. */
size_t dcpi_profset_filter(dcpi_profset_t *set, char *const *names, size_t n);
/* dcpi_profset_filter by the image names given to a tool, after "TOOL: no profile of image
 * 'NAME' in epoch EPOCH" on stderr for each name that matches no image. Returns 0 (n == 0: the
 * set unchanged), or DCPI_ENOENT when none of the names matches. */
int dcpi_profset_select(dcpi_profset_t *set, char *const *names, size_t n, const char *tool,
                        const char *epoch);
/* "TOOL: EVENT: N merges saturated a count at 4294967295 samples" on stderr for every event
 * whose merges saturated a count. */
void dcpi_profset_warn_saturated(const dcpi_profset_t *set, const char *tool);
/* Index of event name in set->events, or -1. */
int dcpi_profset_event_index(const dcpi_profset_t *set, const char *name);
/* The event named name (-1 after "TOOL: no samples of event 'NAME' in epoch EPOCH (events
 * there: A, B)" on stderr when the set has none), or with no name the one with the most samples
 * (ties: the first; 0 when the set has no events). */
int dcpi_profset_pick_event(const dcpi_profset_t *set, const char *name, const char *tool,
                            const char *epoch);
/* The database directory img was read from (its dir is DB/EPOCH/PLATFORM/IMAGEDIR). */
void dcpi_profset_image_db(const dcpi_profset_image_t *img, char *out, size_t len);
/* Total samples of img over every event. */
uint64_t dcpi_profset_image_total(const dcpi_profset_t *set, const dcpi_profset_image_t *img);

/*
 * The symbol table that names img's samples (address = tstart + offset): the ELF file at path
 * (only when dcpi_image_probe still gives the profile's image id) or the kernel's kallsyms
 * copy. On failure *st is NULL, a negative DCPI_E* is returned and why (DCPI_ERRLEN) says why
 * in one line, e.g. "PATH changed since it was profiled (id X, profile Y)"; the caller shows
 * the samples as DCPI_UNKNOWN_ROUTINE. Unknown and pseudo images return DCPI_ENOENT with an
 * empty why (nothing to warn about). damaged (may be NULL) is set to 1 when a snapshot dcpid kept
 * (kallsyms, jitsyms, the symbol cache) is there but cannot be parsed: damaged data
 * (core/base/damage.h), not a missing file.
 */
int dcpi_profset_open_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why,
                              int *damaged);
/* dcpi_profset_open_symbols for a tool's view: img's symbols (NULL when none) after
 * "TOOL: WHY; its samples are shown as unknown_rou" on stderr when they cannot be read; a
 * damaged snapshot is counted as damage skipped (dcpi__damage_status: exit 3). */
dcpi_symtab_t *dcpi_profset_symbols_or_warn(const dcpi_profset_image_t *img, const char *tool);

#endif
