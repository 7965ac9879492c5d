/*
 * vprof.c - value-profile files (.vprof): the in-memory profile (header lines plus a map from
 * instruction offset to its hotlist summary), parsing with full validation, encoding, atomic
 * write and merge. The header grammar is core/store/header.c, shared with PC profiles. Reads
 * vpdb-0.01 and vpdb-0.02 (records with the cluster counters); writes 0.02 only when a written
 * record has cluster information, so files without it stay byte-identical 0.01.
 *
 * Summaries live in an open-addressing hash keyed by offset; a sorted array of (offset,
 * summary) is kept alongside with room for every entry, valid while offsets are added in
 * increasing order and rebuilt by one sort (no allocation) otherwise.
 * One file (~700 lines): the file format's parse, encode and merge share the in-memory table.
 */
#include "core/store/vprof.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

#define REC_HEAD   32 /* offset u32, nv u32, vtot u64, seen u64, err u64 */
#define CLUSTERS   32 /* vpdb-0.02, after err: clusters, chits, csq, cagree: u64 each */
#define ENTRY_SIZE 32 /* value, context0, context1, count: u64 each */
#define FOOTER     24 /* nrecords u32, pad u32, total_vtot u64, total_seen u64 */

/* oracle-*: the oracle's windows (its twins' profiles, core/values/oracle.c), summed when
 * merged */
static const dcpi_hdr_key_t known_keys[] = {
    {"image", DCPI_HDR_HEX, true},
    {"epoch", DCPI_HDR_EPOCH, true},
    {"platform", DCPI_HDR_ANY, true},
    {"event", DCPI_HDR_ANY, true},
    {"period", DCPI_HDR_DIGITS, true},
    {"tstart", DCPI_HDR_ADDR, true},
    {"tsize", DCPI_HDR_DIGITS, true},
    {"cpuspeed", DCPI_HDR_DIGITS, true},
    {"vprof", DCPI_HDR_NAME, true},
    {"hotsize", DCPI_HDR_DIGITS, true},
    {"contexts", DCPI_HDR_BIT, true},
    {"path", DCPI_HDR_ANY, false},
    {"lost", DCPI_HDR_DIGITS, false},
    {"cpucount", DCPI_HDR_DIGITS, false},
    {"cpuamask", DCPI_HDR_HEX, false},
    {"cpuimplv", DCPI_HDR_DIGITS, false},
    {"backend", DCPI_HDR_NAME, false},
    {"oracle-windows", DCPI_HDR_DIGITS, false},
    {"oracle-execs", DCPI_HDR_DIGITS, false},
    {"oracle-sumsq", DCPI_HDR_DIGITS, false},
    {"oracle-all", DCPI_HDR_BIT, false},
};

/* Reads 0.01 and 0.02; encode writes with a copy naming the version it picks. */
static const dcpi_hdr_spec_t spec = {DCPI_VPROF_VERSION, "vpdb-", known_keys,
                                     sizeof(known_keys) / sizeof(known_keys[0]),
                                     DCPI_VPROF_VERSION_CLUSTERS};

struct vent {
    uint32_t offset;
    dcpi_vsummary_t *s; /* NULL: free slot */
};

struct dcpi_vprof {
    dcpi_hdr_t hdr;
    unsigned hotsize;
    struct vent *slots; /* hash; nslots is 0 or a power of two */
    size_t nslots, nused;
    struct vent *sorted; /* room for nslots entries */
    size_t nsorted;
    bool stale;
    char *marks; /* dcpi_vprof_add_marks: "0xOFF REASON\n" lines, or NULL */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- object ------------------------------------------------------------------------------ */

static dcpi_vprof_t *vprof_alloc(unsigned hotsize)
{
    dcpi_vprof_t *vp = calloc(1, sizeof(*vp));
    if (vp)
        vp->hotsize = hotsize;
    return vp;
}

int dcpi_vprof_new(unsigned hotsize, dcpi_vprof_t **out)
{
    if (!out)
        return DCPI_EINVAL;
    if (hotsize == 0)
        hotsize = DCPI_VSUMMARY_DEFAULT_CAP;
    if (hotsize > DCPI_VSUMMARY_MAX_CAP)
        return DCPI_EINVAL;
    dcpi_vprof_t *vp = vprof_alloc(hotsize);
    char text[16];
    snprintf(text, sizeof(text), "%u", hotsize);
    if (!vp || dcpi__hdr_append(&vp->hdr, "hotsize", text) < 0) {
        dcpi_vprof_free(vp);
        return DCPI_ENOMEM;
    }
    *out = vp;
    return 0;
}

void dcpi_vprof_free(dcpi_vprof_t *vp)
{
    if (!vp)
        return;
    for (size_t i = 0; i < vp->nslots; i++)
        free(vp->slots[i].s);
    free(vp->slots);
    free(vp->sorted);
    free(vp->marks);
    dcpi__hdr_free(&vp->hdr);
    free(vp);
}

int dcpi_vprof_add_marks(dcpi_vprof_t *vp, const char *text, size_t len)
{
    if (!vp || (!text && len))
        return DCPI_EINVAL;
    size_t old = vp->marks ? strlen(vp->marks) : 0;
    int nl = len && text[len - 1] != '\n';
    char *m = realloc(vp->marks, old + len + (size_t)nl + 1);
    if (!m)
        return DCPI_ENOMEM;
    memcpy(m + old, text, len);
    if (nl)
        m[old + len] = '\n';
    m[old + len + (size_t)nl] = '\0';
    vp->marks = m;
    return 0;
}

const char *dcpi_vprof_marks(const dcpi_vprof_t *vp)
{
    return vp && vp->marks && vp->marks[0] ? vp->marks : NULL;
}

int dcpi_vprof_set(dcpi_vprof_t *vp, const char *key, const char *value)
{
    if (!vp || !key || !value)
        return DCPI_EINVAL;
    if (strcmp(key, "hotsize") == 0) {
        char text[16];
        snprintf(text, sizeof(text), "%u", vp->hotsize);
        if (strcmp(value, text) != 0)
            return DCPI_EINVAL;
    }
    return dcpi__hdr_set(&vp->hdr, &spec, key, value);
}

const char *dcpi_vprof_get(const dcpi_vprof_t *vp, const char *key)
{
    return vp ? dcpi__hdr_get(&vp->hdr, key) : NULL;
}

size_t dcpi_vprof_nlines(const dcpi_vprof_t *vp)
{
    return vp ? vp->hdr.n : 0;
}

void dcpi_vprof_line(const dcpi_vprof_t *vp, size_t i, const char **key, const char **value)
{
    bool ok = vp && i < vp->hdr.n;
    if (key)
        *key = ok ? vp->hdr.lines[i].key : NULL;
    if (value)
        *value = ok ? vp->hdr.lines[i].value : NULL;
}

unsigned dcpi_vprof_hotsize(const dcpi_vprof_t *vp)
{
    return vp ? vp->hotsize : 0;
}

/* ---- offset map -------------------------------------------------------------------------- */

static struct vent *lookup(const dcpi_vprof_t *vp, uint32_t offset)
{
    if (!vp->nslots)
        return NULL;
    size_t mask = vp->nslots - 1;
    for (size_t i = (size_t)((offset * 0x9E3779B97F4A7C15ULL) >> 32) & mask;; i = (i + 1) & mask)
        if (!vp->slots[i].s || vp->slots[i].offset == offset)
            return &vp->slots[i];
}

static int grow(dcpi_vprof_t *vp)
{
    size_t nn = vp->nslots ? vp->nslots * 2 : 64;
    struct vent *old = vp->slots, *ns = calloc(nn, sizeof(*ns));
    struct vent *sorted = reallocarray(vp->sorted, nn, sizeof(*sorted));
    if (!ns || !sorted) {
        free(ns);
        if (sorted)
            vp->sorted = sorted;
        return DCPI_ENOMEM;
    }
    vp->sorted = sorted;
    size_t oldn = vp->nslots;
    vp->slots = ns;
    vp->nslots = nn;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].s)
            *lookup(vp, old[i].offset) = old[i];
    free(old);
    return 0;
}

dcpi_vsummary_t *dcpi_vprof_at(dcpi_vprof_t *vp, uint32_t offset, int create)
{
    if (!vp)
        return NULL;
    struct vent *v = lookup(vp, offset);
    if (v && v->s)
        return v->s;
    if (!create)
        return NULL;
    if ((vp->nused + 1) * 2 > vp->nslots && grow(vp) < 0)
        return NULL;
    dcpi_vsummary_t *s = dcpi_vsummary_new(vp->hotsize);
    if (!s)
        return NULL;
    v = lookup(vp, offset);
    *v = (struct vent){offset, s};
    vp->nused++;
    if (!vp->stale && vp->nsorted && vp->sorted[vp->nsorted - 1].offset > offset)
        vp->stale = true;
    else if (!vp->stale)
        vp->sorted[vp->nsorted++] = *v;
    return s;
}

static int vent_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct vent *)a)->offset, y = ((const struct vent *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Rebuild the sorted view (room was reserved by grow). Logically const. */
static void refresh(const dcpi_vprof_t *cvp)
{
    dcpi_vprof_t *vp = (dcpi_vprof_t *)cvp;
    if (!vp->stale)
        return;
    vp->nsorted = 0;
    for (size_t i = 0; i < vp->nslots; i++)
        if (vp->slots[i].s)
            vp->sorted[vp->nsorted++] = vp->slots[i];
    qsort(vp->sorted, vp->nsorted, sizeof(*vp->sorted), vent_cmp);
    vp->stale = false;
}

size_t dcpi_vprof_count(const dcpi_vprof_t *vp)
{
    return vp ? vp->nused : 0;
}

void dcpi_vprof_entry(const dcpi_vprof_t *vp, size_t i, uint32_t *offset, const dcpi_vsummary_t **s)
{
    bool ok = vp && i < vp->nused;
    if (ok)
        refresh(vp);
    if (offset)
        *offset = ok ? vp->sorted[i].offset : 0;
    if (s)
        *s = ok ? vp->sorted[i].s : NULL;
}

/* ---- parsing ----------------------------------------------------------------------------- */

struct parser {
    const char *name;
    char *err;
    dcpi_vprof_t *vp;
    dcpi_ventry_t *scratch; /* hotsize entries, for the duplicate check */
    size_t head;            /* record head size: REC_HEAD, + CLUSTERS in 0.02 */
    bool have_prev;
    uint32_t prev;
    uint64_t nrecords, vtot, seen;
    uint64_t nclustered; /* records with chits > 0 */
};

/* "NAME: reason" into the parser's err; returns code. */
#define perr(ps, code, fmt, ...)                                                                   \
    dcpi__errf((ps)->err, (code), "%s: " fmt, (ps)->name, ##__VA_ARGS__)

static int key_qcmp(const void *a, const void *b)
{
    return dcpi_vsummary_key_cmp(a, b);
}

/* Checks that need only the record head at b (rem bytes left, footer included). */
static int check_head(struct parser *ps, const unsigned char *b, size_t rem)
{
    uint32_t off = dcpi__get_le32(b), nv = dcpi__get_le32(b + 4);
    if (ps->have_prev && off <= ps->prev)
        return perr(ps, DCPI_EFORMAT, "record at offset 0x%x not after record at 0x%x", off,
                    ps->prev);
    if (nv > ps->vp->hotsize)
        return perr(ps, DCPI_EFORMAT, "record at offset 0x%x has %u values, hotsize is %u", off, nv,
                    ps->vp->hotsize);
    if ((uint64_t)rem < ps->head + (uint64_t)ENTRY_SIZE * nv + FOOTER)
        return perr(ps, DCPI_ETRUNC, "record at offset 0x%x (%u values) is truncated", off, nv);
    return 0;
}

static void load_entries(dcpi_vsummary_t *s, const unsigned char *b, uint32_t nv)
{
    for (uint32_t i = 0; i < nv; i++, b += ENTRY_SIZE)
        s->e[i] = (dcpi_ventry_t){dcpi__get_le64(b), dcpi__get_le64(b + 8), dcpi__get_le64(b + 16),
                                  dcpi__get_le64(b + 24)};
    s->n = nv;
}

/* Entries: counts > 0, count descending then key ascending, no key twice, and the lower
 * bounds (count - err) of the listed keys cannot exceed vtot. */
static int check_entries(struct parser *ps, uint32_t off, const dcpi_vsummary_t *s)
{
    uint64_t lower = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        const dcpi_ventry_t *e = &s->e[i], *p = i ? &s->e[i - 1] : NULL;
        if (e->count == 0)
            return perr(ps, DCPI_EFORMAT, "record at offset 0x%x: value %u has count 0", off, i);
        if (p &&
            (p->count < e->count || (p->count == e->count && dcpi_vsummary_key_cmp(p, e) >= 0)))
            return perr(ps, DCPI_EFORMAT, "record at offset 0x%x: value %u out of order", off, i);
        lower = sat_add(lower, e->count > s->err ? e->count - s->err : 0);
    }
    if (lower > s->vtot)
        return perr(ps, DCPI_EFORMAT,
                    "record at offset 0x%x: counts (%llu above err) exceed vtot %llu", off,
                    (unsigned long long)lower, (unsigned long long)s->vtot);
    memcpy(ps->scratch, s->e, s->n * sizeof(s->e[0]));
    qsort(ps->scratch, s->n, sizeof(s->e[0]), key_qcmp);
    for (uint32_t i = 1; i < s->n; i++)
        if (dcpi_vsummary_key_cmp(&ps->scratch[i - 1], &ps->scratch[i]) == 0)
            return perr(ps, DCPI_EFORMAT, "record at offset 0x%x: value 0x%llx listed twice", off,
                        (unsigned long long)ps->scratch[i].value);
    return 0;
}

/* Whether s's cluster counters break the rules of vsummary.h (with chits > 0:
 * 1 <= clusters <= chits <= vtot, chits <= cagree <= csq; else all 0); why gets the reason. */
static bool cluster_fault(const dcpi_vsummary_t *s, char *why, size_t len)
{
    unsigned long long k = s->clusters, n = s->chits, q = s->csq, d = s->cagree, v = s->vtot;
    if (n == 0 && (k || q || d))
        snprintf(why, len, "chits 0 but clusters %llu, csq %llu, cagree %llu", k, q, d);
    else if (n > 0 && k == 0)
        snprintf(why, len, "chits %llu in 0 clusters", n);
    else if (k > n)
        snprintf(why, len, "clusters %llu > chits %llu", k, n);
    else if (n > v)
        snprintf(why, len, "chits %llu > vtot %llu", n, v);
    else if (n > d)
        snprintf(why, len, "chits %llu > cagree %llu", n, d);
    else if (d > q)
        snprintf(why, len, "cagree %llu > csq %llu", d, q);
    else
        return false;
    return true;
}

/* The cluster counters of a 0.02 record head at b. */
static int read_clusters(struct parser *ps, uint32_t off, dcpi_vsummary_t *s,
                         const unsigned char *b)
{
    s->clusters = dcpi__get_le64(b + REC_HEAD);
    s->chits = dcpi__get_le64(b + REC_HEAD + 8);
    s->csq = dcpi__get_le64(b + REC_HEAD + 16);
    s->cagree = dcpi__get_le64(b + REC_HEAD + 24);
    char why[160];
    if (cluster_fault(s, why, sizeof why))
        return perr(ps, DCPI_EFORMAT, "record at offset 0x%x: %s", off, why);
    ps->nclustered += s->chits > 0;
    return 0;
}

/* Read the record at b (check_head passed); returns its size or a negative code. */
static long read_record(struct parser *ps, const unsigned char *b)
{
    uint32_t off = dcpi__get_le32(b), nv = dcpi__get_le32(b + 4);
    dcpi_vsummary_t *s = dcpi_vprof_at(ps->vp, off, 1);
    if (!s)
        return perr(ps, DCPI_ENOMEM, "out of memory");
    s->vtot = dcpi__get_le64(b + 8);
    s->seen = dcpi__get_le64(b + 16);
    s->err = dcpi__get_le64(b + 24);
    if (s->seen < s->vtot)
        return perr(ps, DCPI_EFORMAT, "record at offset 0x%x: seen %llu < vtot %llu", off,
                    (unsigned long long)s->seen, (unsigned long long)s->vtot);
    int rc = ps->head > REC_HEAD ? read_clusters(ps, off, s, b) : 0;
    if (rc < 0)
        return rc;
    load_entries(s, b + ps->head, nv);
    rc = check_entries(ps, off, s);
    if (rc < 0)
        return rc;
    ps->have_prev = true;
    ps->prev = off;
    ps->nrecords++;
    ps->vtot = sat_add(ps->vtot, s->vtot);
    ps->seen = sat_add(ps->seen, s->seen);
    return (long)ps->head + (long)ENTRY_SIZE * nv;
}

static bool footer_matches(const struct parser *ps, const unsigned char *b)
{
    return dcpi__get_le32(b) == ps->nrecords && dcpi__get_le32(b + 4) == 0 &&
           dcpi__get_le64(b + 8) == ps->vtot && dcpi__get_le64(b + 16) == ps->seen;
}

static int parse_body(struct parser *ps, const unsigned char *b, size_t len)
{
    size_t pos = 0;
    while (len - pos > FOOTER) {
        int rc = check_head(ps, b + pos, len - pos);
        if (rc < 0 && footer_matches(ps, b + pos))
            return perr(ps, DCPI_EFORMAT, "%zu trailing bytes after the footer",
                        len - pos - FOOTER);
        if (rc < 0)
            return rc;
        long n = read_record(ps, b + pos);
        if (n < 0)
            return (int)n;
        pos += (size_t)n;
    }
    if (len - pos < FOOTER)
        return perr(ps, DCPI_ETRUNC, "footer truncated (%zu of %d bytes)", len - pos, FOOTER);
    if (!footer_matches(ps, b + pos))
        return perr(ps, DCPI_EFORMAT,
                    "footer says %u records/pad %u/vtot %llu/seen %llu, records hold "
                    "%llu/0/%llu/%llu",
                    dcpi__get_le32(b + pos), dcpi__get_le32(b + pos + 4),
                    (unsigned long long)dcpi__get_le64(b + pos + 8),
                    (unsigned long long)dcpi__get_le64(b + pos + 16),
                    (unsigned long long)ps->nrecords, (unsigned long long)ps->vtot,
                    (unsigned long long)ps->seen);
    return 0;
}

static int parse_hotsize(struct parser *ps, const dcpi_hdr_t *h, unsigned *out)
{
    uint64_t k = 0;
    if (dcpi__hdr_get_u64(h, "hotsize", &k) < 0 || k == 0 || k > DCPI_VSUMMARY_MAX_CAP)
        return perr(ps, DCPI_EFORMAT, "hotsize %s is not in 1..%d", dcpi__hdr_get(h, "hotsize"),
                    DCPI_VSUMMARY_MAX_CAP);
    *out = (unsigned)k;
    return 0;
}

int dcpi_vprof_parse(const void *buf, size_t len, const char *name, dcpi_vprof_t **out, char *err)
{
    struct parser ps = {.name = name ? name : "(value profile)", .err = err};
    if (!out || (!buf && len))
        return perr(&ps, DCPI_EINVAL, "invalid argument");
    dcpi_hdr_t h = {0};
    size_t body = 0;
    unsigned hotsize = 0;
    int rc = dcpi__hdr_parse(&spec, buf, len, ps.name, &h, &body, err);
    if (rc < 0 || (rc = parse_hotsize(&ps, &h, &hotsize)) < 0)
        goto fail_hdr;
    ps.vp = vprof_alloc(hotsize);
    ps.scratch = malloc(hotsize * sizeof(*ps.scratch));
    if (!ps.vp || !ps.scratch) {
        rc = perr(&ps, DCPI_ENOMEM, "out of memory");
        goto fail;
    }
    ps.vp->hdr = h;
    h = (dcpi_hdr_t){0};
    ps.head = strcmp(dcpi_vprof_get(ps.vp, "version"), DCPI_VPROF_VERSION_CLUSTERS) == 0
                  ? REC_HEAD + CLUSTERS
                  : REC_HEAD;
    rc = parse_body(&ps, (const unsigned char *)buf + body, len - body);
    if (rc == 0 && ps.head > REC_HEAD && ps.nclustered == 0)
        rc = perr(&ps, DCPI_EFORMAT,
                  "%s but no record has cluster counters (such a file is written as %s)",
                  DCPI_VPROF_VERSION_CLUSTERS, DCPI_VPROF_VERSION);
    if (rc < 0)
        goto fail;
    free(ps.scratch);
    *out = ps.vp;
    return 0;
fail:
    free(ps.scratch);
    dcpi_vprof_free(ps.vp);
fail_hdr:
    dcpi__hdr_free(&h);
    return rc;
}

int dcpi_vprof_read(const char *path, dcpi_vprof_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi_vprof_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static bool is_empty(const dcpi_vsummary_t *s)
{
    return s->n == 0 && s->vtot == 0 && s->seen == 0;
}

/* Whether a written record has cluster information (the file is then 0.02). */
static bool has_clusters(const dcpi_vprof_t *vp)
{
    for (size_t i = 0; i < vp->nsorted; i++)
        if (!is_empty(vp->sorted[i].s) && vp->sorted[i].s->chits > 0)
            return true;
    return false;
}

/* DCPI_EINVAL when a written record's cluster counters would not read back. */
static int check_clusters(const dcpi_vprof_t *vp, char *err)
{
    char why[160];
    for (size_t i = 0; i < vp->nsorted; i++)
        if (!is_empty(vp->sorted[i].s) && cluster_fault(vp->sorted[i].s, why, sizeof why))
            return dcpi__errf(err, DCPI_EINVAL, "value profile: record at offset 0x%x: %s",
                              vp->sorted[i].offset, why);
    return 0;
}

static size_t body_size(const dcpi_vprof_t *vp, size_t head)
{
    size_t n = FOOTER;
    for (size_t i = 0; i < vp->nsorted; i++)
        if (!is_empty(vp->sorted[i].s))
            n += head + (size_t)ENTRY_SIZE * vp->sorted[i].s->n;
    return n;
}

/* One record (with the cluster counters when clusters); entries sorted through scratch (a
 * summary with room for s->n). */
static unsigned char *put_record(unsigned char *b, uint32_t off, const dcpi_vsummary_t *s,
                                 bool clusters, dcpi_vsummary_t *scratch)
{
    memcpy(scratch->e, s->e, s->n * sizeof(s->e[0]));
    scratch->n = s->n;
    dcpi_vsummary_sort(scratch);
    b = dcpi__put_le32(b, off);
    b = dcpi__put_le32(b, s->n);
    b = dcpi__put_le64(b, s->vtot);
    b = dcpi__put_le64(b, s->seen);
    b = dcpi__put_le64(b, s->err);
    if (clusters) {
        b = dcpi__put_le64(b, s->clusters);
        b = dcpi__put_le64(b, s->chits);
        b = dcpi__put_le64(b, s->csq);
        b = dcpi__put_le64(b, s->cagree);
    }
    for (uint32_t i = 0; i < s->n; i++) {
        b = dcpi__put_le64(b, scratch->e[i].value);
        b = dcpi__put_le64(b, scratch->e[i].context0);
        b = dcpi__put_le64(b, scratch->e[i].context1);
        b = dcpi__put_le64(b, scratch->e[i].count);
    }
    return b;
}

static void encode_body(const dcpi_vprof_t *vp, unsigned char *b, bool clusters,
                        dcpi_vsummary_t *scratch)
{
    uint64_t nrec = 0, vtot = 0, seen = 0;
    for (size_t i = 0; i < vp->nsorted; i++) {
        const dcpi_vsummary_t *s = vp->sorted[i].s;
        if (is_empty(s))
            continue;
        b = put_record(b, vp->sorted[i].offset, s, clusters, scratch);
        nrec++;
        vtot = sat_add(vtot, s->vtot);
        seen = sat_add(seen, s->seen);
    }
    b = dcpi__put_le32(b, (uint32_t)nrec);
    b = dcpi__put_le32(b, 0);
    b = dcpi__put_le64(b, vtot);
    dcpi__put_le64(b, seen);
}

static unsigned max_n(const dcpi_vprof_t *vp)
{
    unsigned m = 1;
    for (size_t i = 0; i < vp->nsorted; i++)
        if (vp->sorted[i].s->n > m)
            m = vp->sorted[i].s->n;
    return m;
}

int dcpi_vprof_encode(const dcpi_vprof_t *vp, void **buf, size_t *len, char *err)
{
    if (!vp || !buf || !len)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_vprof_encode: invalid argument");
    int rc = dcpi__hdr_check_required(&spec, &vp->hdr, "value profile", err);
    if (rc < 0)
        return rc;
    if (vp->nused > UINT32_MAX)
        return dcpi__errf(err, DCPI_ERANGE, "value profile: too many records");
    refresh(vp);
    if ((rc = check_clusters(vp, err)) < 0)
        return rc;
    bool clusters = has_clusters(vp);
    dcpi_hdr_spec_t out_spec = spec; /* the version written */
    out_spec.version = clusters ? DCPI_VPROF_VERSION_CLUSTERS : DCPI_VPROF_VERSION;
    size_t hsize = dcpi__hdr_size(&out_spec, &vp->hdr);
    size_t bsize = body_size(vp, clusters ? REC_HEAD + CLUSTERS : REC_HEAD);
    char *out = malloc(hsize + bsize + 1); /* + 1: sprintf's NUL */
    dcpi_vsummary_t *scratch = dcpi_vsummary_new(max_n(vp));
    if (!out || !scratch) {
        free(out);
        free(scratch);
        return dcpi__errf(err, DCPI_ENOMEM, "value profile: out of memory");
    }
    size_t h = dcpi__hdr_encode(&out_spec, &vp->hdr, out);
    encode_body(vp, (unsigned char *)out + h, clusters, scratch);
    free(scratch);
    *buf = out;
    *len = h + bsize;
    return 0;
}

int dcpi_vprof_write(const char *path, const dcpi_vprof_t *vp, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    if (!path)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_vprof_write: no path");
    int rc = dcpi_vprof_encode(vp, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi__write_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

/* ---- merging ----------------------------------------------------------------------------- */

/* Whether a and b agree on key (absent on either side agrees); hex keys compare by value. */
static bool agree(const dcpi_vprof_t *a, const dcpi_vprof_t *b, const char *key)
{
    const char *x = dcpi_vprof_get(a, key), *y = dcpi_vprof_get(b, key);
    uint64_t u, v;
    if (!x || !y)
        return true;
    if (strcmp(key, "image") == 0 || strcmp(key, "tstart") == 0)
        return dcpi__hdr_get_hex(&a->hdr, key, &u) == 0 && dcpi__hdr_get_hex(&b->hdr, key, &v) == 0
                   ? u == v
                   : strcasecmp(x, y) == 0;
    return strcmp(x, y) == 0;
}

static const char *const agree_keys[] = {"vprof", "image", "tstart", "contexts"};
#define NAGREE (sizeof(agree_keys) / sizeof(agree_keys[0]))

/* The oracle's windows of two profiles: counts summed; "every execution" (oracle-all 1) only
 * when both say so (a profile without the keys is one of windows not said: 0). */
static int merge_oracle_windows(dcpi_vprof_t *dst, const dcpi_vprof_t *src)
{
    static const char *const sum_keys[] = {"oracle-windows", "oracle-execs", "oracle-sumsq"};
    const char *a = dcpi_vprof_get(dst, "oracle-all"), *b = dcpi_vprof_get(src, "oracle-all");
    if (!a && !b)
        return 0;
    int rc =
        dcpi_vprof_set(dst, "oracle-all", a && b && !strcmp(a, "1") && !strcmp(b, "1") ? "1" : "0");
    for (size_t i = 0; i < sizeof sum_keys / sizeof sum_keys[0] && rc == 0; i++) {
        uint64_t x = 0, y = 0;
        const char *u = dcpi_vprof_get(dst, sum_keys[i]), *v = dcpi_vprof_get(src, sum_keys[i]);
        x = u ? strtoull(u, NULL, 10) : 0;
        y = v ? strtoull(v, NULL, 10) : 0;
        char num[32];
        snprintf(num, sizeof num, "%llu", (unsigned long long)sat_add(x, y));
        rc = dcpi_vprof_set(dst, sum_keys[i], num);
    }
    return rc;
}

int dcpi_vprof_merge(dcpi_vprof_t *dst, const dcpi_vprof_t *src)
{
    if (!dst || !src || dst == src)
        return DCPI_EINVAL;
    for (size_t i = 0; i < NAGREE; i++)
        if (!agree(dst, src, agree_keys[i]))
            return DCPI_EINVAL;
    /* values of two backends in one hotlist: say so instead of keeping the first one's name */
    const char *b1 = dcpi_vprof_get(dst, "backend"), *b2 = dcpi_vprof_get(src, "backend");
    int mixed = b1 && b2 && strcmp(b1, b2) != 0;
    int rc = merge_oracle_windows(dst, src);
    rc = rc ? rc : dcpi__hdr_merge(&spec, &dst->hdr, &src->hdr);
    if (rc == 0 && mixed)
        rc = dcpi_vprof_set(dst, "backend", "mixed");
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < src->nused; i++) {
        uint32_t off;
        const dcpi_vsummary_t *s;
        dcpi_vprof_entry(src, i, &off, &s);
        dcpi_vsummary_t *d = dcpi_vprof_at(dst, off, 1);
        if (!d)
            return DCPI_ENOMEM;
        if ((rc = dcpi_vsummary_merge(d, s)) < 0)
            return rc;
    }
    return src->marks ? dcpi_vprof_add_marks(dst, src->marks, strlen(src->marks)) : 0;
}

int dcpi_vprof_merge_write(const char *path, const dcpi_vprof_t *vp, char *err)
{
    if (!path || !vp)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_vprof_merge_write: invalid argument");
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc == DCPI_ENOENT)
        return dcpi_vprof_write(path, vp, err);
    if (rc < 0)
        return rc;
    dcpi_vprof_t *old = NULL;
    rc = dcpi_vprof_parse(buf, len, path, &old, err);
    free(buf);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < NAGREE; i++) {
        const char *k = agree_keys[i], *a = dcpi_vprof_get(old, k), *b = dcpi_vprof_get(vp, k);
        if (!b)
            rc = dcpi__errf(err, DCPI_EINVAL, "%s: new value profile has no \"%s\"", path, k);
        else if (!agree(old, vp, k))
            rc = dcpi__errf(err, DCPI_EFORMAT,
                            "%s: existing value profile has %s \"%.64s\", new has \"%.64s\"", path,
                            k, a, b);
        if (rc < 0)
            goto out;
    }
    if ((rc = dcpi_vprof_merge(old, vp)) < 0) {
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
        goto out;
    }
    rc = dcpi_vprof_write(path, old, err);
out:
    dcpi_vprof_free(old);
    return rc;
}
