/*
 * dcpipush - ship an existing database to a ClickHouse fleet store (docs/dcpipush.md): every
 * epoch, or the one -epoch names, as -host (default: this machine's hostname). Pushing the same
 * epoch again is a no-op; an epoch that grew since replaces its earlier push. The work is
 * core/fleet/push.h.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/fleet/push.h"
#include "dcpi/errno.h"

#define TOOL "dcpipush"

static const char *host;
static int quiet;

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_STR("-host", "NAME", &host,
                 "label the rows with host NAME (default: this machine's hostname)"),
    DCPI_OPT_BOOL("-q", &quiet, "no line per epoch"),
    DCPI_OPT_END,
};

static void report(void *arg, const dcpi_fleet_pushed_t *p)
{
    if (!*(int *)arg)
        printf("%s: %zu rows %s\n", p->epoch, p->rows, p->sent ? "pushed" : "already in the store");
}

/* The database's epochs to the store at the URL operand. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    char err[DCPI_ERRLEN] = "";
    if (cli->nargs != 1) {
        fprintf(stderr, TOOL ": %s (try -h)\n", cli->nargs ? "one URL only" : "missing URL");
        return 2;
    }
    if (host && !*host) {
        fprintf(stderr, TOOL ": -host wants a name\n");
        return 2;
    }
    if (dcpi_fleet_push_db(cli->args[0], dcpi_db_default(cli->db_arg), host, cli->epoch_spec,
                           report, &quiet, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL,
                      .operands = "URL",
                      .flags = flags,
                      .omit = DCPI_CLI_PLATFORM,
                      .footer =
                          "URL: a ClickHouse HTTP endpoint, http[s]://HOST:PORT/?database=NAME "
                          "(default dcpi).\nWithout -epoch every epoch is pushed. "
                          "Credentials: DCPI_FLEET_USER with DCPI_FLEET_PASSWORD\nor "
                          "DCPI_FLEET_PASSWORD_FILE; DCPI_FLEET_CACERT: a CA bundle for "
                          "https."};
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .raw_status = 1}, NULL);
}
