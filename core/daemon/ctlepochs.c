/*
 * ctlepochs.c - `dcpictl epochs`: the epochs of a platform as a table (start, end, samples,
 * lost, size on disk, state), read from the database (core/store/epochs.h); the running
 * daemon, when one answers, names the epoch it writes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/err.h"
#include "core/base/units.h"
#include "core/daemon/control.h"
#include "core/store/epochs.h"
#include "dcpi/errno.h"

static void current_epoch(void *arg, const char *line)
{
    if (strncmp(line, "epoch ", 6) == 0)
        snprintf(arg, DCPI_NAMELEN, "%s", line + 6);
}

static void utc(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* writing: the daemon's current epoch; ended; unfinished: its daemon stopped without ending it
 * (killed); "-": no epoch.info (imported, or an older dcpi). */
static const char *state(const dcpi_epoch_info_t *e, const char *current)
{
    if (strcmp(e->name, current) == 0)
        return "writing";
    if (!e->has_info)
        return "-";
    return e->open ? "unfinished" : "ended";
}

int dcpi_control_epochs(const char *db, const char *platform, FILE *out, char *err)
{
    dcpi_epoch_info_t *v = NULL;
    size_t n = 0;
    char current[DCPI_NAMELEN] = "", why[DCPI_ERRLEN];
    int rc = dcpi_epoch_list(db, platform, &v, &n, err);
    if (rc < 0)
        return rc;
    if (n == 0) {
        free(v);
        return dcpi__errf(err, DCPI_ENOENT, "%s: no epochs for platform %s", db, platform);
    }
    (void)dcpi_control_request(db, platform, "status", current_epoch, current, why);
    fprintf(out, "%-14s  %-20s  %-20s  %12s  %10s  %8s  %s\n", "epoch", "start", "end", "samples",
            "lost", "size", "state");
    for (size_t i = 0; i < n; i++) {
        char s[32], e[32], size[32];
        utc(v[i].start, s, sizeof s);
        utc(v[i].end, e, sizeof e);
        dcpi__format_size(v[i].bytes, size, sizeof size);
        fprintf(out, "%-14s  %-20s  %-20s  %12" PRIu64 "  %10" PRIu64 "  %8s  %s\n", v[i].name, s,
                e, v[i].samples, v[i].lost, size, state(&v[i], current));
    }
    free(v);
    return 0;
}
