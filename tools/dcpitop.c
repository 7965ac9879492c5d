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

static dcpi_top_opts_t o = {.delay_ms = 1000};

/* -d SECONDS into ms. */
static int set_delay(void *dst, const char *v)
{
    double s;
    if (dcpi_cli_flag_number("dcpitop", "-d", v, 0.1, 3600, &s))
        return 2;
    *(unsigned *)dst = (unsigned)(s * 1000 + 0.5);
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    {"-n", "ITER", "show ITER refreshes, then exit (default: until interrupted)", "--iterations",
     DCPI_CLI_UINT, DCPI_CLI_DST(unsigned, &o.iterations), 1, 1000000000, NULL},
    {"-d", "SECONDS", "seconds between refreshes (1; 0.1 to 3600)", "--delay", DCPI_CLI_CALL,
     &o.delay_ms, 0, 0, set_delay},
    DCPI_OPT_UINT("-rows", "N", &o.rows, 1, 200,
                  "procedures shown (default: what fits the terminal, else 20)"),
    DCPI_OPT_BOOL("-i", &o.images, "images only, no procedures"),
    DCPI_OPT_BOOL("-json", &o.json,
                  "each refresh as one JSON line (schema dcpitop/1, see dcpitop(1))"),
    DCPI_OPT_END,
};

/* The running daemon's view, refreshed. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    char err[DCPI_ERRLEN] = "", platform[DCPI_NAMELEN];
    if (cli->nargs) {
        fprintf(stderr, "dcpitop: unexpected argument '%s' (try -h)\n", cli->args[0]);
        return 2;
    }
    o.pid = cli->procsel.pid > 0 ? cli->procsel.pid : 0;
    o.comm = cli->procsel.comm;
    const char *db = dcpi_db_default(cli->db_arg);
    if (cli->platform) {
        snprintf(platform, sizeof platform, "%s", cli->platform);
    } else if (dcpi_db_platform(db, platform, err) < 0) {
        fprintf(stderr, "dcpitop: %s\n", err);
        return 1;
    }
    if (dcpi_control_top(db, platform, &o, stdout, err) < 0) {
        fprintf(stderr, "dcpitop: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = "dcpitop",
                      .flags = flags,
                      .process_flags = 1,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "The view counts the samples of the daemon's first event in "
                                "each interval (not the\nprofiles on disk: nothing is flushed). "
                                "Plain text when the output is not a terminal."};
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .raw_status = 1}, NULL);
}
