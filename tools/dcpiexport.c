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

static const dcpi_cli_flag_t flags[] = {
    {"-format", "FMT", "gperftools, gmon, pprof, llvm or afdo", NULL},
    {"-o", "FILE", "output file (required; '-': standard output)", "--output"},
    {"-e", "EVENT", "event to export (default: the event with the most samples)",
     "-s -event --event"},
    {"-symbols", NULL, "gperftools: carry dcpi's symbols (google-pprof then needs no binary)",
     NULL},
    {NULL, NULL, NULL, NULL},
};

typedef struct opts {
    const char *format, *out, *event;
    int symbols;
} opts_t;

static int parse_opt(void *arg, const char *f, const char *v)
{
    opts_t *o = arg;
    if (!strcmp(f, "-symbols"))
        o->symbols = 1;
    else if (!strcmp(f, "-format"))
        o->format = v;
    else if (!strcmp(f, "-o"))
        o->out = v;
    else if (!strcmp(f, "-e"))
        o->event = v;
    return 0;
}

static int parse_opts(const dcpi_cli_t *cli, opts_t *o)
{
    *o = (opts_t){0};
    dcpi_cli_each(cli, parse_opt, o);
    if (!o->format) {
        fprintf(stderr, TOOL ": -format is required: gperftools, gmon, pprof, llvm or afdo\n");
        return 2;
    }
    if (strcmp(o->format, "gperftools") && strcmp(o->format, "gmon") &&
        strcmp(o->format, "pprof") && strcmp(o->format, "llvm") && strcmp(o->format, "afdo")) {
        fprintf(stderr,
                TOOL ": -format %s: unknown format; use gperftools, gmon, pprof, llvm or afdo\n",
                o->format);
        return 2;
    }
    if (!o->out) {
        fprintf(stderr, TOOL ": -o FILE is required ('-o -': standard output)\n");
        return 2;
    }
    if (!strcmp(o->out, "-") && isatty(STDOUT_FILENO) && strcmp(o->format, "llvm")) {
        fprintf(stderr,
                TOOL ": -o -: standard output is a terminal, and -format %s is binary; "
                     "redirect it (> FILE) or give -o FILE\n",
                o->format);
        return 2;
    }
    if (o->symbols && strcmp(o->format, "gperftools")) {
        fprintf(stderr, TOOL ": -symbols is for -format gperftools (try -h)\n");
        return 2;
    }
    return 0;
}

static int run(dcpi_cli_t *cli, const opts_t *o)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_profset_t *set = NULL;
    if (!strcmp(o->format, "pprof")) /* samples labelled with their process */
        cli->load_flags |= DCPI_PSET_LOAD_PROCS;
    int rc = dcpi_cli_load(cli, &set, err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (cli->nargs && dcpi_profset_filter(set, cli->args, (size_t)cli->nargs) == 0) {
        fprintf(stderr, TOOL ": no profile of the images named in epoch %s\n", cli->epoch);
        dcpi_profset_free(set);
        return 1;
    }
    dcpi_fleet_filter_t flt;
    dcpi_fleet_source_t fc = {.url = cli->fleet_url, .flt = &flt};
    if (cli->fleet_url && (rc = dcpi_cli_fleet_filter(cli, &flt, err)) < 0) {
        fprintf(stderr, "%s\n", err);
        dcpi_profset_free(set);
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
    if (rc == 0)
        rc = !strcmp(o->format, "gmon")    ? dcpi_export_gmon(&x, err)
             : !strcmp(o->format, "pprof") ? dcpi_export_pprof(&x, err)
             : !strcmp(o->format, "llvm")  ? dcpi_export_llvm(&x, err)
             : !strcmp(o->format, "afdo")  ? dcpi_export_afdo(&x, err)
                                           : dcpi_export_gperf(&x, err);
    if (rc < 0 && err[0])
        fprintf(stderr, "%s\n", err);
    dcpi_export_close(&x);
    dcpi_profset_free(set);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL,
                      .strict_flag = 1,
                      .operands = "[image-names...]",
                      .flags = flags,
                      .process_flags = 1,
                      .multi_epoch = 1,
                      .fleet_flags = 1};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0) {
        dcpi_cli_free(&cli);
        return dcpi_cli_exit(rc, err);
    }
    opts_t o;
    int status = parse_opts(&cli, &o);
    if (status == 0)
        status = run(&cli, &o);
    dcpi_cli_free(&cli);
    return dcpi_cli_status(status); /* 3: damaged files were skipped */
}
