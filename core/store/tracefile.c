/*
 * tracefile.c - recorded value traces: the segment writer (dcpid -vrecord) and reader
 * (dcpireplay). Format in tracefile.h and docs/dcpireplay.md.
 */
#include "core/store/tracefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/base/fsutil.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

#define SEEN_MAX     512
#define SEEN_PAIR    16
#define TRAILER_BODY 40
#define TRAILER_SIZE (DCPI_TRACEFILE_RECHDR + TRAILER_BODY)
#define MAP_FIXED    48

static const dcpi_hdr_key_t known_keys[] = {
    {"epoch", DCPI_HDR_EPOCH, true},      {"platform", DCPI_HDR_ANY, true},
    {"event", DCPI_HDR_ANY, true},        {"period", DCPI_HDR_DIGITS, true},
    {"cpuspeed", DCPI_HDR_DIGITS, true},  {"contexts", DCPI_HDR_BIT, true},
    {"cpucount", DCPI_HDR_DIGITS, false}, {"hotsize", DCPI_HDR_DIGITS, false},
    {"writer", DCPI_HDR_DIGITS, false},
};

static const dcpi_hdr_spec_t spec = {DCPI_TRACEFILE_VERSION, "dtr-", known_keys,
                                     sizeof(known_keys) / sizeof(known_keys[0])};

typedef struct wmap {
    unsigned pid;
    uint64_t start, end, delta, tstart, tsize;
    char *id, *imagedir, *path;
} wmap_t;

struct dcpi_tracefile {
    int fd;
    char path[4096];
    uint64_t max;
    int full;
    int error;
    char errmsg[DCPI_ERRLEN];
    dcpi_tracefile_stats_t st;
    wmap_t *maps;
    size_t nmaps, capmaps;
    unsigned seen_pid;
    uint32_t nseen;
    uint8_t seen[SEEN_MAX * SEEN_PAIR];
    uint8_t *rec; /* scratch for one record */
    size_t reccap;
};

/* ---------------------------------------------------------------- CRC-32
 *
 * Records are checksummed with zlib's CRC-32 and compressed with zlib's compress2 when that
 * pays (libdcpi links zlib). */

static uint32_t crc32_of(const uint8_t *p, size_t len)
{
    return (uint32_t)crc32(0L, p, (uInt)len);
}

/* ---------------------------------------------------------------- little-endian helpers */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* ---------------------------------------------------------------- writer */

static int werr(dcpi_tracefile_t *w, int rc, const char *fmt, ...) DCPI_PRINTF(3, 4);
static int werr(dcpi_tracefile_t *w, int rc, const char *fmt, ...)
{
    if (w->error)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
    va_end(ap);
    w->error = rc;
    return rc;
}

static int reserve(dcpi_tracefile_t *w, size_t n)
{
    if (n <= w->reccap)
        return 0;
    size_t cap = w->reccap ? w->reccap : 4096;
    while (cap < n)
        cap *= 2;
    uint8_t *p = realloc(w->rec, cap);
    if (!p)
        return DCPI_ENOMEM;
    w->rec = p;
    w->reccap = cap;
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : DCPI_EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Whether a record of size bytes fits the bound (the trailer's room kept). */
static int fits(const dcpi_tracefile_t *w, size_t size, int trailer)
{
    if (trailer || (!w->full && w->max == 0))
        return 1;
    if (w->full)
        return 0;
    return w->st.bytes + size + TRAILER_SIZE <= w->max;
}

/* Write the record whose body is in w->rec[12..12+len): header then body, one write. */
static int emit(dcpi_tracefile_t *w, int type, unsigned flags, size_t len, uint64_t raw)
{
    if (w->error)
        return w->error;
    if (!fits(w, DCPI_TRACEFILE_RECHDR + len, type == DCPI_TRACEFILE_END)) {
        w->full = 1;
        w->st.refused++;
        w->st.refused_bytes += raw;
        return DCPI_EFULL;
    }
    uint8_t *h = w->rec;
    h[0] = (uint8_t)type;
    h[1] = (uint8_t)flags;
    put_u16(h + 2, 0);
    put_u32(h + 4, (uint32_t)len);
    put_u32(h + 8, crc32_of(h + DCPI_TRACEFILE_RECHDR, len));
    int rc = write_all(w->fd, h, DCPI_TRACEFILE_RECHDR + len);
    if (rc < 0)
        return werr(w, rc, "%s: write: %s", w->path, dcpi_strerror(rc));
    w->st.bytes += DCPI_TRACEFILE_RECHDR + len;
    return 0;
}

static uint64_t dir_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        size_t n = strlen(de->d_name);
        if (n > 4 && strcmp(de->d_name + n - 4, DCPI_TRACEFILE_SUFFIX) == 0 &&
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    }
    closedir(d);
    return sum;
}

static int build_header(const dcpi_tracefile_meta_t *m, char **out, size_t *len)
{
    dcpi_hdr_t h = {0};
    char num[5][32];
    snprintf(num[0], sizeof num[0], "%" PRIu64, m->period);
    snprintf(num[1], sizeof num[1], "%u", m->cpuspeed);
    snprintf(num[2], sizeof num[2], "%d", m->cpucount);
    snprintf(num[3], sizeof num[3], "%u", m->hotsize);
    snprintf(num[4], sizeof num[4], "%ld", (long)getpid());
    int rc = dcpi__hdr_set(&h, &spec, "epoch", m->epoch);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "platform", m->platform);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "event", m->event);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "period", num[0]);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "cpuspeed", num[1]);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "contexts", m->contexts ? "1" : "0");
    if (!rc && m->cpucount >= 0)
        rc = dcpi__hdr_set(&h, &spec, "cpucount", num[2]);
    if (!rc && m->hotsize)
        rc = dcpi__hdr_set(&h, &spec, "hotsize", num[3]);
    rc = rc ? rc : dcpi__hdr_set(&h, &spec, "writer", num[4]);
    if (!rc) {
        *out = malloc(dcpi__hdr_size(&spec, &h) + 1);
        rc = *out ? 0 : DCPI_ENOMEM;
        if (*out)
            *len = dcpi__hdr_encode(&spec, &h, *out);
    }
    dcpi__hdr_free(&h);
    return rc;
}

/* Create trace-<pid>-<n>.dtr, the first n free. */
static int create_segment(dcpi_tracefile_t *w, const char *dir, char *err)
{
    for (unsigned n = 0; n < 100000; n++) {
        if (snprintf(w->path, sizeof w->path, "%s/trace-%ld-%u%s", dir, (long)getpid(), n,
                     DCPI_TRACEFILE_SUFFIX) >= (int)sizeof w->path)
            return dcpi__hdr_errf(err, DCPI_ERANGE, "%s: path too long", dir);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (w->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return dcpi__hdr_errf(err, -errno, "%s: %s", w->path, strerror(errno));
    }
    return dcpi__hdr_errf(err, DCPI_EEXIST, "%s: no free segment name", dir);
}

static int check_meta(const dcpi_tracefile_meta_t *m)
{
    return m && m->epoch && m->platform && m->event && m->epoch[0] && m->platform[0] && m->event[0];
}

int dcpi_tracefile_open(const char *dir, const dcpi_tracefile_meta_t *meta, uint64_t max_bytes,
                        dcpi_tracefile_t **out, char *err)
{
    char *hdr = NULL;
    size_t hlen = 0;
    if (!dir || !out || !check_meta(meta))
        return dcpi__hdr_errf(err, DCPI_EINVAL, "tracefile: missing directory or header data");
    dcpi_tracefile_t *w = calloc(1, sizeof *w);
    if (!w)
        return dcpi__hdr_errf(err, DCPI_ENOMEM, "tracefile: out of memory");
    w->fd = -1;
    w->max = max_bytes;
    int rc = build_header(meta, &hdr, &hlen);
    if (rc < 0) {
        dcpi__hdr_errf(err, rc, "%s: header: %s", dir, dcpi_strerror(rc));
        goto fail;
    }
    if ((rc = dcpi__mkdirs(dir, 0755)) < 0) {
        dcpi__hdr_errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
        goto fail;
    }
    w->st.bytes = dir_bytes(dir);
    if ((rc = create_segment(w, dir, err)) < 0)
        goto fail;
    if ((rc = write_all(w->fd, hdr, hlen)) < 0) {
        dcpi__hdr_errf(err, rc, "%s: write: %s", w->path, dcpi_strerror(rc));
        unlink(w->path);
        goto fail;
    }
    w->st.bytes += hlen;
    free(hdr);
    *out = w;
    return 0;
fail:
    if (w->fd >= 0)
        close(w->fd);
    free(hdr);
    free(w);
    return rc;
}

/* ---------------------------------------------------------------- writer: records */

static int flush_seen(dcpi_tracefile_t *w)
{
    if (w->nseen == 0)
        return 0;
    size_t len = 8 + (size_t)w->nseen * SEEN_PAIR;
    uint32_t n = w->nseen;
    w->nseen = 0;
    if (reserve(w, DCPI_TRACEFILE_RECHDR + len) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    uint8_t *b = w->rec + DCPI_TRACEFILE_RECHDR;
    put_u32(b, w->seen_pid);
    put_u32(b + 4, n);
    memcpy(b + 8, w->seen, (size_t)n * SEEN_PAIR);
    int rc = emit(w, DCPI_TRACEFILE_SEEN, 0, len, len);
    w->st.seen += rc == 0;
    return rc;
}

int dcpi_tracefile_seen(dcpi_tracefile_t *w, unsigned pid, uint64_t pc, uint32_t key,
                        uint32_t count)
{
    if (!w || count == 0)
        return w ? 0 : DCPI_EINVAL;
    if (w->nseen && (w->seen_pid != pid || w->nseen == SEEN_MAX)) {
        int rc = flush_seen(w);
        if (rc < 0)
            return rc;
    }
    uint8_t *p = w->seen + (size_t)w->nseen * SEEN_PAIR;
    put_u64(p, pc);
    put_u32(p + 8, key);
    put_u32(p + 12, count);
    w->seen_pid = pid;
    w->nseen++;
    return 0;
}

static int same_map(const wmap_t *m, unsigned pid, uint64_t start, uint64_t end, uint64_t delta,
                    const char *id, const char *imagedir, const char *path, uint64_t tstart,
                    uint64_t tsize)
{
    return m->pid == pid && m->start == start && m->end == end && m->delta == delta &&
           m->tstart == tstart && m->tsize == tsize && strcmp(m->id, id) == 0 &&
           strcmp(m->imagedir, imagedir) == 0 && strcmp(m->path, path) == 0;
}

static void drop_map(dcpi_tracefile_t *w, size_t i)
{
    free(w->maps[i].id);
    free(w->maps[i].imagedir);
    free(w->maps[i].path);
    w->maps[i] = w->maps[--w->nmaps];
}

/* Remember a written mapping, forgetting those of pid it overlaps. */
static int remember(dcpi_tracefile_t *w, const wmap_t *m)
{
    for (size_t i = 0; i < w->nmaps;) {
        const wmap_t *o = &w->maps[i];
        if (o->pid == m->pid && o->start < m->end && m->start < o->end)
            drop_map(w, i);
        else
            i++;
    }
    if (w->nmaps == w->capmaps) {
        size_t cap = w->capmaps ? w->capmaps * 2 : 64;
        wmap_t *p = realloc(w->maps, cap * sizeof *p);
        if (!p)
            return DCPI_ENOMEM;
        w->maps = p;
        w->capmaps = cap;
    }
    wmap_t *n = &w->maps[w->nmaps];
    *n = *m;
    n->id = strdup(m->id);
    n->imagedir = strdup(m->imagedir);
    n->path = strdup(m->path);
    if (!n->id || !n->imagedir || !n->path) {
        free(n->id);
        free(n->imagedir);
        free(n->path);
        return DCPI_ENOMEM;
    }
    w->nmaps++;
    return 0;
}

static size_t put_str(uint8_t *p, const char *s, size_t n)
{
    put_u16(p, (uint16_t)n);
    memcpy(p + 2, s, n);
    return 2 + n;
}

static int write_map(dcpi_tracefile_t *w, const wmap_t *m)
{
    size_t li = strlen(m->id), ld = strlen(m->imagedir), lp = strlen(m->path);
    size_t len = MAP_FIXED + 6 + li + ld + lp;
    if (reserve(w, DCPI_TRACEFILE_RECHDR + len) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    uint8_t *b = w->rec + DCPI_TRACEFILE_RECHDR;
    put_u32(b, m->pid);
    put_u32(b + 4, 0);
    put_u64(b + 8, m->start);
    put_u64(b + 16, m->end);
    put_u64(b + 24, m->delta);
    put_u64(b + 32, m->tstart);
    put_u64(b + 40, m->tsize);
    size_t o = MAP_FIXED;
    o += put_str(b + o, m->id, li);
    o += put_str(b + o, m->imagedir, ld);
    put_str(b + o, m->path, lp);
    int rc = emit(w, DCPI_TRACEFILE_MAP, 0, len, len);
    w->st.maps += rc == 0;
    return rc;
}

int dcpi_tracefile_map(dcpi_tracefile_t *w, unsigned pid, uint64_t start, uint64_t end,
                       uint64_t delta, const char *image_id, const char *imagedir, const char *path,
                       uint64_t tstart, uint64_t tsize)
{
    if (!w || !image_id || !imagedir || !path || start >= end || strlen(image_id) > 0xffff ||
        strlen(imagedir) > 0xffff || strlen(path) > 0xffff)
        return DCPI_EINVAL;
    for (size_t i = 0; i < w->nmaps; i++)
        if (same_map(&w->maps[i], pid, start, end, delta, image_id, imagedir, path, tstart, tsize))
            return 0;
    wmap_t m = {pid,         start, end, delta, tstart, tsize, (char *)image_id, (char *)imagedir,
                (char *)path};
    int rc = flush_seen(w); /* SEEN pairs before a MAP that may replace their mapping */
    if (rc < 0 && rc != DCPI_EFULL)
        return rc;
    if ((rc = write_map(w, &m)) < 0)
        return rc;
    if (remember(w, &m) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    return 0;
}

void dcpi_tracefile_forget_pid(dcpi_tracefile_t *w, unsigned pid)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nmaps;)
        if (w->maps[i].pid == pid)
            drop_map(w, i);
        else
            i++;
}

/* Compress buf into w->rec's body when that saves at least 25%; returns the body length
 * used (0: store raw). */
static size_t try_compress(dcpi_tracefile_t *w, const void *buf, size_t len)
{
    if (len < 64)
        return 0;
    uLongf clen = compressBound((uLong)len);
    if (reserve(w, DCPI_TRACEFILE_RECHDR + 8 + clen) < 0)
        return 0;
    if (compress2(w->rec + DCPI_TRACEFILE_RECHDR + 8, &clen, buf, (uLong)len, 1) != Z_OK)
        return 0;
    return (uint64_t)clen * 4 <= (uint64_t)len * 3 ? (size_t)clen : 0;
}

int dcpi_tracefile_trace(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len)
{
    if (!w || (!buf && len) || len > DCPI_TRACEFILE_MAXREC - 8)
        return DCPI_EINVAL;
    int rc = flush_seen(w);
    if (rc < 0 && rc != DCPI_EFULL)
        return rc;
    size_t clen = try_compress(w, buf, len);
    unsigned flags = clen ? DCPI_TRACEFILE_FLAG_ZLIB : 0;
    if (!clen) {
        if (reserve(w, DCPI_TRACEFILE_RECHDR + 8 + len) < 0)
            return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
        if (len)
            memcpy(w->rec + DCPI_TRACEFILE_RECHDR + 8, buf, len);
    }
    put_u32(w->rec + DCPI_TRACEFILE_RECHDR, pid);
    put_u32(w->rec + DCPI_TRACEFILE_RECHDR + 4, (uint32_t)len);
    rc = emit(w, DCPI_TRACEFILE_TRACE, flags, 8 + (clen ? clen : len), len);
    if (rc == 0) {
        w->st.traces++;
        w->st.compressed += flags != 0;
    }
    return rc;
}

void dcpi_tracefile_stats(const dcpi_tracefile_t *w, dcpi_tracefile_stats_t *out)
{
    if (w && out)
        *out = w->st;
    else if (out)
        memset(out, 0, sizeof *out);
}

const char *dcpi_tracefile_path(const dcpi_tracefile_t *w)
{
    return w ? w->path : NULL;
}

static int write_trailer(dcpi_tracefile_t *w)
{
    if (reserve(w, TRAILER_SIZE) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    uint8_t *b = w->rec + DCPI_TRACEFILE_RECHDR;
    put_u64(b, w->st.maps);
    put_u64(b + 8, w->st.traces);
    put_u64(b + 16, w->st.seen);
    put_u64(b + 24, w->st.refused);
    put_u64(b + 32, w->st.refused_bytes);
    return emit(w, DCPI_TRACEFILE_END, 0, TRAILER_BODY, 0);
}

int dcpi_tracefile_close(dcpi_tracefile_t *w, char *err)
{
    if (!w)
        return 0;
    flush_seen(w);
    write_trailer(w);
    if (close(w->fd) < 0)
        werr(w, -errno, "%s: close: %s", w->path, strerror(errno));
    int rc = w->error;
    if (rc < 0)
        dcpi__hdr_errf(err, rc, "%s", w->errmsg);
    else if (w->st.refused)
        rc = dcpi__hdr_errf(err, DCPI_EFULL,
                            "%s: bound reached: %" PRIu64 " records (%" PRIu64
                            " bytes) not recorded",
                            w->path, w->st.refused, w->st.refused_bytes);
    for (size_t i = w->nmaps; i-- > 0;)
        drop_map(w, i);
    free(w->maps);
    free(w->rec);
    free(w);
    return rc;
}

int dcpi_tracefile_map_range(const dcpi_image_info_t *info, uint64_t ip, uint64_t start,
                             uint64_t pgoff, uint64_t *lo, uint64_t *hi, uint64_t *delta)
{
    if (!info || !lo || !hi || !delta || ip < start)
        return DCPI_EINVAL;
    uint64_t foff = ip - start + pgoff;
    uint64_t flo = pgoff, fhi = UINT64_MAX, vbase = pgoff; /* non-ELF: vaddr = file offset */
    if (info->is_elf) {
        flo = fhi = foff; /* not in a segment: file_to_vaddr is the identity, for ip only */
        fhi++;
        vbase = foff;
        for (int i = 0; i < info->nseg; i++) {
            const dcpi_segment_t *s = &info->seg[i];
            if (foff >= s->offset && foff - s->offset < s->filesz) {
                flo = s->offset > pgoff ? s->offset : pgoff;
                fhi = s->offset + s->filesz;
                vbase = flo - s->offset + s->vaddr;
                break;
            }
        }
    }
    uint64_t vaddr = vbase + (foff - flo);
    if (vaddr < info->tstart || vaddr - info->tstart > UINT32_MAX)
        return DCPI_ERANGE;
    *lo = start + (flo - pgoff);
    *hi = fhi - pgoff > UINT64_MAX - start ? UINT64_MAX : start + (fhi - pgoff);
    *delta = vbase - info->tstart; /* modulo 2^64: may wrap when lo is below tstart */
    return 0;
}

/* ---------------------------------------------------------------- reader */

struct dcpi_tracefile_reader {
    char name[4096];
    uint8_t *buf;
    size_t len, pos;
    dcpi_hdr_t hdr;
    int state; /* 0, or the sticky result (0 after the trailer is kept as done) */
    int done;
    uint64_t nmaps, ntraces, nseen;
    uint8_t *out; /* decompressed trace */
    size_t outcap;
    char str[3][65536 + 1];
};

static int rerr(dcpi_tracefile_reader_t *r, char *err, int rc, const char *fmt, ...)
    DCPI_PRINTF(4, 5);
static int rerr(dcpi_tracefile_reader_t *r, char *err, int rc, const char *fmt, ...)
{
    char why[DCPI_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    dcpi__hdr_errf(err, rc, "%s: offset %zu: %s", r->name, r->pos, why);
    r->state = rc;
    return rc;
}

int dcpi_tracefile_reader_open(const char *path, dcpi_tracefile_reader_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0, body = 0;
    dcpi_tracefile_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return dcpi__hdr_errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    snprintf(r->name, sizeof r->name, "%s", path);
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        goto fail;
    r->buf = buf;
    r->len = len;
    rc = dcpi__hdr_parse(&spec, buf, len, path, &r->hdr, &body, err);
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
    if (len - *o < 2 || len - *o - 2 < get_u16(b + *o))
        return rerr(r, err, DCPI_EFORMAT, "MAP: string %d runs past the record", i);
    size_t n = get_u16(b + *o);
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
    size_t o = MAP_FIXED;
    if (len < MAP_FIXED)
        return rerr(r, err, DCPI_EFORMAT, "MAP: %zu bytes, at least %d needed", len, MAP_FIXED);
    rec->pid = get_u32(b);
    rec->start = get_u64(b + 8);
    rec->end = get_u64(b + 16);
    rec->delta = get_u64(b + 24);
    rec->tstart = get_u64(b + 32);
    rec->tsize = get_u64(b + 40);
    for (int i = 0; i < 3; i++)
        if (get_str(r, b, len, &o, i, err) < 0)
            return r->state;
    if (o != len)
        return rerr(r, err, DCPI_EFORMAT, "MAP: %zu trailing bytes", len - o);
    if (get_u32(b + 4) != 0 || rec->start >= rec->end)
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
    rec->pid = get_u32(b);
    uint32_t raw = get_u32(b + 4);
    rec->was_compressed = (flags & DCPI_TRACEFILE_FLAG_ZLIB) != 0;
    if (!rec->was_compressed) {
        if (raw != len - 8)
            return rerr(r, err, DCPI_EFORMAT, "TRACE: length %u, record holds %zu", raw, len - 8);
        rec->data = b + 8;
        rec->len = raw;
    } else {
        if (raw > DCPI_TRACEFILE_MAXREC)
            return rerr(r, err, DCPI_EFORMAT, "TRACE: length %u too large", raw);
        if (raw > r->outcap) {
            uint8_t *p = realloc(r->out, raw);
            if (!p)
                return rerr(r, err, DCPI_ENOMEM, "out of memory");
            r->out = p;
            r->outcap = raw;
        }
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
    if (len < 8 || (len - 8) % SEEN_PAIR || (len - 8) / SEEN_PAIR != get_u32(b + 4))
        return rerr(r, err, DCPI_EFORMAT, "SEEN: %zu bytes do not hold its count", len);
    rec->pid = get_u32(b);
    rec->npairs = get_u32(b + 4);
    rec->pairs = b + 8;
    r->nseen++;
    return 1;
}

static int read_end(dcpi_tracefile_reader_t *r, const uint8_t *b, size_t len, size_t next,
                    dcpi_tracefile_stats_t *trailer, char *err)
{
    if (len != TRAILER_BODY)
        return rerr(r, err, DCPI_EFORMAT, "END: %zu bytes, %d expected", len, TRAILER_BODY);
    if (get_u64(b) != r->nmaps || get_u64(b + 8) != r->ntraces || get_u64(b + 16) != r->nseen)
        return rerr(r, err, DCPI_EFORMAT,
                    "END: counts %" PRIu64 "/%" PRIu64 "/%" PRIu64 " but %" PRIu64 "/%" PRIu64
                    "/%" PRIu64 " records read",
                    get_u64(b), get_u64(b + 8), get_u64(b + 16), r->nmaps, r->ntraces, r->nseen);
    if (next != r->len) {
        r->pos = next;
        return rerr(r, err, DCPI_EFORMAT, "%zu bytes after the trailer", r->len - next);
    }
    if (trailer) {
        memset(trailer, 0, sizeof *trailer);
        trailer->maps = r->nmaps;
        trailer->traces = r->ntraces;
        trailer->seen = r->nseen;
        trailer->refused = get_u64(b + 24);
        trailer->refused_bytes = get_u64(b + 32);
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
    size_t len = get_u32(h + 4);
    if (h[0] < DCPI_TRACEFILE_MAP || h[0] > DCPI_TRACEFILE_END || get_u16(h + 2) != 0 ||
        (h[1] & ~(h[0] == DCPI_TRACEFILE_TRACE ? DCPI_TRACEFILE_FLAG_ZLIB : 0u)) ||
        len > DCPI_TRACEFILE_MAXREC)
        return rerr(r, err, DCPI_EFORMAT, "bad record header (type %u, flags 0x%x, %zu bytes)",
                    h[0], h[1], len);
    if (left - DCPI_TRACEFILE_RECHDR < len)
        return rerr(r, err, DCPI_ETRUNC, "torn tail: record of %zu bytes, %zu left", len,
                    left - DCPI_TRACEFILE_RECHDR);
    const uint8_t *b = h + DCPI_TRACEFILE_RECHDR;
    if (crc32_of(b, len) != get_u32(h + 8))
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
    const uint8_t *p = rec->pairs + (size_t)i * SEEN_PAIR;
    *pc = get_u64(p);
    *key = get_u32(p + 8);
    *count = get_u32(p + 12);
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
        return dcpi__hdr_errf(err, -errno, "%s: %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l <= 4 || strcmp(de->d_name + l - 4, DCPI_TRACEFILE_SUFFIX))
            continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 8;
            char **p = realloc(v, cap * sizeof *p);
            if (!p)
                goto nomem;
            v = p;
        }
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
    return dcpi__hdr_errf(err, DCPI_ENOMEM, "%s: out of memory", dir);
}
