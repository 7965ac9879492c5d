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

static dcpi_import_opts_t o = {.tool = TOOL, .event = "cpu-clock", .new_epoch = NULL};

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_STR("-format", "FMT", &o.format, "gperftools or gmon"),
    DCPI_OPT_STR("-image", "PATH", &o.image,
                 "the program file (gmon: required; gperftools: replaces the mapped "
                 "object with the same basename, and takes PCs outside every mapping)"),
    DCPI_OPT_STR("-epoch", "NAME", &o.new_epoch,
                 "name of the new epoch (default: the current UTC minute)"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &o.event,
                   "event name given to the samples (default cpu-clock)"),
    DCPI_OPT_END,
};

/* The format, the flags it needs, the one input file. */
static int check(dcpi_cli_t *cli, void *arg)
{
    if (!o.format) {
        fprintf(stderr, TOOL ": -format is required: gperftools or gmon\n");
        return 2;
    }
    if (strcmp(o.format, "gperftools") && strcmp(o.format, "gmon")) {
        fprintf(stderr, TOOL ": -format %s: cannot import this format; use gperftools or gmon%s\n",
                o.format,
                !strcmp(o.format, "pprof") ? " (pprof profiles are written by dcpiexport, not read)"
                                           : "");
        return 2;
    }
    if (!strcmp(o.format, "gmon") && !o.image) {
        fprintf(stderr, TOOL ": -format gmon needs -image PROGRAM (try -h)\n");
        return 2;
    }
    if (cli->nargs != 1) {
        fprintf(stderr, TOOL ": one input FILE is required (try -h)\n");
        return 2;
    }
    o.file = cli->args[0];
    return 0;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    const dcpi_import_opts_t *o = arg;
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
    dcpi_cli_t cli = {.tool = TOOL, .operands = "FILE", .flags = flags};
    dcpi_cli_main_t m = {.check = check, .run = run, .raw_status = 1};
    return dcpi_cli_main(&cli, argc, argv, &m, &o);
}
