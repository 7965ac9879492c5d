/*
 * dcpictl - send one command (flush, epoch, quit, status) to the running dcpid of a platform
 * and print its answer; or list the platform's epochs (epochs, from the database).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/daemon/control.h"
#include "core/fleet/schema.h"
#include "core/store/db.h"
#include "dcpi/api.h"

typedef struct opts {
    const char *plat, *url, *keep, *cluster;
    int json;
} opts_t;

static opts_t o;

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_STR("-platform", "P", &o.plat, "the daemon of platform P (default: this host's)"),
    DCPI_OPT_STR("-fleet", "URL", &o.url,
                 "talk to the fleet store at URL instead: init, expire, status, aggregate"),
    DCPI_OPT_STR("-fleet-keep", "DAYS", &o.keep,
                 "init: days the fleet store keeps (default 0: forever)"),
    DCPI_OPT_STR("-cluster", "NAME", &o.cluster,
                 "init: also Distributed tables over the server's cluster NAME"),
    DCPI_OPT_BOOL("-json", &o.json, "status, epochs: one JSON object (see dcpictl(1))"),
    DCPI_OPT_END,
};

static void print_line(void *arg, const char *text)
{
    (void)arg;
    printf("%s\n", text);
    fflush(stdout);
}

/* The command operand: 0, or 2 after a usage error. */
static int check_command(const dcpi_cli_t *cli)
{
    if (cli->nargs == 1 &&
        (dcpi_control_valid(cli->args[0]) || strcmp(cli->args[0], "epochs") == 0))
        return 0;
    if (cli->nargs > 1)
        fprintf(stderr,
                "dcpictl: one command only, not '%s %s' (flush, epoch, quit, status, epochs)\n",
                cli->args[0], cli->args[1]);
    else if (cli->nargs == 1)
        fprintf(stderr,
                "dcpictl: unknown command '%s': give flush, epoch, quit, status or epochs\n",
                cli->args[0]);
    else
        fprintf(stderr,
                "dcpictl: missing command: give flush, epoch, quit, status or epochs (try -h)\n");
    return 2;
}

/* dcpictl -fleet URL init|expire|status (core/fleet/schema.h): the exit status. */
static int fleet(const dcpi_cli_t *cli, const char *url, const char *keep, const char *cluster)
{
    char err[DCPI_ERRLEN] = "";
    unsigned long days = 0;
    if (cli->nargs != 1) {
        fprintf(stderr, "dcpictl: -fleet wants one command: init, expire, status or aggregate\n");
        return 2;
    }
    if (keep && dcpi_cli_flag_uint("dcpictl", "-fleet-keep", keep, 0, 100000, &days) != 0)
        return 2;
    if (dcpi_fleet_admin(url, cli->args[0], (long)days, cluster, print_line, NULL, err) < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        return strncmp(err, cli->args[0], strlen(cli->args[0])) == 0 ? 2 : 1;
    }
    return 0;
}

/* A command to the daemon, or epochs; with -fleet, to the fleet store. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    char err[DCPI_ERRLEN] = "", platform[DCPI_NAMELEN];
    int rc = 0;
    const char *db = dcpi_db_default(cli->db_arg);
    if (o.url)
        return fleet(cli, o.url, o.keep, o.cluster);
    int status = check_command(cli);
    if (status == 0 && o.plat) {
        snprintf(platform, sizeof platform, "%s", o.plat);
    } else if (status == 0 && dcpi_db_platform(db, platform, err) < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        status = 1;
    }
    if (status == 0 && o.json && strcmp(cli->args[0], "epochs") && strcmp(cli->args[0], "status")) {
        fprintf(stderr, "dcpictl: -json is for status and epochs, not '%s'\n", cli->args[0]);
        status = 2;
    }
    if (status == 0 && strcmp(cli->args[0], "epochs") == 0)
        rc = dcpi_control_epochs(db, platform, o.json, stdout, err);
    else if (status == 0 && o.json)
        rc = dcpi_control_status_json(db, platform, stdout, err);
    else if (status == 0)
        rc = dcpi_control_request(db, platform, cli->args[0], print_line, NULL, err);
    if (status == 0 && rc < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        status = 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = "dcpictl",
                      .operands = "flush|epoch|quit|status|epochs",
                      .flags = flags,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "Commands: flush (write the daemon's in-memory samples), epoch "
                                "(flush, then start a\nnew epoch), quit (flush, then stop the "
                                "daemon), status (print the daemon's counters),\nepochs (list the "
                                "platform's epochs: start, end, samples, lost, size on disk,\n"
                                "state; from the database, no daemon needed)."};
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .raw_status = 1}, NULL);
}
