/*
 * profile.c - PC profile files (dcpiformat(4), binary version 0.07): the in-memory profile,
 * header grammar, chunk encoding, parsing with full validation, atomic write and merge.
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

#include "core/fsutil.h"
#include "dcpi/errno.h"

/* ---- header keys ------------------------------------------------------------------------- */

enum vkind { V_ANY, V_HEX, V_DIGITS, V_ADDR, V_EPOCH, V_VERSION };

struct keyinfo {
    const char *key;
    enum vkind kind;
    bool required;
};

static const struct keyinfo known_keys[] = {
    {"version", V_VERSION, true}, {"image", V_HEX, true},        {"epoch", V_EPOCH, true},
    {"platform", V_ANY, true},    {"event", V_ANY, true},        {"period", V_DIGITS, true},
    {"tstart", V_ADDR, true},     {"tsize", V_DIGITS, true},     {"cpuspeed", V_DIGITS, true},
    {"path", V_ANY, false},       {"lost", V_DIGITS, false},     {"cpucount", V_DIGITS, false},
    {"cpuamask", V_HEX, false},   {"cpuimplv", V_DIGITS, false},
};
#define NKNOWN (sizeof(known_keys) / sizeof(known_keys[0]))

struct hdr_line {
    char *key;
    char *value;
};

struct dcpi_profile {
    struct hdr_line *lines;
    size_t nlines, lcap;
    dcpi_profile_entry_t *slots; /* hash table, count == 0 means empty */
    size_t nslots, nused;        /* nslots is 0 or a power of two */
    uint64_t total;
    dcpi_profile_entry_t *sorted; /* entries sorted by offset, valid unless stale */
    size_t nsorted, scap;
    bool stale;
};

static const struct keyinfo *find_known(const char *key)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(known_keys[i].key, key) == 0)
            return &known_keys[i];
    return NULL;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool all_of(const char *s, const char *set)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

#define DIGITS    "0123456789"
#define HEXDIGITS "0123456789abcdefABCDEF"

/* Strict unsigned parse into 64 bits: all characters digits of the base, no overflow. */
static int parse_u64(const char *s, int base, uint64_t *out)
{
    if (!all_of(s, base == 10 ? DIGITS : HEXDIGITS))
        return DCPI_EFORMAT;
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s <= '9' ? *s - '0' : (*s | 0x20) - 'a' + 10);
        if (v > (UINT64_MAX - d) / (uint64_t)base)
            return DCPI_EFORMAT;
        v = v * (uint64_t)base + d;
    }
    *out = v;
    return 0;
}

static int parse_hex_value(const char *s, uint64_t *out)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    return parse_u64(s, 16, out);
}

/* 0 when value is valid for kind, DCPI_EVERSION for a well-formed but unsupported version,
 * DCPI_EFORMAT otherwise. */
static int check_value(enum vkind kind, const char *v)
{
    uint64_t x;
    size_t n = strlen(v);
    switch (kind) {
    case V_ANY:
        return 0;
    case V_HEX:
        return all_of(v, HEXDIGITS) ? 0 : DCPI_EFORMAT;
    case V_DIGITS:
        return parse_u64(v, 10, &x);
    case V_ADDR:
        return parse_hex_value(v, &x);
    case V_EPOCH:
        return (n == 10 || n == 12 || n == 14) && all_of(v, DIGITS) ? 0 : DCPI_EFORMAT;
    case V_VERSION: {
        const char *dot = strchr(v, '.');
        if (strncmp(v, "pdb-", 4) != 0 || !dot || dot == v + 4 ||
            strspn(v + 4, DIGITS) != (size_t)(dot - v - 4) || !all_of(dot + 1, DIGITS))
            return DCPI_EFORMAT;
        return strcmp(v, DCPI_PROFILE_VERSION) == 0 ? 0 : DCPI_EVERSION;
    }
    }
    return DCPI_EFORMAT;
}

static bool valid_key(const char *key)
{
    if (!key || !*key || strcmp(key, "samples") == 0)
        return false;
    return strpbrk(key, " \t\n\r") == NULL;
}

static bool valid_value(const char *v)
{
    size_t n = v ? strlen(v) : 0;
    return n > 0 && !is_space(v[0]) && !is_space(v[n - 1]) && !strchr(v, '\n');
}

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
    for (size_t i = 0; i < p->nlines; i++) {
        free(p->lines[i].key);
        free(p->lines[i].value);
    }
    free(p->lines);
    free(p->slots);
    free(p->sorted);
    free(p);
}

static ssize_t find_line(const dcpi_profile_t *p, const char *key)
{
    for (size_t i = 0; i < p->nlines; i++)
        if (strcmp(p->lines[i].key, key) == 0)
            return (ssize_t)i;
    return -1;
}

static int append_line(dcpi_profile_t *p, const char *key, const char *value)
{
    if (p->nlines == p->lcap) {
        size_t ncap = p->lcap ? p->lcap * 2 : 16;
        struct hdr_line *nl = realloc(p->lines, ncap * sizeof(*nl));
        if (!nl)
            return DCPI_ENOMEM;
        p->lines = nl;
        p->lcap = ncap;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return DCPI_ENOMEM;
    }
    p->lines[p->nlines++] = (struct hdr_line){k, v};
    return 0;
}

int dcpi_profile_set(dcpi_profile_t *p, const char *key, const char *value)
{
    if (!p || !valid_key(key) || !valid_value(value))
        return DCPI_EINVAL;
    const struct keyinfo *ki = find_known(key);
    if (ki && check_value(ki->kind, value) != 0)
        return DCPI_EINVAL;
    ssize_t i = find_line(p, key);
    if (i < 0)
        return append_line(p, key, value);
    char *v = strdup(value);
    if (!v)
        return DCPI_ENOMEM;
    free(p->lines[i].value);
    p->lines[i].value = v;
    return 0;
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
    if (!p || !key)
        return NULL;
    ssize_t i = find_line(p, key);
    return i < 0 ? NULL : p->lines[i].value;
}

int dcpi_profile_get_u64(const dcpi_profile_t *p, const char *key, uint64_t *out)
{
    const char *v = dcpi_profile_get(p, key);
    if (!v)
        return DCPI_ENOENT;
    return parse_u64(v, 10, out);
}

int dcpi_profile_get_hex(const dcpi_profile_t *p, const char *key, uint64_t *out)
{
    const char *v = dcpi_profile_get(p, key);
    if (!v)
        return DCPI_ENOENT;
    return parse_hex_value(v, out);
}

size_t dcpi_profile_nlines(const dcpi_profile_t *p)
{
    return p ? p->nlines : 0;
}

void dcpi_profile_line(const dcpi_profile_t *p, size_t i, const char **key, const char **value)
{
    bool ok = p && i < p->nlines;
    if (key)
        *key = ok ? p->lines[i].key : NULL;
    if (value)
        *value = ok ? p->lines[i].value : NULL;
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
    if (p->nsorted == p->scap) {
        size_t ncap = p->scap ? p->scap * 2 : 64;
        dcpi_profile_entry_t *ns = realloc(p->sorted, ncap * sizeof(*ns));
        if (!ns)
            return DCPI_ENOMEM;
        p->sorted = ns;
        p->scap = ncap;
    }
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
        dcpi_profile_entry_t *ns = realloc(p->sorted, p->nused * sizeof(*ns));
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
    unsigned lineno;
    bool seen[NKNOWN];
};

static int perr(struct parser *ps, int code, const char *fmt, ...) DCPI_PRINTF(3, 4);

static int perr(struct parser *ps, int code, const char *fmt, ...)
{
    if (ps->err) {
        int n = snprintf(ps->err, DCPI_ERRLEN, "%s: ", ps->name);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && n < DCPI_ERRLEN)
            vsnprintf(ps->err + n, DCPI_ERRLEN - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

static bool is_terminator(const char *s, size_t n)
{
    if (n < 7 || memcmp(s, "samples", 7) != 0)
        return false;
    for (size_t i = 7; i < n; i++)
        if (!is_space(s[i]))
            return false;
    return true;
}

/* Validate a known key's value and count its occurrences. */
static int check_known(struct parser *ps, const char *key, const char *value)
{
    const struct keyinfo *ki = find_known(key);
    if (!ki)
        return 0;
    size_t idx = (size_t)(ki - known_keys);
    if (ki->required && ps->seen[idx])
        return perr(ps, DCPI_EFORMAT, "line %u: required key \"%s\" repeated", ps->lineno, key);
    ps->seen[idx] = true;
    int rc = check_value(ki->kind, value);
    if (rc == DCPI_EVERSION)
        return perr(ps, rc, "line %u: unsupported version \"%s\" (only %s is read)", ps->lineno,
                    value, DCPI_PROFILE_VERSION);
    if (rc < 0)
        return perr(ps, rc, "line %u: bad value for \"%s\": \"%.64s\"", ps->lineno, key, value);
    return 0;
}

/* One "key<space>+value" line (without its '\n'), already known to be NUL-free. */
static int parse_line(struct parser *ps, dcpi_profile_t *p, const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && !is_space(s[k]))
        k++;
    if (k == 0)
        return perr(ps, DCPI_EFORMAT, "line %u: line does not start with a key", ps->lineno);
    size_t v = k;
    while (v < n && is_space(s[v]))
        v++;
    size_t end = n;
    while (end > v && is_space(s[end - 1]))
        end--; /* padding and trailing blanks are not part of the value */
    char *key = strndup(s, k), *value = strndup(s + v, end - v);
    int rc = DCPI_ENOMEM;
    if (!key || !value)
        goto out;
    if (end == v)
        rc = perr(ps, DCPI_EFORMAT, "line %u: key \"%.64s\" has no value", ps->lineno, key);
    else if (strcmp(key, "samples") == 0)
        rc = perr(ps, DCPI_EFORMAT, "line %u: text after \"samples\"", ps->lineno);
    else if ((rc = check_known(ps, key, value)) == 0)
        rc = append_line(p, key, value);
out:
    free(key);
    free(value);
    return rc;
}

/* Parse the header; *body gets the offset of the first byte after "samples...\n". */
static int parse_header(struct parser *ps, dcpi_profile_t *p, const char *buf, size_t len,
                        size_t *body)
{
    size_t pos = 0;
    for (ps->lineno = 1;; ps->lineno++) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl)
            return perr(ps, DCPI_EFORMAT, "header has no \"samples\" line");
        size_t n = (size_t)(nl - (buf + pos));
        if (memchr(buf + pos, '\0', n))
            return perr(ps, DCPI_EFORMAT, "line %u: NUL byte in header", ps->lineno);
        if (is_terminator(buf + pos, n)) {
            *body = pos + n + 1;
            break;
        }
        int rc = parse_line(ps, p, buf + pos, n);
        if (rc < 0)
            return rc;
        pos += n + 1;
    }
    for (size_t i = 0; i < NKNOWN; i++)
        if (known_keys[i].required && !ps->seen[i])
            return perr(ps, DCPI_EFORMAT, "missing required key \"%s\"", known_keys[i].key);
    return 0;
}

static uint32_t get_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put_le32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}

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
    uint32_t off = get_le32(b), num = get_le32(b + 4);
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
    uint32_t off = get_le32(b), num = get_le32(b + 4);
    for (uint32_t i = 0; i < num; i++) {
        uint32_t c = get_le32(b + 8 + 4 * (size_t)i);
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
    return get_le32(b) == sat32(st->noffsets) && get_le32(b + 4) == sat32(st->nsamples);
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
        pos += 8 + 4 * (size_t)get_le32(b + pos + 4);
    }
    if (len - pos < 8)
        return perr(ps, DCPI_ETRUNC, "footer truncated (%zu of 8 bytes)", len - pos);
    uint32_t fo = get_le32(b + pos), fs = get_le32(b + pos + 4);
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
    rc = parse_header(&ps, p, buf, len, &body);
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

static int enc_err(char *err, int code, const char *fmt, ...) DCPI_PRINTF(3, 4);

static int enc_err(char *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, DCPI_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Size of the header text, without padding, as encode_header writes it. */
static size_t header_size(const dcpi_profile_t *p, bool add_version)
{
    size_t n = add_version ? strlen("version " DCPI_PROFILE_VERSION "\n") : 0;
    for (size_t i = 0; i < p->nlines; i++)
        n += strlen(p->lines[i].key) + 1 + strlen(p->lines[i].value) + 1;
    return n + strlen("samples\n");
}

/* One "key value" line; pad spaces go before its newline. Returns bytes written. */
static size_t put_line(char *out, const char *key, const char *value, size_t pad)
{
    size_t n = (size_t)sprintf(out, "%s %s", key, value);
    memset(out + n, ' ', pad);
    out[n + pad] = '\n';
    return n + pad + 1;
}

/* Header lines, pad spaces at the end of the last line (or after "samples" when there are no
 * lines) so that the binary part starts at a multiple of 4. Returns bytes written. */
static size_t encode_header(const dcpi_profile_t *p, bool add_version, char *out)
{
    size_t pad = (4 - header_size(p, add_version) % 4) % 4, n = 0;
    if (add_version)
        n += put_line(out, "version", DCPI_PROFILE_VERSION, p->nlines == 0 ? pad : 0);
    for (size_t i = 0; i < p->nlines; i++)
        n += put_line(out + n, p->lines[i].key, p->lines[i].value, i + 1 == p->nlines ? pad : 0);
    bool no_lines = !add_version && p->nlines == 0;
    n += (size_t)sprintf(out + n, "samples%*s\n", no_lines ? (int)pad : 0, "");
    return n;
}

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
        put_le32(out, e[i].offset);
        put_le32(out + 4, number);
        memset(out + 8, 0, 4 * (size_t)number);
        for (size_t k = i; k < j; k++) {
            put_le32(out + 8 + 4 * (size_t)(e[k].offset - e[i].offset), e[k].count);
            total += e[k].count;
        }
        out += 8 + 4 * (size_t)number;
    }
    put_le32(out, sat32(n));
    put_le32(out + 4, sat32(total));
}

int dcpi_profile_encode(const dcpi_profile_t *p, void **buf, size_t *len, char *err)
{
    if (!p || !buf || !len)
        return enc_err(err, DCPI_EINVAL, "dcpi_profile_encode: invalid argument");
    for (size_t i = 0; i < NKNOWN; i++)
        if (known_keys[i].required && strcmp(known_keys[i].key, "version") != 0 &&
            find_line(p, known_keys[i].key) < 0)
            return enc_err(err, DCPI_EINVAL, "profile: missing required key \"%s\"",
                           known_keys[i].key);
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
    if (!e && p->nused)
        return enc_err(err, DCPI_ENOMEM, "profile: out of memory");
    bool add_version = find_line(p, "version") < 0;
    size_t hsize = header_size(p, add_version) + 3, total = hsize + body_size(e, n);
    char *out = malloc(total + 1); /* + 1: sprintf's NUL */
    if (!out)
        return enc_err(err, DCPI_ENOMEM, "profile: out of memory");
    size_t h = encode_header(p, add_version, out);
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
        return enc_err(err, DCPI_EINVAL, "dcpi_profile_write: no path");
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
            return enc_err(err, DCPI_EINVAL, "%s: new profile has no \"%s\"", path, keys[i]);
        if (!same_value(old, p, keys[i]))
            return enc_err(err, DCPI_EFORMAT,
                           "%s: existing profile has %s \"%.64s\", new has \"%.64s\"", path,
                           keys[i], a, b);
    }
    return 0;
}

static bool has_line(const dcpi_profile_t *p, const char *key, const char *value)
{
    for (size_t i = 0; i < p->nlines; i++)
        if (strcmp(p->lines[i].key, key) == 0 && strcmp(p->lines[i].value, value) == 0)
            return true;
    return false;
}

/* Fold p's header into old: sum "lost", add known optional keys old lacks, append p's unknown
 * lines that old does not already hold. Everything else of old is kept as it is. */
static int merge_header(dcpi_profile_t *old, const dcpi_profile_t *p)
{
    uint64_t a = 0, b = 0;
    int ra = dcpi_profile_get_u64(old, "lost", &a), rb = dcpi_profile_get_u64(p, "lost", &b);
    if (rb == 0) {
        uint64_t sum = (ra == 0 && a > UINT64_MAX - b) ? UINT64_MAX : a + b;
        int rc = dcpi_profile_setf(old, "lost", "%llu", (unsigned long long)sum);
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < p->nlines; i++) {
        const char *k = p->lines[i].key, *v = p->lines[i].value;
        const struct keyinfo *ki = find_known(k);
        int rc = 0;
        if (ki && !ki->required && find_line(old, k) < 0)
            rc = append_line(old, k, v);
        else if (!ki && !has_line(old, k, v))
            rc = append_line(old, k, v);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int dcpi_profile_merge_write(const char *path, const dcpi_profile_t *p, char *err)
{
    if (!path || !p)
        return enc_err(err, DCPI_EINVAL, "dcpi_profile_merge_write: invalid argument");
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
    if ((rc = merge_header(old, p)) < 0) {
        enc_err(err, rc, "%s: out of memory", path);
        goto out;
    }
    rc = dcpi_profile_add_all(old, p);
    if (rc == DCPI_ENOMEM) {
        enc_err(err, rc, "%s: out of memory", path);
        goto out;
    }
    /* DCPI_ERANGE: some counts saturated at UINT32_MAX (clamped); the file is still written. */
    rc = dcpi_profile_write(path, old, err);
out:
    dcpi_profile_free(old);
    return rc;
}
