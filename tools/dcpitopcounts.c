/*
 * dcpitopcounts - the instructions with the most samples of one event over the images of an
 * epoch: count, share, procedure, address, instruction, image, source line, and the other
 * events' counts (docs/dcpitopcounts.md). The flags are read here; the report is
 * core/topcounts/topcounts.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/model/imagemap.h"
#include "core/topcounts/topcounts.h"
#include "dcpi/errno.h"

#define TOOL "dcpitopcounts"

static const dcpi_cli_flag_t flags[] = {
    {"-n", "N", "print the top N instructions (default 100; 0: all)", NULL},
    {"-e", "EVENT", "sort by EVENT (default: the event with the most samples)",
     "-s -event --event"},
    {"-period", NULL, "counts are samples x the sampling period (DCPI's cycles), not samples",
     NULL},
    {"-csl", NULL, "comma-separated output: a line of column names, then one line per row", NULL},
    {"-json", NULL, "one JSON object (schema dcpitopcounts/1, see dcpitopcounts(1))", NULL},
    {"-m", "MAPFILE", "find images whose recorded path moved by id in MAPFILE (\"ID PATH\" lines)",
     NULL},
    {NULL, NULL, NULL, NULL},
};

typedef struct opts {
    dcpi_top_opts_t top;
    const char *mapfile;
} opts_t;

static int parse_opt(void *arg, const char *f, const char *v)
{
    opts_t *o = arg;
    double n = 0;
    if (!strcmp(f, "-csl"))
        o->top.csl = 1;
    else if (!strcmp(f, "-json"))
        o->top.json = 1;
    else if (!strcmp(f, "-period"))
        o->top.period = 1;
    else if (!strcmp(f, "-e"))
        o->top.sort_event = v;
    else if (!strcmp(f, "-m"))
        o->mapfile = v;
    else if (!strcmp(f, "-n")) {
        if (dcpi_cli_number(v, 0, 1e12, &n) < 0 || n != (double)(size_t)n) {
            fprintf(stderr, TOOL ": -n wants a number of instructions, not '%s'\n", v);
            return 2;
        }
        o->top.n = (size_t)n;
    }
    return 0;
}

static int parse_opts(const dcpi_cli_t *cli, opts_t *o)
{
    *o = (opts_t){.top = {.tool = TOOL, .n = 100}};
    return dcpi_cli_each(cli, parse_opt, o);
}

static int run(dcpi_profset_t *set, const dcpi_cli_t *cli, opts_t *o)
{
    o->top.epoch = cli->epoch;
    o->top.epochs = (const char *const *)cli->epochs;
    o->top.nepochs = cli->fleet_url ? 0 : cli->nepochs;
    if (dcpi_profset_select(set, cli->args, (size_t)cli->nargs, TOOL, cli->epoch) < 0)
        return 1;
    char err[DCPI_ERRLEN];
    if (o->mapfile && dcpi_imagemap_use(o->mapfile, set, TOOL, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    dcpi_profset_warn_saturated(set, TOOL);
    return dcpi_top_report(set, &o->top, stdout) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL,
                      .strict_flag = 1,
                      .multi_epoch = 1,
                      .operands = "[image-names...]",
                      .flags = flags,
                      .process_flags = 1,
                      .fleet_flags = 1};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err);
    opts_t o;
    int status = parse_opts(&cli, &o);
    dcpi_profset_t *set = NULL;
    if (status == 0) {
        rc = dcpi_cli_load(&cli, &set, err);
        if (rc < 0)
            fprintf(stderr, "%s\n", err); /* database and file errors: exit 1 */
        status = rc < 0 ? 1 : 0;
    }
    if (status == 0)
        status = run(set, &cli, &o);
    dcpi_profset_free(set);
    dcpi_cli_free(&cli);
    return dcpi_cli_status(status); /* 3: damaged files were skipped */
}
