/*
 * tracefile-read.c - the reader of recorded value traces (dcpireplay): a segment read whole,
 * its records checked (header, CRC, bounds, strings, trailer counts) and handed out one by one
 * (MAP, TRACE, SEEN, CLUSTER); a torn tail is reported as such. Also the listing of a
 * values.trace directory. Format in tracefile.h and docs/dcpireplay.md; the writer is
 * tracefile-write.c.
 */
#include "core/store/tracefile-int.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

/* ---------------------------------------------------------------- reader */

struct dcpi_tracefile_reader {
    char name[4096];
    uint8_t *buf;
    size_t len, pos;
    dcpi_hdr_t hdr;
    int state; /* 0, or the sticky result (0 after the trailer is kept as done) */
    int done;
    uint64_t nmaps, ntraces, nseen, nclusters;
    uint8_t *out; /* decompressed trace */
    size_t outcap;
    char str[3][65536 + 1];
};

/* "NAME: offset N: reason" into err; rc becomes the reader's sticky result and is returned. */
#define rerr(r, err, rc, fmt, ...)                                                                 \
    ((r)->state =                                                                                  \
         dcpi__errf((err), (rc), "%s: offset %zu: " fmt, (r)->name, (r)->pos, ##__VA_ARGS__))

int dcpi_tracefile_reader_open(const char *path, dcpi_tracefile_reader_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0, body = 0;
    dcpi_tracefile_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    snprintf(r->name, sizeof r->name, "%s", path);
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        goto fail;
    r->buf = buf;
    r->len = len;
    rc = dcpi__hdr_parse(&dcpi__tracefile_spec, buf, len, path, &r->hdr, &body, err);
    if (rc < 0)
        goto fail;
    r->pos = body;
    *out = r;
    return 0;
fail:
    dcpi_tracefile_reader_close(r);
    return rc;
}

void dcpi_tracefile_reader_close(dcpi_tracefile_reader_t *r)
{
    if (!r)
        return;
    dcpi__hdr_free(&r->hdr);
    free(r->buf);
    free(r->out);
    free(r);
}

const char *dcpi_tracefile_reader_get(const dcpi_tracefile_reader_t *r, const char *key)
{
    return r ? dcpi__hdr_get(&r->hdr, key) : NULL;
}

static int get_str(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len, size_t *o, int i,
                   char *err)
{
    if (len - *o < 2 || len - *o - 2 < dcpi__get_le16(b + *o))
        return rerr(r, err, DCPI_EFORMAT, "MAP: string %d runs past the record", i);
    size_t n = dcpi__get_le16(b + *o);
    memcpy(r->str[i], b + *o + 2, n);
    r->str[i][n] = 0;
    if (memchr(r->str[i], 0, n))
        return rerr(r, err, DCPI_EFORMAT, "MAP: NUL byte in string %d", i);
    *o += 2 + n;
    return 0;
}

static int valid_dirname(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int valid_hex(const char *s)
{
    return s[0] && strspn(s, "0123456789abcdef") == strlen(s);
}

/* s for an error message: at most 40 bytes, bytes outside printable ASCII shown as '?'. */
static const char *printable(const char *s, char out[48])
{
    size_t n = 0;
    for (; s[n] && n < 40; n++)
        out[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : '?';
    snprintf(out + n, 48 - n, "%s", s[n] ? "..." : "");
    return out;
}

static int read_map(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len,
                    dcpi_tracefile_record_t *rec, char *err)
{
    size_t o = DCPI_TF_MAP_FIXED;
    if (len < DCPI_TF_MAP_FIXED)
        return rerr(r, err, DCPI_EFORMAT, "MAP: %zu bytes, at least %d needed", len,
                    DCPI_TF_MAP_FIXED);
    rec->pid = dcpi__get_le32(b);
    rec->start = dcpi__get_le64(b + 8);
    rec->end = dcpi__get_le64(b + 16);
    rec->delta = dcpi__get_le64(b + 24);
    rec->tstart = dcpi__get_le64(b + 32);
    rec->tsize = dcpi__get_le64(b + 40);
    for (int i = 0; i < 3; i++)
        if (get_str(r, b, len, &o, i, err) < 0)
            return r->state;
    if (o != len)
        return rerr(r, err, DCPI_EFORMAT, "MAP: %zu trailing bytes", len - o);
    if (dcpi__get_le32(b + 4) != 0 || rec->start >= rec->end)
        return rerr(r, err, DCPI_EFORMAT, "MAP: bad range 0x%" PRIx64 "-0x%" PRIx64, rec->start,
                    rec->end);
    char id[48], dir[48];
    if (!valid_hex(r->str[0]) || !valid_dirname(r->str[1]))
        return rerr(r, err, DCPI_EFORMAT, "MAP: bad image id '%s' or directory '%s'",
                    printable(r->str[0], id), printable(r->str[1], dir));
    rec->image_id = r->str[0];
    rec->imagedir = r->str[1];
    rec->path = r->str[2];
    r->nmaps++;
    return 1;
}

static int read_trace(dcpi_tracefile_reader_t *r, unsigned flags, const uint8_t *b, size_t len,
                      dcpi_tracefile_record_t *rec, char *err)
{
    if (len < 8)
        return rerr(r, err, DCPI_EFORMAT, "TRACE: %zu bytes, at least 8 needed", len);
    rec->pid = dcpi__get_le32(b);
    uint32_t raw = dcpi__get_le32(b + 4);
    rec->was_compressed = (flags & DCPI_TRACEFILE_FLAG_ZLIB) != 0;
    if (!rec->was_compressed) {
        if (raw != len - 8)
            return rerr(r, err, DCPI_EFORMAT, "TRACE: length %u, record holds %zu", raw, len - 8);
        rec->data = b + 8;
        rec->len = raw;
    } else {
        if (raw > DCPI_TRACEFILE_MAXREC)
            return rerr(r, err, DCPI_EFORMAT, "TRACE: length %u too large", raw);
        if (dcpi__grow((void **)&r->out, &r->outcap, raw, 1) < 0)
            return rerr(r, err, DCPI_ENOMEM, "out of memory");
        uLongf dlen = raw;
        if (uncompress(r->out, &dlen, b + 8, (uLong)(len - 8)) != Z_OK || dlen != raw)
            return rerr(r, err, DCPI_EFORMAT, "TRACE: bad compressed data");
        rec->data = r->out;
        rec->len = raw;
    }
    r->ntraces++;
    return 1;
}

static int read_seen(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len,
                     dcpi_tracefile_record_t *rec, char *err)
{
    if (len < 8 || (len - 8) % DCPI_TF_SEEN_PAIR ||
        (len - 8) / DCPI_TF_SEEN_PAIR != dcpi__get_le32(b + 4))
        return rerr(r, err, DCPI_EFORMAT, "SEEN: %zu bytes do not hold its count", len);
    rec->pid = dcpi__get_le32(b);
    rec->npairs = dcpi__get_le32(b + 4);
    rec->pairs = b + 8;
    r->nseen++;
    return 1;
}

static int read_cluster(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len,
                        dcpi_tracefile_record_t *rec, char *err)
{
    if (len < 8 || (len - 8) % DCPI_TF_CLUSTER_NUM ||
        (len - 8) / DCPI_TF_CLUSTER_NUM != dcpi__get_le32(b + 4))
        return rerr(r, err, DCPI_EFORMAT, "CLUSTER: %zu bytes do not hold its count", len);
    rec->pid = dcpi__get_le32(b);
    rec->nclusters = dcpi__get_le32(b + 4);
    rec->clusters = b + 8;
    r->nclusters++;
    return 1;
}

static int read_end(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len, size_t next,
                    dcpi_tracefile_stats_t *trailer, char *err)
{
    if (len != DCPI_TF_TRAILER_BODY)
        return rerr(r, err, DCPI_EFORMAT, "END: %zu bytes, %d expected", len, DCPI_TF_TRAILER_BODY);
    if (dcpi__get_le64(b) != r->nmaps || dcpi__get_le64(b + 8) != r->ntraces ||
        dcpi__get_le64(b + 16) != r->nseen)
        return rerr(r, err, DCPI_EFORMAT,
                    "END: counts %" PRIu64 "/%" PRIu64 "/%" PRIu64 " but %" PRIu64 "/%" PRIu64
                    "/%" PRIu64 " records read",
                    dcpi__get_le64(b), dcpi__get_le64(b + 8), dcpi__get_le64(b + 16), r->nmaps,
                    r->ntraces, r->nseen);
    if (next != r->len) {
        r->pos = next;
        return rerr(r, err, DCPI_EFORMAT, "%zu bytes after the trailer", r->len - next);
    }
    if (trailer) {
        memset(trailer, 0, sizeof *trailer);
        trailer->maps = r->nmaps;
        trailer->traces = r->ntraces;
        trailer->seen = r->nseen;
        trailer->clusters = r->nclusters;
        trailer->refused = dcpi__get_le64(b + 24);
        trailer->refused_bytes = dcpi__get_le64(b + 32);
        trailer->bytes = r->len;
    }
    r->done = 1;
    r->pos = next;
    return 0;
}

int dcpi_tracefile_next(dcpi_tracefile_reader_t *r, dcpi_tracefile_record_t *rec,
                        dcpi_tracefile_stats_t *trailer, char *err)
{
    if (!r || !rec)
        return DCPI_EINVAL;
    if (r->state < 0)
        return rerr(r, err, r->state, "reading stopped at an earlier error");
    if (r->done)
        return 0;
    memset(rec, 0, sizeof *rec);
    size_t left = r->len - r->pos;
    if (left == 0)
        return rerr(r, err, DCPI_ETRUNC, "torn tail: no trailer (writer did not close)");
    if (left < DCPI_TRACEFILE_RECHDR)
        return rerr(r, err, DCPI_ETRUNC, "torn tail: %zu bytes of a record header", left);
    const uint8_t *h = r->buf + r->pos;
    size_t len = dcpi__get_le32(h + 4);
    if (h[0] < DCPI_TRACEFILE_MAP || h[0] > DCPI_TRACEFILE_CLUSTER || dcpi__get_le16(h + 2) != 0 ||
        (h[1] & ~(h[0] == DCPI_TRACEFILE_TRACE ? DCPI_TRACEFILE_FLAG_ZLIB : 0u)) ||
        len > DCPI_TRACEFILE_MAXREC)
        return rerr(r, err, DCPI_EFORMAT, "bad record header (type %u, flags 0x%x, %zu bytes)",
                    h[0], h[1], len);
    if (left - DCPI_TRACEFILE_RECHDR < len)
        return rerr(r, err, DCPI_ETRUNC, "torn tail: record of %zu bytes, %zu left", len,
                    left - DCPI_TRACEFILE_RECHDR);
    const uint8_t *b = h + DCPI_TRACEFILE_RECHDR;
    if (dcpi__tracefile_crc32(b, len) != dcpi__get_le32(h + 8))
        return rerr(r, err, DCPI_EFORMAT, "record checksum mismatch");
    rec->type = h[0];
    rec->offset = r->pos;
    size_t next = r->pos + DCPI_TRACEFILE_RECHDR + len;
    int rc;
    switch (h[0]) {
    case DCPI_TRACEFILE_MAP:
        rc = read_map(r, b, len, rec, err);
        break;
    case DCPI_TRACEFILE_TRACE:
        rc = read_trace(r, h[1], b, len, rec, err);
        break;
    case DCPI_TRACEFILE_SEEN:
        rc = read_seen(r, b, len, rec, err);
        break;
    case DCPI_TRACEFILE_CLUSTER:
        rc = read_cluster(r, b, len, rec, err);
        break;
    default:
        return read_end(r, b, len, next, trailer, err);
    }
    if (rc > 0)
        r->pos = next;
    return rc;
}

void dcpi_tracefile_seen_at(const dcpi_tracefile_record_t *rec, uint32_t i, uint64_t *pc,
                            uint32_t *key, uint32_t *count)
{
    const uint8_t *p = rec->pairs + (size_t)i * DCPI_TF_SEEN_PAIR;
    *pc = dcpi__get_le64(p);
    *key = dcpi__get_le32(p + 8);
    *count = dcpi__get_le32(p + 12);
}

uint64_t dcpi_tracefile_cluster_at(const dcpi_tracefile_record_t *rec, uint32_t i)
{
    return dcpi__get_le64(rec->clusters + (size_t)i * DCPI_TF_CLUSTER_NUM);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int dcpi_tracefile_list(const char *dir, char ***names, size_t *n, char *err)
{
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l <= 4 || strcmp(de->d_name + l - 4, DCPI_TRACEFILE_SUFFIX))
            continue;
        if (dcpi__grow((void **)&v, &cap, cnt + 1, sizeof *v) < 0)
            goto nomem;
        if (!(v[cnt] = strdup(de->d_name)))
            goto nomem;
        cnt++;
    }
    closedir(d);
    qsort(v, cnt, sizeof *v, cmp_names);
    *names = v;
    *n = cnt;
    return 0;
nomem:
    closedir(d);
    while (cnt)
        free(v[--cnt]);
    free(v);
    return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", dir);
}
