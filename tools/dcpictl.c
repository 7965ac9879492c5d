/*
 * dcpictl - send one command (flush, epoch, quit, status) to the running dcpid of a platform
 * and print its answer.
 */
#include <stdio.h>
#include <string.h>

#include "core/daemon/control.h"
#include "core/store/db.h"
#include "dcpi/api.h"
#include "dcpi/version.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dcpictl [-db DIR] [-platform P] flush|epoch|quit|status\n"
               "  flush    write the daemon's in-memory samples to the database\n"
               "  epoch    flush, then start a new epoch\n"
               "  quit     flush, then stop the daemon\n"
               "  status   print the daemon's counters\n"
               "  -db DIR       database (default $DCPIDB, else ./dcpidb)\n"
               "  -platform P   the daemon's platform (default: this host's)\n"
               "  -h, -V        help, version\n");
}

static void print_line(void *arg, const char *text)
{
    (void)arg;
    printf("%s\n", text);
    fflush(stdout);
}

typedef struct args {
    const char *db, *platform, *cmd;
} args_t;

/* 0 to run, 1 when -h/-V was handled, 2 on a usage error. */
static int parse(args_t *a, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "-h") == 0 || strcmp(f, "-help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(f, "-V") == 0 || strcmp(f, "-version") == 0) {
            printf("dcpictl (dcpi) %s\n", DCPI_VERSION_STRING);
            return 1;
        } else if ((strcmp(f, "-db") == 0 || strcmp(f, "-platform") == 0) && i + 1 < argc) {
            *(f[1] == 'd' ? &a->db : &a->platform) = argv[++i];
        } else if (f[0] == '-') {
            fprintf(stderr, "dcpictl: unknown flag '%s' (try -h)\n", f);
            return 2;
        } else if (a->cmd) {
            fprintf(stderr, "dcpictl: one command only (try -h)\n");
            return 2;
        } else {
            a->cmd = f;
        }
    }
    if (!a->cmd || !dcpi_control_valid(a->cmd)) {
        fprintf(stderr, "dcpictl: %s%s (flush, epoch, quit, status; try -h)\n",
                a->cmd ? "unknown command " : "missing command", a->cmd ? a->cmd : "");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    args_t a = {0};
    int rc = parse(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : 2;
    char err[DCPI_ERRLEN] = "", platform[DCPI_NAMELEN];
    const char *db = dcpi_db_default(a.db);
    if (a.platform) {
        snprintf(platform, sizeof platform, "%s", a.platform);
    } else if (dcpi_db_platform(db, platform, err) < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        return 1;
    }
    if (dcpi_control_request(db, platform, a.cmd, print_line, NULL, err) < 0) {
        fprintf(stderr, "dcpictl: %s\n", err);
        return 1;
    }
    return 0;
}
