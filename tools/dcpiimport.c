/*
 * dcpiimport - turn another profiler's output into an epoch of its own in a dcpi database:
 * "-format gperftools" (a CPU profile written by gperftools' libprofiler, images resolved from
 * its mapped-objects list) or "-format gmon" (a gmon.out written by a gcc -pg program, with
 * -image naming that program). The epoch is built in a temporary directory and renamed into
 * place, so a malformed input leaves no partial database. Flags and dispatch only; the
 * builders are in core/formats/import.c. See docs/dcpiimport.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "core/formats/import.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

#define TOOL "dcpiimport"

static const dcpi_cli_flag_t flags[] = {
    {"-format", "FMT", "gperftools or gmon", NULL},
    {"-image", "PATH",
     "the program file (gmon: required; gperftools: replaces the mapped "
     "object with the same basename, and takes PCs outside every mapping)",
     NULL},
    {"-epoch", "NAME", "name of the new epoch (default: the current UTC minute)", NULL},
    {"-e", "EVENT", "event name given to the samples (default cpu-clock)", "-s -event --event"},
    {NULL, NULL, NULL, NULL},
};

static int parse_opt(void *arg, const char *f, const char *v)
{
    dcpi_import_opts_t *o = arg;
    if (!strcmp(f, "-format"))
        o->format = v;
    else if (!strcmp(f, "-image"))
        o->image = v;
    else if (!strcmp(f, "-e"))
        o->event = v;
    else if (!strcmp(f, "-epoch"))
        o->new_epoch = v;
    return 0;
}

static int parse_opts(const dcpi_cli_t *cli, dcpi_import_opts_t *o)
{
    *o = (dcpi_import_opts_t){.tool = TOOL, .event = "cpu-clock", .new_epoch = NULL};
    dcpi_cli_each(cli, parse_opt, o);
    if (!o->format) {
        fprintf(stderr, TOOL ": -format is required: gperftools or gmon\n");
        return 2;
    }
    if (strcmp(o->format, "gperftools") && strcmp(o->format, "gmon")) {
        fprintf(stderr, TOOL ": -format %s: cannot import this format; use gperftools or gmon%s\n",
                o->format,
                !strcmp(o->format, "pprof")
                    ? " (pprof profiles are written by dcpiexport, not read)"
                    : "");
        return 2;
    }
    if (!strcmp(o->format, "gmon") && !o->image) {
        fprintf(stderr, TOOL ": -format gmon needs -image PROGRAM (try -h)\n");
        return 2;
    }
    if (cli->nargs != 1) {
        fprintf(stderr, TOOL ": one input FILE is required (try -h)\n");
        return 2;
    }
    o->file = cli->args[0];
    return 0;
}

static int run(dcpi_cli_t *cli, const dcpi_import_opts_t *o)
{
    char err[DCPI_ERRLEN] = "", plat[DCPI_NAMELEN], epoch[DCPI_NAMELEN];
    const char *db = dcpi_db_default(cli->db_arg);
    dcpi_import_t im = {.o = o};
    int rc = !strcmp(o->format, "gmon") ? dcpi_import_gmon(&im, err) : dcpi_import_gperf(&im, err);
    if (rc == 0 && cli->platform)
        snprintf(plat, sizeof(plat), "%s", cli->platform);
    else if (rc == 0)
        rc = dcpi_db_platform(db, plat, err);
    if (rc == 0 && im.saturated)
        fprintf(stderr, TOOL ": %" PRIu64 " counts saturated at 4294967295\n", im.saturated);
    if (rc == 0)
        rc = dcpi_import_save(&im, db, plat, epoch, err);
    if (rc == 0)
        printf("%s: epoch %s, platform %s\n", TOOL, epoch, plat);
    if (rc < 0)
        fprintf(stderr, TOOL ": %s\n", err);
    dcpi_import_free(&im);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL, .operands = "FILE", .flags = flags};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0) {
        dcpi_cli_free(&cli);
        return dcpi_cli_exit(rc, err);
    }
    dcpi_import_opts_t o;
    int status = parse_opts(&cli, &o);
    if (status == 0)
        status = run(&cli, &o);
    dcpi_cli_free(&cli);
    return status;
}
