/*
 * header.c - the ASCII header grammar of database files (see header.h): line storage, value
 * kinds, parsing with validation, padded encoding and header merging. Used by profile.c (.prof)
 * and vprof.c (.vprof) so both kinds read and write exactly the same grammar.
 */
#include "core/store/header.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

#define DIGITS    "0123456789"
#define HEXDIGITS "0123456789abcdefABCDEF"
#define MAXKEYS   64 /* known keys per spec */

static const dcpi_hdr_key_t version_key = {"version", DCPI_HDR_VERSION, true};

const dcpi_hdr_key_t *dcpi__hdr_known(const dcpi_hdr_spec_t *spec, const char *key)
{
    if (strcmp(key, version_key.key) == 0)
        return &version_key;
    for (size_t i = 0; i < spec->nkeys; i++)
        if (strcmp(spec->keys[i].key, key) == 0)
            return &spec->keys[i];
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

static int check_version(const dcpi_hdr_spec_t *spec, const char *v)
{
    size_t pl = strlen(spec->prefix);
    const char *dot = strchr(v, '.');
    if (strncmp(v, spec->prefix, pl) != 0 || !dot || dot == v + pl ||
        strspn(v + pl, DIGITS) != (size_t)(dot - v - pl) || !all_of(dot + 1, DIGITS))
        return DCPI_EFORMAT;
    bool known = strcmp(v, spec->version) == 0 || (spec->also && strcmp(v, spec->also) == 0);
    return known ? 0 : DCPI_EVERSION;
}

/* 0 when value is valid for kind, DCPI_EVERSION for a well-formed but unsupported version,
 * DCPI_EFORMAT otherwise. */
static int check_value(const dcpi_hdr_spec_t *spec, enum dcpi_hdr_kind kind, const char *v)
{
    uint64_t x;
    size_t n = strlen(v);
    switch (kind) {
    case DCPI_HDR_ANY:
        return 0;
    case DCPI_HDR_HEX:
        return all_of(v, HEXDIGITS) ? 0 : DCPI_EFORMAT;
    case DCPI_HDR_DIGITS:
        return parse_u64(v, 10, &x);
    case DCPI_HDR_ADDR:
        return parse_hex_value(v, &x);
    case DCPI_HDR_EPOCH:
        return (n == 10 || n == 12 || n == 14) && all_of(v, DIGITS) ? 0 : DCPI_EFORMAT;
    case DCPI_HDR_VERSION:
        return check_version(spec, v);
    case DCPI_HDR_BIT:
        return strcmp(v, "0") == 0 || strcmp(v, "1") == 0 ? 0 : DCPI_EFORMAT;
    case DCPI_HDR_NAME:
        return strpbrk(v, "/ \t") ? DCPI_EFORMAT : 0;
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

/* ---- line storage ------------------------------------------------------------------------ */

void dcpi__hdr_free(dcpi_hdr_t *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++) {
        free(h->lines[i].key);
        free(h->lines[i].value);
    }
    free(h->lines);
    *h = (dcpi_hdr_t){0};
}

long dcpi__hdr_find(const dcpi_hdr_t *h, const char *key)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->lines[i].key, key) == 0)
            return (long)i;
    return -1;
}

const char *dcpi__hdr_get(const dcpi_hdr_t *h, const char *key)
{
    if (!h || !key)
        return NULL;
    long i = dcpi__hdr_find(h, key);
    return i < 0 ? NULL : h->lines[i].value;
}

int dcpi__hdr_get_u64(const dcpi_hdr_t *h, const char *key, uint64_t *out)
{
    const char *v = dcpi__hdr_get(h, key);
    if (!v)
        return DCPI_ENOENT;
    return parse_u64(v, 10, out);
}

int dcpi__hdr_get_hex(const dcpi_hdr_t *h, const char *key, uint64_t *out)
{
    const char *v = dcpi__hdr_get(h, key);
    if (!v)
        return DCPI_ENOENT;
    return parse_hex_value(v, out);
}

int dcpi__hdr_append(dcpi_hdr_t *h, const char *key, const char *value)
{
    if (dcpi__grow((void **)&h->lines, &h->cap, h->n + 1, sizeof *h->lines) < 0)
        return DCPI_ENOMEM;
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return DCPI_ENOMEM;
    }
    h->lines[h->n++] = (dcpi_hdr_line_t){k, v};
    return 0;
}

int dcpi__hdr_set(dcpi_hdr_t *h, const dcpi_hdr_spec_t *spec, const char *key, const char *value)
{
    if (!h || !valid_key(key) || !valid_value(value))
        return DCPI_EINVAL;
    const dcpi_hdr_key_t *ki = dcpi__hdr_known(spec, key);
    if (ki && check_value(spec, ki->kind, value) != 0)
        return DCPI_EINVAL;
    long i = dcpi__hdr_find(h, key);
    if (i < 0)
        return dcpi__hdr_append(h, key, value);
    char *v = strdup(value);
    if (!v)
        return DCPI_ENOMEM;
    free(h->lines[i].value);
    h->lines[i].value = v;
    return 0;
}

/* ---- parsing ----------------------------------------------------------------------------- */

struct parser {
    const dcpi_hdr_spec_t *spec;
    const char *name;
    char *err;
    unsigned lineno;
    bool seen[MAXKEYS + 1]; /* [0]: version, [1 + i]: spec->keys[i] */
};

/* "NAME: reason" into the parser's err; returns code. */
#define perr(ps, code, fmt, ...)                                                                   \
    dcpi__errf((ps)->err, (code), "%s: " fmt, (ps)->name, ##__VA_ARGS__)

static bool is_terminator(const char *s, size_t n)
{
    if (n < 7 || memcmp(s, "samples", 7) != 0)
        return false;
    for (size_t i = 7; i < n; i++)
        if (!is_space(s[i]))
            return false;
    return true;
}

static size_t seen_index(const struct parser *ps, const dcpi_hdr_key_t *ki)
{
    return ki == &version_key ? 0 : 1 + (size_t)(ki - ps->spec->keys);
}

/* Validate a known key's value and count its occurrences. */
static int check_known(struct parser *ps, const char *key, const char *value)
{
    const dcpi_hdr_key_t *ki = dcpi__hdr_known(ps->spec, key);
    if (!ki)
        return 0;
    size_t idx = seen_index(ps, ki);
    if (ki->required && ps->seen[idx])
        return perr(ps, DCPI_EFORMAT, "line %u: required key \"%s\" repeated", ps->lineno, key);
    ps->seen[idx] = true;
    int rc = check_value(ps->spec, ki->kind, value);
    if (rc == DCPI_EVERSION && ps->spec->also)
        return perr(ps, rc, "line %u: unsupported version \"%s\" (only %s and %s are read)",
                    ps->lineno, value, ps->spec->version, ps->spec->also);
    if (rc == DCPI_EVERSION)
        return perr(ps, rc, "line %u: unsupported version \"%s\" (only %s is read)", ps->lineno,
                    value, ps->spec->version);
    if (rc < 0)
        return perr(ps, rc, "line %u: bad value for \"%s\": \"%.64s\"", ps->lineno, key, value);
    return 0;
}

/* One "key<space>+value" line (without its '\n'), already known to be NUL-free. */
static int parse_line(struct parser *ps, dcpi_hdr_t *h, const char *s, size_t n)
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
        rc = dcpi__hdr_append(h, key, value);
out:
    free(key);
    free(value);
    return rc;
}

static int check_all_required(struct parser *ps)
{
    if (!ps->seen[0])
        return perr(ps, DCPI_EFORMAT, "missing required key \"version\"");
    for (size_t i = 0; i < ps->spec->nkeys; i++)
        if (ps->spec->keys[i].required && !ps->seen[1 + i])
            return perr(ps, DCPI_EFORMAT, "missing required key \"%s\"", ps->spec->keys[i].key);
    return 0;
}

int dcpi__hdr_parse(const dcpi_hdr_spec_t *spec, const char *buf, size_t len, const char *name,
                    dcpi_hdr_t *h, size_t *body, char *err)
{
    struct parser ps = {.spec = spec, .name = name, .err = err};
    if (spec->nkeys > MAXKEYS)
        return perr(&ps, DCPI_EINVAL, "header spec has too many keys");
    size_t pos = 0;
    for (ps.lineno = 1;; ps.lineno++) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl)
            return perr(&ps, DCPI_EFORMAT, "header has no \"samples\" line");
        size_t n = (size_t)(nl - (buf + pos));
        if (memchr(buf + pos, '\0', n))
            return perr(&ps, DCPI_EFORMAT, "line %u: NUL byte in header", ps.lineno);
        if (is_terminator(buf + pos, n)) {
            *body = pos + n + 1;
            break;
        }
        int rc = parse_line(&ps, h, buf + pos, n);
        if (rc == DCPI_ENOMEM)
            return perr(&ps, rc, "out of memory");
        if (rc < 0)
            return rc;
        pos += n + 1;
    }
    return check_all_required(&ps);
}

int dcpi__hdr_check_required(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, const char *what,
                             char *err)
{
    for (size_t i = 0; i < spec->nkeys; i++)
        if (spec->keys[i].required && dcpi__hdr_find(h, spec->keys[i].key) < 0)
            return dcpi__errf(err, DCPI_EINVAL, "%s: missing required key \"%s\"", what,
                              spec->keys[i].key);
    return 0;
}

/* ---- encoding ---------------------------------------------------------------------------- */

/* The value written for line i: spec->version on the version line, else the line's own. */
static const char *out_value(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, size_t i)
{
    return strcmp(h->lines[i].key, "version") == 0 ? spec->version : h->lines[i].value;
}

/* Size of the header text without padding. */
static size_t raw_size(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, bool add_version)
{
    size_t n = add_version ? strlen("version ") + strlen(spec->version) + 1 : 0;
    for (size_t i = 0; i < h->n; i++)
        n += strlen(h->lines[i].key) + 1 + strlen(out_value(spec, h, i)) + 1;
    return n + strlen("samples\n");
}

size_t dcpi__hdr_size(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h)
{
    size_t n = raw_size(spec, h, dcpi__hdr_find(h, "version") < 0);
    return n + (4 - n % 4) % 4;
}

/* One "key value" line; pad spaces go before its newline. Returns bytes written. */
static size_t put_line(char *out, const char *key, const char *value, size_t pad)
{
    size_t n = (size_t)sprintf(out, "%s %s", key, value);
    memset(out + n, ' ', pad);
    out[n + pad] = '\n';
    return n + pad + 1;
}

size_t dcpi__hdr_encode(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, char *out)
{
    bool add_version = dcpi__hdr_find(h, "version") < 0;
    size_t pad = (4 - raw_size(spec, h, add_version) % 4) % 4, n = 0;
    if (add_version)
        n += put_line(out, "version", spec->version, h->n == 0 ? pad : 0);
    for (size_t i = 0; i < h->n; i++)
        n += put_line(out + n, h->lines[i].key, out_value(spec, h, i), i + 1 == h->n ? pad : 0);
    bool no_lines = !add_version && h->n == 0;
    n += (size_t)sprintf(out + n, "samples%*s\n", no_lines ? (int)pad : 0, "");
    return n;
}

/* ---- merging ----------------------------------------------------------------------------- */

static bool has_line(const dcpi_hdr_t *h, const char *key, const char *value)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->lines[i].key, key) == 0 && strcmp(h->lines[i].value, value) == 0)
            return true;
    return false;
}

static int sum_lost(const dcpi_hdr_spec_t *spec, dcpi_hdr_t *old, const dcpi_hdr_t *new_hdr)
{
    uint64_t a = 0, b = 0;
    int ra = dcpi__hdr_get_u64(old, "lost", &a), rb = dcpi__hdr_get_u64(new_hdr, "lost", &b);
    if (rb != 0)
        return 0;
    uint64_t sum = (ra == 0 && a > UINT64_MAX - b) ? UINT64_MAX : a + b;
    char text[32];
    snprintf(text, sizeof(text), "%llu", (unsigned long long)sum);
    return dcpi__hdr_set(old, spec, "lost", text);
}

int dcpi__hdr_merge(const dcpi_hdr_spec_t *spec, dcpi_hdr_t *old, const dcpi_hdr_t *new_hdr)
{
    int rc = sum_lost(spec, old, new_hdr);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < new_hdr->n; i++) {
        const char *k = new_hdr->lines[i].key, *v = new_hdr->lines[i].value;
        const dcpi_hdr_key_t *ki = dcpi__hdr_known(spec, k);
        if (ki && !ki->required && dcpi__hdr_find(old, k) < 0)
            rc = dcpi__hdr_append(old, k, v);
        else if (!ki && !has_line(old, k, v))
            rc = dcpi__hdr_append(old, k, v);
        if (rc < 0)
            return rc;
    }
    return 0;
}
