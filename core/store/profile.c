/*
 * profile.c - PC profile files (dcpiformat(4), binary version 0.07): the in-memory profile,
 * chunk encoding (the header grammar is shared with .vprof files in header.c), parsing with full
 * validation, atomic write and merge.
 *
 * Samples live in an open-addressing hash (offset -> count, count 0 marks a free slot) so that
 * adding tens of thousands of distinct offsets in any order costs O(1) each. A sorted array of
 * entries is kept alongside: appending in increasing offset order keeps it valid; any other
 * insertion marks it stale and it is rebuilt (one sort) by the next reader.
 */
#include "dcpi/profile.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

/* ---- header keys ------------------------------------------------------------------------- */

/* Known keys besides "version" (docs/dcpiformat.md); the grammar is in header.c. */
static const dcpi_hdr_key_t known_keys[] = {
    {"image", DCPI_HDR_HEX, true},        {"epoch", DCPI_HDR_EPOCH, true},
    {"platform", DCPI_HDR_ANY, true},     {"event", DCPI_HDR_ANY, true},
    {"period", DCPI_HDR_DIGITS, true},    {"tstart", DCPI_HDR_ADDR, true},
    {"tsize", DCPI_HDR_DIGITS, true},     {"cpuspeed", DCPI_HDR_DIGITS, true},
    {"path", DCPI_HDR_ANY, false},        {"lost", DCPI_HDR_DIGITS, false},
    {"cpucount", DCPI_HDR_DIGITS, false}, {"cpuamask", DCPI_HDR_HEX, false},
    {"cpuimplv", DCPI_HDR_DIGITS, false},
};

static const dcpi_hdr_spec_t spec = {DCPI_PROFILE_VERSION, "pdb-", known_keys,
                                     sizeof(known_keys) / sizeof(known_keys[0]), NULL};

struct dcpi_profile {
    dcpi_hdr_t hdr;
    dcpi_profile_entry_t *slots; /* hash table, count == 0 means empty */
    size_t nslots, nused;        /* nslots is 0 or a power of two */
    uint64_t total;
    dcpi_profile_entry_t *sorted; /* entries sorted by offset, valid unless stale */
    size_t nsorted, scap;
    bool stale;
};

/* ---- profile object ---------------------------------------------------------------------- */

int dcpi_profile_new(dcpi_profile_t **out)
{
    if (!out)
        return DCPI_EINVAL;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : DCPI_ENOMEM;
}

void dcpi_profile_free(dcpi_profile_t *p)
{
    if (!p)
        return;
    dcpi__hdr_free(&p->hdr);
    free(p->slots);
    free(p->sorted);
    free(p);
}

int dcpi_profile_set(dcpi_profile_t *p, const char *key, const char *value)
{
    return p ? dcpi__hdr_set(&p->hdr, &spec, key, value) : DCPI_EINVAL;
}

int dcpi_profile_setf(dcpi_profile_t *p, const char *key, const char *fmt, ...)
{
    if (!fmt)
        return DCPI_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    char *v = NULL;
    int n = vasprintf(&v, fmt, ap);
    va_end(ap);
    if (n < 0)
        return DCPI_ENOMEM;
    int rc = dcpi_profile_set(p, key, v);
    free(v);
    return rc;
}

const char *dcpi_profile_get(const dcpi_profile_t *p, const char *key)
{
    return p ? dcpi__hdr_get(&p->hdr, key) : NULL;
}

int dcpi_profile_get_u64(const dcpi_profile_t *p, const char *key, uint64_t *out)
{
    return p ? dcpi__hdr_get_u64(&p->hdr, key, out) : DCPI_ENOENT;
}

int dcpi_profile_get_hex(const dcpi_profile_t *p, const char *key, uint64_t *out)
{
    return p ? dcpi__hdr_get_hex(&p->hdr, key, out) : DCPI_ENOENT;
}

size_t dcpi_profile_nlines(const dcpi_profile_t *p)
{
    return p ? p->hdr.n : 0;
}

void dcpi_profile_line(const dcpi_profile_t *p, size_t i, const char **key, const char **value)
{
    bool ok = p && i < p->hdr.n;
    if (key)
        *key = ok ? p->hdr.lines[i].key : NULL;
    if (value)
        *value = ok ? p->hdr.lines[i].value : NULL;
}

/* ---- samples ----------------------------------------------------------------------------- */

static size_t slot_of(const dcpi_profile_t *p, uint32_t offset)
{
    /* Fibonacci hashing: the top bits of the product spread clustered offsets well. */
    return (size_t)((offset * 0x9E3779B97F4A7C15ULL) >> 32) & (p->nslots - 1);
}

static dcpi_profile_entry_t *lookup(const dcpi_profile_t *p, uint32_t offset)
{
    if (!p->nslots)
        return NULL;
    for (size_t i = slot_of(p, offset);; i = (i + 1) & (p->nslots - 1)) {
        dcpi_profile_entry_t *s = &p->slots[i];
        if (s->count == 0 || s->offset == offset)
            return s;
    }
}

static int grow_slots(dcpi_profile_t *p)
{
    size_t nn = p->nslots ? p->nslots * 2 : 64;
    dcpi_profile_entry_t *old = p->slots, *ns = calloc(nn, sizeof(*ns));
    if (!ns)
        return DCPI_ENOMEM;
    size_t oldn = p->nslots;
    p->slots = ns;
    p->nslots = nn;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].count)
            *lookup(p, old[i].offset) = old[i];
    free(old);
    return 0;
}

static int sorted_append(dcpi_profile_t *p, uint32_t offset, uint32_t count)
{
    if (dcpi__grow((void **)&p->sorted, &p->scap, p->nsorted + 1, sizeof *p->sorted) < 0)
        return DCPI_ENOMEM;
    p->sorted[p->nsorted++] = (dcpi_profile_entry_t){offset, count};
    return 0;
}

static dcpi_profile_entry_t *sorted_find(const dcpi_profile_t *p, uint32_t offset)
{
    size_t lo = 0, hi = p->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->sorted[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nsorted && p->sorted[lo].offset == offset ? &p->sorted[lo] : NULL;
}

/* Keep the sorted array valid when a new offset goes past its end; otherwise mark it stale. */
static void note_new_offset(dcpi_profile_t *p, uint32_t offset, uint32_t count)
{
    if (p->stale)
        return;
    if (p->nsorted && p->sorted[p->nsorted - 1].offset >= offset)
        p->stale = true;
    else if (sorted_append(p, offset, count) < 0)
        p->stale = true; /* rebuilt (or ENOMEM reported) by the next reader */
}

int dcpi_profile_add(dcpi_profile_t *p, uint32_t offset, uint32_t count)
{
    if (!p)
        return DCPI_EINVAL;
    if (count == 0)
        return 0;
    if ((p->nused + 1) * 2 > p->nslots && grow_slots(p) < 0)
        return DCPI_ENOMEM;
    dcpi_profile_entry_t *s = lookup(p, offset);
    uint32_t old = s->count;
    uint32_t sum = count > UINT32_MAX - old ? UINT32_MAX : old + count;
    int rc = sum - old == count ? 0 : DCPI_ERANGE;
    s->offset = offset;
    s->count = sum;
    p->total += sum - old;
    if (old == 0) {
        p->nused++;
        note_new_offset(p, offset, sum);
    } else if (!p->stale) {
        sorted_find(p, offset)->count = sum;
    }
    return rc;
}

static int cmp_entry(const void *a, const void *b)
{
    uint32_t x = ((const dcpi_profile_entry_t *)a)->offset;
    uint32_t y = ((const dcpi_profile_entry_t *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Rebuild the sorted array from the hash. The profile is logically const: only the cache
 * changes. */
static int refresh_sorted(const dcpi_profile_t *cp)
{
    dcpi_profile_t *p = (dcpi_profile_t *)cp;
    if (!p->stale)
        return 0;
    if (p->scap < p->nused) {
        dcpi_profile_entry_t *ns = reallocarray(p->sorted, p->nused, sizeof(*ns));
        if (!ns)
            return DCPI_ENOMEM;
        p->sorted = ns;
        p->scap = p->nused;
    }
    p->nsorted = 0;
    for (size_t i = 0; i < p->nslots; i++)
        if (p->slots[i].count)
            p->sorted[p->nsorted++] = p->slots[i];
    qsort(p->sorted, p->nsorted, sizeof(*p->sorted), cmp_entry);
    p->stale = false;
    return 0;
}

const dcpi_profile_entry_t *dcpi_profile_entries(const dcpi_profile_t *p, size_t *n)
{
    if (n)
        *n = 0;
    if (!p || refresh_sorted(p) < 0)
        return NULL;
    if (n)
        *n = p->nsorted;
    return p->sorted;
}

int dcpi_profile_add_all(dcpi_profile_t *dst, const dcpi_profile_t *src)
{
    if (!dst || !src || dst == src)
        return DCPI_EINVAL;
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(src, &n);
    if (!e && src->nused)
        return DCPI_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        int r = dcpi_profile_add(dst, e[i].offset, e[i].count);
        if (r == DCPI_ENOMEM)
            return r;
        if (r < 0)
            rc = r;
    }
    return rc;
}

uint64_t dcpi_profile_total(const dcpi_profile_t *p)
{
    return p ? p->total : 0;
}

uint32_t dcpi_profile_count_at(const dcpi_profile_t *p, uint32_t offset)
{
    const dcpi_profile_entry_t *s = p ? lookup(p, offset) : NULL;
    return s ? s->count : 0;
}

/* ---- parsing ----------------------------------------------------------------------------- */

struct parser {
    const char *name;
    char *err;
};

/* "NAME: reason" into the parser's err; returns code. */
#define perr(ps, code, fmt, ...)                                                                   \
    dcpi__errf((ps)->err, (code), "%s: " fmt, (ps)->name, ##__VA_ARGS__)

static uint32_t sat32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

struct body_state {
    uint64_t next_free; /* first offset after the previous chunk */
    uint32_t prev_offset;
    bool have_prev;
    uint64_t noffsets, nsamples;
};

/* Validate the chunk header at b (rem bytes left, footer included). */
static int check_chunk(struct parser *ps, const struct body_state *st, const unsigned char *b,
                       size_t rem)
{
    uint32_t off = dcpi__get_le32(b), num = dcpi__get_le32(b + 4);
    if (num == 0)
        return perr(ps, DCPI_EFORMAT, "chunk at offset 0x%x has 0 counts", off);
    if ((uint64_t)off + num > (uint64_t)UINT32_MAX + 1)
        return perr(ps, DCPI_EFORMAT, "chunk at offset 0x%x with %u counts passes 2^32", off, num);
    if (st->have_prev && off <= st->prev_offset)
        return perr(ps, DCPI_EFORMAT, "chunk at offset 0x%x not after chunk at 0x%x", off,
                    st->prev_offset);
    if (st->have_prev && off < st->next_free)
        return perr(ps, DCPI_EFORMAT, "chunk at offset 0x%x overlaps the chunk at 0x%x", off,
                    st->prev_offset);
    if ((uint64_t)rem < 8 + 4 * (uint64_t)num + 8)
        return perr(ps, DCPI_ETRUNC, "chunk at offset 0x%x (%u counts) is truncated", off, num);
    return 0;
}

static int read_chunk(dcpi_profile_t *p, struct body_state *st, const unsigned char *b)
{
    uint32_t off = dcpi__get_le32(b), num = dcpi__get_le32(b + 4);
    for (uint32_t i = 0; i < num; i++) {
        uint32_t c = dcpi__get_le32(b + 8 + 4 * (size_t)i);
        if (c == 0)
            continue;
        int rc = dcpi_profile_add(p, off + i, c);
        if (rc < 0)
            return rc;
        st->noffsets++;
        st->nsamples += c;
    }
    st->prev_offset = off;
    st->next_free = (uint64_t)off + num;
    st->have_prev = true;
    return 0;
}

static bool footer_matches(const struct body_state *st, const unsigned char *b)
{
    return dcpi__get_le32(b) == sat32(st->noffsets) && dcpi__get_le32(b + 4) == sat32(st->nsamples);
}

static int parse_body(struct parser *ps, dcpi_profile_t *p, const unsigned char *b, size_t len)
{
    struct body_state st = {0};
    size_t pos = 0;
    while (len - pos > 8) {
        int rc = check_chunk(ps, &st, b + pos, len - pos);
        if (rc < 0 && footer_matches(&st, b + pos))
            return perr(ps, DCPI_EFORMAT, "%zu trailing bytes after the footer", len - pos - 8);
        if (rc < 0)
            return rc;
        if ((rc = read_chunk(p, &st, b + pos)) < 0)
            return rc;
        pos += 8 + 4 * (size_t)dcpi__get_le32(b + pos + 4);
    }
    if (len - pos < 8)
        return perr(ps, DCPI_ETRUNC, "footer truncated (%zu of 8 bytes)", len - pos);
    uint32_t fo = dcpi__get_le32(b + pos), fs = dcpi__get_le32(b + pos + 4);
    if (!footer_matches(&st, b + pos))
        return perr(ps, DCPI_EFORMAT, "footer says %u offsets/%u samples, chunks hold %llu/%llu",
                    fo, fs, (unsigned long long)st.noffsets, (unsigned long long)st.nsamples);
    return 0;
}

int dcpi_profile_parse(const void *buf, size_t len, const char *name, dcpi_profile_t **out,
                       char *err)
{
    struct parser ps = {.name = name ? name : "(profile)", .err = err};
    if (!out || (!buf && len))
        return perr(&ps, DCPI_EINVAL, "invalid argument");
    dcpi_profile_t *p = NULL;
    int rc = dcpi_profile_new(&p);
    size_t body = 0;
    if (rc < 0)
        return perr(&ps, rc, "out of memory");
    rc = dcpi__hdr_parse(&spec, buf, len, ps.name, &p->hdr, &body, err);
    if (rc == 0)
        rc = parse_body(&ps, p, (const unsigned char *)buf + body, len - body);
    if (rc == DCPI_ENOMEM)
        perr(&ps, rc, "out of memory");
    if (rc < 0) {
        dcpi_profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int dcpi_profile_read(const char *path, dcpi_profile_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi_profile_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- encoding ---------------------------------------------------------------------------- */

/* End (exclusive) of the chunk starting at entry i: entries closer than 3 zero offsets apart
 * share a chunk, since up to 2 zero counts (8 bytes) cost no more than a new chunk header. */
static size_t chunk_end(const dcpi_profile_entry_t *e, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && e[j].offset - e[j - 1].offset <= 3)
        j++;
    return j;
}

static size_t body_size(const dcpi_profile_entry_t *e, size_t n)
{
    size_t size = 8;
    for (size_t i = 0, j; i < n; i = j) {
        j = chunk_end(e, n, i);
        size += 8 + 4 * ((size_t)e[j - 1].offset - e[i].offset + 1);
    }
    return size;
}

static void encode_body(const dcpi_profile_entry_t *e, size_t n, unsigned char *out)
{
    uint64_t total = 0;
    for (size_t i = 0, j; i < n; i = j) {
        j = chunk_end(e, n, i);
        uint32_t number = e[j - 1].offset - e[i].offset + 1;
        dcpi__put_le32(out, e[i].offset);
        dcpi__put_le32(out + 4, number);
        memset(out + 8, 0, 4 * (size_t)number);
        for (size_t k = i; k < j; k++) {
            dcpi__put_le32(out + 8 + 4 * (size_t)(e[k].offset - e[i].offset), e[k].count);
            total += e[k].count;
        }
        out += 8 + 4 * (size_t)number;
    }
    dcpi__put_le32(out, sat32(n));
    dcpi__put_le32(out + 4, sat32(total));
}

int dcpi_profile_encode(const dcpi_profile_t *p, void **buf, size_t *len, char *err)
{
    if (!p || !buf || !len)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_profile_encode: invalid argument");
    int rc = dcpi__hdr_check_required(&spec, &p->hdr, "profile", err);
    if (rc < 0)
        return rc;
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
    if (!e && p->nused)
        return dcpi__errf(err, DCPI_ENOMEM, "profile: out of memory");
    size_t total = dcpi__hdr_size(&spec, &p->hdr) + body_size(e, n);
    char *out = malloc(total + 1); /* + 1: sprintf's NUL */
    if (!out)
        return dcpi__errf(err, DCPI_ENOMEM, "profile: out of memory");
    size_t h = dcpi__hdr_encode(&spec, &p->hdr, out);
    encode_body(e, n, (unsigned char *)out + h);
    *buf = out;
    *len = h + body_size(e, n);
    return 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

int dcpi_profile_write(const char *path, const dcpi_profile_t *p, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    if (!path)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_profile_write: no path");
    int rc = dcpi_profile_encode(p, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi__write_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

/* Whether old and p agree on key: hex keys compare by value, period numerically, the rest as
 * strings. */
static bool same_value(const dcpi_profile_t *old, const dcpi_profile_t *p, const char *key)
{
    uint64_t x = 0, y = 0;
    if (strcmp(key, "image") == 0 || strcmp(key, "tstart") == 0)
        return dcpi_profile_get_hex(old, key, &x) == 0 && dcpi_profile_get_hex(p, key, &y) == 0
                   ? x == y
                   : strcasecmp(dcpi_profile_get(old, key), dcpi_profile_get(p, key)) == 0;
    if (strcmp(key, "period") == 0)
        return dcpi_profile_get_u64(old, key, &x) == 0 && dcpi_profile_get_u64(p, key, &y) == 0 &&
               x == y;
    return strcmp(dcpi_profile_get(old, key), dcpi_profile_get(p, key)) == 0;
}

/* The keys whose values must agree between an existing file and the profile merged into it. */
static int check_agree(const char *path, const dcpi_profile_t *old, const dcpi_profile_t *p,
                       char *err)
{
    static const char *const keys[] = {"image", "event", "period", "tstart"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *a = dcpi_profile_get(old, keys[i]), *b = dcpi_profile_get(p, keys[i]);
        if (!b)
            return dcpi__errf(err, DCPI_EINVAL, "%s: new profile has no \"%s\"", path, keys[i]);
        if (!same_value(old, p, keys[i]))
            return dcpi__errf(err, DCPI_EFORMAT,
                              "%s: existing profile has %s \"%.64s\", new has \"%.64s\"", path,
                              keys[i], a, b);
    }
    return 0;
}

int dcpi_profile_merge_write(const char *path, const dcpi_profile_t *p, char *err)
{
    if (!path || !p)
        return dcpi__errf(err, DCPI_EINVAL, "dcpi_profile_merge_write: invalid argument");
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc == DCPI_ENOENT)
        return dcpi_profile_write(path, p, err);
    if (rc < 0)
        return rc;
    dcpi_profile_t *old = NULL;
    rc = dcpi_profile_parse(buf, len, path, &old, err);
    free(buf);
    if (rc < 0)
        return rc;
    if ((rc = check_agree(path, old, p, err)) < 0)
        goto out;
    if ((rc = dcpi__hdr_merge(&spec, &old->hdr, &p->hdr)) < 0) {
        dcpi__errf(err, rc, "%s: out of memory", path);
        goto out;
    }
    rc = dcpi_profile_add_all(old, p);
    if (rc == DCPI_ENOMEM) {
        dcpi__errf(err, rc, "%s: out of memory", path);
        goto out;
    }
    /* DCPI_ERANGE: some counts saturated at UINT32_MAX (clamped); the file is still written. */
    rc = dcpi_profile_write(path, old, err);
out:
    dcpi_profile_free(old);
    return rc;
}
