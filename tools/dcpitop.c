/*
 * dcpitop - the running dcpid's hottest procedures and images, refreshed every second from
 * the daemon's in-memory counts through its control socket (no flush), with rate and
 * lost-sample lines; the work is core/daemon/ctltop.c (client) and top.c (daemon).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/daemon/control.h"
#include "core/store/db.h"
#include "dcpi/api.h"

static const dcpi_cli_flag_t flags[] = {
    {"-n", "ITER", "show ITER refreshes, then exit (default: until interrupted)", "--iterations"},
    {"-d", "SECONDS", "seconds between refreshes (1; 0.1 to 3600)", "--delay"},
    {"-rows", "N", "procedures shown (default: what fits the terminal, else 20)", NULL},
    {"-i", NULL, "images only, no procedures", NULL},
    {"-json", NULL, "each refresh as one JSON line (schema dcpitop/1, see dcpitop(1))", NULL},
    {NULL, NULL, NULL, NULL},
};

static int flag(void *arg, const char *f, const char *v)
{
    dcpi_top_opts_t *o = arg;
    unsigned long n;
    double s;
    if (!strcmp(f, "-i")) {
        o->images = 1;
    } else if (!strcmp(f, "-json")) {
        o->json = 1;
    } else if (!strcmp(f, "-d")) {
        if (dcpi_cli_flag_number("dcpitop", f, v, 0.1, 3600, &s))
            return 2;
        o->delay_ms = (unsigned)(s * 1000 + 0.5);
    } else {
        if (dcpi_cli_flag_uint("dcpitop", f, v, 1, !strcmp(f, "-n") ? 1000000000 : 200, &n))
            return 2;
        *(!strcmp(f, "-n") ? &o->iterations : &o->rows) = (unsigned)n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN] = "", platform[DCPI_NAMELEN];
    dcpi_top_opts_t o = {.delay_ms = 1000};
    dcpi_cli_t cli = {.tool = "dcpitop",
                      .flags = flags,
                      .process_flags = 1,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "The view counts the samples of the daemon's first event in "
                                "each interval (not the\nprofiles on disk: nothing is flushed). "
                                "Plain text when the output is not a terminal."};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err);
    int status = dcpi_cli_each(&cli, flag, &o);
    if (status == 0 && cli.nargs) {
        fprintf(stderr, "dcpitop: unexpected argument '%s' (try -h)\n", cli.args[0]);
        status = 2;
    }
    o.pid = cli.procsel.pid > 0 ? cli.procsel.pid : 0;
    o.comm = cli.procsel.comm;
    const char *db = dcpi_db_default(cli.db_arg);
    if (status == 0 && cli.platform) {
        snprintf(platform, sizeof platform, "%s", cli.platform);
    } else if (status == 0 && dcpi_db_platform(db, platform, err) < 0) {
        fprintf(stderr, "dcpitop: %s\n", err);
        status = 1;
    }
    if (status == 0 && dcpi_control_top(db, platform, &o, stdout, err) < 0) {
        fprintf(stderr, "dcpitop: %s\n", err);
        status = 1;
    }
    dcpi_cli_free(&cli);
    return status;
}
