/*
 * schema.c - create, check and expire the fleet's tables (schema.h).
 */
#include "core/fleet/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

#define KEYDEFS                                                                                    \
    "day Date, skey UInt64, host String, epoch String, estart UInt32, eend UInt32, "               \
    "platform String, event String, period UInt64, duty Float64, "
#define IMGDEFS "build_id String, path String, kind UInt8, tstart UInt64, tsize UInt64, "

#define AGGDEFS                                                                                    \
    "day Date, ab UInt64, hs UInt32, he UInt32, event String, period UInt64, build_id String, "    \
    "path String, kind UInt8, tstart UInt64, tsize UInt64, "
#define AGGSUMS "off UInt32, n Int64, cnt Int64, w Float64"
/* hotlists' cluster counters (schema 4, last: where an upgrade adds them) */
#define CLUSTDEFS                                                                                  \
    "clusters UInt64 DEFAULT 0, chits UInt64 DEFAULT 0, csq UInt64 DEFAULT 0, cagree UInt64 "      \
    "DEFAULT 0"

static const struct table {
    const char *name, *columns, *engine;
    int data;  /* 1: partitioned by day, expired */
    int local; /* 1: the server's own (the aggregate, agg.h): no Distributed table */
} tables[] = {
    {"samples", KEYDEFS IMGDEFS "off UInt32, pid UInt32, comm String, cnt UInt64, cid UInt64",
     "MergeTree() PARTITION BY day ORDER BY (event, build_id, host, estart, off)", 1, 0},
    {"hotlists",
     KEYDEFS IMGDEFS "plugin String, hotsize UInt32, contexts UInt8, off UInt32, entry UInt8, "
                     "value UInt64, ctx0 UInt64, ctx1 UInt64, cnt UInt64, err UInt64, vtot UInt64, "
                     "seen UInt64, backend String, cid UInt64, " CLUSTDEFS,
     "MergeTree() PARTITION BY day ORDER BY (plugin, build_id, off, host, estart)", 1, 0},
    {"vmiss", KEYDEFS IMGDEFS "plugin String, off UInt32, reason String, cid UInt64",
     "MergeTree() PARTITION BY day ORDER BY (plugin, build_id, off, host, estart)", 1, 0},
    {"chains", KEYDEFS "chain String, cnt UInt64, cid UInt64",
     "MergeTree() PARTITION BY day ORDER BY (event, host, estart, chain)", 1, 0},
    {"loss", KEYDEFS "lost UInt64, samples UInt64, cid UInt64",
     "MergeTree() PARTITION BY day ORDER BY (host, estart, event)", 1, 0},
    {"symbols", "skey UInt64, build_id String, addr UInt64, size UInt64, name String, cid UInt64",
     "MergeTree() ORDER BY (build_id, addr)", 0, 0},
    {"manifest",
     "day Date, skey UInt64, host String, slot UInt64, batch UInt64, cid UInt64, pushed UInt64, "
     "kind String, rows UInt64, epoch String",
     "ReplacingMergeTree() PARTITION BY day ORDER BY (slot, batch, cid)", 1, 0},
    {"agg_samples", AGGDEFS AGGSUMS,
     "SummingMergeTree((n, cnt, w)) PARTITION BY day ORDER BY (ab, event, build_id, off, hs, he, "
     "period, path, kind, tstart, tsize)",
     1, 1},
    {"agg_procs", AGGDEFS "pid UInt32, comm String, " AGGSUMS,
     "SummingMergeTree((n, cnt, w)) PARTITION BY day ORDER BY (ab, event, build_id, pid, comm, "
     "off, hs, he, period, path, kind, tstart, tsize)",
     1, 1},
    {"agg_cids", "day Date, ab UInt64, cid UInt64",
     "MergeTree() PARTITION BY day ORDER BY (ab, cid)", 1, 1},
    {"agg_days",
     "day Date, ab UInt64, built UInt64, commits UInt64, cidsum UInt64, mrows UInt64, msum "
     "UInt64, mmax UInt64",
     "MergeTree() PARTITION BY day ORDER BY (day, built)", 1, 1},
};

static int run(dcpi_fleet_t *f, dcpi_fbuf_t *sql, char *err)
{
    int rc = dcpi_fbuf_ok(sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql->p, NULL, err);
    dcpi_fbuf_reset(sql);
    return rc;
}

static int create_table(dcpi_fleet_t *f, const struct table *t, const char *cluster, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_printf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = %s", db, t->name,
                     t->columns, t->engine);
    int rc = run(f, &sql, err);
    if (rc == 0 && cluster && !t->local) {
        dcpi_fbuf_printf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s_all AS %s.%s ENGINE = ", db,
                         t->name, db, t->name);
        dcpi_fbuf_str(&sql, "Distributed(");
        dcpi_fbuf_sqlstr(&sql, cluster);
        dcpi_fbuf_printf(&sql, ", '%s', '%s', skey)", db, t->name);
        rc = run(f, &sql, err);
    }
    dcpi_fbuf_free(&sql);
    return rc;
}

static int write_meta(dcpi_fleet_t *f, long keep, const char *cluster, char *err)
{
    dcpi_fbuf_t rows = {0};
    dcpi_fbuf_printf(&rows, "schema\t%d\nkeep\t%ld\ncluster\t", DCPI_FLEET_SCHEMA, keep);
    dcpi_fbuf_tsv(&rows, cluster ? cluster : "");
    dcpi_fbuf_str(&rows, "\n");
    int rc = dcpi_fbuf_ok(&rows);
    if (rc == 0) {
        char ts[32];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(ts, sizeof ts, "%lld", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
        /* every line gets the same version: the newest init wins */
        dcpi_fbuf_t v = {0};
        for (char *p = rows.p; *p;) {
            char *nl = strchr(p, '\n');
            dcpi_fbuf_add(&v, p, (size_t)(nl - p));
            dcpi_fbuf_printf(&v, "\t%s\n", ts);
            p = nl + 1;
        }
        rc = dcpi_fbuf_ok(&v);
        if (rc == 0)
            rc = dcpi_fleet_insert(f, "meta", "key, value, ver", &v, err);
        dcpi_fbuf_free(&v);
    }
    dcpi_fbuf_free(&rows);
    return rc;
}

/* The columns a schema added to the one before (schema, table, column, type); schema 3 added
 * the vmiss table (created by init). */
static const struct added {
    int schema;
    const char *table, *column, *type;
} added[] = {{2, "hotlists", "backend", "String"},
             {2, "manifest", "epoch", "String"},
             {4, "hotlists", "clusters", "UInt64 DEFAULT 0"},
             {4, "hotlists", "chits", "UInt64 DEFAULT 0"},
             {4, "hotlists", "csq", "UInt64 DEFAULT 0"},
             {4, "hotlists", "cagree", "UInt64 DEFAULT 0"}};

/* Add a column to name (and name_all when it exists) unless there. */
static int add_column(dcpi_fleet_t *f, const char *name, const struct added *a, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0};
    char n[32] = "";
    dcpi_fbuf_str(&sql, "SELECT countIf(name = ");
    dcpi_fbuf_sqlstr(&sql, a->column);
    dcpi_fbuf_str(&sql, "), count() FROM system.columns WHERE database = ");
    dcpi_fbuf_sqlstr(&sql, db);
    dcpi_fbuf_str(&sql, " AND table = ");
    dcpi_fbuf_sqlstr(&sql, name);
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_scalar(f, sql.p, n, sizeof n, err);
    dcpi_fbuf_reset(&sql);
    if (rc == 0 && !strncmp(n, "0\t", 2) && strcmp(n, "0\t0") != 0) { /* the table, no column */
        dcpi_fbuf_printf(&sql, "ALTER TABLE %s.%s ADD COLUMN %s %s", db, name, a->column, a->type);
        rc = run(f, &sql, err);
    }
    dcpi_fbuf_free(&sql);
    return rc;
}

/* Schema from to this one: the columns added since (empty or 0 in the old rows) on every table
 * holding them; the added tables are created by init. */
static int upgrade(dcpi_fleet_t *f, int from, char *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof added / sizeof *added; i++) {
        if (added[i].schema <= from)
            continue;
        char all[64];
        snprintf(all, sizeof all, "%s_all", added[i].table);
        rc = add_column(f, added[i].table, &added[i], err);
        if (rc == 0)
            rc = add_column(f, all, &added[i], err);
    }
    return rc;
}

int dcpi_fleet_init(dcpi_fleet_t *f, long keep, const char *cluster, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_printf(&sql, "CREATE DATABASE IF NOT EXISTS %s", db);
    int rc = run(f, &sql, err);
    if (rc == 0) {
        dcpi_fbuf_printf(&sql,
                         "CREATE TABLE IF NOT EXISTS %s.meta (key String, value String, ver "
                         "UInt64) ENGINE = ReplacingMergeTree(ver) ORDER BY key",
                         db);
        rc = run(f, &sql, err);
    }
    dcpi_fbuf_free(&sql);
    if (rc < 0)
        return rc; /* err says why */
    dcpi_fleet_info_t old;
    char why[DCPI_ERRLEN] = "";
    rc = dcpi_fleet_check(f, &old, why);
    if (rc == DCPI_EVERSION && old.schema >= 1 && old.schema < DCPI_FLEET_SCHEMA)
        rc = upgrade(f, old.schema, err);
    else if (rc < 0 && rc != DCPI_ENOENT) /* another version, or the server failed */
        return dcpi__errf(err, rc, "%s", why);
    else
        rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof tables / sizeof *tables; i++)
        rc = create_table(f, &tables[i], cluster, err);
    return rc == 0 ? write_meta(f, keep, cluster, err) : rc;
}

static int parse_meta(dcpi_fleet_t *f, char *text, dcpi_fleet_info_t *info, char *err)
{
    char *fields[2];
    int n;
    *info = (dcpi_fleet_info_t){.suffix = ""};
    while ((n = dcpi_fleet_tsv_line(&text, fields, 2)) != 0) {
        if (n != 2)
            continue;
        if (!strcmp(fields[0], "schema"))
            info->schema = atoi(fields[1]);
        else if (!strcmp(fields[0], "keep"))
            info->keep = atol(fields[1]);
        else if (!strcmp(fields[0], "cluster"))
            snprintf(info->cluster, sizeof info->cluster, "%s", fields[1]);
    }
    if (info->cluster[0])
        info->suffix = "_all";
    if (info->schema == 0)
        return dcpi__errf(err, DCPI_ENOENT,
                          "%s: database %s has no dcpi schema (run dcpictl -fleet URL init)",
                          dcpi_fleet_url(f), dcpi_fleet_dbname(f));
    if (info->schema != DCPI_FLEET_SCHEMA)
        return dcpi__errf(
            err, DCPI_EVERSION, "%s: database %s has dcpi schema %d, this dcpi knows %d%s",
            dcpi_fleet_url(f), dcpi_fleet_dbname(f), info->schema, DCPI_FLEET_SCHEMA,
            info->schema < DCPI_FLEET_SCHEMA ? " (dcpictl -fleet URL init upgrades it)" : "");
    return 0;
}

int dcpi_fleet_check(dcpi_fleet_t *f, dcpi_fleet_info_t *info, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0}, out = {0};
    dcpi_fbuf_str(&sql,
                  "SELECT countIf(name = 'meta'), countIf(name IN ('agg_samples', "
                  "'agg_procs', 'agg_cids', 'agg_days')) FROM system.tables WHERE database = ");
    dcpi_fbuf_sqlstr(&sql, db);
    char n[32] = "";
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_scalar(f, sql.p, n, sizeof n, err);
    if (rc == 0 && strncmp(n, "1\t", 2) != 0)
        rc = dcpi__errf(err, DCPI_ENOENT,
                        "%s: database %s has no dcpi schema (run dcpictl -fleet URL init)",
                        dcpi_fleet_url(f), db);
    dcpi_fbuf_reset(&sql);
    dcpi_fbuf_printf(&sql, "SELECT key, argMax(value, ver) FROM %s.meta GROUP BY key", db);
    if (rc == 0 && (rc = dcpi_fbuf_ok(&sql)) == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    if (rc == 0)
        rc = parse_meta(f, out.p ? out.p : (char[]){0}, info, err);
    if (rc == 0) /* the aggregate's 4 tables, created by an init of this dcpi (agg.h) */
        info->agg = !strcmp(n + 2, "4");
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

static int drop_old(dcpi_fleet_t *f, const char *cutoff, long *dropped, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0}, out = {0};
    dcpi_fbuf_str(&sql, "SELECT DISTINCT table, partition FROM system.parts WHERE active AND "
                        "database = ");
    dcpi_fbuf_sqlstr(&sql, db);
    dcpi_fbuf_str(&sql, " AND partition < ");
    dcpi_fbuf_sqlstr(&sql, cutoff);
    dcpi_fbuf_str(&sql, " AND partition > '1970-01-02' AND table IN (");
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
        if (tables[i].data)
            dcpi_fbuf_printf(&sql, "%s'%s'", i ? ", " : "", tables[i].name);
    dcpi_fbuf_str(&sql, ") ORDER BY table, partition");
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    char *cur = out.p, *fld[2];
    int n;
    while (rc == 0 && (n = dcpi_fleet_tsv_line(&cur, fld, 2)) != 0) {
        if (n != 2 || !dcpi_fleet_valid_name(fld[0]))
            continue;
        dcpi_fbuf_reset(&sql);
        dcpi_fbuf_printf(&sql, "ALTER TABLE %s.%s DROP PARTITION ", db, fld[0]);
        dcpi_fbuf_sqlstr(&sql, fld[1]);
        if ((rc = dcpi_fbuf_ok(&sql)) == 0 && (rc = dcpi_fleet_query(f, sql.p, NULL, err)) == 0)
            (*dropped)++;
    }
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

int dcpi_fleet_expire(dcpi_fleet_t *f, long *dropped, char *err)
{
    dcpi_fleet_info_t info;
    *dropped = 0;
    int rc = dcpi_fleet_check(f, &info, err);
    if (rc < 0 || info.keep <= 0)
        return rc;
    time_t cut = time(NULL) - (time_t)info.keep * 86400;
    struct tm tm;
    char day[16];
    gmtime_r(&cut, &tm);
    strftime(day, sizeof day, "%Y-%m-%d", &tm);
    return drop_old(f, day, dropped, err);
}

/* The manifest rows a slot's newest commit is chosen among ("DB.manifest WHERE ..."). */
static void candidates(dcpi_fleet_t *f, dcpi_fbuf_t *sql)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_printf(sql,
                     "%s.manifest WHERE kind NOT IN ('flush', 'values') OR (host, epoch) NOT IN "
                     "(SELECT host, epoch FROM %s.manifest WHERE kind = 'epoch')",
                     db, db);
}

void dcpi_fleet_committed(dcpi_fleet_t *f, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, "cid IN (SELECT argMax(cid, pushed) FROM ");
    candidates(f, sql);
    dcpi_fbuf_str(sql, " GROUP BY slot)");
}

void dcpi_fleet_counted(dcpi_fleet_t *f, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, "(SELECT argMax(cid, pushed) AS c, argMax(day, pushed) AS d, "
                       "argMax(kind, pushed) AS k FROM ");
    candidates(f, sql);
    dcpi_fbuf_str(sql, " GROUP BY slot)");
}
