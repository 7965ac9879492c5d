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
 * Flow of a tool's main(): its flags bound to the fields of its options in its table, and one
 * call, dcpi_cli_main (the analysis tools: parse, the tool's checks, the profile set of the
 * selection flags, run, the damage policy's exit status):
 *
 *     static opts_t o;
 *     static const dcpi_cli_flag_t flags[] = {
 *         DCPI_OPT_BOOL("-json", &o.json, "print JSON"),
 *         DCPI_OPT_UINT("-n", "N", &o.n, 0, 1000, "print N rows"), DCPI_OPT_END};
 *     dcpi_cli_t cli = {.tool = "dcpiprof", .operands = "[image-names...]", .flags = flags};
 *     return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .load = 1}, &o);
 *
 * Adding a flag to a tool is one line in its table. (A tool may still leave a flag unbound
 * and walk cli.opts, which holds the table's name whichever alias was typed.)
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

/* How a flag's value goes into its destination (dcpi_cli_flag_t.type); 0: the flag is not bound,
 * the tool reads it from cli.opts. */
enum dcpi_cli_type {
    DCPI_CLI_BOOL = 1, /* int *: 1 */
    DCPI_CLI_STR,      /* const char **: the value (a pointer into argv) */
    DCPI_CLI_UINT,     /* unsigned *: a whole number from lo to hi (dcpi_cli_flag_uint) */
    DCPI_CLI_SIZE,     /* size_t *: the same */
    DCPI_CLI_DOUBLE,   /* double *: a number from lo to hi (dcpi_cli_flag_number) */
    DCPI_CLI_CALL,     /* set(dst, value): the tool's own parser */
    DCPI_CLI_SET,      /* int *: lo (a flag that chooses one of several values) */
    DCPI_CLI_UNUM,     /* unsigned *: a number from lo to hi, its fraction dropped */
    DCPI_CLI_LIST,     /* dcpi_cli_list_t *: one more value (a repeatable flag) */
};
/* A repeatable flag's values in command-line order, v[n] NULL (v: malloc'd, NULL when none;
 * the tool frees it). */
typedef struct dcpi_cli_list {
    const char **v;
    int n;
} dcpi_cli_list_t;

/* A DCPI_CLI_CALL flag's parser: 0, or an exit status (2) after the tool's message on stderr. */
typedef int dcpi_cli_set_fn(void *dst, const char *val);

/* One tool-specific flag. A table of them ends with an entry whose name is NULL. An entry
 * named like a shared flag replaces it (its value then goes to opts, not to db_arg ...). A
 * bound flag (type, dst) is set by dcpi_cli_parse, in command-line order, after the whole
 * command line was read; the tool only sees the result in dst. */
typedef struct dcpi_cli_flag {
    const char *name;  /* "-keep": what cli.opts holds, whichever spelling was typed */
    const char *arg;   /* NULL: takes no argument; else the argument's name for -h ("PCT") */
    const char *help;  /* one line for -h */
    const char *alias; /* other spellings, separated by spaces ("-s -event --event"); or NULL */
    int type;          /* enum dcpi_cli_type, 0: not bound */
    void *dst;         /* where the value goes */
    double lo, hi;     /* DCPI_CLI_UINT, _SIZE, _DOUBLE: the range */
    dcpi_cli_set_fn *set; /* DCPI_CLI_CALL */
} dcpi_cli_flag_t;

/* Table entries bound to their destination (perf's OPT_UINTEGER(&field) style); the compiler
 * checks that dst points to the type the flag writes. */
#define DCPI_CLI_DST(type, dst) ((void *)(1 ? (dst) : (type *)0))
#define DCPI_OPT_BOOL(name, dst, help)                                                           \
    {name, NULL, help, NULL, DCPI_CLI_BOOL, DCPI_CLI_DST(int, dst), 0, 0, NULL}
#define DCPI_OPT_STR(name, arg, dst, help)                                                       \
    {name, arg, help, NULL, DCPI_CLI_STR, DCPI_CLI_DST(const char *, dst), 0, 0, NULL}
#define DCPI_OPT_UINT(name, arg, dst, lo, hi, help)                                              \
    {name, arg, help, NULL, DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, dst), lo, hi, NULL}
#define DCPI_OPT_SIZE(name, arg, dst, lo, hi, help)                                              \
    {name, arg, help, NULL, DCPI_CLI_SIZE, DCPI_CLI_DST(size_t, dst), lo, hi, NULL}
#define DCPI_OPT_DOUBLE(name, arg, dst, lo, hi, help)                                            \
    {name, arg, help, NULL, DCPI_CLI_DOUBLE, DCPI_CLI_DST(double, dst), lo, hi, NULL}
#define DCPI_OPT_SET(name, dst, value, help)                                                     \
    {name, NULL, help, NULL, DCPI_CLI_SET, DCPI_CLI_DST(int, dst), value, 0, NULL}
#define DCPI_OPT_UNUM(name, arg, dst, lo, hi, help)                                              \
    {name, arg, help, NULL, DCPI_CLI_UNUM, DCPI_CLI_DST(unsigned, dst), lo, hi, NULL}
#define DCPI_OPT_LIST(name, arg, dst, help)                                                      \
    {name, arg, help, NULL, DCPI_CLI_LIST, DCPI_CLI_DST(dcpi_cli_list_t, dst), 0, 0, NULL}
#define DCPI_OPT_CALL(name, arg, fn, dst, help) {name, arg, help, NULL, DCPI_CLI_CALL, dst, 0, 0, fn}
/* The same with other spellings (alias: "-s -event --event"). */
#define DCPI_OPT_STR_A(name, alias, arg, dst, help)                                              \
    {name, arg, help, alias, DCPI_CLI_STR, DCPI_CLI_DST(const char *, dst), 0, 0, NULL}
#define DCPI_OPT_BOOL_A(name, alias, dst, help)                                                  \
    {name, NULL, help, alias, DCPI_CLI_BOOL, DCPI_CLI_DST(int, dst), 0, 0, NULL}
#define DCPI_OPT_END {NULL, NULL, NULL, NULL, 0, NULL, 0, 0, NULL}
/* A flag the tool reads itself from cli.opts (not bound). */
#define DCPI_OPT_PLAIN(name, arg, help, alias) {name, arg, help, alias, 0, NULL, 0, 0, NULL}

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
/* The images a tool looks at: the set narrowed to the image operands (cli->args,
 * dcpi_profset_select), images moved since they were profiled found by id in mapfile (-m,
 * NULL: none), and the warning about saturated counts. 0, or 1 (the exit status) after the
 * message on stderr. */
int dcpi_cli_select(const dcpi_cli_t *cli, dcpi_profset_t *set, const char *mapfile);

/* The operands "procedure image" of dcpilist and dcpicalc: the image may be left out when
 * -image gave its file (pfile, NULL: none). 0, or 2 after "TOOL: expected a procedure and an
 * image (try -h)". */
int dcpi_cli_proc_image(const dcpi_cli_t *cli, const char *pfile, const char **proc,
                        const char **image);
/* Their -image FILE flag (alias -p), into dst (const char **). */
#define DCPI_OPT_IMAGE(dst)                                                                       \
    {"-image", "FILE", "the image file to read (the image operand may then be omitted)", "-p",  \
     DCPI_CLI_STR, DCPI_CLI_DST(const char *, dst), 0, 0, NULL}

/* Flags that several tools share, word for word: -m (images moved since they were profiled),
 * and the value hotlists' -vtrace-insecure, -vshow and -vcutoff (dcpilist, dcpireport). */
#define DCPI_OPT_MAPFILE(dst)                                                                     \
    DCPI_OPT_STR("-m", "MAPFILE", dst,                                                           \
                 "find images whose recorded path moved by id in MAPFILE (\"ID PATH\" lines)")
#define DCPI_OPT_VINSECURE(dst)                                                                   \
    DCPI_OPT_BOOL("-vtrace-insecure", dst, "as root, load plugins that others could have written")
#define DCPI_OPT_VSHOW(dst)                                                                       \
    DCPI_OPT_UNUM("-vshow", "N", dst, 0, 1e6,                                                    \
                  "value/percentage pairs shown per instruction (default 3)")
#define DCPI_OPT_VCUTOFF(dst)                                                                     \
    DCPI_OPT_DOUBLE("-vcutoff", "PCT", dst, 0, 100, "pairs below PCT % print as '.' (default 5.0)")

/* The command line of a tool that reads profiles (the analysis tools): the shared selection
 * flags -pid/-comm, -fleet/-host/-since/-until, -strict, and several epochs merged. */
#define DCPI_CLI_READER(name, ops, table)                                                         \
    {.tool = name,                                                                               \
     .operands = ops,                                                                            \
     .flags = table,                                                                             \
     .strict_flag = 1,                                                                           \
     .process_flags = 1,                                                                         \
     .fleet_flags = 1,                                                                           \
     .multi_epoch = 1}

enum { DCPI_CLI_LOAD = 1, DCPI_CLI_LOAD_EXIT = 2 };

/* The analysis tools' main: what each does besides its table. */
typedef struct dcpi_cli_main {
    /* After the flags were parsed (and bound): the tool's checks of its flags and operands,
     * e.g. cli->load_flags from a flag. 0, or an exit status. NULL: none. */
    int (*check)(dcpi_cli_t *cli, void *arg);
    /* The work, with the profile set of the selection (NULL unless .load). 0 or an exit status. */
    int (*run)(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg);
    /* Free the tool's state (always called). NULL: nothing to free. */
    void (*done)(void *arg);
    /* DCPI_CLI_LOAD: dcpi_cli_load before run, its error on stderr (exit 1); DCPI_CLI_LOAD_EXIT:
     * the same, its error through dcpi_cli_exit (2 for a bad selection); 0: run loads. */
    int load;
    int raw_status; /* 1: the exit status is run's, without the damage policy (not a reader of
                       a database's epoch) */
} dcpi_cli_main_t;
/* dcpi_cli_parse (-h, -V and usage errors end here), m->check, the profile set (m->load), m->run,
 * m->done, dcpi_cli_free; the exit status through dcpi_cli_status (3: damaged files were
 * skipped). */
int dcpi_cli_main(dcpi_cli_t *cli, int argc, char **argv, const dcpi_cli_main_t *m, void *arg);

/* With -fleet: the selection of -host, -since, -until, -pid, -comm (and a build-id) as the
 * fleet's filter (core/fleet/query.h), for the tools' other fleet queries; flt borrows from
 * cli. 0, or a bad time's error. */
int dcpi_cli_fleet_filter(const dcpi_cli_t *cli, dcpi_fleet_filter_t *flt, char *err);

#endif
