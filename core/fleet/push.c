/*
 * push.c - the commit protocol, symbols once per build-id, the on-disk spool and the background
 * sender with backoff (push.h).
 */
#include "core/fleet/push.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/model/profset.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"

static uint64_t new_cid(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = dcpi__fnv1a(DCPI_FNV64_OFFSET, &ts, sizeof ts) ^ (uint64_t)getpid();
    }
    return v ? v : 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* rows with "\tCID" at the end of every line. */
static int with_cid(const dcpi_fbuf_t *rows, uint64_t cid, dcpi_fbuf_t *out)
{
    char tail[32];
    int tl = snprintf(tail, sizeof tail, "\t%" PRIu64 "\n", cid);
    for (const char *p = rows->p, *end = rows->p + rows->n; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        dcpi_fbuf_add(out, p, (size_t)(nl - p));
        dcpi_fbuf_add(out, tail, (size_t)tl);
        p = nl + 1;
    }
    return dcpi_fbuf_ok(out);
}

/* One manifest row into m. */
static void manifest_row(dcpi_fbuf_t *m, const char *day, uint64_t skey, const char *host,
                         uint64_t slot, uint64_t batch, uint64_t cid, const char *kind, size_t rows,
                         const char *epoch)
{
    dcpi_fbuf_printf(m, "%s\t%" PRIu64 "\t", day, skey);
    dcpi_fbuf_tsv(m, host);
    dcpi_fbuf_printf(m, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%zu\t", slot,
                     batch, cid, now_ns(), kind, rows);
    dcpi_fbuf_tsv(m, epoch);
    dcpi_fbuf_str(m, "\n");
}

static int insert_manifest(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const dcpi_fbuf_t *m,
                           char *err)
{
    char name[64];
    snprintf(name, sizeof name, "manifest%s", info->suffix);
    int rc = dcpi_fbuf_ok(m);
    return rc < 0 ? rc : dcpi_fleet_insert(f, name, DCPI_FLEET_MANIFEST_COLS, m, err);
}

/* Symbols go in chunks: the symbols starting in one 64 KiB of addresses, each chunk its own
 * slot ("sym", id, chunk), pushed once by the first host that samples code in it. */
#define CHUNK_SHIFT 16

static uint64_t sym_slot(const char *id, uint64_t chunk)
{
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, "sym", 4);
    h = dcpi__fnv1a(h, id, strlen(id) + 1);
    return dcpi__fnv1a(h, &chunk, sizeof chunk);
}

/* The chunks holding the symbols that cover the sampled pages ("p,p,..." hex; "" : all). */
static int wanted_chunks(const dcpi_symtab_t *st, const char *pages, uint64_t **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    size_t ns = dcpi_symtab_count(st);
    for (size_t i = 0; i < ns; i++) {
        const dcpi_symbol_t *s = dcpi_symtab_get(st, i);
        uint64_t end = s->size      ? s->addr + s->size
                       : i + 1 < ns ? dcpi_symtab_get(st, i + 1)->addr
                                    : s->addr + 1;
        int want = !*pages;
        for (const char *p = pages; *p && !want;) {
            char *e;
            uint64_t pg = strtoull(p, &e, 16);
            want = (pg << 12) < end && ((pg + 1) << 12) > s->addr;
            p = *e == ',' ? e + 1 : e + strlen(e);
        }
        uint64_t c = s->addr >> CHUNK_SHIFT;
        if (!want || (*n && (*out)[*n - 1] == c))
            continue;
        if (dcpi__grow((void **)out, &cap, *n + 1, sizeof **out) < 0)
            return DCPI_ENOMEM;
        (*out)[(*n)++] = c;
    }
    return 0;
}

/* Mark in have[] the chunks whose slot the manifest holds. */
static int chunks_committed(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const char *id,
                            const uint64_t *chunk, size_t n, int *have, char *err)
{
    dcpi_fbuf_t sql = {0}, out = {0};
    dcpi_fbuf_printf(&sql, "SELECT DISTINCT slot FROM %s.manifest%s WHERE slot IN (",
                     dcpi_fleet_dbname(f), info->suffix);
    for (size_t i = 0; i < n; i++)
        dcpi_fbuf_printf(&sql, "%s%" PRIu64, i ? ", " : "", sym_slot(id, chunk[i]));
    dcpi_fbuf_str(&sql, ")");
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    char *cur = out.p, *fld[1];
    uint64_t slot;
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 1) == 1)
        if (dcpi_fleet_u64(fld[0], &slot) == 0)
            for (size_t i = 0; i < n; i++)
                have[i] |= sym_slot(id, chunk[i]) == slot;
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

/* The rows of the missing chunks, each with its own cid, and their manifest rows. */
static void chunk_rows(const dcpi_symtab_t *st, const char *id, const char *host,
                       const uint64_t *chunk, size_t n, const int *have, dcpi_fbuf_t *rows,
                       dcpi_fbuf_t *man)
{
    uint64_t skey = dcpi__fnv1a(DCPI_FNV64_OFFSET, id, strlen(id));
    size_t k = 0, ns = dcpi_symtab_count(st);
    for (size_t i = 0; i < n; i++) {
        uint64_t cid = new_cid(), c = chunk[i];
        size_t count = 0;
        while (k < ns && (dcpi_symtab_get(st, k)->addr >> CHUNK_SHIFT) < c)
            k++;
        for (; k < ns && (dcpi_symtab_get(st, k)->addr >> CHUNK_SHIFT) == c; k++) {
            const dcpi_symbol_t *s = dcpi_symtab_get(st, k);
            if (have[i])
                continue;
            dcpi_fbuf_printf(rows, "%" PRIu64 "\t", skey);
            dcpi_fbuf_tsv(rows, id);
            dcpi_fbuf_printf(rows, "\t%" PRIu64 "\t%" PRIu64 "\t", s->addr, s->size);
            dcpi_fbuf_tsv(rows, s->name);
            dcpi_fbuf_printf(rows, "\t%" PRIu64 "\n", cid);
            count++;
        }
        if (!have[i])
            manifest_row(man, "1970-01-02", skey, host, sym_slot(id, c), sym_slot(id, c), cid,
                         "symbols", count, "");
    }
}

/* ---- the pages whose symbols this process already saw committed (a set of hashes of id and
 * page): a host pushing epoch after epoch opens an image's symbols only for new code. ---- */

static struct {
    pthread_mutex_t mu;
    uint64_t *v; /* 0: empty */
    size_t cap, n;
} seen = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t page_key(const char *id, uint64_t page)
{
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, id, strlen(id) + 1);
    h = dcpi__fnv1a(h, &page, sizeof page);
    return h ? h : 1;
}

static int seen_has(uint64_t k)
{
    for (size_t i = seen.cap ? k % seen.cap : 0; seen.cap; i = (i + 1) % seen.cap) {
        if (seen.v[i] == k)
            return 1;
        if (!seen.v[i])
            return 0;
    }
    return 0;
}

static void seen_put(uint64_t k)
{
    if ((seen.n + 1) * 2 > seen.cap) {
        size_t cap = seen.cap ? seen.cap * 2 : 4096;
        uint64_t *v = calloc(cap, sizeof *v), *old = seen.v;
        if (!v || cap > (1u << 24))
            return free(v); /* a full cache only costs lookups */
        size_t oldcap = seen.cap;
        seen.v = v;
        seen.cap = cap;
        seen.n = 0;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i])
                seen_put(old[i]);
        free(old);
    }
    if (seen_has(k))
        return;
    size_t i = k % seen.cap;
    while (seen.v[i])
        i = (i + 1) % seen.cap;
    seen.v[i] = k;
    seen.n++;
}

/* 1 when every page of the list ("p,p,..." hex) of image id is known committed. */
static int pages_seen(const char *id, const char *pages, int mark)
{
    int all = *pages != 0;
    pthread_mutex_lock(&seen.mu);
    for (const char *p = pages; *p;) {
        char *e;
        uint64_t k = page_key(id, strtoull(p, &e, 16));
        if (mark)
            seen_put(k);
        else if (!seen_has(k)) {
            all = 0;
            break;
        }
        p = *e == ',' ? e + 1 : e + strlen(e);
    }
    pthread_mutex_unlock(&seen.mu);
    return all;
}

/* One image's symbols near its sampled pages, the chunks not committed yet; nothing when its
 * file cannot be read here (the fleet shows unknown_rou until a host that has it pushes). */
static int push_symbols(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const char *host,
                        char **fld, char *err)
{
    dcpi_profset_image_t img = {.id = fld[0], .kind = atoi(fld[1]), .path = fld[2], .dir = fld[3]};
    img.name = img.path;
    img.tstart = strtoull(fld[4], NULL, 10);
    img.tsize = strtoull(fld[5], NULL, 10);
    if (pages_seen(fld[0], fld[6], 0))
        return 0;
    dcpi_symtab_t *st = NULL;
    char why[DCPI_ERRLEN];
    if (dcpi_profset_open_symbols(&img, &st, why, NULL) < 0 || !st)
        return 0;
    uint64_t *chunk = NULL;
    size_t n = 0;
    int *have = NULL, rc = wanted_chunks(st, fld[6], &chunk, &n);
    if (rc == 0 && n && !(have = calloc(n, sizeof *have)))
        rc = DCPI_ENOMEM;
    if (rc == 0 && n)
        rc = chunks_committed(f, info, fld[0], chunk, n, have, err);
    dcpi_fbuf_t rows = {0}, man = {0};
    if (rc == 0 && n)
        chunk_rows(st, fld[0], host, chunk, n, have, &rows, &man);
    char name[64];
    snprintf(name, sizeof name, "symbols%s", info->suffix);
    if (rc == 0 && man.n && (rc = dcpi_fbuf_ok(&rows)) == 0 &&
        (rc = dcpi_fleet_insert(f, name, DCPI_FLEET_SYMBOLS_COLS ", cid", &rows, err)) == 0)
        rc = insert_manifest(f, info, &man, err);
    if (rc == 0)
        pages_seen(fld[0], fld[6], 1);
    dcpi_fbuf_free(&rows);
    dcpi_fbuf_free(&man);
    free(have);
    free(chunk);
    dcpi_symtab_free(st);
    return rc;
}

static int push_all_symbols(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                            const dcpi_fleet_batch_t *b, char *err)
{
    if (!b->symreq.n)
        return 0;
    char *copy = strndup(b->symreq.p, b->symreq.n), *cur = copy, *fld[7];
    if (!copy)
        return DCPI_ENOMEM;
    int n, rc = 0;
    while (rc == 0 && (n = dcpi_fleet_tsv_line(&cur, fld, 7)) != 0)
        if (n == 7)
            rc = push_symbols(f, info, b->host, fld, err);
    free(copy);
    return rc;
}

/* Which of the batches the manifest already holds (have[i] = 1). */
static int manifest_has(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                        const dcpi_fleet_batch_t *const *b, size_t n, int *have, char *err)
{
    dcpi_fbuf_t sql = {0}, out = {0};
    dcpi_fbuf_printf(&sql,
                     "SELECT DISTINCT slot, batch FROM %s.manifest%s WHERE (slot, batch) IN (",
                     dcpi_fleet_dbname(f), info->suffix);
    for (size_t i = 0; i < n; i++)
        dcpi_fbuf_printf(&sql, "%s(%" PRIu64 ", %" PRIu64 ")", i ? ", " : "", b[i]->slot,
                         b[i]->batch);
    dcpi_fbuf_str(&sql, ")");
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_query(f, sql.p, &out, err);
    char *cur = out.p, *fld[2];
    uint64_t slot, batch;
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 2) == 2)
        if (dcpi_fleet_u64(fld[0], &slot) == 0 && dcpi_fleet_u64(fld[1], &batch) == 0)
            for (size_t i = 0; i < n; i++)
                have[i] |= b[i]->slot == slot && b[i]->batch == batch;
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&out);
    return rc;
}

/* Insert the new batches' rows, one insert per table, then their manifest rows in one insert:
 * each batch commits with that last insert, or none does. */
static int push_new(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                    const dcpi_fleet_batch_t *const *b, size_t n, const int *have, char *err)
{
    uint64_t *cid = calloc(n ? n : 1, sizeof *cid);
    if (!cid)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < n; i++)
        cid[i] = new_cid();
    int rc = 0;
    for (int t = 0; rc == 0 && t < DCPI_FLEET_NT; t++) {
        dcpi_fbuf_t rows = {0};
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (!have[i])
                rc = with_cid(&b[i]->t[t], cid[i], &rows);
        char name[64];
        snprintf(name, sizeof name, "%s%s", dcpi_fleet_table(t), info->suffix);
        char allcols[512];
        snprintf(allcols, sizeof allcols, "%s, cid", dcpi_fleet_table_cols(t));
        if (rc == 0)
            rc = dcpi_fleet_insert(f, name, allcols, &rows, err);
        dcpi_fbuf_free(&rows);
    }
    dcpi_fbuf_t m = {0};
    for (size_t i = 0; i < n; i++)
        if (!have[i])
            manifest_row(&m, b[i]->day, b[i]->skey, b[i]->host, b[i]->slot, b[i]->batch, cid[i],
                         b[i]->kind, b[i]->rows, b[i]->epoch);
    if (rc == 0)
        rc = insert_manifest(f, info, &m, err);
    dcpi_fbuf_free(&m);
    free(cid);
    return rc;
}

int dcpi_fleet_push_many(dcpi_fleet_t *f, const dcpi_fleet_info_t *info,
                         const dcpi_fleet_batch_t *const *b, size_t n, int *sent, char *err)
{
    int *have = calloc(n ? n : 1, sizeof *have);
    if (!have)
        return DCPI_ENOMEM;
    int rc = n ? manifest_has(f, info, b, n, have, err) : 0;
    size_t fresh = 0;
    for (size_t i = 0; i < n; i++)
        fresh += !have[i];
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!have[i])
            rc = push_all_symbols(f, info, b[i], err);
    if (rc == 0 && fresh)
        rc = push_new(f, info, b, n, have, err);
    for (size_t i = 0; i < n; i++)
        sent[i] = rc == 0 && !have[i];
    free(have);
    return rc;
}

int dcpi_fleet_push(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const dcpi_fleet_batch_t *b,
                    int *sent, char *err)
{
    return dcpi_fleet_push_many(f, info, &b, 1, sent, err);
}

/* ---- spool ------------------------------------------------------------------------------ */

#define SPOOL_DEFAULT_MAX (64ULL << 20)

static int is_batch_name(const char *n)
{
    size_t len = strlen(n);
    return len > 6 && strcmp(n + len - 6, ".batch") == 0 && n[0] != '.';
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The batch file names of dir, sorted (oldest first: names start with the time). */
static int list_spool(const char *dir, char ***names, size_t *n, uint64_t *bytes)
{
    *names = NULL;
    *n = 0;
    if (bytes)
        *bytes = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : dcpi__errno_code(errno);
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (!is_batch_name(de->d_name))
            continue;
        if ((rc = dcpi__grow((void **)names, &cap, *n + 1, sizeof **names)) < 0)
            break;
        if (!((*names)[*n] = strdup(de->d_name))) {
            rc = DCPI_ENOMEM;
            break;
        }
        (*n)++;
        struct stat st;
        char path[4400];
        if (bytes && dcpi__pathf(path, sizeof path, "%s/%s", dir, de->d_name) == 0 &&
            stat(path, &st) == 0)
            *bytes += (uint64_t)st.st_size;
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, *n, sizeof **names, cmp_names);
    return rc;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void dcpi_spool_count(const char *dir, dcpi_spool_stats_t *st)
{
    char **names;
    size_t n;
    uint64_t bytes = 0;
    if (list_spool(dir, &names, &n, &bytes) == 0) {
        st->queued = n;
        st->queued_bytes = bytes;
    }
    free_names(names, n);
}

/* b encoded into DIR/<time>-<batch><suffix> (atomic), unless the spool is full; its path in
 * path. */
static int spool_write(const char *dir, uint64_t max_bytes, const dcpi_fleet_batch_t *b,
                       const char *suffix, char *path, size_t plen, dcpi_spool_stats_t *st,
                       char *err)
{
    dcpi_spool_stats_t now = {0};
    dcpi_spool_count(dir, &now);
    dcpi_fbuf_t buf = {0};
    int rc = dcpi_fleet_batch_encode(b, &buf);
    if (rc == 0 && now.queued_bytes + buf.n > (max_bytes ? max_bytes : SPOOL_DEFAULT_MAX)) {
        st->dropped++;
        st->dropped_rows += b->rows;
        rc = dcpi__errf(err, DCPI_EFULL,
                        "%s: spool full (%" PRIu64 " bytes), batch of %zu rows "
                        "dropped",
                        dir, now.queued_bytes, b->rows);
    }
    if (rc == 0 && (rc = dcpi__mkdirs(dir, 0700)) < 0)
        dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    if (rc == 0 && (rc = dcpi__pathf(path, plen, "%s/%020" PRIu64 "-%016" PRIx64 "%s", dir,
                                     now_ns(), b->batch, suffix)) == 0)
        rc = dcpi__write_atomic(path, buf.p, buf.n, err);
    dcpi_fbuf_free(&buf);
    return rc;
}

int dcpi_spool_put(const char *dir, uint64_t max_bytes, const dcpi_fleet_batch_t *b,
                   dcpi_spool_stats_t *st, char *err)
{
    char path[4400];
    return spool_write(dir, max_bytes, b, ".batch", path, sizeof path, st, err);
}

int dcpi_spool_prepare(const char *dir, uint64_t max_bytes, const dcpi_fleet_batch_t *b, char *path,
                       size_t len, dcpi_spool_stats_t *st, char *err)
{
    return spool_write(dir, max_bytes, b, ".prep", path, len, st, err);
}

int dcpi_spool_replace(const char *path, const dcpi_fleet_batch_t *b, char *err)
{
    dcpi_fbuf_t buf = {0};
    int rc = dcpi_fleet_batch_encode(b, &buf);
    if (rc == 0)
        rc = dcpi__write_atomic(path, buf.p, buf.n, err);
    dcpi_fbuf_free(&buf);
    return rc;
}

/* PATH.prep renamed PATH.batch. */
static int promote(const char *prep, char *err)
{
    char to[4400];
    size_t n = strlen(prep);
    if (n < 5 || n >= sizeof to || strcmp(prep + n - 5, ".prep") != 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: not a prepared batch", prep);
    memcpy(to, prep, n - 5);
    memcpy(to + n - 5, ".batch", 7);
    if (rename(prep, to) < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", prep, strerror(errno));
    return 0;
}

int dcpi_spool_commit(const char *path, char *err)
{
    return promote(path, err);
}

void dcpi_spool_recover(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        char path[4400], err[DCPI_ERRLEN];
        if (n > 5 && de->d_name[0] != '.' && !strcmp(de->d_name + n - 5, ".prep") &&
            dcpi__pathf(path, sizeof path, "%s/%s", dir, de->d_name) == 0)
            (void)promote(path, err);
    }
    if (d)
        closedir(d);
}

static int send_file(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, const char *path,
                     dcpi_spool_stats_t *st, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc == DCPI_ENOENT)
        return 0; /* sent by another sender meanwhile */
    dcpi_fleet_batch_t b;
    if (rc == 0 && (rc = dcpi_fleet_batch_decode(buf, len, path, &b, err)) == 0) {
        int sent = 0;
        rc = dcpi_fleet_push(f, info, &b, &sent, err);
        if (rc == 0)
            sent ? st->sent++ : st->repeats++;
        dcpi_fleet_batch_free(&b);
    }
    free(buf);
    if (rc == 0)
        (void)unlink(path);
    return rc;
}

/* dcpi_spool_flush with each request given at most seconds (the pusher's last attempt at a stop
 * gets what is left of its deadline, so a store that hangs cannot hold up dcpid's exit). */
static int spool_flush_within(const char *dir, const char *url, long seconds,
                              dcpi_spool_stats_t *st, char *err)
{
    char **names = NULL;
    size_t n = 0;
    int rc = list_spool(dir, &names, &n, NULL);
    if (rc < 0 || n == 0) {
        free_names(names, n);
        return rc;
    }
    dcpi_fleet_t *f = NULL;
    dcpi_fleet_info_t info;
    rc = dcpi_fleet_open(url, &f, err);
    if (rc == 0) {
        dcpi_fleet_timeout(f, seconds);
        rc = dcpi_fleet_check(f, &info, err);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[4400];
        (void)dcpi__pathf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = send_file(f, &info, path, st, err);
        if (rc == DCPI_EFORMAT) { /* a damaged file is set aside, not retried forever */
            char bad[4500];
            (void)dcpi__pathf(bad, sizeof bad, "%s.bad", path);
            (void)rename(path, bad);
        }
    }
    dcpi_fleet_close(f);
    free_names(names, n);
    return rc;
}

int dcpi_spool_flush(const char *dir, const char *url, dcpi_spool_stats_t *st, char *err)
{
    return spool_flush_within(dir, url, 30, st, err);
}

/* ---- the background sender -------------------------------------------------------------- */

struct dcpi_pusher {
    char *url, *dir;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int kicked, stopping;
    double stop_deadline;
    dcpi_spool_stats_t st; /* under mu */
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1, 2, 4 ... 60 s after consecutive failures, +-25% so a fleet does not retry in step. */
static double backoff(unsigned fails)
{
    double d = 1.0;
    for (unsigned i = 1; i < fails && d < 60.0; i++)
        d *= 2.0;
    if (d > 60.0)
        d = 60.0;
    uint32_t r = (uint32_t)new_cid();
    return d * (0.75 + 0.5 * (double)(r % 1000) / 1000.0);
}

static void wait_until(dcpi_pusher_t *p, double t)
{
    while (!p->kicked && !p->stopping && mono() < t) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double left = t - mono();
        if (left > 1.0)
            left = 1.0;
        ts.tv_sec += (time_t)left;
        ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
}

static void *pusher_main(void *arg)
{
    dcpi_pusher_t *p = arg;
    unsigned fails = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        p->kicked = 0;
        int stopping = p->stopping;
        double left = p->stop_deadline - mono();
        long secs = !stopping ? 30 : left < 1.0 ? 1 : left > 30.0 ? 30 : (long)left;
        dcpi_spool_stats_t local = {0};
        char err[DCPI_ERRLEN] = "";
        pthread_mutex_unlock(&p->mu);
        int rc = spool_flush_within(p->dir, p->url, secs, &local, err);
        pthread_mutex_lock(&p->mu);
        p->st.sent += local.sent;
        p->st.repeats += local.repeats;
        dcpi_spool_count(p->dir, &p->st);
        double next = mono() + 1.0;
        if (rc < 0) {
            p->st.failures++;
            snprintf(p->st.last_error, sizeof p->st.last_error, "%s", err);
            next = mono() + backoff(++fails);
        } else
            fails = 0;
        p->st.next_try = next;
        if (stopping) /* one last attempt: a store that is down does not hold up an exit */
            break;
        wait_until(p, stopping ? (next < p->stop_deadline ? next : p->stop_deadline) : next);
        if (p->stopping && !stopping)
            p->kicked = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int dcpi_pusher_start(const char *url, const char *dir, dcpi_pusher_t **out, char *err)
{
    dcpi_fleet_t *f = NULL;
    int rc = dcpi_fleet_open(url, &f, err); /* the URL is checked before the thread starts */
    dcpi_fleet_close(f);
    if (rc < 0)
        return rc;
    dcpi_pusher_t *p = calloc(1, sizeof *p);
    if (!p || !(p->url = strdup(url)) || !(p->dir = strdup(dir))) {
        if (p) {
            free(p->url);
            free(p);
        }
        return DCPI_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    dcpi_spool_recover(dir); /* the flush a killed dcpid was writing */
    dcpi_spool_count(dir, &p->st);
    if (pthread_create(&p->thread, NULL, pusher_main, p) != 0) {
        free(p->url);
        free(p->dir);
        free(p);
        return dcpi__errf(err, DCPI_ENOMEM, "%s: cannot start the push thread", url);
    }
    *out = p;
    return 0;
}

void dcpi_pusher_kick(dcpi_pusher_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->kicked = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void dcpi_pusher_stats(dcpi_pusher_t *p, dcpi_spool_stats_t *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    pthread_mutex_unlock(&p->mu);
}

void dcpi_pusher_dropped(dcpi_pusher_t *p, uint64_t rows)
{
    pthread_mutex_lock(&p->mu);
    p->st.dropped++;
    p->st.dropped_rows += rows;
    pthread_mutex_unlock(&p->mu);
}

void dcpi_pusher_stop(dcpi_pusher_t *p, double timeout_s)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    p->kicked = 1;
    p->stop_deadline = mono() + timeout_s;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->url);
    free(p->dir);
    free(p);
}
