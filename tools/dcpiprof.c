/*
 * dcpiprof - print a histogram of one epoch's samples by procedure (default) or by image (-i),
 * one "samples % cum%" group per event, sorted by one event (docs/dcpiprof.md). The flags are
 * read here; the report is core/model/procs.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/model/imagemap.h"
#include "core/model/procs.h"
#include "dcpi/errno.h"

#define TOOL "dcpiprof"

typedef struct opts {
    dcpi_procs_opts_t o;
    const char *mapfile;
    int full, json;
} opts_t;

static opts_t opts = {.o = {.tool = TOOL, .keep = 100.0}};

/* -keep: a percentage. */
static int set_keep(void *dst, const char *v)
{
    if (dcpi_cli_number(v, 0.0, 100.0, dst) < 0) {
        fprintf(stderr, TOOL ": -keep wants a percentage from 0 to 100, not '%s'\n", v);
        return 2;
    }
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_BOOL("-i", &opts.o.by_image, "one row per image instead of per procedure"),
    DCPI_OPT_BOOL("-procs", &opts.o.by_process,
                  "one row per process (pid and command) instead of per procedure"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &opts.o.sort_event,
                   "sort by EVENT (default: the event with the most samples)"),
    DCPI_OPT_CALL("-keep", "PCT", set_keep, &opts.o.keep,
                  "print rows until the cumulative % of the sort event reaches PCT"),
    DCPI_OPT_BOOL("-no_header", &opts.o.no_header, "omit the event summary block"),
    DCPI_OPT_BOOL("-csl", &opts.o.csl,
                  "comma-separated output: a line of column names, then one line per row"),
    DCPI_OPT_BOOL("-wide", &opts.o.wide,
                  "print long procedure names whole (they are cut to 50 columns)"),
    DCPI_OPT_BOOL("-full_output", &opts.full,
                  "every row (no -keep cutoff), names whole, full image paths"),
    DCPI_OPT_BOOL("-json", &opts.json,
                  "one JSON object (schema dcpiprof/1, see dcpiprof(1)) instead of the table"),
    DCPI_OPT_MAPFILE(&opts.mapfile),
    DCPI_OPT_END,
};

/* After the flags: -full_output wins over -keep wherever it is given; -procs reads the splits
 * by process. */
static int check(dcpi_cli_t *cli, void *arg)
{
    opts_t *p = arg;
    if (p->full) {
        p->o.keep = 100.0;
        p->o.wide = 1;
    }
    cli->load_flags = p->o.by_process ? DCPI_PSET_LOAD_PROCS | DCPI_PSET_LOAD_PROCS_TOTALS : 0;
    return 0;
}

/* Filter by the image operands, then print the report. Returns the exit status. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    opts_t *p = arg;
    dcpi_procs_opts_t *o = &p->o;
    char err[DCPI_ERRLEN];
    o->db = cli->db;
    o->epoch = cli->epoch;
    o->platform = cli->platform;
    /* children come from the epochs' stack profiles (merged), or the fleet's chains: none for
     * -pid/-comm */
    o->no_children = cli->procsel.pid >= 0 || cli->procsel.comm;
    dcpi_fleet_filter_t flt;
    dcpi_fleet_source_t fc = {.url = cli->fleet_url, .flt = &flt};
    if (cli->fleet_url) {
        if (dcpi_cli_fleet_filter(cli, &flt, err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        o->stacks = dcpi_fleet_source_stacks; /* the children column from the store's chains */
        o->stacks_arg = &fc;
    }
    o->epochs = (const char *const *)cli->epochs;
    o->nepochs = cli->fleet_url ? 0 : cli->nepochs;
    if (dcpi_cli_select(cli, set, p->mapfile) != 0)
        return 1;
    if (p->json)
        return dcpi_procs_json(set, o, (const char *const *)cli->epochs,
                               cli->fleet_url ? 0 : cli->nepochs, stdout) < 0
                   ? 1
                   : 0;
    return dcpi_procs_report(set, o, stdout) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = DCPI_CLI_READER(TOOL, "[image-names...]", flags);
    dcpi_cli_main_t m = {.check = check, .run = run, .load = 1};
    return dcpi_cli_main(&cli, argc, argv, &m, &opts);
}
