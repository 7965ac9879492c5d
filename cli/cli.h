/*
 * cli.h - what every analysis tool (dcpiprof, dcpilist, ...) shares: the single-dash flags
 * -db DIR, -epoch NAME|latest|latest-N, -platform P, -h, -V, for the tools that ask for them
 * -pid PID and -comm NAME (only the samples of those processes), and the loading of the chosen
 * epoch's profile set (core/model/profset.h, included here for the tools).
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
 */
#ifndef DCPI_CLI_CLI_H
#define DCPI_CLI_CLI_H

#include <stdio.h>
#include "core/model/profset.h"
#include "core/store/db.h"

/* dcpi_cli_parse result when -h or -V was handled (the tool exits 0). */
#define DCPI_CLI_DONE 1

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
    int process_flags;            /* 1: accept -pid and -comm */
    int load_flags;               /* DCPI_PSET_LOAD_* for dcpi_cli_load */

    /* Filled by dcpi_cli_parse (pointers into argv). */
    const char *db_arg;     /* -db value, or NULL */
    const char *epoch_spec; /* -epoch value, or NULL (= latest) */
    const char *platform;   /* -platform value, or NULL (= every platform) */
    dcpi_procsel_t procsel; /* -pid / -comm (pid -1, comm NULL: every process) */
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

/* The whole of v as a number from lo to hi (strtod). Returns 0, or DCPI_EINVAL (*out untouched)
 * for anything else. */
int dcpi_cli_number(const char *v, double lo, double hi, double *out);
/* dcpi_cli_number for the value v of a tool's flag: 0, or 2 (a usage error's exit status) after
 * "TOOL: FLAG wants a number from LO to HI, not 'V'" on stderr. */
int dcpi_cli_flag_number(const char *tool, const char *flag, const char *v, double lo, double hi,
                         double *out);

/* Put "TOOL: " in front of the message already in err (may be NULL), truncating the message to
 * fit DCPI_ERRLEN. */
void dcpi_cli_prefix_err(const dcpi_cli_t *cli, char *err);

/*
 * Resolve cli->db (-db, else $DCPIDB, else ./dcpidb) and cli->epoch (-epoch, default latest,
 * counting only epochs that hold -platform when given). Errors: DCPI_ENOENT "TOOL: DIR: no such
 * database directory", or the epoch selection's error ("TOOL: ..."), e.g. no epochs.
 */
int dcpi_cli_resolve(dcpi_cli_t *cli, char *err);

/* dcpi_profset_load of cli's resolved db/epoch/platform (resolving first when cli->epoch is
 * empty), with the tool name in front of every error. */
int dcpi_cli_load(dcpi_cli_t *cli, dcpi_profset_t **out, char *err);

#endif
