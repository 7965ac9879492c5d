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

typedef struct opts {
    dcpi_top_opts_t top;
    const char *mapfile;
} opts_t;

static opts_t o = {.top = {.tool = TOOL, .n = 100}};

/* -n: a number of instructions (0: all). */
static int set_n(void *dst, const char *v)
{
    double n = 0;
    if (dcpi_cli_number(v, 0, 1e12, &n) < 0 || n != (double)(size_t)n) {
        fprintf(stderr, TOOL ": -n wants a number of instructions, not '%s'\n", v);
        return 2;
    }
    *(size_t *)dst = (size_t)n;
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_CALL("-n", "N", set_n, &o.top.n, "print the top N instructions (default 100; 0: all)"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &o.top.sort_event,
                   "sort by EVENT (default: the event with the most samples)"),
    DCPI_OPT_BOOL("-period", &o.top.period,
                  "counts are samples x the sampling period (DCPI's cycles), not samples"),
    DCPI_OPT_BOOL("-csl", &o.top.csl,
                  "comma-separated output: a line of column names, then one line per row"),
    DCPI_OPT_BOOL("-json", &o.top.json,
                  "one JSON object (schema dcpitopcounts/1, see dcpitopcounts(1))"),
    DCPI_OPT_MAPFILE(&o.mapfile),
    DCPI_OPT_END,
};

static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    opts_t *o = arg;
    o->top.epoch = cli->epoch;
    o->top.epochs = (const char *const *)cli->epochs;
    o->top.nepochs = cli->fleet_url ? 0 : cli->nepochs;
    if (dcpi_cli_select(cli, set, o->mapfile) != 0)
        return 1;
    return dcpi_top_report(set, &o->top, stdout) < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = DCPI_CLI_READER(TOOL, "[image-names...]", flags);
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .load = 1}, &o);
}
