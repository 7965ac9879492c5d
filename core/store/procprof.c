/*
 * procprof.c - "<event>.procs" files, per-process counts of one image (see procprof.h):
 * LEB128 encoding, parsing with full validation, atomic merge, and the appending writer of
 * version 2 (checksummed chunks, one per flush; compacted into one every
 * DCPI_PROCPROF_MAX_CHUNKS).
 */
#include "core/store/procprof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

#define MAGIC      "dcpiprocs 1\n"
#define MAGIC2     "dcpiprocs 2\n"
#define CHUNK_HEAD 8 /* payload length u32, crc32 of the payload u32 (little-endian) */

int dcpi_procprof_add(dcpi_procprof_t *p, uint32_t pid, const char *comm, uint32_t offset,
                      uint64_t count)
{
    if (dcpi__grow((void **)&p->e, &p->cap, p->n + 1, sizeof *p->e) < 0)
        return DCPI_ENOMEM;
    dcpi_procprof_entry_t *e = &p->e[p->n++];
    memset(e, 0, sizeof *e);
    e->pid = pid;
    e->offset = offset;
    e->count = count;
    strncpy(e->comm, comm ? comm : "?", DCPI_PROCPROF_COMMLEN - 1);
    for (char *c = e->comm; *c; c++)
        if (*c == '\n')
            *c = '?';
    if (!e->comm[0])
        e->comm[0] = '?';
    return 0;
}

static int key_cmp(const dcpi_procprof_entry_t *a, const dcpi_procprof_entry_t *b)
{
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return strcmp(a->comm, b->comm);
}

static int entry_cmp(const void *x, const void *y)
{
    const dcpi_procprof_entry_t *a = x, *b = y;
    int c = key_cmp(a, b);
    if (c)
        return c;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

void dcpi_procprof_normalize(dcpi_procprof_t *p)
{
    if (p->n == 0)
        return;
    qsort(p->e, p->n, sizeof *p->e, entry_cmp);
    size_t k = 0;
    for (size_t i = 1; i < p->n; i++) {
        if (entry_cmp(&p->e[k], &p->e[i]) == 0) {
            uint64_t s = p->e[k].count + p->e[i].count;
            p->e[k].count = s < p->e[k].count ? UINT64_MAX : s;
        } else {
            p->e[++k] = p->e[i];
        }
    }
    p->n = k + 1;
}

void dcpi_procprof_free(dcpi_procprof_t *p)
{
    free(p->e);
    *p = (dcpi_procprof_t){0};
}

/* ---- encoding ---------------------------------------------------------------------------- */

static size_t put_varint(unsigned char *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        out[n++] |= v ? 0x80 : 0;
    } while (v);
    return n;
}

int dcpi_procprof_encode(dcpi_procprof_t *p, unsigned char **buf, size_t *len)
{
    dcpi_procprof_normalize(p);
    /* bound: the magic, per entry two varints, per group pid, name and count */
    size_t cap = sizeof MAGIC + p->n * (20 + 10 + 1 + 15 + 10);
    unsigned char *b = malloc(cap), *o = b;
    if (!b)
        return DCPI_ENOMEM;
    memcpy(o, MAGIC, sizeof MAGIC - 1);
    o += sizeof MAGIC - 1;
    for (size_t i = 0; i < p->n;) {
        size_t j = i;
        while (j < p->n && key_cmp(&p->e[i], &p->e[j]) == 0)
            j++;
        size_t cl = strlen(p->e[i].comm);
        o += put_varint(o, p->e[i].pid);
        *o++ = (unsigned char)cl;
        memcpy(o, p->e[i].comm, cl);
        o += cl;
        o += put_varint(o, j - i);
        uint32_t prev = 0;
        for (size_t k = i; k < j; k++) {
            o += put_varint(o, p->e[k].offset - prev);
            o += put_varint(o, p->e[k].count);
            prev = p->e[k].offset;
        }
        i = j;
    }
    *buf = b;
    *len = (size_t)(o - b);
    return 0;
}

/* ---- parsing ----------------------------------------------------------------------------- */

typedef struct reader {
    const unsigned char *p, *end;
} reader_t;

static int get_varint(reader_t *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70 && r->p < r->end; shift += 7) {
        unsigned char c = *r->p++;
        if (shift == 63 && c > 1)
            return -1;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static int parse_group(reader_t *r, const char *name, dcpi_procprof_t *out, char *err)
{
    uint64_t pid, n, off = 0, d, count;
    if (get_varint(r, &pid) < 0 || pid > UINT32_MAX)
        return dcpi__errf(err, DCPI_EFORMAT, "%s: bad process id", name);
    size_t cl = r->p < r->end ? *r->p++ : 0;
    char comm[DCPI_PROCPROF_COMMLEN] = "";
    if (cl < 1 || cl >= DCPI_PROCPROF_COMMLEN || (size_t)(r->end - r->p) < cl ||
        memchr(r->p, 0, cl) || memchr(r->p, '\n', cl))
        return dcpi__errf(err, DCPI_EFORMAT, "%s: bad command name of pid %llu", name,
                          (unsigned long long)pid);
    memcpy(comm, r->p, cl);
    r->p += cl;
    if (get_varint(r, &n) < 0 || n == 0 || n > (uint64_t)(r->end - r->p) / 2)
        return dcpi__errf(err, DCPI_EFORMAT, "%s: bad entry count of pid %llu", name,
                          (unsigned long long)pid);
    for (uint64_t i = 0; i < n; i++) {
        if (get_varint(r, &d) < 0 || get_varint(r, &count) < 0)
            return dcpi__errf(err, DCPI_EFORMAT, "%s: truncated entries of pid %llu", name,
                              (unsigned long long)pid);
        if ((i > 0 && d == 0) || d > UINT32_MAX - off || count == 0)
            return dcpi__errf(err, DCPI_EFORMAT, "%s: bad entry %llu of pid %llu", name,
                              (unsigned long long)i, (unsigned long long)pid);
        off += d;
        if (dcpi_procprof_add(out, (uint32_t)pid, comm, (uint32_t)off, count) < 0)
            return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
    }
    return 0;
}

static int parse_groups(const unsigned char *p, const unsigned char *end, const char *name,
                        dcpi_procprof_t *out, char *err)
{
    reader_t r = {p, end};
    while (r.p < r.end) {
        int rc = parse_group(&r, name, out, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The end of the last whole chunk of a version 2 body [p, end) and how many there are: a chunk
 * that runs past the end is an unfinished append (a writer killed in it). */
static const unsigned char *whole_chunks(const unsigned char *p, const unsigned char *end,
                                         size_t *n)
{
    *n = 0;
    while ((size_t)(end - p) >= CHUNK_HEAD && le32(p) <= (size_t)(end - p) - CHUNK_HEAD) {
        p += CHUNK_HEAD + le32(p);
        ++*n;
    }
    return p;
}

static int parse_v2(const unsigned char *file, const unsigned char *p, const unsigned char *end,
                    const char *name, dcpi_procprof_t *out, char *err)
{
    size_t n;
    const unsigned char *whole = whole_chunks(p, end, &n);
    for (size_t i = 0; i < n; i++) {
        uint32_t len = le32(p);
        if (crc32(0L, p + CHUNK_HEAD, len) != le32(p + 4))
            return dcpi__errf(err, DCPI_EFORMAT, "%s: chunk at offset %zu: bad checksum", name,
                              (size_t)(p - file));
        int rc = parse_groups(p + CHUNK_HEAD, p + CHUNK_HEAD + len, name, out, err);
        if (rc < 0)
            return rc;
        p += CHUNK_HEAD + len;
    }
    out->torn += (size_t)(end - whole);
    return 0;
}

int dcpi_procprof_parse(const void *buf, size_t len, const char *name, dcpi_procprof_t *out,
                        char *err)
{
    const unsigned char *b = buf, *end = b + len;
    size_t ml = sizeof MAGIC - 1;
    if (len >= ml && memcmp(buf, MAGIC, ml) == 0)
        return parse_groups(b + ml, end, name, out, err);
    if (len >= ml && memcmp(buf, MAGIC2, ml) == 0)
        return parse_v2(b, b + ml, end, name, out, err);
    return dcpi__errf(err, DCPI_EFORMAT, "%s: not a dcpi per-process profile", name);
}

int dcpi_procprof_read(const char *path, dcpi_procprof_t *out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi_procprof_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- version 2: appending ------------------------------------------------------------- */

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* p (normalized) as one chunk, with the file's magic in front when magic is set. */
static int encode_chunk(dcpi_procprof_t *p, int magic, unsigned char **buf, size_t *len)
{
    unsigned char *v1 = NULL;
    size_t n1 = 0, ml = sizeof MAGIC - 1;
    int rc = dcpi_procprof_encode(p, &v1, &n1);
    if (rc < 0)
        return rc;
    size_t body = n1 - ml, head = magic ? ml : 0;
    if (body > UINT32_MAX) {
        free(v1);
        return DCPI_ERANGE;
    }
    unsigned char *b = malloc(head + CHUNK_HEAD + body + 1);
    if (!b) {
        free(v1);
        return DCPI_ENOMEM;
    }
    memcpy(b, MAGIC2, head);
    put_le32(b + head, (uint32_t)body);
    put_le32(b + head + 4, (uint32_t)crc32(0L, v1 + ml, (uInt)body));
    memcpy(b + head + CHUNK_HEAD, v1 + ml, body);
    free(v1);
    *buf = b;
    *len = head + CHUNK_HEAD + body;
    return 0;
}

/* The file rewritten (atomically) with its counts and p's added: in version 1, or in version 2
 * as one chunk holding its whole chunks and p. */
static int merge_rewrite(const char *path, dcpi_procprof_t *p, int v2, char *err)
{
    dcpi_procprof_t all = {0};
    int rc = dcpi_procprof_read(path, &all, err);
    if (rc < 0 && rc != DCPI_ENOENT)
        goto out;
    rc = 0;
    for (size_t i = 0; i < p->n && rc == 0; i++)
        rc = dcpi_procprof_add(&all, p->e[i].pid, p->e[i].comm, p->e[i].offset, p->e[i].count);
    unsigned char *buf = NULL;
    size_t len = 0;
    if (rc == 0)
        rc = v2 ? encode_chunk(&all, 1, &buf, &len) : dcpi_procprof_encode(&all, &buf, &len);
    if (rc < 0) {
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
        goto out;
    }
    rc = dcpi__write_atomic(path, buf, len, err);
    free(buf);
out:
    dcpi_procprof_free(&all);
    return rc;
}

int dcpi_procprof_merge_write(const char *path, dcpi_procprof_t *p, char *err)
{
    return merge_rewrite(path, p, 0, err);
}

static int compact(const char *path, dcpi_procprof_t *p, char *err)
{
    return merge_rewrite(path, p, 1, err);
}

/* Where the next chunk of the open version 2 file fd (size bytes) goes: after its last whole
 * chunk (the chunk headers walked with pread); *n chunks. DCPI_EFORMAT when it is no version 2
 * file (version 1: rewritten by the caller). */
static int append_point(int fd, uint64_t size, uint64_t *at, size_t *n)
{
    unsigned char h[CHUNK_HEAD], m[sizeof MAGIC2];
    size_t ml = sizeof MAGIC2 - 1;
    if (size < ml || pread(fd, m, ml, 0) != (ssize_t)ml || memcmp(m, MAGIC2, ml) != 0)
        return DCPI_EFORMAT;
    uint64_t off = ml;
    *n = 0;
    while (size - off >= CHUNK_HEAD && pread(fd, h, CHUNK_HEAD, (off_t)off) == CHUNK_HEAD &&
           le32(h) <= size - off - CHUNK_HEAD) {
        off += CHUNK_HEAD + le32(h);
        ++*n;
    }
    *at = off;
    return 0;
}

int dcpi_procprof_append(const char *path, dcpi_procprof_t *p, uint64_t *torn, char *err)
{
    *torn = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", path, strerror(errno));
    struct stat st;
    uint64_t at = 0;
    size_t chunks = 0;
    if (fd < 0 || fstat(fd, &st) < 0 || append_point(fd, (uint64_t)st.st_size, &at, &chunks) < 0 ||
        chunks >= DCPI_PROCPROF_MAX_CHUNKS) {
        if (fd >= 0) /* new, version 1, or enough chunks: one chunk, written whole */
            close(fd);
        return compact(path, p, err);
    }
    *torn = (uint64_t)st.st_size - at; /* an append a killed writer left unfinished */
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = encode_chunk(p, 0, &buf, &len);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    else if (*torn && ftruncate(fd, (off_t)at) < 0)
        rc = dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", path, strerror(errno));
    else
        rc = dcpi__write_at(path, fd, at, buf, len, err);
    free(buf);
    close(fd);
    return rc;
}
