/*
 * dcpiweb - an interactive viewer in the browser over a database (-db), its running dcpid (the
 * live view) or a fleet store (-fleet), served on 127.0.0.1 (docs/dcpiweb.md). The flags are
 * read here; the server is web/web.h.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"
#include "web/web.h"

#define TOOL "dcpiweb"

static dcpi_web_opts_t o = {.tool = TOOL, .http = "127.0.0.1:8088"};

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_STR("-http", "HOST:PORT", &o.http,
                 "listen there (default 127.0.0.1:8088; port 0: any free port)"),
    DCPI_OPT_BOOL("-public", &o.public_ok,
                  "allow a HOST that is not a loopback address (said in the log)"),
    DCPI_OPT_END,
};

/* Operands, -host without -fleet, a database that is not there: 0 or the exit status. */
static int check(dcpi_cli_t *cli, void *arg)
{
    struct stat st;
    const char *db = dcpi_db_default(cli->db_arg);
    (void)arg;
    if (cli->nargs) {
        fprintf(stderr, TOOL ": unexpected argument '%s' (try -h)\n", cli->args[0]);
        return 2;
    }
    if (cli->hosts && !cli->fleet_url) {
        fprintf(stderr, TOOL ": -host selects hosts of a fleet store: give -fleet URL\n");
        return 2;
    }
    if (!cli->fleet_url && (stat(db, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, TOOL ": %s: no such database directory (give -db DIR or -fleet URL)\n", db);
        return 1;
    }
    return 0;
}

/* Serve until SIGINT or SIGTERM. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    char err[DCPI_ERRLEN] = "";
    (void)unused;
    (void)arg;
    o.db = cli->fleet_url ? NULL : dcpi_db_default(cli->db_arg);
    o.fleet_url = cli->fleet_url;
    o.platform = cli->platform;
    o.hosts = cli->hosts; /* the selection of a URL that gives none */
    o.since = cli->since_arg;
    o.until = cli->until_arg;
    o.plugin_dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    int rc = dcpi_web_serve(&o, err);
    return rc < 0 ? dcpi_cli_exit(rc, err) : 0;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL,
                      .flags = flags,
                      .fleet_flags = 1,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "The views choose their epochs, processes and hosts in the "
                                "page (each view's URL says which).\nRead-only; stop it with "
                                "Ctrl-C."};
    return dcpi_cli_main(&cli, argc, argv,
                         &(dcpi_cli_main_t){.check = check, .run = run, .raw_status = 1}, NULL);
}
