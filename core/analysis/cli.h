/*
 * cli.h - what every analysis tool (dcpiprof, dcpilist, ...) shares: the single-dash flags
 * -db DIR, -epoch NAME|latest|latest-N, -platform P, -h, -V, and the loading of one epoch's PC
 * profiles into memory, grouped by image (the "profile set").
 *
 * Flow of a tool's main():
 *
 *     dcpi_cli_t cli = {.tool = "dcpiprof", .operands = "[image-names...]", .flags = flags};
 *     int rc = dcpi_cli_parse(&cli, argc, argv, err);       // -h/-V/usage errors end here
 *     if (rc != 0) return dcpi_cli_exit(rc, err);
 *     ... walk cli.opts (the tool's own flags) and cli.args (operands) ...
 *     rc = dcpi_cli_load(&cli, &set, err);                   // resolves -db/-epoch, reads files
 *
 * Every message written into err (DCPI_ERRLEN bytes, may be NULL) by the dcpi_cli_* functions
 * is one complete line without '\n', starting with the tool's name: "TOOL: reason".
 * dcpi_profset_* functions write "FILE: reason" (no tool name) so other callers can reuse them.
 */
#ifndef DCPI_CORE_CLI_H
#define DCPI_CORE_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "core/store/db.h"
#include "core/image/symbols.h"
#include "dcpi/profile.h"

/* Internal API: exported from libdcpi for dcpi's own tools, no ABI promise. */
#pragma GCC visibility push(default)

/* dcpi_cli_parse result when -h or -V was handled (the tool exits 0). */
#define DCPI_CLI_DONE 1

/* Procedure name for samples outside every known symbol (DCPI's catch-all). */
#define DCPI_UNKNOWN_ROUTINE "unknown_rou"

/* One tool-specific flag. A table of them ends with an entry whose name is NULL. */
typedef struct dcpi_cli_flag {
    const char *name; /* "-keep" */
    const char *arg;  /* NULL: takes no argument; else the argument's name for -h ("PCT") */
    const char *help; /* one line for -h */
} dcpi_cli_flag_t;

typedef struct dcpi_cli {
    /* Set by the tool before dcpi_cli_parse. */
    const char *tool;             /* program name used in every message */
    const char *operands;         /* operand synopsis for -h, e.g. "[image-names...]"; NULL: none */
    const dcpi_cli_flag_t *flags; /* the tool's own flags (NULL: none) */
    FILE *out;                    /* where -h and -V print (NULL: stdout) */

    /* Filled by dcpi_cli_parse (pointers into argv). */
    const char *db_arg;     /* -db value, or NULL */
    const char *epoch_spec; /* -epoch value, or NULL (= latest) */
    const char *platform;   /* -platform value, or NULL (= every platform) */
    char **opts;            /* the tool's flags in command-line order, each followed by its value */
    int nopts;              /*   when it takes one (the value is always there) */
    char **args;            /* operands in order (everything after "--" is an operand) */
    int nargs;

    /* Filled by dcpi_cli_resolve (called by dcpi_cli_load). */
    char db[4096];
    char epoch[DCPI_NAMELEN];
} dcpi_cli_t;

/*
 * Consume the shared flags from argv[1..argc-1]; the tool's flags and operands are left in
 * cli->opts / cli->args (free with dcpi_cli_free; on any non-zero return they are already freed).
 * Returns 0; DCPI_CLI_DONE after printing -h (usage) or -V ("TOOL (dcpi) 0.1.0") to cli->out;
 * DCPI_EINVAL with "TOOL: unknown flag '-x' (try -h)" or "TOOL: flag '-db' needs an argument (try
 * -h)" in err; DCPI_ENOMEM.
 */
int dcpi_cli_parse(dcpi_cli_t *cli, int argc, char **argv, char *err);
void dcpi_cli_free(dcpi_cli_t *cli);

/* Print the usage text (shared flags, tool flags, operands) to f. */
void dcpi_cli_usage(const dcpi_cli_t *cli, FILE *f);

/*
 * The exit status for a result of the dcpi_cli_* functions, after printing err (if rc is an
 * error and err is not empty) on stderr: 0 for 0 and DCPI_CLI_DONE, 2 for DCPI_EINVAL (a usage
 * error), 1 for every other error.
 */
int dcpi_cli_exit(int rc, const char *err);

/*
 * Resolve cli->db (-db, else $DCPIDB, else ./dcpidb) and cli->epoch (-epoch, default latest,
 * counting only epochs that hold -platform when given). Errors: DCPI_ENOENT "TOOL: DIR: no such
 * database directory", or the epoch selection's error ("TOOL: ..."), e.g. no epochs.
 */
int dcpi_cli_resolve(dcpi_cli_t *cli, char *err);

/* ---- the profile set: one epoch's PC profiles grouped by image ---- */

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
 * with dcpi_profile_add_all, per event. A file that cannot be read or parsed stops the load:
 * DCPI_E* with "FILE: reason" in err. An epoch without profiles gives an empty set.
 */
int dcpi_profset_load(const char *db, const char *epoch, const char *platform, dcpi_profset_t **out,
                      char *err);
/* dcpi_profset_load of cli's resolved db/epoch/platform (resolving first when cli->epoch is
 * empty), with the tool name in front of every error. */
int dcpi_cli_load(dcpi_cli_t *cli, dcpi_profset_t **out, char *err);
void dcpi_profset_free(dcpi_profset_t *set);

/* 1 when name designates img: equal to its path, its name or its path's basename. */
int dcpi_profset_image_matches(const dcpi_profset_image_t *img, const char *name);
/* Keep only the images matching one of names (n > 0; n == 0 keeps all) and recompute the event
 * totals. Returns the number of images kept. */
size_t dcpi_profset_filter(dcpi_profset_t *set, char *const *names, size_t n);
/* Index of event name in set->events, or -1. */
int dcpi_profset_event_index(const dcpi_profset_t *set, const char *name);
/* The event named name (-1 after "TOOL: no samples of event 'NAME' in epoch EPOCH" on stderr
 * when the set has none), or with no name the one with the most samples (ties: the first; 0 when
 * the set has no events). */
int dcpi_profset_pick_event(const dcpi_profset_t *set, const char *name, const char *tool,
                            const char *epoch);
/* Total samples of img over every event. */
uint64_t dcpi_profset_image_total(const dcpi_profset_t *set, const dcpi_profset_image_t *img);

/*
 * The symbol table that names img's samples (address = tstart + offset): the ELF file at path
 * (only when dcpi_image_probe still gives the profile's image id) or the kernel's kallsyms
 * copy. On failure *st is NULL, a negative DCPI_E* is returned and why (DCPI_ERRLEN) says why
 * in one line, e.g. "PATH changed since it was profiled (id X, profile Y)"; the caller shows
 * the samples as DCPI_UNKNOWN_ROUTINE. Unknown and pseudo images return DCPI_ENOENT with an
 * empty why (nothing to warn about).
 */
int dcpi_profset_open_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why);

#pragma GCC visibility pop

#endif
