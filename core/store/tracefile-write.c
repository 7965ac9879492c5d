/*
 * tracefile-write.c - the segment writer of recorded value traces (dcpid -vrecord): the header,
 * MAP, TRACE (compressed when that pays), CLUSTER, SEEN and END records, the size bound, and the
 * mapping of a sampled pc's mapping to a MAP (dcpi_tracefile_map_range). Format in tracefile.h and
 * docs/dcpireplay.md; the reader is tracefile-read.c.
 */
#include "core/store/tracefile-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

#define SEEN_MAX     512
#define TRAILER_SIZE (DCPI_TRACEFILE_RECHDR + DCPI_TF_TRAILER_BODY)

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
    uint8_t seen[SEEN_MAX * DCPI_TF_SEEN_PAIR];
    uint8_t *rec; /* scratch for one record */
    size_t reccap;
    uint8_t *crec; /* scratch for the CLUSTER record written before the TRACE in rec */
    size_t creccap;
};

/* ---------------------------------------------------------------- writer */

/* The writer's first error sticks: its code in w->error, "reason" in w->errmsg (later errors
 * only return their code). */
#define werr(w, rc, ...)                                                                           \
    ((w)->error ? (rc) : ((w)->error = dcpi__errf((w)->errmsg, (rc), __VA_ARGS__)))

/* Room for a record of n bytes in w->rec. */
static int reserve(dcpi_tracefile_t *w, size_t n)
{
    return dcpi__grow((void **)&w->rec, &w->reccap, n, 1);
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? dcpi__errno_code(errno) : DCPI_EIO;
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

/* Write the record whose body is in h[12..12+len) (h: w->rec or w->crec): header then body,
 * one write. */
static int emit_at(dcpi_tracefile_t *w, uint8_t *h, int type, unsigned flags, size_t len,
                   uint64_t raw)
{
    if (w->error)
        return w->error;
    if (!fits(w, DCPI_TRACEFILE_RECHDR + len, type == DCPI_TRACEFILE_END)) {
        w->full = 1;
        w->st.refused++;
        w->st.refused_bytes += raw;
        return DCPI_EFULL;
    }
    h[0] = (uint8_t)type;
    h[1] = (uint8_t)flags;
    dcpi__put_le16(h + 2, 0);
    dcpi__put_le32(h + 4, (uint32_t)len);
    dcpi__put_le32(h + 8, dcpi__tracefile_crc32(h + DCPI_TRACEFILE_RECHDR, len));
    int rc = write_all(w->fd, h, DCPI_TRACEFILE_RECHDR + len);
    if (rc < 0)
        return werr(w, rc, "%s: write: %s", w->path, dcpi_strerror(rc));
    w->st.bytes += DCPI_TRACEFILE_RECHDR + len;
    return 0;
}

/* The record whose body is in w->rec[12..12+len). */
static int emit(dcpi_tracefile_t *w, int type, unsigned flags, size_t len, uint64_t raw)
{
    return emit_at(w, w->rec, type, flags, len, raw);
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
    int rc = dcpi__hdr_set(&h, &dcpi__tracefile_spec, "epoch", m->epoch);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "platform", m->platform);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "event", m->event);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "period", num[0]);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "cpuspeed", num[1]);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "contexts", m->contexts ? "1" : "0");
    if (!rc && m->cpucount >= 0)
        rc = dcpi__hdr_set(&h, &dcpi__tracefile_spec, "cpucount", num[2]);
    if (!rc && m->hotsize)
        rc = dcpi__hdr_set(&h, &dcpi__tracefile_spec, "hotsize", num[3]);
    rc = rc ? rc : dcpi__hdr_set(&h, &dcpi__tracefile_spec, "writer", num[4]);
    if (!rc) {
        *out = malloc(dcpi__hdr_size(&dcpi__tracefile_spec, &h) + 1);
        rc = *out ? 0 : DCPI_ENOMEM;
        if (*out)
            *len = dcpi__hdr_encode(&dcpi__tracefile_spec, &h, *out);
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
            return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", dir);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (w->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", w->path, strerror(errno));
    }
    return dcpi__errf(err, DCPI_EEXIST, "%s: no free segment name", dir);
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
        return dcpi__errf(err, DCPI_EINVAL, "tracefile: missing directory or header data");
    dcpi_tracefile_t *w = calloc(1, sizeof *w);
    if (!w)
        return dcpi__errf(err, DCPI_ENOMEM, "tracefile: out of memory");
    w->fd = -1;
    w->max = max_bytes;
    int rc = build_header(meta, &hdr, &hlen);
    if (rc < 0) {
        dcpi__errf(err, rc, "%s: header: %s", dir, dcpi_strerror(rc));
        goto fail;
    }
    if ((rc = dcpi__mkdirs(dir, 0755)) < 0) {
        dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
        goto fail;
    }
    w->st.bytes = dir_bytes(dir);
    if ((rc = create_segment(w, dir, err)) < 0)
        goto fail;
    if ((rc = write_all(w->fd, hdr, hlen)) < 0) {
        dcpi__errf(err, rc, "%s: write: %s", w->path, dcpi_strerror(rc));
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
    size_t len = 8 + (size_t)w->nseen * DCPI_TF_SEEN_PAIR;
    uint32_t n = w->nseen;
    w->nseen = 0;
    if (reserve(w, DCPI_TRACEFILE_RECHDR + len) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    uint8_t *b = w->rec + DCPI_TRACEFILE_RECHDR;
    dcpi__put_le32(b, w->seen_pid);
    dcpi__put_le32(b + 4, n);
    memcpy(b + 8, w->seen, (size_t)n * DCPI_TF_SEEN_PAIR);
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
    uint8_t *p = w->seen + (size_t)w->nseen * DCPI_TF_SEEN_PAIR;
    dcpi__put_le64(p, pc);
    dcpi__put_le32(p + 8, key);
    dcpi__put_le32(p + 12, count);
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
    if (dcpi__grow((void **)&w->maps, &w->capmaps, w->nmaps + 1, sizeof *w->maps) < 0)
        return DCPI_ENOMEM;
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
    dcpi__put_le16(p, (uint16_t)n);
    memcpy(p + 2, s, n);
    return 2 + n;
}

static int write_map(dcpi_tracefile_t *w, const wmap_t *m)
{
    size_t li = strlen(m->id), ld = strlen(m->imagedir), lp = strlen(m->path);
    size_t len = DCPI_TF_MAP_FIXED + 6 + li + ld + lp;
    if (reserve(w, DCPI_TRACEFILE_RECHDR + len) < 0)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    uint8_t *b = w->rec + DCPI_TRACEFILE_RECHDR;
    dcpi__put_le32(b, m->pid);
    dcpi__put_le32(b + 4, 0);
    dcpi__put_le64(b + 8, m->start);
    dcpi__put_le64(b + 16, m->end);
    dcpi__put_le64(b + 24, m->delta);
    dcpi__put_le64(b + 32, m->tstart);
    dcpi__put_le64(b + 40, m->tsize);
    size_t o = DCPI_TF_MAP_FIXED;
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

/* The TRACE record of buf (pid, raw length, the bytes compressed when that pays) into w->rec:
 * its body length and flags. */
static int build_trace(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len, size_t *body,
                       unsigned *flags)
{
    size_t clen = try_compress(w, buf, len);
    *flags = clen ? DCPI_TRACEFILE_FLAG_ZLIB : 0;
    if (!clen) {
        if (reserve(w, DCPI_TRACEFILE_RECHDR + 8 + len) < 0)
            return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
        if (len)
            memcpy(w->rec + DCPI_TRACEFILE_RECHDR + 8, buf, len);
    }
    dcpi__put_le32(w->rec + DCPI_TRACEFILE_RECHDR, pid);
    dcpi__put_le32(w->rec + DCPI_TRACEFILE_RECHDR + 4, (uint32_t)len);
    *body = 8 + (clen ? clen : len);
    return 0;
}

static int emit_trace(dcpi_tracefile_t *w, unsigned flags, size_t body, size_t len)
{
    int rc = emit(w, DCPI_TRACEFILE_TRACE, flags, body, len);
    if (rc == 0) {
        w->st.traces++;
        w->st.compressed += flags != 0;
    }
    return rc;
}

/* The CLUSTER record of pid's n entries into w->crec: its body length, or 0 (ENOMEM). */
static size_t build_cluster(dcpi_tracefile_t *w, unsigned pid, const uint64_t *clusters, uint32_t n)
{
    size_t len = 8 + (size_t)n * DCPI_TF_CLUSTER_NUM;
    if (dcpi__grow((void **)&w->crec, &w->creccap, DCPI_TRACEFILE_RECHDR + len, 1) < 0)
        return 0;
    uint8_t *b = w->crec + DCPI_TRACEFILE_RECHDR;
    dcpi__put_le32(b, pid);
    dcpi__put_le32(b + 4, n);
    for (uint32_t i = 0; i < n; i++)
        dcpi__put_le64(b + 8 + (size_t)i * DCPI_TF_CLUSTER_NUM, clusters[i]);
    return len;
}

int dcpi_tracefile_trace_clustered(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len,
                                   const uint64_t *clusters, uint32_t n)
{
    if (!w || (!buf && len) || len > DCPI_TRACEFILE_MAXREC - 8 || (!clusters && n) ||
        n > (DCPI_TRACEFILE_MAXREC - 8) / DCPI_TF_CLUSTER_NUM)
        return DCPI_EINVAL;
    uint32_t any = 0;
    while (any < n && clusters[any] == 0)
        any++;
    int rc = flush_seen(w); /* nothing between a CLUSTER and its TRACE */
    if (rc < 0 && rc != DCPI_EFULL)
        return rc;
    size_t body = 0;
    unsigned flags = 0;
    if ((rc = build_trace(w, pid, buf, len, &body, &flags)) < 0)
        return rc;
    if (any == n)
        return emit_trace(w, flags, body, len);
    size_t cbody = build_cluster(w, pid, clusters, n);
    if (w->error)
        return w->error;
    if (!cbody)
        return werr(w, DCPI_ENOMEM, "%s: out of memory", w->path);
    if (!fits(w, 2 * DCPI_TRACEFILE_RECHDR + cbody + body, 0)) { /* the two, or neither */
        w->full = 1;
        w->st.refused += 2;
        w->st.refused_bytes += cbody + len;
        return DCPI_EFULL;
    }
    if ((rc = emit_at(w, w->crec, DCPI_TRACEFILE_CLUSTER, 0, cbody, cbody)) < 0)
        return rc;
    w->st.clusters++;
    return emit_trace(w, flags, body, len);
}

int dcpi_tracefile_trace(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len)
{
    return dcpi_tracefile_trace_clustered(w, pid, buf, len, NULL, 0);
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
    dcpi__put_le64(b, w->st.maps);
    dcpi__put_le64(b + 8, w->st.traces);
    dcpi__put_le64(b + 16, w->st.seen);
    dcpi__put_le64(b + 24, w->st.refused);
    dcpi__put_le64(b + 32, w->st.refused_bytes);
    return emit(w, DCPI_TRACEFILE_END, 0, DCPI_TF_TRAILER_BODY, 0);
}

int dcpi_tracefile_close(dcpi_tracefile_t *w, char *err)
{
    if (!w)
        return 0;
    flush_seen(w);
    write_trailer(w);
    if (close(w->fd) < 0)
        werr(w, dcpi__errno_code(errno), "%s: close: %s", w->path, strerror(errno));
    int rc = w->error;
    if (rc < 0)
        dcpi__errf(err, rc, "%s", w->errmsg);
    else if (w->st.refused)
        rc = dcpi__errf(err, DCPI_EFULL,
                        "%s: bound reached: %" PRIu64 " records (%" PRIu64 " bytes) not recorded",
                        w->path, w->st.refused, w->st.refused_bytes);
    for (size_t i = w->nmaps; i-- > 0;)
        drop_map(w, i);
    free(w->maps);
    free(w->rec);
    free(w->crec);
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
