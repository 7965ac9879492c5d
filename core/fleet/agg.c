/*
 * agg.c - the fleet's pre-aggregated samples: the plan of a load (which days are built, what
 * changed since), the subquery of builds and raw corrections, and the builds (agg.h).
 */
#include "core/fleet/agg.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

/* The changed commits travel with each query as the external table xc (cid, w): a set of any
 * size, no long query text to parse (measured: 2880 commits as literals cost 150 ms a query). */
#define XC      "xc"
#define XC_PLUS "(SELECT cid FROM " XC " WHERE w > 0)"
#define XC_MIN  "(SELECT cid FROM " XC " WHERE w < 0)"

/* The last plan's changes, kept while the days' manifest rows and builds are the same (a load
 * and its call chains, the views of one page): the days' query text is the key. */
static struct {
    pthread_mutex_t lock;
    char *key;
    dcpi_fbuf_t xrows;
    size_t nx;
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const struct aggtab {
    const char *name;
    unsigned width; /* seconds of the time buckets (hs, he) */
} tabs[2] = {{"agg_samples", 600}, {"agg_procs", 86400}};

/* ---- the plan ---------------------------------------------------------------------------- */

/* The current build of each built day: "(SELECT day, argMax(ab, built) FROM DB.agg_days ...)" */
static void current(dcpi_fleet_t *f, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_printf(sql, "(SELECT day, argMax(ab, built) FROM %s.agg_days GROUP BY day)",
                     dcpi_fleet_dbname(f));
}

/* Each day's manifest rows (number, sum of commit ids, newest push) beside those its current
 * build saw: "c DAY N SUM MAX" and "b DAY AB N SUM MAX" rows. Manifest rows are only ever
 * added (a day's expiry drops the build's day too), so a day whose rows are the build's has
 * the build's counted commits; any other difference (a merge of a retried insert's duplicate
 * row) only sends the day through the changes' query. */
static void days_sql(dcpi_fleet_t *f, dcpi_fbuf_t *sql)
{
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_printf(sql,
                     "SELECT 'c', toString(day), toString(count()), toString(sum(cid)), "
                     "toString(max(pushed)), '' FROM %s.manifest WHERE kind != 'symbols' GROUP BY "
                     "day UNION ALL SELECT 'b', toString(day), toString(argMax(ab, built)), "
                     "toString(argMax(mrows, built)), toString(argMax(msum, built)), "
                     "toString(argMax(mmax, built)) FROM %s.agg_days GROUP BY day ORDER BY 1, 2",
                     db, db);
}

typedef struct dayfp {
    char day[16], ab[24], fp[72]; /* fp: "N SUM MAX" */
} dayfp_t;

static int day_add(dayfp_t **v, size_t *n, char **fld, int built)
{
    dayfp_t *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return DCPI_ENOMEM;
    *v = nv;
    dayfp_t *d = &nv[(*n)++];
    snprintf(d->day, sizeof d->day, "%s", fld[0]);
    snprintf(d->ab, sizeof d->ab, "%s", built ? fld[1] : "");
    snprintf(d->fp, sizeof d->fp, "%s %s %s", fld[built + 1], fld[built + 2], fld[built + 3]);
    return 0;
}

/* A built day: current (the counted commits are the build's), else stale ("('DAY', AB), "
 * into stale for the changes' query). A counted day without a build is a raw day. */
static void classify(dcpi_fleet_agg_t *a, const dayfp_t *cnt, size_t nc, const dayfp_t *blt,
                     size_t nb, dcpi_fbuf_t *stale)
{
    for (size_t i = 0; i < nb; i++) {
        size_t k = 0;
        while (k < nc && strcmp(cnt[k].day, blt[i].day) != 0)
            k++;
        if (k == nc) /* no commits left (an older dcpictl's expiry): the build is not read */
            continue;
        dcpi_fbuf_printf(&a->days, "%s('%s', %s)", a->days.n ? ", " : "", blt[i].day, blt[i].ab);
        dcpi_fbuf_printf(&a->dlist, "%s'%s'", a->dlist.n ? ", " : "", blt[i].day);
        if (strcmp(cnt[k].fp, blt[i].fp) != 0)
            dcpi_fbuf_printf(stale, "%s('%s', %s)", stale->n ? ", " : "", blt[i].day, blt[i].ab);
    }
    for (size_t k = 0; k < nc; k++) {
        size_t i = 0;
        while (i < nb && strcmp(cnt[k].day, blt[i].day) != 0)
            i++;
        a->rawdays |= i == nb;
    }
}

/* The days' fingerprints into a (days, dlist, rawdays) and the stale builds into stale. */
static int plan_days(dcpi_fleet_t *f, dcpi_fleet_agg_t *a, dcpi_fbuf_t *stale, dcpi_fbuf_t *key,
                     char *err)
{
    dcpi_fbuf_t sql = {0}, out = {0};
    dayfp_t *cnt = NULL, *blt = NULL;
    size_t nc = 0, nb = 0;
    days_sql(f, &sql);
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    dcpi_fbuf_printf(key, "%s\n%s\n", dcpi_fleet_url(f), dcpi_fleet_dbname(f));
    dcpi_fbuf_add(key, out.p ? out.p : "", out.n);
    dcpi_fbuf_add(key, "", 1);
    if (rc == 0)
        rc = dcpi_fbuf_ok(key);
    char *cur = out.p, *fld[6];
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 6) == 6)
        rc = fld[0][0] == 'b' ? day_add(&blt, &nb, fld + 1, 1) : day_add(&cnt, &nc, fld + 1, 0);
    if (rc == 0)
        classify(a, cnt, nc, blt, nb, stale);
    free(cnt);
    free(blt);
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

/* The commits of the stale builds' days counted now and not built (+1), or built and no longer
 * counted (-1): "CID W" rows. */
static void changes_sql(dcpi_fleet_t *f, const dcpi_fbuf_t *stale, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, "SELECT toString(cid), toString(sum(s)) FROM (SELECT c AS cid, toInt64(1) "
                       "AS s FROM ");
    dcpi_fleet_counted(f, sql);
    dcpi_fbuf_printf(sql,
                     " WHERE k != 'symbols' AND d IN (SELECT day FROM %s.agg_days WHERE "
                     "(day, ab) IN (%s)) UNION ALL SELECT cid, toInt64(-1) AS s FROM %s.agg_cids "
                     "WHERE (day, ab) IN (%s)) GROUP BY cid HAVING sum(s) != 0",
                     dcpi_fleet_dbname(f), stale->p, dcpi_fleet_dbname(f), stale->p);
}

static int plan_changes(dcpi_fleet_t *f, dcpi_fleet_agg_t *a, const dcpi_fbuf_t *stale, char *err)
{
    dcpi_fbuf_t sql = {0}, out = {0};
    changes_sql(f, stale, &sql);
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    char *cur = out.p, *fld[2];
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 2) == 2) {
        dcpi_fbuf_printf(&a->xrows, "%s\t%s\n", fld[0], fld[1]);
        a->nx++;
    }
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc == 0 ? dcpi_fbuf_ok(&a->xrows) : rc;
}

/* The changes of the plan whose days' text is key: kept ones (1), else none (0). */
static int changes_kept(const char *key, dcpi_fleet_agg_t *a)
{
    pthread_mutex_lock(&kept.lock);
    int hit = kept.key && !strcmp(kept.key, key);
    if (hit && kept.xrows.n)
        dcpi_fbuf_add(&a->xrows, kept.xrows.p, kept.xrows.n);
    a->nx = hit ? kept.nx : 0;
    pthread_mutex_unlock(&kept.lock);
    return hit && dcpi_fbuf_ok(&a->xrows) == 0;
}

static void changes_keep(const char *key, const dcpi_fleet_agg_t *a)
{
    pthread_mutex_lock(&kept.lock);
    free(kept.key);
    dcpi_fbuf_reset(&kept.xrows);
    kept.key = strdup(key);
    if (a->xrows.n)
        dcpi_fbuf_add(&kept.xrows, a->xrows.p, a->xrows.n);
    kept.nx = a->nx;
    if (dcpi_fbuf_ok(&kept.xrows) < 0) { /* not kept */
        free(kept.key);
        kept.key = NULL;
    }
    pthread_mutex_unlock(&kept.lock);
}

int dcpi_fleet_agg_plan(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                        const dcpi_fleet_filter_t *flt, dcpi_fleet_agg_t *a, char *err)
{
    *a = (dcpi_fleet_agg_t){0};
    const char *raw = getenv("DCPI_FLEET_RAW");
    if (flt->hosts || (raw && *raw && strcmp(raw, "0")))
        return 0;
    return dcpi_fleet_agg_state(f, info, a, err);
}

int dcpi_fleet_agg_state(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, dcpi_fleet_agg_t *a,
                         char *err)
{
    *a = (dcpi_fleet_agg_t){0};
    if (!info->agg || info->cluster[0])
        return 0;
    dcpi_fbuf_t stale = {0}, key = {0};
    int rc = plan_days(f, a, &stale, &key, err);
    if (rc == 0 && stale.n && dcpi_fbuf_ok(&stale) < 0)
        rc = DCPI_ENOMEM;
    if (rc == 0 && stale.n && !changes_kept(key.p, a) &&
        (rc = plan_changes(f, a, &stale, err)) == 0)
        changes_keep(key.p, a);
    dcpi_fbuf_free(&stale);
    dcpi_fbuf_free(&key);
    if (rc == 0 && (dcpi_fbuf_ok(&a->days) < 0 || dcpi_fbuf_ok(&a->dlist) < 0))
        rc = DCPI_ENOMEM;
    a->use = rc == 0 && a->days.n > 0;
    return rc;
}

int dcpi_fleet_agg_query(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a, const char *sql,
                         dcpi_fbuf_t *out, char *err)
{
    dcpi_fleet_ext_t xc = {XC, "cid UInt64, w Int64", &a->xrows};
    return dcpi_fleet_query_ext(f, sql, a->use && a->nx ? &xc : NULL, out, err);
}

void dcpi_fleet_agg_free(dcpi_fleet_agg_t *a)
{
    dcpi_fbuf_free(&a->days);
    dcpi_fbuf_free(&a->dlist);
    dcpi_fbuf_free(&a->xrows);
}

/* ---- the subquery ------------------------------------------------------------------------ */

/* "(day >= 'D' AND HE >= S AND HS + W <= U)": every epoch of the bucket (HS, HE) is in the
 * window (none is when its end's bucket ends before since or its start's is at or after until);
 * "1" without a window. */
static void full(const dcpi_fleet_filter_t *flt, const char *hs, const char *he, unsigned w,
                 dcpi_fbuf_t *sql)
{
    if (flt->since <= 0 && flt->until <= 0) {
        dcpi_fbuf_str(sql, "1");
        return;
    }
    dcpi_fbuf_str(sql, "(1");
    if (flt->since > 0) {
        char day[16];
        dcpi_fleet_since_day(flt, day);
        dcpi_fbuf_printf(sql, " AND day >= '%s' AND %s >= %" PRId64, day, he, flt->since);
    }
    if (flt->until > 0)
        dcpi_fbuf_printf(sql, " AND %s + %u <= %" PRId64, hs, w, flt->until);
    dcpi_fbuf_str(sql, ")");
}

/* The raw window (dcpi_fleet_where's): "(day >= 'D' AND eend >= S AND estart < U)", or "1". */
static void window(const dcpi_fleet_filter_t *flt, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, "(1");
    dcpi_fleet_where_window(flt, sql);
    dcpi_fbuf_str(sql, ")");
}

/* A raw row is in a built day and a bucket wholly in the window: the build holds it. */
static void built(const dcpi_fleet_agg_t *a, const dcpi_fleet_filter_t *flt, unsigned w,
                  dcpi_fbuf_t *sql)
{
    char hs[64], he[64];
    snprintf(hs, sizeof hs, "intDiv(estart, %u) * %u", w, w);
    snprintf(he, sizeof he, "intDiv(eend, %u) * %u", w, w);
    dcpi_fbuf_printf(sql, "(day IN (%s) AND ", a->dlist.p);
    full(flt, hs, he, w, sql);
    dcpi_fbuf_str(sql, ")");
}

/* The weight of a built row: +1 counted now and not in the build, -1 the reverse. */
static void built_weight(const dcpi_fleet_agg_t *a, dcpi_fbuf_t *sql)
{
    if (a->nx)
        dcpi_fbuf_str(sql, "toInt64(cid IN " XC_PLUS ") - toInt64(cid IN " XC_MIN ")");
    else
        dcpi_fbuf_str(sql, "toInt64(0)");
}

/* The raw rows' part: "SELECT cols, K AS n, n * cnt / duty AS w FROM samples PREWHERE ..." */
static void raw_part(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a, const dcpi_fleet_filter_t *flt,
                     int procs, const char *cols, dcpi_fbuf_t *sql)
{
    unsigned w = tabs[procs].width;
    int others = a->rawdays || flt->since > 0 || flt->until > 0; /* rows outside the builds */
    dcpi_fbuf_printf(sql, "SELECT %s, if(", cols);
    built(a, flt, w, sql);
    dcpi_fbuf_str(sql, ", ");
    built_weight(a, sql);
    dcpi_fbuf_str(sql, ", toInt64(");
    if (others) { /* the newest commits, read from the builds where there are some */
        dcpi_fleet_agg_committed(f, a, sql);
        dcpi_fbuf_str(sql, " AND ");
        window(flt, sql);
    } else
        dcpi_fbuf_str(sql, "0");
    dcpi_fbuf_printf(sql, ")) AS n, n * cnt / duty AS w FROM %s.samples PREWHERE ",
                     dcpi_fleet_dbname(f));
    if (a->nx) {
        built(a, flt, w, sql);
        dcpi_fbuf_str(sql, " AND cid IN (SELECT cid FROM " XC ")");
    } else
        dcpi_fbuf_str(sql, "0");
    if (others) {
        dcpi_fbuf_str(sql, " OR NOT ");
        built(a, flt, w, sql);
        dcpi_fbuf_str(sql, " AND ");
        window(flt, sql);
    }
    dcpi_fbuf_str(sql, " WHERE n != 0");
    dcpi_fleet_where_sel(flt, 1, sql);
}

void dcpi_fleet_agg_from(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const dcpi_fleet_agg_t *a,
                         const dcpi_fleet_filter_t *flt, int procs, const char *cols,
                         dcpi_fbuf_t *sql)
{
    const char *db = dcpi_fleet_dbname(f);
    if (!a->use) {
        dcpi_fbuf_printf(sql, "(SELECT %s, toInt64(1) AS n, cnt / duty AS w FROM %s.samples%s",
                         cols, db, info->suffix);
        dcpi_fleet_where(f, flt, 1, sql);
        dcpi_fbuf_str(sql, ")");
        return;
    }
    procs = procs || (flt->procsel && (flt->procsel->pid >= 0 || flt->procsel->comm));
    const struct aggtab *t = &tabs[procs ? 1 : 0];
    dcpi_fbuf_printf(sql, "(SELECT %s, n, w FROM %s.%s WHERE (day, ab) IN (%s) AND ", cols, db,
                     t->name, a->days.p);
    full(flt, "hs", "he", t->width, sql);
    dcpi_fleet_where_sel(flt, 1, sql);
    dcpi_fbuf_str(sql, " UNION ALL ");
    raw_part(f, a, flt, procs ? 1 : 0, cols, sql);
    dcpi_fbuf_str(sql, ")");
}

void dcpi_fleet_agg_committed(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a, dcpi_fbuf_t *sql)
{
    if (!a->use) {
        dcpi_fleet_committed(f, sql);
        return;
    }
    dcpi_fbuf_printf(sql, "(cid IN (SELECT cid FROM %s.agg_cids WHERE (day, ab) IN (%s))",
                     dcpi_fleet_dbname(f), a->days.p);
    if (a->nx)
        dcpi_fbuf_str(sql, " AND cid NOT IN " XC_MIN " OR cid IN " XC_PLUS);
    if (a->rawdays) {
        dcpi_fbuf_printf(sql, " OR day NOT IN (%s) AND ", a->dlist.p);
        dcpi_fleet_committed(f, sql);
    }
    dcpi_fbuf_str(sql, ")");
}

void dcpi_fleet_agg_where(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a,
                          const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, " WHERE ");
    dcpi_fleet_agg_committed(f, a, sql);
    dcpi_fleet_where_after(flt, procs, sql);
}

/* ---- the builds -------------------------------------------------------------------------- */

static int run(dcpi_fleet_t *f, dcpi_fbuf_t *sql, dcpi_fbuf_t *out, char *err)
{
    int rc = dcpi_fbuf_ok(sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql->p, out, err);
    dcpi_fbuf_reset(sql);
    return rc;
}

/* Delete the rows of the builds that an earlier run superseded (committed, not their day's
 * current one): only when there are some (a mutation rewrites the parts). A build not committed
 * (cut off, or another run's under way) is left alone: no query reads it. */
static int cleanup(dcpi_fleet_t *f, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    static const char *const names[] = {"agg_samples", "agg_procs", "agg_cids", "agg_days"};
    dcpi_fbuf_t sql = {0}, old = {0};
    dcpi_fbuf_printf(&sql, "SELECT day, ab FROM %s.agg_days WHERE (day, ab) NOT IN ", db);
    current(f, &sql);
    dcpi_fbuf_str(&sql, " FORMAT Values");
    int rc = run(f, &sql, &old, err);
    for (size_t i = 0; rc == 0 && old.n && i < sizeof names / sizeof *names; i++) {
        dcpi_fbuf_printf(&sql, "ALTER TABLE %s.%s DELETE WHERE (day, ab) IN (", db, names[i]);
        dcpi_fbuf_add(&sql, old.p, old.n);
        dcpi_fbuf_str(&sql, ")");
        rc = run(f, &sql, NULL, err);
    }
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&old);
    return rc;
}

/* Drop the builds of days without commits (expired by an older dcpictl, which knows only the
 * raw tables): their partitions of the aggregate's tables. */
static int orphans(dcpi_fleet_t *f, void (*out)(void *, const char *), void *arg, char *err)
{
    static const char *const names[] = {"agg_samples", "agg_procs", "agg_cids", "agg_days"};
    const char *db = dcpi_fleet_dbname(f);
    dcpi_fbuf_t sql = {0}, days = {0};
    dcpi_fbuf_printf(&sql,
                     "SELECT DISTINCT toString(day) FROM %s.agg_days WHERE day NOT IN (SELECT "
                     "day FROM %s.manifest WHERE kind != 'symbols')",
                     db, db);
    int rc = run(f, &sql, &days, err);
    char *cur = days.p, *fld[1], line[128];
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 1) == 1) {
        if (strlen(fld[0]) != 10 || strspn(fld[0], "0123456789-") != 10)
            continue;
        for (size_t i = 0; rc == 0 && i < sizeof names / sizeof *names; i++) {
            dcpi_fbuf_printf(&sql, "ALTER TABLE %s.%s DROP PARTITION '%s'", db, names[i], fld[0]);
            rc = run(f, &sql, NULL, err);
        }
        snprintf(line, sizeof line, "aggregate: %s dropped (no commits left)", fld[0]);
        if (rc == 0)
            out(arg, line);
    }
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&days);
    return rc;
}

/* The days whose counted commits (number, sum of ids) differ from their current build's. */
static int stale_days(dcpi_fleet_t *f, dcpi_fbuf_t *out, char *err)
{
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_str(&sql, "SELECT toString(d) FROM (SELECT d, count() AS nc, sum(c) AS sc FROM ");
    dcpi_fleet_counted(f, &sql);
    dcpi_fbuf_printf(&sql,
                     " WHERE k != 'symbols' GROUP BY d) WHERE (d, nc, sc) NOT IN (SELECT day, "
                     "argMax(commits, built), argMax(cidsum, built) FROM %s.agg_days GROUP BY "
                     "day) ORDER BY d",
                     dcpi_fleet_dbname(f));
    int rc = run(f, &sql, out, err);
    dcpi_fbuf_free(&sql);
    return rc;
}

/* The rows of one aggregate table of build ab of day from its commits in agg_cids. */
static void build_rows(dcpi_fleet_t *f, int t, const char *day, uint64_t ab, dcpi_fbuf_t *sql)
{
    const char *db = dcpi_fleet_dbname(f), *pc = t ? "pid, comm, " : "";
    unsigned w = tabs[t].width;
    dcpi_fbuf_printf(sql,
                     "INSERT INTO %s.%s (day, ab, hs, he, event, period, build_id, path, kind, "
                     "tstart, tsize, %soff, n, cnt, w) SELECT day, toUInt64(%" PRIu64 "), "
                     "intDiv(estart, %u) * %u AS hs, intDiv(eend, %u) * %u AS he, event, period, "
                     "build_id, path, kind, tstart, tsize, %soff, count(), sum(cnt), sum(cnt / "
                     "duty) FROM %s.samples WHERE day = '%s' AND cid IN (SELECT cid FROM "
                     "%s.agg_cids WHERE day = '%s' AND ab = %" PRIu64 ") GROUP BY day, hs, he, "
                     "event, period, build_id, path, kind, tstart, tsize, %soff",
                     db, tabs[t].name, pc, ab, w, w, w, w, pc, db, day, db, day, ab, pc);
}

/* The day's manifest rows (number, sum of ids, newest push: days_sql's) before the build reads
 * them (a commit that comes in during the build is then a change), as "N, SUM, MAX". */
static int manifest_fp(dcpi_fleet_t *f, const char *day, char fp[80], char *err)
{
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_printf(&sql,
                     "SELECT concat(toString(count()), ', ', toString(sum(cid)), ', ', "
                     "toString(max(pushed))) FROM %s.manifest WHERE kind != 'symbols' AND day = "
                     "'%s'",
                     dcpi_fleet_dbname(f), day);
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_scalar(f, sql.p, fp, 80, err);
    dcpi_fbuf_free(&sql);
    return rc < 0 || strspn(fp, "0123456789, ") == strlen(fp) ? rc : DCPI_EFORMAT;
}

/* Build day: its counted commits, the two tables' rows of them, then the build's day row. */
static int build_day(dcpi_fleet_t *f, const char *day, char *err)
{
    const char *db = dcpi_fleet_dbname(f);
    char fp[80] = "";
    int rc = manifest_fp(f, day, fp, err);
    uint64_t ab = 0;
    if (getrandom(&ab, sizeof ab, 0) != sizeof ab)
        ab = (uint64_t)time(NULL) * 2654435761u;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_printf(
        &sql, "INSERT INTO %s.agg_cids (day, ab, cid) SELECT d, toUInt64(%" PRIu64 "), c FROM ", db,
        ab);
    dcpi_fleet_counted(f, &sql);
    dcpi_fbuf_printf(&sql, " WHERE k != 'symbols' AND d = '%s'", day);
    if (rc == 0)
        rc = run(f, &sql, NULL, err);
    for (int t = 0; rc == 0 && t < 2; t++) {
        build_rows(f, t, day, ab, &sql);
        rc = run(f, &sql, NULL, err);
    }
    dcpi_fbuf_reset(&sql);
    dcpi_fbuf_printf(&sql,
                     "INSERT INTO %s.agg_days (day, ab, built, commits, cidsum, mrows, msum, mmax) "
                     "SELECT toDate('%s'), toUInt64(%" PRIu64 "), toUInt64(%" PRIu64
                     "), count(), sum(cid), %s FROM %s.agg_cids WHERE day = '%s' AND ab = %" PRIu64,
                     db, day, ab, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, fp,
                     db, day, ab);
    if (rc == 0)
        rc = run(f, &sql, NULL, err);
    dcpi_fbuf_free(&sql);
    return rc;
}

int dcpi_fleet_aggregate(dcpi_fleet_t *f, void (*out)(void *arg, const char *line), void *arg,
                         char *err)
{
    dcpi_fbuf_t days = {0};
    dcpi_fleet_timeout(f, 3600); /* a day's GROUP BY of a large store */
    int rc = orphans(f, out, arg, err);
    if (rc == 0)
        rc = cleanup(f, err);
    if (rc == 0)
        rc = stale_days(f, &days, err);
    char *cur = days.p, *fld[1], line[128];
    int n = 0;
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 1) == 1) {
        if (strlen(fld[0]) != 10 || strspn(fld[0], "0123456789-") != 10)
            continue;
        if ((rc = build_day(f, fld[0], err)) == 0) {
            snprintf(line, sizeof line, "aggregate: %s built", fld[0]);
            out(arg, line);
            n++;
        }
    }
    if (rc == 0 && n == 0)
        out(arg, "aggregate: every day up to date");
    dcpi_fbuf_free(&days);
    return rc;
}
