/*
 * batch.c - a push's rows in memory and in a spool file: keys, symbol requests, the
 * deterministic slot and batch ids (batch.h).
 */
#include "core/fleet/batch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/fleet/schema.h"
#include "dcpi/errno.h"

struct dcpi_fleet_img {
    char *line; /* "id\tkind\tpath\tdir\ttstart\ttsize" */
    uint64_t *pages;
    size_t npages, cap;
};

/* The sections of a batch (its spool file's "table NAME" and its id's hash) and the tables
 * they are inserted into. */
static const char *const names[DCPI_FLEET_NT] = {"samples", "hotlists", "chains",
                                                 "loss",    "vmiss",    "hotclust"};
static const char *const tables[DCPI_FLEET_NT] = {"samples", "hotlists", "chains",
                                                  "loss",    "vmiss",    "hotlists"};
static const char *const cols[DCPI_FLEET_NT] = {DCPI_FLEET_SAMPLES_COLS, DCPI_FLEET_HOTLISTS_COLS,
                                                DCPI_FLEET_CHAINS_COLS,  DCPI_FLEET_LOSS_COLS,
                                                DCPI_FLEET_VMISS_COLS,   DCPI_FLEET_HOTCLUST_COLS};

/* Sections an older dcpi's batches lack: hashed and spooled only when they have rows, so a batch
 * without them keeps the id and file an older dcpi gave it (a re-push after an upgrade is still
 * a no-op; an older spool file still reads). */
static int optional(int t)
{
    return t == DCPI_FLEET_T_VMISS || t == DCPI_FLEET_T_HOTCLUST;
}

const char *dcpi_fleet_table(int t)
{
    return tables[t];
}

const char *dcpi_fleet_table_cols(int t)
{
    return cols[t];
}

int dcpi_fleet_batch_init(dcpi_fleet_batch_t *b, const char *host, const char *kind)
{
    *b = (dcpi_fleet_batch_t){0};
    if (host && *host)
        snprintf(b->host, sizeof b->host, "%s", host);
    else if (gethostname(b->host, sizeof b->host - 1) < 0)
        snprintf(b->host, sizeof b->host, "localhost");
    snprintf(b->kind, sizeof b->kind, "%s", kind);
    b->skey = dcpi__fnv1a(DCPI_FNV64_OFFSET, b->host, strlen(b->host));
    return 0;
}

void dcpi_fleet_batch_free(dcpi_fleet_batch_t *b)
{
    for (int t = 0; t < DCPI_FLEET_NT; t++)
        dcpi_fbuf_free(&b->t[t]);
    dcpi_fbuf_free(&b->symreq);
    for (size_t i = 0; i < b->nimgs; i++) {
        free(b->imgs[i].line);
        free(b->imgs[i].pages);
    }
    free(b->imgs);
    b->imgs = NULL;
    b->nimgs = 0;
}

static void day_of(uint32_t t, char *out, size_t len)
{
    time_t tt = t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%d", &tm);
}

void dcpi_fleet_batch_key(dcpi_fleet_batch_t *b, int t, const dcpi_fleet_key_t *k)
{
    dcpi_fbuf_t *o = &b->t[t];
    char day[16];
    day_of(k->estart, day, sizeof day);
    dcpi_fbuf_printf(o, "%s\t%" PRIu64 "\t", day, b->skey);
    dcpi_fbuf_tsv(o, b->host);
    dcpi_fbuf_str(o, "\t");
    dcpi_fbuf_tsv(o, k->epoch);
    dcpi_fbuf_printf(o, "\t%u\t%u\t", k->estart, k->eend);
    dcpi_fbuf_tsv(o, k->platform);
    dcpi_fbuf_str(o, "\t");
    dcpi_fbuf_tsv(o, k->event ? k->event : "");
    dcpi_fbuf_printf(o, "\t%" PRIu64 "\t%.17g\t", k->period, k->duty > 0 ? k->duty : 1.0);
    b->rows++;
}

int dcpi_fleet_batch_symreq(dcpi_fleet_batch_t *b, const char *id, int kind, const char *path,
                            const char *dir, uint64_t tstart, uint64_t tsize)
{
    dcpi_fbuf_t line = {0};
    dcpi_fbuf_tsv(&line, id);
    dcpi_fbuf_printf(&line, "\t%d\t", kind);
    dcpi_fbuf_tsv(&line, path);
    dcpi_fbuf_str(&line, "\t");
    dcpi_fbuf_tsv(&line, dir);
    dcpi_fbuf_printf(&line, "\t%" PRIu64 "\t%" PRIu64, tstart, tsize);
    if (dcpi_fbuf_ok(&line) < 0)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < b->nimgs; i++)
        if (!strcmp(b->imgs[i].line, line.p)) {
            dcpi_fbuf_free(&line);
            return (int)i;
        }
    if (dcpi__grow((void **)&b->imgs, &b->capimgs, b->nimgs + 1, sizeof *b->imgs) < 0) {
        dcpi_fbuf_free(&line);
        return DCPI_ENOMEM;
    }
    b->imgs[b->nimgs] = (struct dcpi_fleet_img){.line = line.p};
    return (int)b->nimgs++;
}

void dcpi_fleet_batch_page(dcpi_fleet_batch_t *b, int img, uint64_t addr)
{
    if (img < 0 || (size_t)img >= b->nimgs)
        return;
    struct dcpi_fleet_img *im = &b->imgs[img];
    uint64_t page = addr >> 12;
    if (im->npages && im->pages[im->npages - 1] == page)
        return;
    if (dcpi__grow((void **)&im->pages, &im->cap, im->npages + 1, sizeof *im->pages) < 0) {
        b->symreq.oom = 1;
        return;
    }
    im->pages[im->npages++] = page;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The symbol requests' text, pages sorted and unique; the accumulator freed. */
static void images_text(dcpi_fleet_batch_t *b)
{
    for (size_t i = 0; i < b->nimgs; i++) {
        struct dcpi_fleet_img *im = &b->imgs[i];
        if (im->npages > 1)
            qsort(im->pages, im->npages, sizeof *im->pages, cmp_u64);
        dcpi_fbuf_str(&b->symreq, im->line);
        dcpi_fbuf_str(&b->symreq, "\t");
        for (size_t k = 0; k < im->npages; k++)
            if (k == 0 || im->pages[k] != im->pages[k - 1])
                dcpi_fbuf_printf(&b->symreq, "%s%" PRIx64, k ? "," : "", im->pages[k]);
        dcpi_fbuf_str(&b->symreq, "\n");
        free(im->line);
        free(im->pages);
    }
    free(b->imgs);
    b->imgs = NULL;
    b->nimgs = b->capimgs = 0;
}

int dcpi_fleet_batch_seal(dcpi_fleet_batch_t *b, uint32_t estart, const char *slot_text)
{
    images_text(b);
    day_of(estart, b->day, sizeof b->day);
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, b->kind, strlen(b->kind) + 1);
    h = dcpi__fnv1a(h, b->host, strlen(b->host) + 1);
    b->slot = dcpi__fnv1a(h, slot_text, strlen(slot_text));
    h = b->slot;
    for (int t = 0; t < DCPI_FLEET_NT; t++) {
        if (dcpi_fbuf_ok(&b->t[t]) < 0)
            return DCPI_ENOMEM;
        if (optional(t) && !b->t[t].n)
            continue;
        h = dcpi__fnv1a(h, names[t], strlen(names[t]) + 1);
        if (b->t[t].n)
            h = dcpi__fnv1a(h, b->t[t].p, b->t[t].n);
    }
    b->batch = h;
    return dcpi_fbuf_ok(&b->symreq);
}

int dcpi_fleet_epoch_time(const char *epoch, uint32_t *out)
{
    size_t n = strlen(epoch);
    if ((n != 12 && n != 14) || strspn(epoch, "0123456789") != n)
        return DCPI_EINVAL;
    struct tm tm = {0};
    char s[15] = "00000000000000";
    memcpy(s, epoch, n);
    if (sscanf(s, "%4d%2d%2d%2d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return DCPI_EINVAL;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0 || (uint64_t)t > UINT32_MAX)
        return DCPI_EINVAL;
    *out = (uint32_t)t;
    return 0;
}

double dcpi_fleet_epoch_duty(const char *db, const char *epoch, const char *platform)
{
    char path[4096];
    if (dcpi__pathf(path, sizeof path, "%s/%s/%s/duty", db, epoch, platform) < 0)
        return 1.0;
    FILE *f = fopen(path, "re");
    double d = 1.0;
    if (f) {
        if (fscanf(f, "%lf", &d) != 1 || !(d > 0 && d <= 1))
            d = 1.0;
        fclose(f);
    }
    return d;
}

/* ---- spool files: "dcpibatch 1\n" then key lines, then "table NAME LEN\n" + LEN bytes (an
 * optional table only when it has rows) ---- */

int dcpi_fleet_batch_encode(const dcpi_fleet_batch_t *b, dcpi_fbuf_t *out)
{
    dcpi_fbuf_str(out, "dcpibatch 2\nhost ");
    dcpi_fbuf_tsv(out, b->host);
    dcpi_fbuf_str(out, "\nepoch ");
    dcpi_fbuf_tsv(out, b->epoch);
    dcpi_fbuf_printf(
        out, "\nkind %s\nday %s\nskey %" PRIu64 "\nslot %" PRIu64 "\nbatch %" PRIu64 "\nrows %zu\n",
        b->kind, b->day, b->skey, b->slot, b->batch, b->rows);
    for (int t = 0; t < DCPI_FLEET_NT; t++) {
        if (optional(t) && !b->t[t].n)
            continue;
        dcpi_fbuf_printf(out, "table %s %zu\n", names[t], b->t[t].n);
        dcpi_fbuf_add(out, b->t[t].p ? b->t[t].p : "", b->t[t].n);
    }
    dcpi_fbuf_printf(out, "table symreq %zu\n", b->symreq.n);
    dcpi_fbuf_add(out, b->symreq.p ? b->symreq.p : "", b->symreq.n);
    dcpi_fbuf_str(out, "end\n");
    return dcpi_fbuf_ok(out);
}

static int take_line(const char **p, const char *end, char *line, size_t len)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl || (size_t)(nl - *p) >= len)
        return -1;
    memcpy(line, *p, (size_t)(nl - *p));
    line[nl - *p] = 0;
    *p = nl + 1;
    return 0;
}

static int decode_head(const char **p, const char *end, dcpi_fleet_batch_t *b)
{
    char line[600];
    if (take_line(p, end, line, sizeof line) < 0 ||
        (strcmp(line, "dcpibatch 1") != 0 && strcmp(line, "dcpibatch 2") != 0))
        return -1;
    int v2 = line[10] == '2'; /* version 1 (no epoch line): its commits are never superseded */
    if (take_line(p, end, line, sizeof line) < 0 || strncmp(line, "host ", 5) != 0)
        return -1;
    char *cur = line + 5, *f[1];
    if (dcpi_fleet_tsv_line(&cur, f, 1) != 1)
        return -1;
    snprintf(b->host, sizeof b->host, "%s", f[0]);
    if (v2) {
        if (take_line(p, end, line, sizeof line) < 0 || strncmp(line, "epoch ", 6) != 0)
            return -1;
        cur = line + 6;
        int empty = !*cur;
        if (!empty && dcpi_fleet_tsv_line(&cur, f, 1) != 1)
            return -1;
        snprintf(b->epoch, sizeof b->epoch, "%s", empty ? "" : f[0]);
    }
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "kind %15s", b->kind) != 1)
        return -1;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "day %15s", b->day) != 1)
        return -1;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "skey %" SCNu64, &b->skey) != 1)
        return -1;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "slot %" SCNu64, &b->slot) != 1)
        return -1;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "batch %" SCNu64, &b->batch) != 1)
        return -1;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "rows %zu", &b->rows) != 1)
        return -1;
    return 0;
}

/* The table name's rows into o; an optional table absent is no rows. */
static int decode_table(const char **p, const char *end, const char *name, int optional,
                        dcpi_fbuf_t *o)
{
    char line[128], got[32];
    size_t n;
    const char *at = *p;
    if (take_line(p, end, line, sizeof line) < 0 || sscanf(line, "table %31s %zu", got, &n) != 2)
        return -1;
    if (strcmp(got, name) != 0 && optional) {
        *p = at;
        return 0;
    }
    if (strcmp(got, name) != 0 || n > (size_t)(end - *p))
        return -1;
    dcpi_fbuf_add(o, *p, n);
    *p += n;
    return dcpi_fbuf_ok(o);
}

int dcpi_fleet_batch_decode(const char *buf, size_t len, const char *name, dcpi_fleet_batch_t *b,
                            char *err)
{
    const char *p = buf, *end = buf + len;
    *b = (dcpi_fleet_batch_t){0};
    int bad = decode_head(&p, end, b);
    for (int t = 0; !bad && t < DCPI_FLEET_NT; t++)
        bad = decode_table(&p, end, names[t], optional(t), &b->t[t]);
    if (!bad)
        bad = decode_table(&p, end, "symreq", 0, &b->symreq);
    if (!bad && (end - p != 4 || memcmp(p, "end\n", 4) != 0))
        bad = -1;
    if (bad) {
        dcpi_fleet_batch_free(b);
        return dcpi__errf(err, DCPI_EFORMAT, "%s: not a complete dcpi batch file", name);
    }
    return 0;
}
