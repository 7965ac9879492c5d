/*
 * cli.h - the one flag grammar of every dcpi tool (dcpid, dcpictl, dcpiprof, dcpilist, ...):
 * a table of flags per tool, the shared flags (-db DIR, -epoch E, -platform P, and for the tools
 * that ask for them -pid PID and -comm NAME), -h/-help/--help and -V/-version/--version in
 * every tool, and the loading of the chosen epoch's profile set (core/model/profset.h, included
 * here for the tools). Linked by the programs only (cli/ is no part of libdcpi).
 *
 * The grammar (docs/dcpi.md):
 *   - a flag is spelled as in its table entry, or by one of its aliases ("-e", "-s", "--event");
 *     any flag may also be written with two dashes ("--db DIR") and a two-dash flag may carry
 *     its value after '=' ("--db=DIR", "--event=cpu-clock");
 *   - a flag's value is the next argument, whatever it looks like ("-o -", "-keep -5");
 *   - flags and operands mix in any order; "--" ends the flags (a tool with .command takes its
 *     operands only after "--": the command to run);
 *   - "-" as an operand is an operand.
 *
 * Flow of a tool's main():
 *
 *     dcpi_cli_t cli = {.tool = "dcpiprof", .operands = "[image-names...]", .flags = flags};
 *     int rc = dcpi_cli_parse(&cli, argc, argv, err);       // -h/-V/usage errors end here
 *     if (rc != 0) return dcpi_cli_exit(rc, err);
 *     ... walk cli.opts (the tool's own flags) and cli.args (operands) ...
 *     rc = dcpi_cli_load(&cli, &set, err);                   // resolves -db/-epoch, reads files
 *
 * Adding a flag to a tool is one line in its table ({"-json", NULL, "print JSON", NULL}) and
 * one branch where it reads its flags (dcpi_cli_each, or a walk of cli.opts): a strcmp against
 * the table's name, which cli.opts holds whichever alias was typed.
 *
 * Every message written into err (DCPI_ERRLEN bytes, may be NULL) by the dcpi_cli_* functions
 * is one complete line without '\n', starting with the tool's name: "TOOL: reason".
 */
#ifndef DCPI_CLI_CLI_H
#define DCPI_CLI_CLI_H

#include <stdio.h>
#include "core/fleet/query.h"
#include "core/model/profset.h"
#include "core/store/db.h"

/* dcpi_cli_parse result when -h or -V was handled (the tool exits 0). */
#define DCPI_CLI_DONE 1

/* Shared flags, for dcpi_cli_t.omit (the tools that do not take them). */
#define DCPI_CLI_DB       0x1 /* -db DIR */
#define DCPI_CLI_EPOCH    0x2 /* -epoch E */
#define DCPI_CLI_PLATFORM 0x4 /* -platform P */
#define DCPI_CLI_SHARED   (DCPI_CLI_DB | DCPI_CLI_EPOCH | DCPI_CLI_PLATFORM)

/* One tool-specific flag. A table of them ends with an entry whose name is NULL. An entry
 * named like a shared flag replaces it (its value then goes to opts, not to db_arg ...). */
typedef struct dcpi_cli_flag {
    const char *name;  /* "-keep": what cli.opts holds, whichever spelling was typed */
    const char *arg;   /* NULL: takes no argument; else the argument's name for -h ("PCT") */
    const char *help;  /* one line for -h */
    const char *alias; /* other spellings, separated by spaces ("-s -event --event"); or NULL */
} dcpi_cli_flag_t;

typedef struct dcpi_cli {
    /* Set by the tool before dcpi_cli_parse. */
    const char *tool;             /* program name used in every message */
    const char *operands;         /* operand synopsis for -h, e.g. "[image-names...]"; NULL: none */
    const dcpi_cli_flag_t *flags; /* the tool's own flags (NULL: none) */
    FILE *out;                    /* where -h and -V print (NULL: stdout) */
    int process_flags;            /* 1: accept -pid and -comm */
    int strict_flag;              /* 1: accept -strict (the tools that read a database's epoch) */
    int load_flags;               /* DCPI_PSET_LOAD_* for dcpi_cli_load */
    int omit;                     /* DCPI_CLI_* shared flags this tool does not take */
    int command;                  /* 1: operands only after "--" (a command to run, dcpid) */
    int fleet_flags;              /* 1: accept -fleet URL, -host H[,H...], -since T, -until T:
                                     dcpi_cli_load then reads the fleet store (docs/fleet.md) */
    const char *footer;           /* more lines for -h after the flags (NULL: none) */
    int multi_epoch;              /* 1: the tool reads several epochs merged (-epoch all, A..B,
                                     -since T, -until T; dcpi_cli_load adds them up) */

    /* Filled by dcpi_cli_parse (pointers into argv). */
    const char *db_arg;     /* -db value, or NULL */
    const char *db_from;    /* what gave db_arg, for messages ("set A"); NULL: "-db" */
    const char *epoch_spec; /* -epoch value, or NULL (= latest) */
    const char *platform;   /* -platform value, or NULL (= every platform) */
    dcpi_procsel_t procsel; /* -pid / -comm (pid -1, comm NULL: every process) */
    char **opts;            /* the tool's flags in command-line order (the table's name), each */
    int nopts;              /*   followed by its value when it takes one (always there) */
    char **args;            /* operands in order (everything after "--" is an operand); */
    int nargs;              /*   args[nargs] is NULL (an argv for execvp) */
    int dashdash;           /* 1: "--" was given */
    const char *fleet_url;  /* -fleet value, or NULL (the local database) */
    const char *hosts;      /* -host value (comma-separated), or NULL */
    const char *since_arg, *until_arg; /* -since / -until values, or NULL */
    const char *build_id;              /* -fleet: only this image (dcpidiff's SET#ID), or NULL */
    int strict; /* 1: -strict (dcpi_cli_load also checks every other file first) */

    /* Filled by dcpi_cli_resolve (called by dcpi_cli_load). */
    char db[4096];
    char epoch[DCPI_NAMELEN]; /* the epoch read; with several: "FIRST..LAST" (for messages) */
    char **epochs;            /* every epoch read, ascending (one unless .multi_epoch) */
    size_t nepochs;
} dcpi_cli_t;

/*
 * Consume the shared flags from argv[1..argc-1]; the tool's flags and operands are left in
 * cli->opts / cli->args (free with dcpi_cli_free; on any non-zero return they are already freed).
 * Returns 0; DCPI_CLI_DONE after printing -h (usage) or -V ("TOOL (dcpi) 0.1.0") to cli->out;
 * DCPI_EINVAL with "TOOL: unknown flag '-x' (try -h)" (with "did you mean -y?" when one is
 * close), "TOOL: flag '-db' needs an argument (try -h)" or, for a .command tool, "TOOL:
 * unexpected argument 'prog' ..." suggesting "--" in err; DCPI_ENOMEM.
 */
int dcpi_cli_parse(dcpi_cli_t *cli, int argc, char **argv, char *err);
void dcpi_cli_free(dcpi_cli_t *cli);

/* Call fn(arg, flag, value) for each of the tool's flags in cli->opts, in command-line order:
 * flag is the table's name, value NULL for a flag that takes none. Stops at the first non-zero
 * result of fn and returns it (a tool returns its exit status, 2 for a bad value); else 0. */
int dcpi_cli_each(const dcpi_cli_t *cli, int (*fn)(void *arg, const char *flag, const char *val),
                  void *arg);

/* Print the usage text (synopsis, shared flags, tool flags with their aliases, -h, -V) to f. */
void dcpi_cli_usage(const dcpi_cli_t *cli, FILE *f);

/*
 * The exit status for a result of the dcpi_cli_* functions, after printing err (if rc is an
 * error and err is not empty) on stderr: 0 for 0 and DCPI_CLI_DONE, 2 for DCPI_EINVAL (a usage
 * error), 1 for every other error.
 */
int dcpi_cli_exit(int rc, const char *err);

/* A tool's exit status at the end of its work: status, or 3 (DCPI_EXIT_SKIPPED) when status
 * is 0 but damaged files were skipped with a warning (core/base/damage.h). Without -strict,
 * every reader of the database names a damaged file in one line ("TOOL: FILE: reason;
 * skipped"), leaves it out and goes on; with -strict (dcpi_cli_parse), dcpi_cli_load first
 * checks every file of the epoch (dcpi_profset_verify) and the first damaged one is the error. */
int dcpi_cli_status(int status);

/* The whole of v as a number from lo to hi (strtod). Returns 0, or DCPI_EINVAL (*out untouched)
 * for anything else. */
int dcpi_cli_number(const char *v, double lo, double hi, double *out);
/* dcpi_cli_number for the value v of a tool's flag: 0, or 2 (a usage error's exit status) after
 * "TOOL: FLAG wants a number from LO to HI, not 'V'" on stderr. */
int dcpi_cli_flag_number(const char *tool, const char *flag, const char *v, double lo, double hi,
                         double *out);
/* The same for a whole number from lo to hi: 0, or 2 after "TOOL: FLAG wants a whole number
 * from LO to HI, not 'V'" on stderr. */
int dcpi_cli_flag_uint(const char *tool, const char *flag, const char *v, unsigned long lo,
                       unsigned long hi, unsigned long *out);

/* Put "TOOL: " in front of the message already in err (may be NULL), truncating the message to
 * fit DCPI_ERRLEN. */
void dcpi_cli_prefix_err(const dcpi_cli_t *cli, char *err);

/*
 * Resolve cli->db (-db, else $DCPIDB, else ./dcpidb) and cli->epoch (-epoch, default latest,
 * counting only epochs that hold -platform when given). Errors: DCPI_ENOENT "TOOL: DIR: no such
 * database directory (...what to do)" or "TOOL: DIR: not a directory (...)", or the
 * epoch selection's error ("TOOL: ..."), e.g. no epochs.
 */
int dcpi_cli_resolve(dcpi_cli_t *cli, char *err);

/* dcpi_profset_load of cli's resolved db/epoch/platform (resolving first when cli->epoch is
 * empty), with the tool name in front of every error. */
int dcpi_cli_load(dcpi_cli_t *cli, dcpi_profset_t **out, char *err);
/* With -fleet: the selection of -host, -since, -until, -pid, -comm (and a build-id) as the
 * fleet's filter (core/fleet/query.h), for the tools' other fleet queries; flt borrows from
 * cli. 0, or a bad time's error. */
int dcpi_cli_fleet_filter(const dcpi_cli_t *cli, dcpi_fleet_filter_t *flt, char *err);

#endif
