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

static const dcpi_cli_flag_t flags[] = {
    {"-platform", "P", "the daemon of platform P (default: this host's)", NULL},
    {"-fleet", "URL", "talk to the fleet store at URL instead: init, expire, status", NULL},
    {"-fleet-keep", "DAYS", "init: days the fleet store keeps (default 0: forever)", NULL},
    {"-cluster", "NAME", "init: also Distributed tables over the server's cluster NAME", NULL},
    {"-json", NULL, "status, epochs: one JSON object (see dcpictl(1))", NULL},
    {NULL, NULL, NULL, NULL},
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
        fprintf(stderr, "dcpictl: -fleet wants one command: init, expire or status\n");
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

typedef struct opts {
    const char *plat, *url, *keep, *cluster;
    int json;
} opts_t;

static int parse_opt(void *arg, const char *f, const char *v)
{
    opts_t *o = arg;
    if (!strcmp(f, "-platform"))
        o->plat = v;
    else if (!strcmp(f, "-fleet"))
        o->url = v;
    else if (!strcmp(f, "-fleet-keep"))
        o->keep = v;
    else if (!strcmp(f, "-cluster"))
        o->cluster = v;
    else if (!strcmp(f, "-json"))
        o->json = 1;
    return 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN] = "", platform[DCPI_NAMELEN];
    dcpi_cli_t cli = {.tool = "dcpictl",
                      .operands = "flush|epoch|quit|status|epochs",
                      .flags = flags,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "Commands: flush (write the daemon's in-memory samples), epoch "
                                "(flush, then start a\nnew epoch), quit (flush, then stop the "
                                "daemon), status (print the daemon's counters),\nepochs (list the "
                                "platform's epochs: start, end, samples, lost, size on disk,\n"
                                "state; from the database, no daemon needed)."};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err);
    const char *db = dcpi_db_default(cli.db_arg);
    opts_t o = {0};
    dcpi_cli_each(&cli, parse_opt, &o);
    const char *plat = o.plat, *url = o.url, *keep = o.keep, *cluster = o.cluster;
    if (url) {
        int st = fleet(&cli, url, keep, cluster);
        dcpi_cli_free(&cli);
        return st;
    }
    int status = check_command(&cli);
    if (status == 0 && plat) {
        snprintf(platform, sizeof platform, "%s", plat);
    } else if (status == 0 && dcpi_db_platform(db, platform, err) < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        status = 1;
    }
    if (status == 0 && o.json && strcmp(cli.args[0], "epochs") && strcmp(cli.args[0], "status")) {
        fprintf(stderr, "dcpictl: -json is for status and epochs, not '%s'\n", cli.args[0]);
        status = 2;
    }
    if (status == 0 && strcmp(cli.args[0], "epochs") == 0)
        rc = dcpi_control_epochs(db, platform, o.json, stdout, err);
    else if (status == 0 && o.json)
        rc = dcpi_control_status_json(db, platform, stdout, err);
    else if (status == 0)
        rc = dcpi_control_request(db, platform, cli.args[0], print_line, NULL, err);
    if (status == 0 && rc < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        status = 1;
    }
    dcpi_cli_free(&cli);
    return status;
}
