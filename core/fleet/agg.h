/*
 * agg.h - the fleet's pre-aggregated samples (docs/fleet.md, "The aggregate"): what makes a view
 * of every host answer without grouping every stored row, exact against the raw rows.
 *
 * The raw rows stay the truth: a row counts when its commit (cid) is its slot's newest
 * (schema.h), and a re-push or a dcpipush of an epoch takes earlier commits out. The aggregate
 * is built per day by `dcpictl -fleet URL aggregate` (and init) from the commits that counted
 * then: agg_cids holds them (day, ab, cid), agg_samples sums their rows by (10 minutes of the
 * epoch's start, 10 minutes of its end, event, image, offset), agg_procs by (day of start, day of
 * end, event, image, pid, command, offset), each row with its raw rows' number (n), count (cnt)
 * and count weighted by 1/duty (w); a row of agg_days (day, ab, its commits' number and sum of
 * ids, the day's manifest rows' number, sum of ids and newest push when the build began) written
 * last makes build ab the day's (a build cut off never counts). A load first compares each day's
 * manifest rows with its build's (one cheap query: rows are only added, so equal means the same
 * counted commits), lists the commits of the days that differ (counted now and not built: +1,
 * built and no longer counted: -1), then reads the current builds and the raw rows of those
 * commits, of the days without a build, and of the time buckets a -since or -until cuts
 * (dcpi_fleet_agg_from), grouped together with HAVING sum(n) > 0: the same rows as the raw GROUP
 * BY whatever was pushed, re-pushed or expired after the build.
 *
 * A commit's rows all carry its manifest row's day (one epoch's start, batch.c), which is how a
 * day's build finds them and how expiry drops them with it. Not used (raw GROUP BY instead): a
 * host selection (the aggregate has no host), a store without the tables (an init of an older
 * dcpi: `dcpictl -fleet URL init` adds them), a cluster's front server (each shard has its own),
 * and DCPI_FLEET_RAW=1 in the environment (the tests' reference).
 */
#ifndef DCPI_CORE_FLEET_AGG_H
#define DCPI_CORE_FLEET_AGG_H

#include <stddef.h>

#include "core/fleet/conn.h"
#include "core/fleet/filter.h"
#include "core/fleet/schema.h"

/* What a load learned of the aggregate (dcpi_fleet_agg_plan), for its queries. */
typedef struct dcpi_fleet_agg {
    int use;           /* 1: read the aggregate */
    dcpi_fbuf_t days;  /* "('DAY', AB), ...": each built day's current build */
    dcpi_fbuf_t dlist; /* "'DAY', ...": the built days */
    dcpi_fbuf_t xrows; /* "CID\tW\n" rows: commits counted now and not in their day's build
                          (W 1), in a build and no longer counted (W -1); the queries' external
                          table xc (dcpi_fleet_agg_query) */
    size_t nx;         /* their number */
    int rawdays;       /* days with commits and no build */
} dcpi_fleet_agg_t;

/* Whether and how flt's loads read the aggregate (the builds, and what changed since: one query,
 * two when a day's manifest changed).
 * a->use 0 (raw) for the cases above. 0, or the server's error. */
int dcpi_fleet_agg_plan(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                        const dcpi_fleet_filter_t *flt, dcpi_fleet_agg_t *a, char *err);
/* The same for every host, whatever DCPI_FLEET_RAW says (dcpictl -fleet URL status). */
int dcpi_fleet_agg_state(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, dcpi_fleet_agg_t *a,
                         char *err);
void dcpi_fleet_agg_free(dcpi_fleet_agg_t *a);
/* Run a query that dcpi_fleet_agg_from, _committed or _where wrote for a (with its changes as
 * the external table xc when there are some). */
int dcpi_fleet_agg_query(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a, const char *sql,
                         dcpi_fbuf_t *out, char *err);

/*
 * The rows of flt as a subquery "(SELECT cols, n, w FROM ... UNION ALL ...)" into sql: cols (a
 * column list of the samples table, e.g. "build_id, path, event, off") with n (raw rows, signed)
 * and w (count / duty, signed), to be summed with GROUP BY ... HAVING sum(n) > 0. procs: from
 * agg_procs (the split by process, or a -pid/-comm selection), else agg_samples. Without a->use:
 * the raw rows "(SELECT cols, 1 AS n, cnt / duty AS w FROM samples WHERE ...)".
 */
void dcpi_fleet_agg_from(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const dcpi_fleet_agg_t *a,
                         const dcpi_fleet_filter_t *flt, int procs, const char *cols,
                         dcpi_fbuf_t *sql);

/* The commits that count, as a condition on a data table's rows (cid, day) into sql: the builds'
 * commits (agg_cids) with the plan's changes and the raw days' newest commits, which is the
 * manifest's GROUP BY read from the builds; dcpi_fleet_committed's without a->use. */
void dcpi_fleet_agg_committed(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a, dcpi_fbuf_t *sql);

/* dcpi_fleet_where with the commits of dcpi_fleet_agg_committed (a data table without the
 * aggregate: loss, chains). */
void dcpi_fleet_agg_where(dcpi_fleet_t *f, const dcpi_fleet_agg_t *a,
                          const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql);

/* dcpictl -fleet URL aggregate: build every day whose counted commits differ from its build's,
 * after deleting the builds an earlier run superseded; one line per day built into out. */
int dcpi_fleet_aggregate(dcpi_fleet_t *f, void (*out)(void *arg, const char *line), void *arg,
                         char *err);

#endif
