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
#include "core/base/json.h"
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

static void print_table(const dcpi_epoch_info_t *v, size_t n, const char *current, FILE *out)
{
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
}

/* -json: schema dcpictl-epochs/1 (docs/dcpictl.md). */
static void print_json(const dcpi_epoch_info_t *v, size_t n, const char *current,
                       const char *platform, FILE *out)
{
    fputs("{\"schema\":\"dcpictl-epochs/1\",", out);
    dcpi__json_key(out, 0, "platform");
    dcpi__json_str(out, platform);
    fputs(",\"epochs\":[", out);
    for (size_t i = 0; i < n; i++) {
        char s[32], e[32];
        utc(v[i].start, s, sizeof s);
        utc(v[i].end, e, sizeof e);
        fputs(i ? ",{" : "{", out);
        dcpi__json_key(out, 0, "epoch");
        dcpi__json_str(out, v[i].name);
        fprintf(out,
                ",\"start\":\"%s\",\"start_unix\":%lld,\"end\":\"%s\",\"end_unix\":%lld,"
                "\"samples\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"bytes\":%" PRIu64
                ",\"state\":\"%s\"}",
                s, (long long)v[i].start, e, (long long)v[i].end, v[i].samples, v[i].lost,
                v[i].bytes, state(&v[i], current));
    }
    fputs("]}\n", out);
}

int dcpi_control_epochs(const char *db, const char *platform, int json, FILE *out, char *err)
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
    if (json)
        print_json(v, n, current, platform, out);
    else
        print_table(v, n, current, out);
    free(v);
    return 0;
}
