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

static const dcpi_cli_flag_t flags[] = {
    {"-i", NULL, "one row per image instead of per procedure", NULL},
    {"-procs", NULL, "one row per process (pid and command) instead of per procedure", NULL},
    {"-e", "EVENT", "sort by EVENT (default: the event with the most samples)",
     "-s -event --event"},
    {"-keep", "PCT", "print rows until the cumulative % of the sort event reaches PCT", NULL},
    {"-no_header", NULL, "omit the event summary block", NULL},
    {"-csl", NULL, "comma-separated output: a line of column names, then one line per row", NULL},
    {"-wide", NULL, "print long procedure names whole (they are cut to 50 columns)", NULL},
    {"-full_output", NULL, "every row (no -keep cutoff), names whole, full image paths", NULL},
    {"-json", NULL, "one JSON object (schema dcpiprof/1, see dcpiprof(1)) instead of the table",
     NULL},
    {"-m", "MAPFILE", "find images whose recorded path moved by id in MAPFILE (\"ID PATH\" lines)",
     NULL},
    {NULL, NULL, NULL, NULL},
};

typedef struct opts {
    dcpi_procs_opts_t *o;
    const char **mapfile;
    int full;
    int *json;
} opts_t;

static int parse_opt(void *arg, const char *f, const char *v)
{
    opts_t *p = arg;
    dcpi_procs_opts_t *o = p->o;
    if (!strcmp(f, "-i"))
        o->by_image = 1;
    else if (!strcmp(f, "-procs"))
        o->by_process = 1;
    else if (!strcmp(f, "-no_header"))
        o->no_header = 1;
    else if (!strcmp(f, "-csl"))
        o->csl = 1;
    else if (!strcmp(f, "-wide"))
        o->wide = 1;
    else if (!strcmp(f, "-json"))
        *p->json = 1;
    else if (!strcmp(f, "-full_output"))
        p->full = 1;
    else if (!strcmp(f, "-m"))
        *p->mapfile = v;
    else if (!strcmp(f, "-e"))
        o->sort_event = v;
    else if (!strcmp(f, "-keep") && dcpi_cli_number(v, 0.0, 100.0, &o->keep) < 0) {
        fprintf(stderr, TOOL ": -keep wants a percentage from 0 to 100, not '%s'\n", v);
        return 2;
    }
    return 0;
}

static int parse_opts(const dcpi_cli_t *cli, dcpi_procs_opts_t *o, const char **mapfile, int *json)
{
    *o = (dcpi_procs_opts_t){.tool = TOOL, .keep = 100.0};
    opts_t p = {.o = o, .mapfile = mapfile, .json = json};
    if (dcpi_cli_each(cli, parse_opt, &p))
        return 2;
    if (p.full) { /* after the loop: -full_output wins over -keep wherever it is given */
        o->keep = 100.0;
        o->wide = 1;
    }
    return 0;
}

/* Filter by the image operands, then print the report. Returns the exit status. */
static int run(dcpi_profset_t *set, const dcpi_cli_t *cli, dcpi_procs_opts_t *o,
               const char *mapfile, int json)
{
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
    if (dcpi_profset_select(set, cli->args, (size_t)cli->nargs, TOOL, cli->epoch) < 0)
        return 1;
    if (mapfile && dcpi_imagemap_use(mapfile, set, TOOL, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    dcpi_profset_warn_saturated(set, TOOL);
    if (json)
        return dcpi_procs_json(set, o, (const char *const *)cli->epochs,
                               cli->fleet_url ? 0 : cli->nepochs, stdout) < 0
                   ? 1
                   : 0;
    return dcpi_procs_report(set, o, stdout) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL,
                      .strict_flag = 1,
                      .operands = "[image-names...]",
                      .flags = flags,
                      .process_flags = 1,
                      .fleet_flags = 1,
                      .multi_epoch = 1};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0) {
        dcpi_cli_free(&cli);
        return dcpi_cli_exit(rc, err);
    }
    dcpi_procs_opts_t o;
    const char *mapfile = NULL;
    int json = 0;
    int status = parse_opts(&cli, &o, &mapfile, &json);
    dcpi_profset_t *set = NULL;
    if (status == 0) {
        cli.load_flags = o.by_process ? DCPI_PSET_LOAD_PROCS : 0;
        rc = dcpi_cli_load(&cli, &set, err);
        if (rc < 0)
            fprintf(stderr, "%s\n", err); /* database and file errors: exit 1 */
        status = rc < 0 ? 1 : 0;
    }
    if (status == 0)
        status = run(set, &cli, &o, mapfile, json);
    dcpi_profset_free(set);
    dcpi_cli_free(&cli);
    return dcpi_cli_status(status); /* 3: damaged files were skipped */
}
