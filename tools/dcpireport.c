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

static const dcpi_cli_flag_t flags[] = {
    {"-o", "FILE", "write the page to FILE (default, or '-': standard output)", "--output"},
    {"-top", "N", "annotated listings of the N hottest procedures (default 10)", NULL},
    {"-flame-min", "PCT", "leave out frames under PCT % of the samples (default 0.1)", NULL},
    {"-e", "EVENT", "sort by EVENT (default: the event with the most samples)",
     "-s -event --event"},
    {"-vtrace", "PLUGIN", "format the hotlists of PLUGIN's profile (repeatable)", NULL},
    {"-vtrace-insecure", NULL, "as root, load plugins that others could have written", NULL},
    {"-vshow", "N", "value/percentage pairs shown per instruction (default 3)", NULL},
    {"-vcutoff", "PCT", "pairs below PCT % print as '.' (default 5.0)", NULL},
    {"-diff", "EPOCH_B", "also the procedures whose share changed from this epoch to EPOCH_B",
     NULL},
    {NULL, NULL, NULL, NULL},
};

typedef struct ctx {
    dcpi_cli_t cli;
    dcpi_report_opts_t o;
    const char **vtrace;
    const char *out;
    dcpi_profset_t *set, *diff_set;
    char *diff_name;         /* -diff's epoch, resolved */
    dcpi_fleet_filter_t flt; /* -fleet: the selection */
    dcpi_fleet_source_t src; /* -fleet: the store and flt, the flame graph's chains and the
                                listings' hotlists (merged over the selected hosts) */
} ctx_t;

static int parse_opt(void *arg, const char *f, const char *v)
{
    ctx_t *c = arg;
    double d = 0;
    if (!strcmp(f, "-o"))
        c->out = v;
    else if (!strcmp(f, "-e"))
        c->o.sort_event = v;
    else if (!strcmp(f, "-vtrace"))
        c->vtrace[c->o.nvtrace++] = v;
    else if (!strcmp(f, "-vtrace-insecure"))
        c->o.insecure = 1;
    else if (!strcmp(f, "-diff"))
        c->o.diff_epoch = v;
    else if (!strcmp(f, "-top")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 10000, &d))
            return 2;
        c->o.top = (unsigned)d;
    } else if (!strcmp(f, "-flame-min")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 100, &c->o.flame_min))
            return 2;
    } else if (!strcmp(f, "-vshow")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 1e6, &d))
            return 2;
        c->o.vo.show = (unsigned)d;
    } else if (!strcmp(f, "-vcutoff")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 100, &c->o.vo.cutoff))
            return 2;
    }
    return 0;
}

static int parse_opts(ctx_t *c)
{
    c->o = (dcpi_report_opts_t){.tool = TOOL,
                                .top = DCPI_REPORT_TOP_DEFAULT,
                                .flame_min = DCPI_REPORT_FLAME_MIN_DEFAULT,
                                .vo = {.show = 3, .cutoff = 5.0}};
    c->vtrace = calloc((size_t)c->cli.nopts + 1, sizeof(*c->vtrace));
    if (!c->vtrace)
        return 1;
    if (dcpi_cli_each(&c->cli, parse_opt, c))
        return 2;
    if (c->cli.nargs > 0) {
        fprintf(stderr, TOOL ": unexpected operand '%s' (try -h)\n", c->cli.args[0]);
        return 2;
    }
    if (c->cli.fleet_url && c->o.diff_epoch) {
        fprintf(stderr, TOOL ": -diff compares two epochs of a database, not the fleet (dcpidiff "
                             "-fleet compares two selections)\n");
        return 2;
    }
    c->o.vtrace = c->vtrace;
    return 0;
}

/* -diff: the set of EPOCH_B in the same database. */
static int load_diff(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_cli_t b = c->cli; /* shares opts and args with c->cli: not freed */
    b.epoch_spec = c->o.diff_epoch;
    b.epoch[0] = '\0';
    b.epochs = NULL; /* its own epoch list (c->cli's stays c->cli's), freed below */
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

static int run(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_load(&c->cli, &c->set, err);
    if (rc < 0)
        return dcpi_cli_exit(rc, err);
    if (c->o.diff_epoch && load_diff(c))
        return 1;
    c->o.db = c->cli.db;
    c->o.epoch = c->cli.epoch;
    c->o.epochs = (const char *const *)c->cli.epochs;
    c->o.nepochs = c->cli.fleet_url ? 0 : c->cli.nepochs;
    c->o.platform = c->cli.platform;
    c->o.plugin_dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    c->o.diff_set = c->diff_set;
    if (c->cli.fleet_url) {
        if ((rc = dcpi_cli_fleet_filter(&c->cli, &c->flt, err)) < 0)
            return dcpi_cli_exit(rc, err);
        c->src = (dcpi_fleet_source_t){.url = c->cli.fleet_url, .flt = &c->flt};
        c->o.stacks = dcpi_fleet_source_stacks;
        c->o.vprofs = dcpi_fleet_source_vprofs;
        c->o.source_arg = &c->src;
    }
    dcpi_profset_warn_saturated(c->set, TOOL);
    return write_page(c);
}

int main(int argc, char **argv)
{
    ctx_t c = {.cli = {.tool = TOOL,
                       .strict_flag = 1,
                       .flags = flags,
                       .load_flags = DCPI_PSET_LOAD_PROCS,
                       .fleet_flags = 1,
                       .multi_epoch = 1}};
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_parse(&c.cli, argc, argv, err);
    if (rc == 0) {
        rc = parse_opts(&c);
        if (rc == 0)
            rc = run(&c);
    } else {
        rc = dcpi_cli_exit(rc, err);
    }
    free(c.diff_name);
    dcpi_profset_free(c.diff_set);
    dcpi_profset_free(c.set);
    free(c.vtrace);
    dcpi_cli_free(&c.cli);
    return dcpi_cli_status(rc); /* 3: damaged files were skipped */
}
