/*
 * gperf.c - read and write gperftools' legacy CPU profile (core/formats/gperf.h): slot-size
 * detection, record and trailer validation with one-line errors, the mapped-objects text and its
 * executable mappings ("$build" expanded), and the encoder.
 */
#include "core/formats/gperf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

int dcpi_gperf_new(uint64_t period_us, dcpi_gperf_t **out)
{
    dcpi_gperf_t *g = calloc(1, sizeof(*g));
    if (!g)
        return DCPI_ENOMEM;
    g->text = strdup("");
    if (!g->text) {
        free(g);
        return DCPI_ENOMEM;
    }
    g->slot = 8;
    g->period_us = period_us;
    *out = g;
    return 0;
}

void dcpi_gperf_free(dcpi_gperf_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nmaps; i++)
        free(g->maps[i].path);
    free(g->maps);
    free(g->text);
    free(g->pcs);
    free(g->recs);
    free(g);
}

int dcpi_gperf_add(dcpi_gperf_t *g, uint64_t count, const uint64_t *pcs, uint32_t n)
{
    if (count == 0 || n == 0 || pcs[0] == 0)
        return DCPI_EINVAL;
    if (dcpi__grow((void **)&g->recs, &g->cap_recs, g->nrecs + 1, sizeof(*g->recs)) < 0 ||
        dcpi__grow((void **)&g->pcs, &g->cap_pcs, g->npcs + n, sizeof(*g->pcs)) < 0)
        return DCPI_ENOMEM;
    memcpy(g->pcs + g->npcs, pcs, n * sizeof(*pcs));
    g->recs[g->nrecs++] = (dcpi_gperf_rec_t){count, g->npcs, n};
    g->npcs += n;
    g->total += count;
    return 0;
}

int dcpi_gperf_add_text(dcpi_gperf_t *g, const char *line)
{
    size_t a = strlen(g->text), b = strlen(line);
    if (b > SIZE_MAX - 2 - a)
        return DCPI_ENOMEM;
    char *t = realloc(g->text, a + b + 2);
    if (!t)
        return DCPI_ENOMEM;
    memcpy(t + a, line, b);
    t[a + b] = '\n';
    t[a + b + 1] = 0;
    g->text = t;
    return 0;
}

/* ---- reading ---- */

static uint64_t slot_at(const unsigned char *p, int slot)
{
    return slot == 4 ? dcpi__get_le32(p) : dcpi__get_le64(p);
}

/* Detect the slot size from the header words (0, >= 3, 0 ...). 0 when neither fits. */
static int detect_slot(const unsigned char *b, size_t len)
{
    if (len >= 24 && slot_at(b, 8) == 0 && slot_at(b + 8, 8) >= 3 && slot_at(b + 8, 8) < 1024)
        return 8;
    if (len >= 12 && slot_at(b, 4) == 0 && slot_at(b + 4, 4) >= 3 && slot_at(b + 4, 4) < 1024)
        return 4;
    return 0;
}

static void replace_build(char *path, size_t size, const char *build)
{
    char *p = strstr(path, "$build");
    while (p && build[0]) {
        char c = p[6];
        if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z'))) {
            char tmp[4096];
            snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)(p - path), path, build, p + 6);
            snprintf(path, size, "%s", tmp);
        }
        p = strstr(p + 1, "$build");
    }
}

/* One "start-end perms offset dev inode [path]" line with 'x' in perms: add it to g->maps. */
static int parse_map_line(dcpi_gperf_t *g, const char *line, const char *build, size_t *cap)
{
    uint64_t start, end, off;
    char perms[8];
    int n = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end, perms,
               &off, &n) < 4 ||
        n == 0 || strlen(perms) < 3 || perms[2] != 'x' || end <= start)
        return 0;
    char path[4096];
    snprintf(path, sizeof(path), "%s", line + n);
    size_t l = strlen(path);
    while (l && (path[l - 1] == ' ' || path[l - 1] == '\r'))
        path[--l] = 0;
    replace_build(path, sizeof(path), build);
    if (dcpi__grow((void **)&g->maps, cap, g->nmaps + 1, sizeof(*g->maps)) < 0)
        return DCPI_ENOMEM;
    char *dup = strdup(path);
    if (!dup)
        return DCPI_ENOMEM;
    g->maps[g->nmaps++] = (dcpi_gperf_map_t){start, end, off, dup};
    return 0;
}

static int parse_text(dcpi_gperf_t *g, const char *text, size_t len)
{
    free(g->text);
    g->text = malloc(len + 1);
    if (!g->text)
        return DCPI_ENOMEM;
    memcpy(g->text, text, len);
    g->text[len] = 0;
    char build[4096] = "";
    size_t cap = 0;
    for (char *line = g->text; *line;) {
        char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        char buf[8192];
        snprintf(buf, sizeof(buf), "%.*s", (int)ll, line);
        const char *s = buf + strspn(buf, " ");
        if (!strncmp(s, "build=", 6))
            snprintf(build, sizeof(build), "%s", s + 6);
        else if (parse_map_line(g, buf, build, &cap) < 0)
            return DCPI_ENOMEM;
        line += ll + (nl ? 1 : 0);
    }
    return 0;
}

static int parse_records(dcpi_gperf_t *g, const unsigned char *b, size_t len, size_t *pos,
                         const char *name, char *err)
{
    size_t s = (size_t)g->slot, p = *pos;
    for (;;) {
        if (len - p < 2 * s)
            return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated record at byte %zu (no trailer)",
                              name, p);
        uint64_t count = slot_at(b + p, g->slot), n = slot_at(b + p + s, g->slot);
        if (n == 0)
            return dcpi__errf(err, DCPI_EFORMAT, "%s: record at byte %zu has no PC", name, p);
        if (n > (len - p - 2 * s) / s)
            return dcpi__errf(err, DCPI_ETRUNC,
                              "%s: truncated record at byte %zu (%" PRIu64 " PCs)", name, p, n);
        uint64_t pc0 = slot_at(b + p + 2 * s, g->slot);
        if (count == 0 || pc0 == 0) {
            if (count != 0 || n != 1 || pc0 != 0)
                return dcpi__errf(err, DCPI_EFORMAT,
                                  "%s: bad trailer at byte %zu (%" PRIu64 " %" PRIu64 " %#" PRIx64
                                  ", want 0 1 0)",
                                  name, p, count, n, pc0);
            *pos = p + 3 * s;
            return 0;
        }
        if (dcpi__grow((void **)&g->recs, &g->cap_recs, g->nrecs + 1, sizeof(*g->recs)) < 0 ||
            dcpi__grow((void **)&g->pcs, &g->cap_pcs, g->npcs + n, sizeof(*g->pcs)) < 0)
            return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
        for (uint64_t k = 0; k < n; k++)
            g->pcs[g->npcs + k] = slot_at(b + p + (2 + k) * s, g->slot);
        g->recs[g->nrecs++] = (dcpi_gperf_rec_t){count, g->npcs, (uint32_t)n};
        g->npcs += n;
        g->total += count;
        p += (2 + n) * s;
    }
}

int dcpi_gperf_parse(const void *buf, size_t len, const char *name, dcpi_gperf_t **out, char *err)
{
    const unsigned char *b = buf;
    int slot = detect_slot(b, len);
    if (slot == 0)
        return dcpi__errf(err, len < 12 ? DCPI_ETRUNC : DCPI_EFORMAT,
                          len < 12 ? "%s: truncated header"
                                   : "%s: not a CPU profile (header words are not 0, >=3 in "
                                     "8- or 4-byte slots)",
                          name);
    uint64_t hwords = slot_at(b + slot, slot);
    if (len < (2 + hwords) * (size_t)slot)
        return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated header", name);
    uint64_t version = slot_at(b + 2 * slot, slot);
    if (version != 0)
        return dcpi__errf(err, DCPI_EVERSION, "%s: format version %" PRIu64 ", want 0", name,
                          version);
    dcpi_gperf_t *g = NULL;
    if (dcpi_gperf_new(slot_at(b + 3 * slot, slot), &g) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
    g->slot = slot;
    size_t pos = (2 + hwords) * (size_t)slot;
    int rc = parse_records(g, b, len, &pos, name, err);
    if (rc == 0 && parse_text(g, (const char *)b + pos, len - pos) < 0)
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
    if (rc == 0 && memchr(g->text, 0, len - pos))
        rc = dcpi__errf(err, DCPI_EFORMAT, "%s: NUL byte in the mapped-objects text", name);
    if (rc < 0) {
        dcpi_gperf_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int dcpi_gperf_read(const char *path, dcpi_gperf_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi_gperf_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- writing ---- */

static int put_slot(unsigned char **p, uint64_t v, int slot)
{
    if (slot == 4 && v > UINT32_MAX)
        return DCPI_ERANGE;
    *p = slot == 4 ? dcpi__put_le32(*p, (uint32_t)v) : dcpi__put_le64(*p, v);
    return 0;
}

int dcpi_gperf_encode(const dcpi_gperf_t *g, void **buf, size_t *len)
{
    size_t s = (size_t)g->slot, tl = strlen(g->text);
    size_t size = (5 + 3 + 2 * g->nrecs + g->npcs) * s + tl;
    unsigned char *b = malloc(size ? size : 1), *p = b;
    if (!b)
        return DCPI_ENOMEM;
    uint64_t head[5] = {0, 3, 0, g->period_us, 0};
    int rc = 0;
    for (int i = 0; i < 5 && rc == 0; i++)
        rc = put_slot(&p, head[i], g->slot);
    for (size_t r = 0; r < g->nrecs && rc == 0; r++) {
        const dcpi_gperf_rec_t *rec = &g->recs[r];
        rc = put_slot(&p, rec->count, g->slot);
        rc = rc ? rc : put_slot(&p, rec->npcs, g->slot);
        for (uint32_t k = 0; k < rec->npcs && rc == 0; k++)
            rc = put_slot(&p, g->pcs[rec->first + k], g->slot);
    }
    uint64_t trailer[3] = {0, 1, 0};
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = put_slot(&p, trailer[i], g->slot);
    if (rc < 0) {
        free(b);
        return rc;
    }
    memcpy(p, g->text, tl);
    *buf = b;
    *len = size;
    return 0;
}

int dcpi_gperf_write(const char *path, const dcpi_gperf_t *g, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi_gperf_encode(g, &buf, &len);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    rc = dcpi__write_output(path, buf, len, err);
    free(buf);
    return rc;
}

const dcpi_gperf_map_t *dcpi_gperf_map_find(const dcpi_gperf_t *g, uint64_t pc)
{
    for (size_t i = 0; i < g->nmaps; i++)
        if (pc >= g->maps[i].start && pc < g->maps[i].end)
            return &g->maps[i];
    return NULL;
}
