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

static const dcpi_cli_flag_t flags[] = {
    {"-http", "HOST:PORT", "listen there (default 127.0.0.1:8088; port 0: any free port)", NULL},
    {"-public", NULL, "allow a HOST that is not a loopback address (said in the log)", NULL},
    {NULL, NULL, NULL, NULL},
};

static int parse_opt(void *arg, const char *f, const char *v)
{
    dcpi_web_opts_t *o = arg;
    if (!strcmp(f, "-http"))
        o->http = v;
    else if (!strcmp(f, "-public"))
        o->public_ok = 1;
    return 0;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_cli_t cli = {.tool = TOOL,
                      .flags = flags,
                      .fleet_flags = 1,
                      .omit = DCPI_CLI_EPOCH,
                      .footer = "The views choose their epochs, processes and hosts in the "
                                "page (each view's URL says which).\nRead-only; stop it with "
                                "Ctrl-C."};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0)
        return dcpi_cli_exit(rc, err);
    dcpi_web_opts_t o = {.tool = TOOL, .http = "127.0.0.1:8088"};
    int status = dcpi_cli_each(&cli, parse_opt, &o);
    if (status == 0 && cli.hosts && !cli.fleet_url) {
        fprintf(stderr, TOOL ": -host selects hosts of a fleet store: give -fleet URL\n");
        status = 2;
    }
    if (status == 0 && cli.nargs) {
        fprintf(stderr, TOOL ": unexpected argument '%s' (try -h)\n", cli.args[0]);
        status = 2;
    }
    const char *db = dcpi_db_default(cli.db_arg);
    struct stat st;
    if (status == 0 && !cli.fleet_url && (stat(db, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, TOOL ": %s: no such database directory (give -db DIR or -fleet URL)\n", db);
        status = 1;
    }
    if (status == 0) {
        o.db = cli.fleet_url ? NULL : db;
        o.fleet_url = cli.fleet_url;
        o.platform = cli.platform;
        o.hosts = cli.hosts; /* the selection of a URL that gives none */
        o.since = cli.since_arg;
        o.until = cli.until_arg;
        o.plugin_dirs =
            dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
        if ((rc = dcpi_web_serve(&o, err)) < 0)
            status = dcpi_cli_exit(rc, err);
    }
    dcpi_cli_free(&cli);
    return status;
}
