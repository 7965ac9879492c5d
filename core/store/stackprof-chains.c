/*
 * stackprof-chains.c - stack profiles in memory (see stackprof.h): images, and the chain table (an
 * open-addressing hash of chain indices over a growing frame pool, bounded by a chain limit),
 * header keys, counters, and the merge of two profiles. The file side (encode, parse, write,
 * merge into a file, load an epoch's) is in stackprof-file.c.
 */
#include "core/store/stackprof-int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/mem.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
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
    return dcpi__hdr_set(&sp->hdr, &dcpi__stackprof_spec, key, value);
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
    if (!sp || !is_hex(id) || !good_dir(dir) || strlen(id) >= DCPI_STK_STR_MAX ||
        (path && strlen(path) >= DCPI_STK_STR_MAX))
        return DCPI_EINVAL;
    for (size_t i = 0; i < sp->nimg; i++)
        if (sp->img[i].tstart == tstart && !strcmp(sp->img[i].id, id))
            return (int)i;
    if (sp->nimg >= 0x7fffffff)
        return DCPI_EFULL;
    if (dcpi__grow((void **)&sp->img, &sp->capimg, sp->nimg + 1, sizeof(*sp->img)) < 0)
        return DCPI_ENOMEM;
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
        const struct dcpi_stackprof_chain *c = &sp->ch[k - 1];
        if (c->hash == h && c->n == n && !memcmp(&sp->fr[c->first], f, n * sizeof(*f)))
            return s;
        s = (s + 1) & mask;
    }
}

static int grow_arrays(dcpi_stackprof_t *sp, unsigned n)
{
    int rc = dcpi__grow((void **)&sp->ch, &sp->capch, sp->nch + 1, sizeof(*sp->ch));
    return rc < 0 ? rc : dcpi__grow((void **)&sp->fr, &sp->capfr, sp->nfr + n, sizeof(*sp->fr));
}

int dcpi__stackprof_add_chain(dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n,
                              uint64_t count)
{
    uint64_t h = hash_frames(f, n);
    size_t s = find_slot(sp, f, n, h);
    if (sp->slots[s]) {
        struct dcpi_stackprof_chain *c = &sp->ch[sp->slots[s] - 1];
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
    sp->ch[sp->nch] = (struct dcpi_stackprof_chain){count, h, sp->nfr, n};
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
    return dcpi__stackprof_add_chain(sp, f, n, count);
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
        dcpi__hdr_set(&sp->hdr, &dcpi__stackprof_spec, "lost", "0");
    if (dcpi__hdr_get(&sp->hdr, "truncated"))
        dcpi__hdr_set(&sp->hdr, &dcpi__stackprof_spec, "truncated", "0");
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

uint64_t dcpi__stackprof_truncated(const dcpi_stackprof_t *sp)
{
    return sat_add(sp->truncated, hdr_num(sp, "truncated"));
}

void dcpi_stackprof_chain(const dcpi_stackprof_t *sp, size_t i, const dcpi_frame_t **f, unsigned *n,
                          uint64_t *count)
{
    const struct dcpi_stackprof_chain *c = &sp->ch[i];
    *f = &sp->fr[c->first];
    *n = c->n;
    *count = c->count;
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
        const struct dcpi_stackprof_chain *c = &src->ch[k];
        for (uint32_t j = 0; j < c->n; j++) {
            f[j] = src->fr[c->first + j];
            if (f[j].image != DCPI_STACK_NOIMAGE)
                f[j].image = map[f[j].image];
        }
        rc = dcpi__stackprof_add_chain(dst, f, c->n, c->count);
    }
    if (rc == 0) {
        dst->lost = sat_add(dst->lost, dcpi_stackprof_lost(src));
        dst->truncated = sat_add(dst->truncated, dcpi__stackprof_truncated(src));
    }
    free(f);
    free(map);
    return rc;
}
