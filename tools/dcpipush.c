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

static const dcpi_cli_flag_t flags[] = {
    {"-host", "NAME", "label the rows with host NAME (default: this machine's hostname)", NULL},
    {"-q", NULL, "no line per epoch", NULL},
    {NULL, NULL, NULL, NULL},
};

static void report(void *arg, const dcpi_fleet_pushed_t *p)
{
    if (!*(int *)arg)
        printf("%s: %zu rows %s\n", p->epoch, p->rows, p->sent ? "pushed" : "already in the store");
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN] = "";
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
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err);
    const char *host = NULL;
    int quiet = 0, status = 0;
    for (int i = 0; i < cli.nopts; i++) {
        if (!strcmp(cli.opts[i], "-q"))
            quiet = 1;
        else
            host = cli.opts[++i];
    }
    if (cli.nargs != 1) {
        fprintf(stderr, TOOL ": %s (try -h)\n", cli.nargs ? "one URL only" : "missing URL");
        status = 2;
    } else if (host && !*host) {
        fprintf(stderr, TOOL ": -host wants a name\n");
        status = 2;
    }
    if (status == 0 && dcpi_fleet_push_db(cli.args[0], dcpi_db_default(cli.db_arg), host,
                                          cli.epoch_spec, report, &quiet, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        status = 1;
    }
    dcpi_cli_free(&cli);
    return status;
}
