/*
 * dcpiexport - write one epoch's samples of one event in another profiler's format:
 * "-format gperftools" (gperftools' CPU profile, read by google-pprof), "-format gmon" (gprof's
 * gmon.out for one program), "-format pprof", "-format llvm" (LLVM's sample profile, text) or
 * "-format afdo" (the same for gcc's -fauto-profile). Flags and dispatch only; the exporters are in
 * core/formats/export*.c. See docs/dcpiexport.md.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "core/formats/export.h"
#include "dcpi/errno.h"

#define TOOL "dcpiexport"

/* The formats: -format's name, the exporter, and whether it writes text (else binary). */
static const struct format {
    const char *name;
    int (*write)(const dcpi_export_t *x, char *err);
    int text;
} formats[] = {
    {"gperftools", dcpi_export_gperf, 0}, {"gmon", dcpi_export_gmon, 0},
    {"pprof", dcpi_export_pprof, 0},      {"llvm", dcpi_export_llvm, 1},
    {"afdo", dcpi_export_afdo, 0},
};

typedef struct opts {
    const char *format, *out, *event, *counts;
    int symbols;
    const struct format *fmt;
} opts_t;

static opts_t opts;

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_STR("-format", "FMT", &opts.format, "gperftools, gmon, pprof, llvm or afdo"),
    {"-o", "FILE", "output file (required; '-': standard output)", "--output", DCPI_CLI_STR,
     DCPI_CLI_DST(const char *, &opts.out), 0, 0, NULL},
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &opts.event,
                   "event to export (default: the event with the most samples)"),
    DCPI_OPT_STR("-counts", "HOW", &opts.counts,
                 "llvm, afdo: what a line counts: samples (time, the default) or blocks (its "
                 "block's executions, estimated as dcpicalc does)"),
    DCPI_OPT_BOOL("-symbols", &opts.symbols,
                  "gperftools: carry dcpi's symbols (google-pprof then needs no binary)"),
    DCPI_OPT_END,
};

/* The flags that are required or go together; pprof labels samples with their process. */
static int check(dcpi_cli_t *cli, void *arg)
{
    opts_t *o = arg;
    if (!o->format) {
        fprintf(stderr, TOOL ": -format is required: gperftools, gmon, pprof, llvm or afdo\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(o->format, formats[i].name))
            o->fmt = &formats[i];
    if (!o->fmt) {
        fprintf(stderr,
                TOOL ": -format %s: unknown format; use gperftools, gmon, pprof, llvm or afdo\n",
                o->format);
        return 2;
    }
    if (!o->out) {
        fprintf(stderr, TOOL ": -o FILE is required ('-o -': standard output)\n");
        return 2;
    }
    if (!strcmp(o->out, "-") && isatty(STDOUT_FILENO) && !o->fmt->text) {
        fprintf(stderr,
                TOOL ": -o -: standard output is a terminal, and -format %s is binary; "
                     "redirect it (> FILE) or give -o FILE\n",
                o->format);
        return 2;
    }
    if (o->symbols && o->fmt->write != dcpi_export_gperf) {
        fprintf(stderr, TOOL ": -symbols is for -format gperftools (try -h)\n");
        return 2;
    }
    if (o->counts && strcmp(o->counts, "samples") && strcmp(o->counts, "blocks")) {
        fprintf(stderr, TOOL ": -counts %s: use samples or blocks\n", o->counts);
        return 2;
    }
    if (o->counts && o->fmt->write != dcpi_export_llvm && o->fmt->write != dcpi_export_afdo) {
        fprintf(stderr, TOOL ": -counts is for -format llvm and afdo (try -h)\n");
        return 2;
    }
    if (o->fmt->write == dcpi_export_pprof) /* samples labelled with their process */
        cli->load_flags |= DCPI_PSET_LOAD_PROCS;
    return 0;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    const opts_t *o = arg;
    char err[DCPI_ERRLEN] = "";
    int rc;
    if (cli->nargs && dcpi_profset_filter(set, cli->args, (size_t)cli->nargs) == 0) {
        fprintf(stderr, TOOL ": no profile of the images named in epoch %s\n", cli->epoch);
        return 1;
    }
    dcpi_fleet_filter_t flt;
    dcpi_fleet_source_t fc = {.url = cli->fleet_url, .flt = &flt};
    if (cli->fleet_url && (rc = dcpi_cli_fleet_filter(cli, &flt, err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    dcpi_export_src_t src = {.tool = TOOL,
                             .db = cli->db,
                             .epoch = cli->epoch,
                             .epochs = (const char *const *)cli->epochs,
                             .nepochs = cli->nepochs,
                             .platform = cli->platform,
                             .names = cli->args,
                             .nnames = cli->nargs,
                             .procsel = &cli->procsel};
    if (cli->fleet_url) { /* the store's call chains and hotlists, the store named as the db */
        src.db = cli->fleet_url;
        src.nepochs = 0;
        src.stacks = dcpi_fleet_source_stacks;
        src.vprofs = dcpi_fleet_source_vprofs;
        src.source_arg = &fc;
    }
    dcpi_export_t x;
    rc = dcpi_export_open(&x, &src, set, o->event, o->out, err);
    x.symbolized = o->symbols;
    x.block_counts = o->counts && !strcmp(o->counts, "blocks");
    if (rc == 0)
        rc = o->fmt->write(&x, err);
    if (rc < 0 && err[0])
        fprintf(stderr, "%s\n", err);
    dcpi_export_close(&x);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = DCPI_CLI_READER(TOOL, "[image-names...]", flags);
    dcpi_cli_main_t m = {.check = check, .run = run, .load = DCPI_CLI_LOAD};
    return dcpi_cli_main(&cli, argc, argv, &m, &opts);
}
