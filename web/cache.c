/*
 * cache.c - dcpiweb's replies of the fleet's views kept while the store is unchanged (parts.h):
 * a fleet view is a GROUP BY over millions of rows (seconds at 1000 hosts x 24 h) whose result
 * changes only when a push commits, so each reply is kept with the store's stamp (the count, the
 * newest push and the rows of its manifest: every commit, and every expiry, changes it) and
 * given again only while a one-row query of the manifest answers the same stamp: never stale.
 * Selections relative to now (since, until) are not kept. At most CACHE_N replies of at most
 * CACHE_BYTES each, the least recently used replaced. Called under the views' lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fleet/conn.h"
#include "core/fleet/schema.h"
#include "web/parts.h"

#define CACHE_N     16
#define CACHE_BYTES (16u << 20)

typedef struct entry {
    char *key, *stamp, *body;
    size_t len;
    const char *type;
    unsigned long used;
} entry_t;

static entry_t cache[CACHE_N];
static unsigned long clock_now;

/* The request as a key: its path and every field of its selection. NULL when not kept. */
static char *key_of(const dcpi_web_opts_t *o, const char *url, const dcpi__web_sel_t *s)
{
    char *k = NULL;
    if (s->since || s->until || o->since || o->until || strcmp(url, "/api/top.json") == 0 ||
        strcmp(url, "/api/info.json") == 0)
        return NULL;
#define F(x) ((x) ? (x) : "")
    if (asprintf(&k, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%ld\n%s\n%s\n%s\n%d %d %u", url, F(s->view),
                 F(s->epoch), F(s->diff), F(s->platform), F(s->event), F(s->hosts), F(s->comm),
                 s->pid, F(s->proc), F(s->image), F(s->vtrace), s->by_image, s->by_process,
                 s->rows) < 0)
        return NULL;
#undef F
    return k;
}

/* The store's stamp: "commits:newest push:rows" of its manifest. 0, or an error (no caching). */
static int stamp_of(const char *url, char *out, size_t len)
{
    char err[DCPI_ERRLEN], sql[512];
    dcpi_fleet_t *f = NULL;
    dcpi_fleet_info_t info;
    int rc = dcpi_fleet_open(url, &f, err);
    if (rc == 0)
        rc = dcpi_fleet_check(f, &info, err);
    if (rc == 0) {
        snprintf(sql, sizeof sql,
                 "SELECT concat(toString(count()), ':', toString(max(pushed)), ':', "
                 "toString(sum(rows))) FROM %s.manifest%s",
                 dcpi_fleet_dbname(f), info.suffix);
        rc = dcpi_fleet_scalar(f, sql, out, len, err);
    }
    dcpi_fleet_close(f);
    return rc;
}

int dcpi__web_cache_get(const dcpi_web_opts_t *o, const char *url, const dcpi__web_sel_t *s,
                        dcpi__web_reply_t *r, char **key, char *stamp, size_t len)
{
    *key = o->fleet_url ? key_of(o, url, s) : NULL;
    if (!*key || stamp_of(o->fleet_url, stamp, len) < 0) {
        free(*key);
        *key = NULL;
        return 0;
    }
    for (int i = 0; i < CACHE_N; i++) {
        entry_t *e = &cache[i];
        if (!e->key || strcmp(e->key, *key) != 0 || strcmp(e->stamp, stamp) != 0)
            continue;
        char *copy = malloc(e->len ? e->len : 1);
        if (!copy)
            return 0;
        memcpy(copy, e->body, e->len);
        *r = (dcpi__web_reply_t){.status = 200, .type = e->type, .body = copy, .len = e->len};
        e->used = ++clock_now;
        return 1;
    }
    return 0;
}

void dcpi__web_cache_put(char *key, const char *stamp, const dcpi__web_reply_t *r)
{
    entry_t *e = &cache[0];
    char *body = r->status == 200 && r->len <= CACHE_BYTES ? malloc(r->len ? r->len : 1) : NULL;
    char *st = body ? strdup(stamp) : NULL;
    if (!key || !body || !st) {
        free(key);
        free(body);
        free(st);
        return;
    }
    for (int i = 1; i < CACHE_N; i++)
        if (cache[i].used < e->used)
            e = &cache[i];
    free(e->key);
    free(e->stamp);
    free(e->body);
    memcpy(body, r->body, r->len);
    *e = (entry_t){
        .key = key, .stamp = st, .body = body, .len = r->len, .type = r->type, .used = ++clock_now};
}
