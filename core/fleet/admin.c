/*
 * admin.c - dcpictl -fleet URL init|expire|status (schema.h, dcpi_fleet_admin).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/fleet/agg.h"
#include "core/fleet/schema.h"
#include "dcpi/errno.h"

/* The aggregate's line of status: its days, what changed since (agg.h). */
static int agg_status(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                      void (*out)(void *, const char *), void *arg, char *err)
{
    if (!info->agg || info->cluster[0]) {
        out(arg, info->cluster[0] ? "aggregate: none through a cluster (each shard has its own)"
                                  : "aggregate: none, queries group the raw rows (dcpictl -fleet "
                                    "URL init adds it)");
        return 0;
    }
    dcpi_fleet_agg_t a;
    int rc = dcpi_fleet_agg_state(f, info, &a, err);
    const char *raw = getenv("DCPI_FLEET_RAW");
    char line[256], *p = a.dlist.p;
    size_t days = 0;
    for (; p && *p; p++)
        days += *p == ',';
    if (rc == 0) {
        snprintf(line, sizeof line, "aggregate: %zu days built, %zu commits changed since%s%s",
                 a.use ? days + 1 : 0, a.nx,
                 a.rawdays ? ", days not built (dcpictl -fleet URL aggregate)" : "",
                 raw && *raw && strcmp(raw, "0") ? " (DCPI_FLEET_RAW: not used)" : "");
        out(arg, line);
    }
    dcpi_fleet_agg_free(&a);
    return rc;
}

static int status(dcpi_fleet_t *f, void (*out)(void *, const char *), void *arg, char *err)
{
    dcpi_fleet_info_t info;
    int rc = dcpi_fleet_check(f, &info, err);
    if (rc < 0)
        return rc;
    char line[512];
    snprintf(line, sizeof line, "schema %d, database %s, keep %ld days%s%s", info.schema,
             dcpi_fleet_dbname(f), info.keep, info.cluster[0] ? ", cluster " : "", info.cluster);
    out(arg, line);
    dcpi_fbuf_t sql = {0}, res = {0};
    const char *db = dcpi_fleet_dbname(f), *sx = info.suffix;
    dcpi_fbuf_printf(&sql, "SELECT (SELECT count() FROM %s.samples%s WHERE ", db, sx);
    dcpi_fleet_committed(f, &sql);
    dcpi_fbuf_printf(&sql, "), (SELECT sum(cnt) FROM %s.samples%s WHERE ", db, sx);
    dcpi_fleet_committed(f, &sql);
    dcpi_fbuf_printf(&sql,
                     "), (SELECT uniqExact(host) FROM %s.manifest%s WHERE kind != "
                     "'symbols'), (SELECT count() FROM %s.manifest%s), (SELECT "
                     "uniqExact(build_id) FROM %s.symbols%s)",
                     db, sx, db, sx, db, sx);
    rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &res, err);
    char *cur = res.p, *fld[5];
    if (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 5) == 5) {
        snprintf(line, sizeof line,
                 "sample rows %s, samples %s, hosts %s, commits %s, images with symbols %s", fld[0],
                 fld[1], fld[2], fld[3], fld[4]);
        out(arg, line);
    }
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&res);
    return rc == 0 ? agg_status(f, &info, out, arg, err) : rc;
}

int dcpi_fleet_admin(const char *url, const char *cmd, long keep, const char *cluster,
                     void (*out)(void *arg, const char *line), void *arg, char *err)
{
    if (strcmp(cmd, "init") && strcmp(cmd, "expire") && strcmp(cmd, "status") &&
        strcmp(cmd, "aggregate"))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: not a fleet command (init, expire, status, aggregate)", cmd);
    dcpi_fleet_t *f = NULL;
    int rc = dcpi_fleet_open(url, &f, err);
    char line[256];
    if (rc == 0 && !strcmp(cmd, "init") && (rc = dcpi_fleet_init(f, keep, cluster, err)) == 0) {
        snprintf(line, sizeof line, "database %s: dcpi schema %d, keep %ld days%s%s",
                 dcpi_fleet_dbname(f), DCPI_FLEET_SCHEMA, keep, cluster ? ", cluster " : "",
                 cluster ? cluster : "");
        out(arg, line);
        if (!cluster) /* the aggregate of what is there (a store an older init made) */
            rc = dcpi_fleet_aggregate(f, out, arg, err);
    } else if (rc == 0 && !strcmp(cmd, "aggregate"))
        rc = dcpi_fleet_aggregate(f, out, arg, err);
    else if (rc == 0 && !strcmp(cmd, "expire")) {
        long dropped = 0;
        if ((rc = dcpi_fleet_expire(f, &dropped, err)) == 0) {
            snprintf(line, sizeof line, "%ld partitions dropped", dropped);
            out(arg, line);
        }
    } else if (rc == 0 && !strcmp(cmd, "status"))
        rc = status(f, out, arg, err);
    dcpi_fleet_close(f);
    return rc;
}
