/*
 * cli.c - shared flags of the analysis tools (-db, -epoch, -platform, -h, -V), the resolution
 * of -db/-epoch and the loading of the chosen epoch's profile set (see cli.h).
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/base/err.h"
#include "dcpi/errno.h"
#include "dcpi/version.h"

int dcpi_cli_number(const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi))
        return DCPI_EINVAL;
    *out = d;
    return 0;
}

int dcpi_cli_flag_number(const char *tool, const char *flag, const char *v, double lo, double hi,
                         double *out)
{
    if (dcpi_cli_number(v, lo, hi, out) == 0)
        return 0;
    fprintf(stderr, "%s: %s wants a number from %g to %g, not '%s'\n", tool, flag, lo, hi, v);
    return 2;
}

void dcpi_cli_prefix_err(const dcpi_cli_t *cli, char *err)
{
    dcpi__err_prefix(err, cli->tool);
}

/* ---- flag parsing ---- */

enum shared_flag { SF_NONE, SF_DB, SF_EPOCH, SF_PLATFORM, SF_HELP, SF_VERSION, SF_PID, SF_COMM };

static enum shared_flag shared_flag(const dcpi_cli_t *cli, const char *a)
{
    if (cli->process_flags && !strcmp(a, "-pid"))
        return SF_PID;
    if (cli->process_flags && !strcmp(a, "-comm"))
        return SF_COMM;
    if (!strcmp(a, "-db"))
        return SF_DB;
    if (!strcmp(a, "-epoch"))
        return SF_EPOCH;
    if (!strcmp(a, "-platform"))
        return SF_PLATFORM;
    if (!strcmp(a, "-h") || !strcmp(a, "-help") || !strcmp(a, "--help"))
        return SF_HELP;
    if (!strcmp(a, "-V") || !strcmp(a, "-version") || !strcmp(a, "--version"))
        return SF_VERSION;
    return SF_NONE;
}

static const dcpi_cli_flag_t *tool_flag(const dcpi_cli_t *cli, const char *a)
{
    for (const dcpi_cli_flag_t *f = cli->flags; f && f->name; f++)
        if (!strcmp(f->name, a))
            return f;
    return NULL;
}

void dcpi_cli_usage(const dcpi_cli_t *cli, FILE *f)
{
    fprintf(f, "usage: %s [-db DIR] [-epoch NAME|latest|latest-N] [-platform P]%s", cli->tool,
            cli->process_flags ? " [-pid PID] [-comm NAME]" : "");
    for (const dcpi_cli_flag_t *fl = cli->flags; fl && fl->name; fl++)
        fprintf(f, fl->arg ? " [%s %s]" : " [%s]", fl->name, fl->arg);
    fprintf(f, "%s%s\n", cli->operands ? " " : "", cli->operands ? cli->operands : "");
    fprintf(f, "       %s -h | -V\n\n", cli->tool);
    fprintf(f, "  %-22s %s\n", "-db DIR", "profile database (default: $DCPIDB, else ./dcpidb)");
    fprintf(f, "  %-22s %s\n", "-epoch E",
            "epoch: a name, latest (default) or latest-N (N before the newest)");
    fprintf(f, "  %-22s %s\n", "-platform P", "only this platform (default: all platforms)");
    if (cli->process_flags) {
        fprintf(f, "  %-22s %s\n", "-pid PID", "only the samples of process PID");
        fprintf(f, "  %-22s %s\n", "-comm NAME", "only the samples of processes named NAME");
    }
    for (const dcpi_cli_flag_t *fl = cli->flags; fl && fl->name; fl++) {
        char left[64];
        snprintf(left, sizeof(left), "%s%s%s", fl->name, fl->arg ? " " : "",
                 fl->arg ? fl->arg : "");
        fprintf(f, "  %-22s %s\n", left, fl->help ? fl->help : "");
    }
    fprintf(f, "  %-22s %s\n", "-h", "print this help and exit");
    fprintf(f, "  %-22s %s\n", "-V", "print the version and exit");
}

/* Store the value of a shared flag; returns 0 or DCPI_EINVAL. */
static int set_shared(dcpi_cli_t *cli, enum shared_flag sf, const char *name, const char *val,
                      char *err)
{
    if (!val) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs an argument (try -h)", cli->tool,
                          name);
    }
    if (!*val) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs a non-empty argument (try -h)",
                          cli->tool, name);
    }
    if (sf == SF_PID) {
        double pid;
        if (dcpi_cli_number(val, 0, 4194304, &pid) < 0 || pid != (long)pid)
            return dcpi__errf(err, DCPI_EINVAL, "%s: -pid wants a process id, not '%s'", cli->tool,
                              val);
        cli->procsel.pid = (long)pid;
    } else if (sf == SF_COMM)
        cli->procsel.comm = val;
    else if (sf == SF_DB)
        cli->db_arg = val;
    else if (sf == SF_EPOCH)
        cli->epoch_spec = val;
    else
        cli->platform = val;
    return 0;
}

/* Handle argv[*i]; advances *i past a consumed value. Returns 0, DCPI_CLI_DONE or an error. */
static int parse_one(dcpi_cli_t *cli, int argc, char **argv, int *i, char *err)
{
    const char *a = argv[*i];
    const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    enum shared_flag sf = shared_flag(cli, a);
    FILE *out = cli->out ? cli->out : stdout;
    if (sf == SF_HELP) {
        dcpi_cli_usage(cli, out);
        return DCPI_CLI_DONE;
    }
    if (sf == SF_VERSION) {
        fprintf(out, "%s (dcpi) %s\n", cli->tool, DCPI_VERSION_STRING);
        return DCPI_CLI_DONE;
    }
    if (sf != SF_NONE) {
        int rc = set_shared(cli, sf, a, next, err);
        *i += rc == 0;
        return rc;
    }
    const dcpi_cli_flag_t *tf = tool_flag(cli, a);
    if (!tf) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: unknown flag '%s' (try -h)", cli->tool, a);
    }
    cli->opts[cli->nopts++] = argv[*i];
    if (!tf->arg)
        return 0;
    if (!next) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs an argument (try -h)", cli->tool,
                          a);
    }
    cli->opts[cli->nopts++] = argv[++*i];
    return 0;
}

int dcpi_cli_parse(dcpi_cli_t *cli, int argc, char **argv, char *err)
{
    if (err)
        err[0] = '\0';
    if (!cli->tool)
        cli->tool = argc > 0 && argv[0] ? argv[0] : "dcpi";
    cli->db_arg = cli->epoch_spec = cli->platform = NULL;
    cli->procsel = (dcpi_procsel_t){.pid = -1};
    cli->nopts = cli->nargs = 0;
    cli->db[0] = cli->epoch[0] = '\0';
    /* One array: the tool's flags fill it from the front, operands are collected from the
     * back and reversed into place at the end. */
    char **rest = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*rest));
    if (!rest) {
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", cli->tool);
    }
    cli->opts = rest;
    char **ops = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*ops));
    if (!ops) {
        free(rest);
        cli->opts = NULL;
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", cli->tool);
    }
    int nops = 0, rc = 0, dashdash = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || a[1] == '\0')
            ops[nops++] = argv[i];
        else if (!strcmp(a, "--"))
            dashdash = 1;
        else
            rc = parse_one(cli, argc, argv, &i, err);
    }
    cli->args = rest + cli->nopts;
    memcpy(cli->args, ops, (size_t)nops * sizeof(*ops));
    cli->nargs = nops;
    free(ops);
    if (rc != 0)
        dcpi_cli_free(cli); /* -h, -V or an error: the caller exits without the arrays */
    return rc;
}

void dcpi_cli_free(dcpi_cli_t *cli)
{
    if (!cli)
        return;
    free(cli->opts);
    cli->opts = cli->args = NULL;
    cli->nopts = cli->nargs = 0;
}

int dcpi_cli_exit(int rc, const char *err)
{
    if (rc == 0 || rc == DCPI_CLI_DONE)
        return 0;
    if (err && *err)
        fprintf(stderr, "%s\n", err);
    return rc == DCPI_EINVAL ? 2 : 1;
}

int dcpi_cli_resolve(dcpi_cli_t *cli, char *err)
{
    snprintf(cli->db, sizeof(cli->db), "%s", dcpi_db_default(cli->db_arg));
    struct stat st;
    if (stat(cli->db, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return dcpi__errf(err, DCPI_ENOENT, "%s: %s: no such database directory", cli->tool,
                          cli->db);
    }
    int rc = dcpi_db_select_epoch(cli->db, cli->epoch_spec, cli->platform, cli->epoch, err);
    if (rc < 0) {
        if (err && !*err)
            dcpi__errf(err, rc, "%s: %s: %s", cli->tool, cli->db, dcpi_strerror(rc));
        else
            dcpi_cli_prefix_err(cli, err);
        cli->epoch[0] = '\0';
        return rc;
    }
    return 0;
}

int dcpi_cli_load(dcpi_cli_t *cli, dcpi_profset_t **out, char *err)
{
    *out = NULL;
    if (!cli->epoch[0]) {
        int rc = dcpi_cli_resolve(cli, err);
        if (rc < 0)
            return rc;
    }
    int by_process = cli->procsel.pid >= 0 || cli->procsel.comm;
    int flags = cli->load_flags | (by_process ? DCPI_PSET_LOAD_PROCS : 0);
    int rc = dcpi_profset_load_ex(cli->db, cli->epoch, cli->platform, flags, out, err);
    size_t missing = 0;
    if (rc == 0 && by_process && (rc = dcpi_profset_by_process(*out, &cli->procsel, &missing)) < 0)
        dcpi__errf(err, rc, "%s: out of memory", cli->db);
    if (rc < 0) {
        dcpi_cli_prefix_err(cli, err);
        dcpi_profset_free(*out);
        *out = NULL;
        return rc;
    }
    if (by_process && (*out)->nimages == 0) {
        char who[64] = "";
        if (cli->procsel.pid >= 0)
            snprintf(who, sizeof who, " %ld", cli->procsel.pid);
        dcpi__errf(err, DCPI_ENOENT, "%s: no samples of process%s%s%s in epoch %s", cli->tool, who,
                   cli->procsel.comm ? " named " : "", cli->procsel.comm ? cli->procsel.comm : "",
                   cli->epoch);
        dcpi_profset_free(*out);
        *out = NULL;
        return DCPI_ENOENT;
    }
    if (missing)
        fprintf(stderr,
                "%s: %zu profiles have no split by process (written before dcpid kept one, or "
                "imported): their samples are left out by -pid/-comm\n",
                cli->tool, missing);
    return 0;
}
