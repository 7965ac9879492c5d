/*
 * dcpireport - one self-contained HTML page of an epoch: dcpiprof's views, a flame graph of the
 * stack profile, annotated listings of the hottest procedures with their value hotlists, and
 * with -diff the procedures whose share changed (docs/dcpireport.md). The flags are read here;
 * the page is core/report/report.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/report/report.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"

#define TOOL "dcpireport"

typedef struct ctx {
    dcpi_report_opts_t o;
    dcpi_cli_list_t vtrace;
    const char *out;
    dcpi_profset_t *set, *diff_set; /* set: the skeleton's (dcpi_cli_main) */
    char *diff_name;                /* -diff's epoch, resolved */
    dcpi_fleet_filter_t flt;        /* -fleet: the selection */
    dcpi_fleet_source_t src;        /* -fleet: the store and flt, the flame graph's chains and the
                                       listings' hotlists (merged over the selected hosts) */
} ctx_t;

static ctx_t ctx = {.o = {.tool = TOOL,
                          .top = DCPI_REPORT_TOP_DEFAULT,
                          .flame_min = DCPI_REPORT_FLAME_MIN_DEFAULT,
                          .vo = {.show = 3, .cutoff = 5.0}}};

static void ctx_free(void *arg)
{
    ctx_t *c = arg;
    free(c->diff_name);
    dcpi_profset_free(c->diff_set);
    free(c->vtrace.v);
}

static const dcpi_cli_flag_t flags[] = {
    {"-o", "FILE", "write the page to FILE (default, or '-': standard output)", "--output",
     DCPI_CLI_STR, DCPI_CLI_DST(const char *, &ctx.out), 0, 0, NULL},
    DCPI_OPT_UNUM("-top", "N", &ctx.o.top, 0, 10000,
                  "annotated listings of the N hottest procedures (default 10)"),
    DCPI_OPT_DOUBLE("-flame-min", "PCT", &ctx.o.flame_min, 0, 100,
                    "leave out frames under PCT % of the samples (default 0.1)"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &ctx.o.sort_event,
                   "sort by EVENT (default: the event with the most samples)"),
    DCPI_OPT_LIST("-vtrace", "PLUGIN", &ctx.vtrace,
                  "format the hotlists of PLUGIN's profile (repeatable)"),
    DCPI_OPT_VINSECURE(&ctx.o.insecure),
    DCPI_OPT_VSHOW(&ctx.o.vo.show),
    DCPI_OPT_VCUTOFF(&ctx.o.vo.cutoff),
    DCPI_OPT_STR("-diff", "EPOCH_B", &ctx.o.diff_epoch,
                 "also the procedures whose share changed from this epoch to EPOCH_B"),
    DCPI_OPT_END,
};

/* No operands; -diff is not for the fleet. */
static int check(dcpi_cli_t *cli, void *arg)
{
    ctx_t *c = arg;
    static const char *none[1];
    if (cli->nargs > 0) {
        fprintf(stderr, TOOL ": unexpected operand '%s' (try -h)\n", cli->args[0]);
        return 2;
    }
    if (cli->fleet_url && c->o.diff_epoch) {
        fprintf(stderr, TOOL ": -diff compares two epochs of a database, not the fleet (dcpidiff "
                             "-fleet compares two selections)\n");
        return 2;
    }
    c->o.vtrace = c->vtrace.v ? c->vtrace.v : none;
    c->o.nvtrace = (size_t)c->vtrace.n;
    return 0;
}

/* -diff: the set of EPOCH_B in the same database. */
static int load_diff(const dcpi_cli_t *cli, ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_cli_t b = *cli; /* shares opts and args with cli: not freed */
    b.epoch_spec = c->o.diff_epoch;
    b.epoch[0] = '\0';
    b.epochs = NULL; /* its own epoch list (cli's stays cli's), freed below */
    b.nepochs = 0;
    b.since_arg = b.until_arg = NULL; /* -since/-until select the page's epochs, not B's */
    int rc = dcpi_cli_load(&b, &c->diff_set, err);
    dcpi_db_free_list(b.epochs, b.nepochs);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    c->diff_name = strdup(b.epoch); /* "latest" and the like resolved */
    c->o.diff_epoch = c->diff_name;
    return c->diff_name ? 0 : 1;
}

/* The page into memory, then to -o FILE (atomically) or stdout. */
static int write_page(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return 1;
    int rc = dcpi_report_write(c->set, &c->o, m, err);
    fclose(m);
    if (rc == DCPI_EPLUGIN) {
        fprintf(stderr, TOOL ": %s\n", err);
        fflush(NULL);
        _exit(1); /* the plugin faulted: its state is unknown, so no vp_unload, no cleanup */
    }
    if (rc == 0 && c->out)
        rc = dcpi__write_output(c->out, buf, len, err);
    else if (rc == 0 && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0))
        rc = dcpi__errf(err, DCPI_EIO, "standard output: write failed");
    if (rc < 0 && err[0])
        fprintf(stderr, TOOL ": %s\n", err);
    free(buf);
    return rc < 0 ? 1 : 0;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    ctx_t *c = arg;
    char err[DCPI_ERRLEN] = "";
    int rc;
    c->set = set;
    if (c->o.diff_epoch && load_diff(cli, c))
        return 1;
    c->o.db = cli->db;
    c->o.epoch = cli->epoch;
    c->o.epochs = (const char *const *)cli->epochs;
    c->o.nepochs = cli->fleet_url ? 0 : cli->nepochs;
    c->o.platform = cli->platform;
    c->o.plugin_dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    c->o.diff_set = c->diff_set;
    if (cli->fleet_url) {
        if ((rc = dcpi_cli_fleet_filter(cli, &c->flt, err)) < 0)
            return dcpi_cli_exit(rc, err);
        c->src = (dcpi_fleet_source_t){.url = cli->fleet_url, .flt = &c->flt};
        c->o.stacks = dcpi_fleet_source_stacks;
        c->o.vprofs = dcpi_fleet_source_vprofs;
        c->o.source_arg = &c->src;
    }
    dcpi_profset_warn_saturated(c->set, TOOL);
    return write_page(c);
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL,
                      .strict_flag = 1,
                      .flags = flags,
                      .load_flags = DCPI_PSET_LOAD_PROCS,
                      .fleet_flags = 1,
                      .multi_epoch = 1};
    dcpi_cli_main_t m = {.check = check, .run = run, .done = ctx_free, .load = DCPI_CLI_LOAD_EXIT};
    return dcpi_cli_main(&cli, argc, argv, &m, &ctx);
}
