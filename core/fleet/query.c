/*
 * query.c - the fleet store read as a profile set: events, images with their per-offset counts
 * (GROUP BY in ClickHouse, weighted by 1/duty), splits by command, symbols (query.h).
 */
#include "core/fleet/query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/fleet/agg.h"
#include "core/fleet/batch.h"
#include "core/fleet/schema.h"
#include "core/store/procprof.h"
#include "dcpi/errno.h"

typedef struct loadctx {
    dcpi_fleet_t *f;
    const dcpi_fleet_info_t *info;
    const dcpi_fleet_filter_t *flt;
    dcpi_fleet_agg_t agg; /* the aggregate's plan (agg.h) */
    size_t base;          /* load_procs: the first image of its query's list */
    int flags;            /* DCPI_PSET_LOAD_* */
    dcpi_profset_t *set;
    char *err;
} loadctx_t;

/* FROM the selected rows (raw or the aggregate and its corrections: agg.h) with their n, w. */
static void from(loadctx_t *c, int procs, const char *cols, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, " FROM ");
    dcpi_fleet_agg_from(c->f, c->info, &c->agg, c->flt, procs, cols, sql);
}

/* Run sql (built in b) and hand each TabSeparated row of n fields to fn. */
static int each_row(loadctx_t *c, dcpi_fbuf_t *b, int n, int (*fn)(loadctx_t *, char **), char *err)
{
    dcpi_fbuf_t out = {0};
    int rc = dcpi_fbuf_ok(b);
    if (rc == 0) /* with the aggregate's changes (agg.h) */
        rc = dcpi_fleet_agg_query(c->f, &c->agg, b->p, &out, err);
    char *cur = out.p, *fld[16];
    int got;
    while (rc == 0 && (got = dcpi_fleet_tsv_line(&cur, fld, 16)) != 0) {
        if (got != n) {
            rc = dcpi__errf(err, DCPI_EFORMAT, "%s: a result row of %d fields, not %d",
                            dcpi_fleet_url(c->f), got, n);
            break;
        }
        rc = fn(c, fld);
    }
    dcpi_fbuf_free(&out);
    return rc;
}

static int on_event(loadctx_t *c, char **fld)
{
    uint64_t period = 0, lost = 0;
    dcpi_fleet_u64(fld[1], &period);
    dcpi_fleet_u64(fld[2], &lost);
    return dcpi_profset_add_event(c->set, fld[0], period, lost) < 0 ? DCPI_ENOMEM : 0;
}

static int on_loss(loadctx_t *c, char **fld)
{
    int ev = dcpi_profset_event_index(c->set, fld[0]);
    uint64_t lost = 0;
    if (ev >= 0 && dcpi_fleet_u64(fld[1], &lost) == 0)
        c->set->events[ev].lost = lost;
    return 0;
}

/* The events with samples, then their losses (every selected host's, whatever the process). */
static int load_events(loadctx_t *c)
{
    const char *db = dcpi_fleet_dbname(c->f), *sx = c->info->suffix;
    dcpi_fbuf_t sql = {0};
    /* the periods of rows that count: a group's sum(n) is its counted raw rows, whatever the
     * aggregate's rows and corrections (agg.h) that make it; the raw rows all count */
    if (c->agg.use) {
        dcpi_fbuf_str(&sql, "SELECT event, min(period), 0 FROM (SELECT event, period");
        from(c, 0, "event, period", &sql);
        dcpi_fbuf_str(&sql, " GROUP BY event, period HAVING sum(n) > 0) GROUP BY event");
    } else {
        dcpi_fbuf_str(&sql, "SELECT event, min(period), 0");
        from(c, 0, "event, period", &sql);
        dcpi_fbuf_str(&sql, " GROUP BY event");
    }
    dcpi_fbuf_str(&sql, " ORDER BY event");
    int rc = each_row(c, &sql, 3, on_event, c->err);
    dcpi_fbuf_reset(&sql);
    dcpi_fbuf_printf(&sql, "SELECT event, sum(lost) FROM %s.loss%s", db, sx);
    dcpi_fleet_filter_t nf = *c->flt;
    nf.procsel = NULL;
    nf.build_id = NULL;
    dcpi_fleet_agg_where(c->f, &c->agg, &nf, 0, &sql); /* cheaper than the manifest's GROUP BY */
    dcpi_fbuf_str(&sql, " GROUP BY event");
    if (rc == 0)
        rc = each_row(c, &sql, 2, on_loss, c->err);
    dcpi_fbuf_free(&sql);
    return rc;
}

/* The image a row names (id, path, kind, tstart, tsize), added when new. */
static int image_of(loadctx_t *c, char **fld, int *idx)
{
    dcpi_profset_t *set = c->set;
    uint64_t kind = 0, tstart = 0, tsize = 0;
    dcpi_fleet_u64(fld[2], &kind);
    dcpi_fleet_u64(fld[3], &tstart);
    dcpi_fleet_u64(fld[4], &tsize);
    /* one image per build-id (the queries group by it); sample rows come ordered by it, so the
     * last image matches but for the first row of the next */
    for (size_t i = set->nimages; i-- > 0;)
        if (!strcmp(set->images[i].id, fld[0])) {
            *idx = (int)i;
            return 0;
        }
    dcpi_profset_image_t d = {.id = fld[0],
                              .kind = (int)kind,
                              .path = fld[1],
                              .name = fld[1],
                              .dir = "",
                              .platform = "fleet",
                              .tstart = tstart,
                              .tsize = tsize};
    int rc = dcpi_profset_add_image(set, &d);
    if (rc < 0)
        return rc;
    *idx = rc;
    return 0;
}

static int on_sample(loadctx_t *c, char **fld)
{
    int img;
    int rc = image_of(c, fld, &img);
    int ev = dcpi_profset_event_index(c->set, fld[5]);
    uint64_t off = 0, cnt = 0;
    if (rc < 0 || ev < 0 || dcpi_fleet_u64(fld[6], &off) < 0 || dcpi_fleet_u64(fld[7], &cnt) < 0)
        return rc < 0 ? rc : DCPI_EFORMAT;
    dcpi_profile_t **p = &c->set->images[img].prof[ev];
    if (!*p && (rc = dcpi_profile_new(p)) < 0)
        return rc;
    while (cnt > 0) { /* a fleet's count may pass a profile's 32 bits: saturate, counted */
        uint32_t part = cnt > UINT32_MAX ? UINT32_MAX : (uint32_t)cnt;
        if (dcpi_profile_add(*p, (uint32_t)off, part) == DCPI_ERANGE) {
            c->set->events[ev].saturated++;
            break;
        }
        cnt -= part;
    }
    return 0;
}

static int load_samples(loadctx_t *c)
{
    dcpi_fbuf_t sql = {0};
    /* grouped by build-id alone: one build-id is one code, wherever it was mapped from (its
     * path and text the least of those of rows that count: through the aggregate, of the groups
     * with counted raw rows; the raw rows all count) */
    const char *cols = "build_id, path, kind, tstart, tsize, event, off";
    dcpi_fbuf_str(&sql, "SELECT build_id, min(path), min(kind), min(tstart), min(tsize), event, "
                        "off, toUInt64(round(sum(sw)))");
    if (c->agg.use) {
        dcpi_fbuf_printf(&sql, " FROM (SELECT %s, sum(w) AS sw", cols);
        from(c, 0, cols, &sql);
        dcpi_fbuf_printf(&sql, " GROUP BY %s HAVING sum(n) > 0)", cols);
    } else {
        dcpi_fbuf_str(&sql,
                      " FROM (SELECT build_id, path, kind, tstart, tsize, event, off, w AS sw");
        from(c, 0, cols, &sql);
        dcpi_fbuf_str(&sql, ")");
    }
    dcpi_fbuf_str(&sql, " GROUP BY build_id, event, off ORDER BY build_id, event, off");
    int rc = each_row(c, &sql, 8, on_sample, c->err);
    dcpi_fbuf_free(&sql);
    return rc;
}

/* A row "I EVENT PID COMM COUNT OFF" of the images from c->base on (I counts from 1). */
static int on_procs(loadctx_t *c, char **fld)
{
    uint64_t i = 0, pid = 0, cnt = 0, off = 0;
    int ev = dcpi_profset_event_index(c->set, fld[1]);
    if (dcpi_fleet_u64(fld[0], &i) < 0 || i == 0 || c->base + i > c->set->nimages || ev < 0 ||
        dcpi_fleet_u64(fld[2], &pid) < 0 || dcpi_fleet_u64(fld[4], &cnt) < 0 ||
        dcpi_fleet_u64(fld[5], &off) < 0 || off > UINT32_MAX)
        return DCPI_EFORMAT;
    dcpi_procprof_t **pp = &c->set->images[c->base + i - 1].procs[ev];
    if (!*pp && !(*pp = calloc(1, sizeof **pp)))
        return DCPI_ENOMEM;
    return dcpi_procprof_add(*pp, (uint32_t)pid, fld[3], (uint32_t)off, cnt);
}

/* The split by process of images [c->base, c->base + n): each row names its image by its index
 * in the query's list (40 bytes of build-id less a row, 291,086 rows at 1000 hosts). */
static int load_procs_of(loadctx_t *c, size_t n)
{
    dcpi_fbuf_t sql = {0}, ids = {0};
    for (size_t i = 0; i < n; i++) {
        dcpi_fbuf_str(&ids, i ? ", " : "[");
        dcpi_fbuf_sqlstr(&ids, c->set->images[c->base + i].id);
    }
    dcpi_fbuf_str(&ids, "]");
    int rc = dcpi_fbuf_ok(&ids);
    int totals = c->flags & DCPI_PSET_LOAD_PROCS_TOTALS; /* each offset's count, summed here */
    if (totals)
        dcpi_fbuf_str(&sql, "SELECT i, event, pid, comm, sum(c), 0 FROM (");
    dcpi_fbuf_printf(&sql,
                     "SELECT indexOf(%s, build_id) AS i, event, pid, comm, "
                     "toUInt64(round(sum(w))) AS c, off",
                     rc == 0 ? ids.p : "[]");
    from(c, 1, "build_id, event, pid, comm, off", &sql);
    /* ordered as a .procs file holds them (by (pid, name), then offset) here: cheaper than
     * ORDER BY in the store (measured: 0.5 s of its 1.1 s at 1000 hosts) */
    dcpi_fbuf_str(&sql, " WHERE i > 0 GROUP BY i, event, pid, comm, off HAVING sum(n) > 0");
    if (totals)
        dcpi_fbuf_str(&sql, ") GROUP BY i, event, pid, comm");
    if (rc == 0)
        rc = each_row(c, &sql, 6, on_procs, c->err);
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&ids);
    return rc;
}

/* The split by process of the images the samples named (a push between the two queries adds
 * none), 1000 images a query (the text stays under ClickHouse's max_query_size). */
static int load_procs(loadctx_t *c)
{
    int rc = 0;
    for (c->base = 0; rc == 0 && c->base < c->set->nimages; c->base += 1000) {
        size_t n = c->set->nimages - c->base;
        rc = load_procs_of(c, n > 1000 ? 1000 : n);
    }
    for (size_t i = 0; rc == 0 && i < c->set->nimages; i++)
        for (size_t e = 0; e < c->set->nevents; e++)
            if (c->set->images[i].procs && c->set->images[i].procs[e])
                dcpi_procprof_normalize(c->set->images[i].procs[e]);
    return rc;
}

/* ---- symbols: one query for every image of the set -------------------------------------- */

typedef struct symacc {
    dcpi_symbol_t *v;
    size_t n, cap;
    dcpi_fbuf_t pool; /* names, NUL-separated; v[i].name holds an offset until done */
    char id[128];
} symacc_t;

static int attach(dcpi_profset_t *set, symacc_t *a)
{
    for (size_t i = 0; i < set->nimages; i++) {
        dcpi_profset_image_t *im = &set->images[i];
        if (strcmp(im->id, a->id) != 0 || im->nsyms || !a->n)
            continue;
        im->syms = malloc(a->n * sizeof *im->syms);
        im->sympool = malloc(a->pool.n ? a->pool.n : 1);
        if (!im->syms || !im->sympool)
            return DCPI_ENOMEM;
        memcpy(im->sympool, a->pool.p, a->pool.n);
        for (size_t k = 0; k < a->n; k++)
            im->syms[k] =
                (dcpi_symbol_t){a->v[k].addr, a->v[k].size, im->sympool + (uintptr_t)a->v[k].name};
        im->nsyms = a->n;
    }
    a->n = 0;
    dcpi_fbuf_reset(&a->pool);
    return 0;
}

static int on_symbol(loadctx_t *c, char **fld, symacc_t *a)
{
    if (strcmp(a->id, fld[0]) != 0) {
        int rc = attach(c->set, a);
        if (rc < 0)
            return rc;
        snprintf(a->id, sizeof a->id, "%s", fld[0]);
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        dcpi_symbol_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return DCPI_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    uint64_t addr = 0, size = 0;
    dcpi_fleet_u64(fld[1], &addr);
    dcpi_fleet_u64(fld[2], &size);
    a->v[a->n++] = (dcpi_symbol_t){addr, size, (const char *)(uintptr_t)a->pool.n};
    dcpi_fbuf_add(&a->pool, fld[3], strlen(fld[3]) + 1);
    return dcpi_fbuf_ok(&a->pool);
}

static int load_symbols(loadctx_t *c)
{
    dcpi_fbuf_t sql = {0}, out = {0};
    /* one commit per build-id counts (the manifest filter): no duplicates to group away; the
     * symbols' slots hold symbols' commits only, so their newest commits are those of the
     * manifest's symbols rows (not every slot's GROUP BY) */
    const char *db = dcpi_fleet_dbname(c->f);
    dcpi_fbuf_printf(&sql,
                     "SELECT build_id, addr, size, name FROM %s.symbols%s WHERE cid IN (SELECT "
                     "argMax(cid, pushed) FROM %s.manifest WHERE kind = 'symbols' GROUP BY slot)",
                     db, c->info->suffix, db);
    dcpi_fbuf_str(&sql, " AND build_id IN (");
    size_t n = 0;
    for (size_t i = 0; i < c->set->nimages; i++)
        if (c->set->images[i].kind != DCPI_PSET_UNKNOWN && c->set->images[i].id[0]) {
            dcpi_fbuf_str(&sql, n++ ? ", " : "");
            dcpi_fbuf_sqlstr(&sql, c->set->images[i].id);
        }
    dcpi_fbuf_str(&sql, ") ORDER BY build_id, addr");
    int rc = n ? dcpi_fbuf_ok(&sql) : 0;
    if (n && rc == 0)
        rc = dcpi_fleet_query(c->f, sql.p, &out, c->err);
    symacc_t a = {0};
    char *cur = out.p, *fld[4];
    while (n && rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 4) == 4)
        rc = on_symbol(c, fld, &a);
    if (rc == 0)
        rc = attach(c->set, &a);
    free(a.v);
    dcpi_fbuf_free(&a.pool);
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

int dcpi_fleet_load(const char *url, const dcpi_fleet_filter_t *flt, int flags,
                    dcpi_profset_t **out, char *err)
{
    *out = NULL;
    dcpi_fleet_t *f = NULL;
    dcpi_fleet_info_t info;
    loadctx_t c = {.flt = flt, .info = &info, .err = err, .flags = flags};
    int rc = dcpi_fleet_open(url, &f, err);
    c.f = f;
    if (rc == 0)
        rc = dcpi_fleet_check(f, &info, err);
    if (rc == 0)
        rc = dcpi_fleet_agg_plan(f, &info, flt, &c.agg, err);
    if (rc == 0)
        rc = dcpi_profset_new(&c.set);
    if (rc == 0)
        rc = load_events(&c);
    if (rc == 0)
        rc = load_samples(&c);
    if (rc == 0 && (flags & DCPI_PSET_LOAD_PROCS))
        rc = load_procs(&c);
    if (rc == 0)
        rc = load_symbols(&c);
    if (rc == 0)
        rc = dcpi_profset_finish(c.set);
    if (rc < 0 && err && !*err)
        dcpi__errf(err, rc, "%s: %s", url, dcpi_strerror(rc));
    dcpi_fleet_agg_free(&c.agg);
    dcpi_fleet_close(f);
    if (rc < 0) {
        dcpi_profset_free(c.set);
        return rc;
    }
    *out = c.set;
    return 0;
}
