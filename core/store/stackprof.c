/*
 * stackprof.c - stack profiles (.stk, docs/stackformat.md): the in-memory chain table (an
 * open-addressing hash of chain indices over a growing frame pool, bounded by a chain limit),
 * parsing with full validation, encoding, atomic write and merge, and loading an epoch's file.
 */
#include "core/store/stackprof.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/store/db.h"
#include "core/image/image.h"
#include "core/base/fsutil.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

#define IMG_HEAD   32 /* tstart u64, tsize u64, idlen u32, dirlen u32, pathlen u32, pad u32 */
#define CHAIN_HEAD 12 /* count u64, nframes u32 */
#define FRAME_SIZE 8  /* image u32, offset u32 */
#define BODY_HEAD  8  /* nimages u32, nchains u32 */
#define FOOTER     16 /* total u64, nchains u32, nframes u32 */
#define STR_MAX    4096

static const dcpi_hdr_key_t known_keys[] = {
    {"epoch", DCPI_HDR_EPOCH, true},      {"platform", DCPI_HDR_ANY, true},
    {"event", DCPI_HDR_ANY, true},        {"period", DCPI_HDR_DIGITS, true},
    {"lost", DCPI_HDR_DIGITS, false},     {"truncated", DCPI_HDR_DIGITS, false},
    {"cpuspeed", DCPI_HDR_DIGITS, false},
};

static const dcpi_hdr_spec_t spec = {DCPI_STACKPROF_VERSION, "stk-", known_keys,
                                     sizeof(known_keys) / sizeof(known_keys[0])};

struct chain {
    uint64_t count, hash;
    size_t first;
    uint32_t n;
};

struct dcpi_stackprof {
    dcpi_hdr_t hdr;
    dcpi_stack_image_t *img;
    size_t nimg, capimg;
    struct chain *ch;
    size_t nch, capch;
    dcpi_frame_t *fr;
    size_t nfr, capfr;
    uint32_t *slots; /* chain index + 1; 0 = free; nslots a power of two >= 2 x max_chains */
    size_t nslots;
    size_t max_chains, max_frames;
    uint64_t total, lost, truncated;
};

/* ---- little-endian helpers ---- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static size_t pad4(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

/* ---- object ---- */

static uint64_t hash_frames(const dcpi_frame_t *f, unsigned n)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned i = 0; i < n; i++) {
        h = (h ^ f[i].image) * 1099511628211ull;
        h = (h ^ f[i].offset) * 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static int set_limit(dcpi_stackprof_t *sp, size_t max_chains)
{
    size_t ns = 64;
    while (ns < 2 * max_chains)
        ns *= 2;
    if (ns > sp->nslots) {
        uint32_t *slots = calloc(ns, sizeof(*slots));
        if (!slots)
            return DCPI_ENOMEM;
        for (size_t i = 0; i < sp->nch; i++) {
            size_t s = sp->ch[i].hash & (ns - 1);
            while (slots[s])
                s = (s + 1) & (ns - 1);
            slots[s] = (uint32_t)(i + 1);
        }
        free(sp->slots);
        sp->slots = slots;
        sp->nslots = ns;
    }
    sp->max_chains = max_chains;
    sp->max_frames = max_chains * DCPI_STACKPROF_FRAMES_PER_CHAIN;
    return 0;
}

int dcpi_stackprof_new(unsigned max_chains, dcpi_stackprof_t **out)
{
    if (!out || max_chains > (1u << 30))
        return DCPI_EINVAL;
    *out = NULL;
    dcpi_stackprof_t *sp = calloc(1, sizeof(*sp));
    if (!sp)
        return DCPI_ENOMEM;
    if (set_limit(sp, max_chains ? max_chains : DCPI_STACKPROF_DEFAULT_CHAINS) < 0) {
        free(sp);
        return DCPI_ENOMEM;
    }
    *out = sp;
    return 0;
}

void dcpi_stackprof_free(dcpi_stackprof_t *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < sp->nimg; i++) {
        free(sp->img[i].id);
        free(sp->img[i].dir);
        free(sp->img[i].path);
    }
    free(sp->img);
    free(sp->ch);
    free(sp->fr);
    free(sp->slots);
    dcpi__hdr_free(&sp->hdr);
    free(sp);
}

int dcpi_stackprof_set(dcpi_stackprof_t *sp, const char *key, const char *value)
{
    if (!sp || !key || !value)
        return DCPI_EINVAL;
    return dcpi__hdr_set(&sp->hdr, &spec, key, value);
}

const char *dcpi_stackprof_get(const dcpi_stackprof_t *sp, const char *key)
{
    return sp && key ? dcpi__hdr_get(&sp->hdr, key) : NULL;
}

static bool is_hex(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

static bool good_dir(const char *s)
{
    return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") &&
           strlen(s) < DCPI_NAMELEN;
}

int dcpi_stackprof_image(dcpi_stackprof_t *sp, const char *id, const char *dir, const char *path,
                         uint64_t tstart, uint64_t tsize)
{
    if (!sp || !is_hex(id) || !good_dir(dir) || strlen(id) >= STR_MAX ||
        (path && strlen(path) >= STR_MAX))
        return DCPI_EINVAL;
    for (size_t i = 0; i < sp->nimg; i++)
        if (sp->img[i].tstart == tstart && !strcmp(sp->img[i].id, id))
            return (int)i;
    if (sp->nimg >= 0x7fffffff)
        return DCPI_EFULL;
    if (sp->nimg == sp->capimg) {
        size_t cap = sp->capimg ? 2 * sp->capimg : 16;
        dcpi_stack_image_t *v = realloc(sp->img, cap * sizeof(*v));
        if (!v)
            return DCPI_ENOMEM;
        sp->img = v;
        sp->capimg = cap;
    }
    dcpi_stack_image_t im = {strdup(id), strdup(dir), strdup(path ? path : ""), tstart, tsize};
    if (!im.id || !im.dir || !im.path) {
        free(im.id);
        free(im.dir);
        free(im.path);
        return DCPI_ENOMEM;
    }
    sp->img[sp->nimg] = im;
    return (int)sp->nimg++;
}

size_t dcpi_stackprof_nimages(const dcpi_stackprof_t *sp)
{
    return sp ? sp->nimg : 0;
}

const dcpi_stack_image_t *dcpi_stackprof_image_get(const dcpi_stackprof_t *sp, size_t i)
{
    return sp && i < sp->nimg ? &sp->img[i] : NULL;
}

/* Slot holding the chain f[0..n-1], or the free slot where it would go. */
static size_t find_slot(const dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n, uint64_t h)
{
    size_t mask = sp->nslots - 1, s = h & mask;
    for (;;) {
        uint32_t k = sp->slots[s];
        if (!k)
            return s;
        const struct chain *c = &sp->ch[k - 1];
        if (c->hash == h && c->n == n && !memcmp(&sp->fr[c->first], f, n * sizeof(*f)))
            return s;
        s = (s + 1) & mask;
    }
}

static int grow_arrays(dcpi_stackprof_t *sp, unsigned n)
{
    if (sp->nch == sp->capch) {
        size_t cap = sp->capch ? 2 * sp->capch : 256;
        struct chain *v = realloc(sp->ch, cap * sizeof(*v));
        if (!v)
            return DCPI_ENOMEM;
        sp->ch = v;
        sp->capch = cap;
    }
    if (sp->nfr + n > sp->capfr) {
        size_t cap = sp->capfr ? 2 * sp->capfr : 4096;
        while (cap < sp->nfr + n)
            cap *= 2;
        dcpi_frame_t *v = realloc(sp->fr, cap * sizeof(*v));
        if (!v)
            return DCPI_ENOMEM;
        sp->fr = v;
        sp->capfr = cap;
    }
    return 0;
}

static int add_chain(dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n, uint64_t count)
{
    uint64_t h = hash_frames(f, n);
    size_t s = find_slot(sp, f, n, h);
    if (sp->slots[s]) {
        struct chain *c = &sp->ch[sp->slots[s] - 1];
        c->count = sat_add(c->count, count);
        sp->total = sat_add(sp->total, count);
        return 0;
    }
    if (sp->nch >= sp->max_chains || sp->nfr + n > sp->max_frames) {
        sp->lost = sat_add(sp->lost, count);
        return DCPI_EFULL;
    }
    if (grow_arrays(sp, n) < 0) {
        sp->lost = sat_add(sp->lost, count);
        return DCPI_ENOMEM;
    }
    memcpy(&sp->fr[sp->nfr], f, n * sizeof(*f));
    sp->ch[sp->nch] = (struct chain){count, h, sp->nfr, n};
    sp->nfr += n;
    sp->slots[s] = (uint32_t)++sp->nch;
    sp->total = sat_add(sp->total, count);
    return 0;
}

int dcpi_stackprof_add(dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n, uint64_t count)
{
    if (!sp || !f || n == 0 || count == 0)
        return DCPI_EINVAL;
    if (n > DCPI_STACK_MAXFRAMES) {
        n = DCPI_STACK_MAXFRAMES;
        sp->truncated = sat_add(sp->truncated, count);
    }
    for (unsigned i = 0; i < n; i++)
        if (f[i].image != DCPI_STACK_NOIMAGE && f[i].image >= sp->nimg)
            return DCPI_EINVAL;
    return add_chain(sp, f, n, count);
}

int dcpi_stackprof_needs_flush(const dcpi_stackprof_t *sp)
{
    return sp && (4 * sp->nch >= 3 * sp->max_chains || 4 * sp->nfr >= 3 * sp->max_frames);
}

void dcpi_stackprof_reset(dcpi_stackprof_t *sp)
{
    if (!sp)
        return;
    memset(sp->slots, 0, sp->nslots * sizeof(*sp->slots));
    sp->nch = sp->nfr = 0;
    sp->total = sp->lost = sp->truncated = 0;
    if (dcpi__hdr_get(&sp->hdr, "lost"))
        dcpi__hdr_set(&sp->hdr, &spec, "lost", "0");
    if (dcpi__hdr_get(&sp->hdr, "truncated"))
        dcpi__hdr_set(&sp->hdr, &spec, "truncated", "0");
}

size_t dcpi_stackprof_count(const dcpi_stackprof_t *sp)
{
    return sp ? sp->nch : 0;
}

uint64_t dcpi_stackprof_total(const dcpi_stackprof_t *sp)
{
    return sp ? sp->total : 0;
}

static uint64_t hdr_num(const dcpi_stackprof_t *sp, const char *key)
{
    uint64_t v = 0;
    return dcpi__hdr_get_u64(&sp->hdr, key, &v) == 0 ? v : 0;
}

uint64_t dcpi_stackprof_lost(const dcpi_stackprof_t *sp)
{
    return sp ? sat_add(sp->lost, hdr_num(sp, "lost")) : 0;
}

static uint64_t truncated_total(const dcpi_stackprof_t *sp)
{
    return sat_add(sp->truncated, hdr_num(sp, "truncated"));
}

void dcpi_stackprof_chain(const dcpi_stackprof_t *sp, size_t i, const dcpi_frame_t **f, unsigned *n,
                          uint64_t *count)
{
    const struct chain *c = &sp->ch[i];
    *f = &sp->fr[c->first];
    *n = c->n;
    *count = c->count;
}

/* ---- encoding ---- */

static int cmp_frames(const dcpi_frame_t *a, unsigned na, const dcpi_frame_t *b, unsigned nb)
{
    for (unsigned i = 0; i < na && i < nb; i++) {
        if (a[i].image != b[i].image)
            return a[i].image < b[i].image ? -1 : 1;
        if (a[i].offset != b[i].offset)
            return a[i].offset < b[i].offset ? -1 : 1;
    }
    return na == nb ? 0 : na < nb ? -1 : 1;
}

static const dcpi_stackprof_t *g_sort_sp; /* qsort has no context argument in C11 */

static int cmp_index(const void *a, const void *b)
{
    const struct chain *x = &g_sort_sp->ch[*(const size_t *)a];
    const struct chain *y = &g_sort_sp->ch[*(const size_t *)b];
    return cmp_frames(&g_sort_sp->fr[x->first], x->n, &g_sort_sp->fr[y->first], y->n);
}

static size_t body_size(const dcpi_stackprof_t *sp)
{
    size_t n = BODY_HEAD + FOOTER;
    for (size_t i = 0; i < sp->nimg; i++)
        n += IMG_HEAD +
             pad4(strlen(sp->img[i].id) + strlen(sp->img[i].dir) + strlen(sp->img[i].path));
    return n + sp->nch * CHAIN_HEAD + sp->nfr * FRAME_SIZE;
}

/* The header to write: sp's lines with lost and truncated set to the running totals. */
static int out_header(const dcpi_stackprof_t *sp, dcpi_hdr_t *h)
{
    int rc = 0;
    for (size_t i = 0; i < sp->hdr.n && rc == 0; i++)
        rc = dcpi__hdr_append(h, sp->hdr.lines[i].key, sp->hdr.lines[i].value);
    char num[32];
    uint64_t lost = dcpi_stackprof_lost(sp), trunc = truncated_total(sp);
    if (rc == 0 && (lost || dcpi__hdr_get(h, "lost"))) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)lost);
        rc = dcpi__hdr_set(h, &spec, "lost", num);
    }
    if (rc == 0 && (trunc || dcpi__hdr_get(h, "truncated"))) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)trunc);
        rc = dcpi__hdr_set(h, &spec, "truncated", num);
    }
    return rc;
}

static unsigned char *put_str(unsigned char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static void encode_body(const dcpi_stackprof_t *sp, const size_t *order, unsigned char *p)
{
    put32(p, (uint32_t)sp->nimg);
    put32(p + 4, (uint32_t)sp->nch);
    p += BODY_HEAD;
    for (size_t i = 0; i < sp->nimg; i++) {
        const dcpi_stack_image_t *im = &sp->img[i];
        size_t len = strlen(im->id) + strlen(im->dir) + strlen(im->path);
        put64(p, im->tstart);
        put64(p + 8, im->tsize);
        put32(p + 16, (uint32_t)strlen(im->id));
        put32(p + 20, (uint32_t)strlen(im->dir));
        put32(p + 24, (uint32_t)strlen(im->path));
        put32(p + 28, 0);
        unsigned char *s = put_str(put_str(put_str(p + IMG_HEAD, im->id), im->dir), im->path);
        memset(s, 0, pad4(len) - len);
        p += IMG_HEAD + pad4(len);
    }
    for (size_t k = 0; k < sp->nch; k++) {
        const struct chain *c = &sp->ch[order[k]];
        put64(p, c->count);
        put32(p + 8, c->n);
        p += CHAIN_HEAD;
        for (uint32_t j = 0; j < c->n; j++, p += FRAME_SIZE) {
            put32(p, sp->fr[c->first + j].image);
            put32(p + 4, sp->fr[c->first + j].offset);
        }
    }
    put64(p, sp->total);
    put32(p + 8, (uint32_t)sp->nch);
    put32(p + 12, (uint32_t)sp->nfr);
}

int dcpi_stackprof_encode(const dcpi_stackprof_t *sp, void **buf, size_t *len, char *err)
{
    if (!sp || !buf || !len)
        return DCPI_EINVAL;
    dcpi_hdr_t h = {0};
    size_t *order = NULL;
    unsigned char *out = NULL;
    int rc = out_header(sp, &h);
    if (rc == 0)
        rc = dcpi__hdr_check_required(&spec, &h, "stack profile", err);
    if (rc < 0)
        goto done;
    order = malloc((sp->nch ? sp->nch : 1) * sizeof(*order));
    size_t hsize = dcpi__hdr_size(&spec, &h), bsize = body_size(sp);
    out = order ? malloc(hsize + bsize + 1) : NULL;
    if (!out) {
        rc = DCPI_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < sp->nch; i++)
        order[i] = i;
    g_sort_sp = sp;
    qsort(order, sp->nch, sizeof(*order), cmp_index);
    size_t hw = dcpi__hdr_encode(&spec, &h, (char *)out);
    encode_body(sp, order, out + hw);
    *buf = out;
    *len = hw + bsize;
    out = NULL;
done:
    free(out);
    free(order);
    dcpi__hdr_free(&h);
    return rc;
}

int dcpi_stackprof_write(const char *path, const dcpi_stackprof_t *sp, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi_stackprof_encode(sp, &buf, &len, err);
    if (rc == 0)
        rc = dcpi__write_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

/* ---- parsing ---- */

typedef struct pstate {
    const unsigned char *p, *end;
    const char *name;
    char *err;
} pstate_t;

static int need(pstate_t *ps, size_t n, const char *what)
{
    if ((size_t)(ps->end - ps->p) < n)
        return dcpi__hdr_errf(ps->err, DCPI_ETRUNC, "%s: truncated %s", ps->name, what);
    return 0;
}

static int parse_string(pstate_t *ps, size_t n, char **out)
{
    *out = strndup((const char *)ps->p, n);
    if (!*out)
        return DCPI_ENOMEM;
    if (strlen(*out) != n)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: NUL byte in an image string", ps->name);
    ps->p += n;
    return 0;
}

static int parse_image(pstate_t *ps, dcpi_stackprof_t *sp, size_t i)
{
    int rc = need(ps, IMG_HEAD, "image record");
    if (rc < 0)
        return rc;
    uint64_t tstart = get64(ps->p), tsize = get64(ps->p + 8);
    uint32_t l[3] = {get32(ps->p + 16), get32(ps->p + 20), get32(ps->p + 24)};
    if (l[0] >= STR_MAX || l[1] >= STR_MAX || l[2] >= STR_MAX || get32(ps->p + 28))
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: image %zu: bad string lengths", ps->name,
                              i);
    ps->p += IMG_HEAD;
    size_t tot = (size_t)l[0] + l[1] + l[2];
    if ((rc = need(ps, pad4(tot), "image record")) < 0)
        return rc;
    const unsigned char *start = ps->p;
    char *s[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = parse_string(ps, l[k], &s[k]);
    if (rc == 0) {
        int idx = dcpi_stackprof_image(sp, s[0], s[1], s[2], tstart, tsize);
        if (idx == DCPI_ENOMEM)
            rc = idx;
        else if (idx < 0 || (size_t)idx != i)
            rc = dcpi__hdr_errf(ps->err, DCPI_EFORMAT,
                                "%s: image %zu: bad or repeated id or directory name", ps->name, i);
    }
    for (int k = 0; k < 3; k++)
        free(s[k]);
    ps->p = start + pad4(tot);
    return rc;
}

static int parse_chain(pstate_t *ps, dcpi_stackprof_t *sp, size_t k, dcpi_frame_t *f,
                       const dcpi_frame_t *prev, unsigned prevn, unsigned *nout)
{
    int rc = need(ps, CHAIN_HEAD, "chain");
    if (rc < 0)
        return rc;
    uint64_t count = get64(ps->p);
    uint32_t n = get32(ps->p + 8);
    ps->p += CHAIN_HEAD;
    if (n == 0 || n > DCPI_STACK_MAXFRAMES)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: chain %zu: %u frames (1 to %u)", ps->name,
                              k, n, DCPI_STACK_MAXFRAMES);
    if (count == 0)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: chain %zu: count 0", ps->name, k);
    if ((rc = need(ps, (size_t)n * FRAME_SIZE, "chain")) < 0)
        return rc;
    for (uint32_t j = 0; j < n; j++, ps->p += FRAME_SIZE) {
        f[j] = (dcpi_frame_t){get32(ps->p), get32(ps->p + 4)};
        if (f[j].image != DCPI_STACK_NOIMAGE && f[j].image >= sp->nimg)
            return dcpi__hdr_errf(ps->err, DCPI_EFORMAT,
                                  "%s: chain %zu: image index %u out "
                                  "of range",
                                  ps->name, k, f[j].image);
    }
    if (k > 0 && cmp_frames(prev, prevn, f, n) >= 0)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT,
                              "%s: chain %zu: chains unsorted or "
                              "repeated",
                              ps->name, k);
    *nout = n;
    return add_chain(sp, f, n, count) == DCPI_ENOMEM ? DCPI_ENOMEM : 0;
}

static int parse_chains(pstate_t *ps, dcpi_stackprof_t *sp, size_t nch)
{
    dcpi_frame_t *a = malloc(2 * DCPI_STACK_MAXFRAMES * sizeof(*a));
    if (!a)
        return DCPI_ENOMEM;
    dcpi_frame_t *cur = a, *prev = a + DCPI_STACK_MAXFRAMES;
    unsigned prevn = 0;
    int rc = 0;
    for (size_t k = 0; k < nch && rc == 0; k++) {
        unsigned n = 0;
        rc = parse_chain(ps, sp, k, cur, prev, prevn, &n);
        dcpi_frame_t *t = prev;
        prev = cur;
        cur = t;
        prevn = n;
    }
    free(a);
    return rc;
}

static int parse_footer(pstate_t *ps, const dcpi_stackprof_t *sp)
{
    int rc = need(ps, FOOTER, "footer");
    if (rc < 0)
        return rc;
    if (get64(ps->p) != sp->total || get32(ps->p + 8) != sp->nch || get32(ps->p + 12) != sp->nfr)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: footer does not match the chains",
                              ps->name);
    ps->p += FOOTER;
    if (ps->p != ps->end)
        return dcpi__hdr_errf(ps->err, DCPI_EFORMAT, "%s: %zu trailing bytes", ps->name,
                              (size_t)(ps->end - ps->p));
    return 0;
}

static int parse_body(pstate_t *ps, dcpi_stackprof_t **out)
{
    int rc = need(ps, BODY_HEAD, "body");
    if (rc < 0)
        return rc;
    uint32_t nimg = get32(ps->p), nch = get32(ps->p + 4);
    ps->p += BODY_HEAD;
    if ((size_t)nch > (size_t)(ps->end - ps->p) / (CHAIN_HEAD + FRAME_SIZE) ||
        (size_t)nimg > (size_t)(ps->end - ps->p) / IMG_HEAD)
        return dcpi__hdr_errf(ps->err, DCPI_ETRUNC, "%s: truncated body (%u images, %u chains)",
                              ps->name, nimg, nch);
    rc = dcpi_stackprof_new(nch > DCPI_STACKPROF_DEFAULT_CHAINS ? nch : 0, out);
    dcpi_stackprof_t *sp = *out;
    if (rc == 0)
        sp->max_frames = SIZE_MAX; /* a file is read whole, whatever its depth */
    for (uint32_t i = 0; i < nimg && rc == 0; i++)
        rc = parse_image(ps, sp, i);
    if (rc == 0)
        rc = parse_chains(ps, sp, nch);
    return rc == 0 ? parse_footer(ps, sp) : rc;
}

int dcpi_stackprof_parse(const void *buf, size_t len, const char *name, dcpi_stackprof_t **out,
                         char *err)
{
    if (!buf || !out)
        return DCPI_EINVAL;
    *out = NULL;
    name = name ? name : "stack profile";
    dcpi_hdr_t h = {0};
    size_t body = 0;
    int rc = dcpi__hdr_parse(&spec, buf, len, name, &h, &body, err);
    if (rc == 0)
        rc = dcpi__hdr_check_required(&spec, &h, name, err) < 0 ? DCPI_EFORMAT : 0;
    dcpi_stackprof_t *sp = NULL;
    if (rc == 0) {
        pstate_t ps = {(const unsigned char *)buf + body, (const unsigned char *)buf + len, name,
                       err};
        rc = parse_body(&ps, &sp);
    }
    if (rc == 0) {
        sp->max_frames = sp->max_chains * DCPI_STACKPROF_FRAMES_PER_CHAIN;
        if (sp->nfr > sp->max_frames)
            sp->max_frames = sp->nfr;
        sp->hdr = h;
        *out = sp;
        return 0;
    }
    if (rc == DCPI_ENOMEM)
        dcpi__hdr_errf(err, rc, "%s: out of memory", name);
    dcpi__hdr_free(&h);
    dcpi_stackprof_free(sp);
    return rc;
}

int dcpi_stackprof_read(const char *path, dcpi_stackprof_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc == 0)
        rc = dcpi_stackprof_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- merging ---- */

static bool keys_differ(const dcpi_stackprof_t *a, const dcpi_stackprof_t *b, const char *key)
{
    const char *x = dcpi__hdr_get(&a->hdr, key), *y = dcpi__hdr_get(&b->hdr, key);
    return x && y && strcmp(x, y) != 0;
}

static int merge_header(dcpi_stackprof_t *dst, const dcpi_stackprof_t *src)
{
    for (size_t i = 0; i < src->hdr.n; i++) {
        const dcpi_hdr_line_t *l = &src->hdr.lines[i];
        if (!strcmp(l->key, "lost") || !strcmp(l->key, "truncated") ||
            dcpi__hdr_find(&dst->hdr, l->key) >= 0)
            continue;
        int rc = dcpi__hdr_append(&dst->hdr, l->key, l->value);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int merge_images(dcpi_stackprof_t *dst, const dcpi_stackprof_t *src, uint32_t *map)
{
    for (size_t i = 0; i < src->nimg; i++) {
        const dcpi_stack_image_t *im = &src->img[i];
        int k = dcpi_stackprof_image(dst, im->id, im->dir, im->path, im->tstart, im->tsize);
        if (k < 0)
            return k;
        map[i] = (uint32_t)k;
    }
    return 0;
}

int dcpi_stackprof_merge(dcpi_stackprof_t *dst, const dcpi_stackprof_t *src)
{
    if (!dst || !src || keys_differ(dst, src, "event") || keys_differ(dst, src, "period"))
        return DCPI_EINVAL;
    uint32_t *map = malloc((src->nimg ? src->nimg : 1) * sizeof(*map));
    dcpi_frame_t *f = malloc(DCPI_STACK_MAXFRAMES * sizeof(*f));
    int rc = map && f ? 0 : DCPI_ENOMEM;
    if (rc == 0 && dst->nch + src->nch > dst->max_chains)
        rc = set_limit(dst, dst->nch + src->nch);
    if (rc == 0 && dst->nfr + src->nfr > dst->max_frames)
        dst->max_frames = dst->nfr + src->nfr;
    if (rc == 0)
        rc = merge_images(dst, src, map);
    if (rc == 0)
        rc = merge_header(dst, src);
    for (size_t k = 0; k < src->nch && rc == 0; k++) {
        const struct chain *c = &src->ch[k];
        for (uint32_t j = 0; j < c->n; j++) {
            f[j] = src->fr[c->first + j];
            if (f[j].image != DCPI_STACK_NOIMAGE)
                f[j].image = map[f[j].image];
        }
        rc = add_chain(dst, f, c->n, c->count);
    }
    if (rc == 0) {
        dst->lost = sat_add(dst->lost, dcpi_stackprof_lost(src));
        dst->truncated = sat_add(dst->truncated, truncated_total(src));
    }
    free(f);
    free(map);
    return rc;
}

static int make_parent(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return dcpi__mkdirs(dir, 0755);
}

int dcpi_stackprof_merge_write(const char *path, const dcpi_stackprof_t *sp, char *err)
{
    if (!path || !sp)
        return DCPI_EINVAL;
    dcpi_stackprof_t *old = NULL;
    struct stat st;
    if (lstat(path, &st) < 0) {
        int rc = make_parent(path);
        if (rc < 0)
            return dcpi__hdr_errf(err, rc, "%s: cannot create its directory", path);
        return dcpi_stackprof_write(path, sp, err);
    }
    int rc = dcpi_stackprof_read(path, &old, err);
    if (rc == 0 && (rc = dcpi_stackprof_merge(old, sp)) < 0)
        dcpi__hdr_errf(err, rc == DCPI_EINVAL ? DCPI_EFORMAT : rc, "%s: %s", path,
                       rc == DCPI_EINVAL ? "event or period differ from the file's"
                                         : dcpi_strerror(rc));
    if (rc == DCPI_EINVAL)
        rc = DCPI_EFORMAT;
    if (rc == 0)
        rc = dcpi_stackprof_write(path, old, err);
    dcpi_stackprof_free(old);
    return rc;
}

/* ---- the database ---- */

void dcpi_stackprof_path(const char *db, const char *epoch, const char *platform, const char *event,
                         char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%s/stacks/%s.stk", db, epoch, platform, event);
}

static int load_one(const char *path, dcpi_stackprof_t **acc, char *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    dcpi_stackprof_t *sp = NULL;
    int rc = dcpi_stackprof_read(path, &sp, err);
    if (rc < 0)
        return rc;
    if (!*acc) {
        *acc = sp;
        return 0;
    }
    rc = dcpi_stackprof_merge(*acc, sp);
    if (rc < 0)
        dcpi__hdr_errf(err, rc, "%s: cannot merge: %s", path,
                       rc == DCPI_EINVAL ? "period differs" : dcpi_strerror(rc));
    dcpi_stackprof_free(sp);
    return rc;
}

int dcpi_stackprof_load(const char *db, const char *epoch, const char *platform, const char *event,
                        dcpi_stackprof_t **out, char *err)
{
    if (!db || !epoch || !event || !out)
        return DCPI_EINVAL;
    *out = NULL;
    char **plats = NULL;
    size_t np = 0;
    int rc = 0;
    if (!platform)
        rc = dcpi_db_platforms(db, epoch, &plats, &np, err);
    char path[4096];
    for (size_t i = 0; rc == 0 && i < (platform ? 1 : np); i++) {
        dcpi_stackprof_path(db, epoch, platform ? platform : plats[i], event, path, sizeof(path));
        rc = load_one(path, out, err);
    }
    dcpi_db_free_list(plats, np);
    if (rc < 0) {
        dcpi_stackprof_free(*out);
        *out = NULL;
    }
    return rc;
}
