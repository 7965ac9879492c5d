/*
 * export_pprof.c - dcpiexport -format pprof: the epoch as a pprof profile (profile.proto, built
 * with core/formats/pprof.h): two sample types per event (count, and count x period), a sample
 * per stack chain and per PC sample no chain accounts for, locations named from the images'
 * symbols and source lines, and the epoch's value profiles as samples of "values" labelled
 * with the plugin's value (and its contexts).
 *
 * Mappings do not overlap (pprof finds a location's mapping by address): every exported image
 * is registered first (the set's, then the stack images of the exported chains), then laid out
 * (pprof_layout): the program keeps its ELF addresses and comes first (pprof's main binary),
 * the kernel keeps its own, and every other image is shifted by a multiple of the page size to
 * the next free page from DCPI_EXPORT_LIB_BASE up, so that address - memory_start + file_offset
 * is still the file offset of the code (memory_start is the text segment's, file_offset its
 * p_offset); the other mappings follow in ascending memory_start.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/base/progress.h"
#include "core/formats/export.h"
#include "core/formats/pprof.h"
#include "core/image/srclines.h"
#include "core/image/symbols.h"
#include "core/store/db.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"

#define PAGE 0x1000ull

/* An exported image: a set image, or a stack image the set does not hold. */
typedef struct pimg {
    const char *id, *path;
    uint64_t tstart, tsize;
    long set_idx; /* -1: stack only */
    dcpi_symtab_t *st;
    dcpi_srclines_t *sl;
    int mapped, kernel;   /* gets a mapping (not the unknown image); the kernel's text */
    uint64_t file_offset; /* of tstart in the file */
    uint64_t delta;       /* exported address = tstart + offset + delta */
    uint64_t mapping;     /* 0: none */
} pimg_t;

/* uint64 -> uint64 open-addressing map (key 0 unused). */
typedef struct u64map {
    uint64_t *k, *v;
    size_t n, cap;
} u64map_t;

static uint64_t *map_slot(u64map_t *m, uint64_t key)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 4096;
        uint64_t *k = calloc(cap, sizeof(*k)), *v = calloc(cap, sizeof(*v));
        if (!k || !v) {
            free(k);
            free(v);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++) {
            size_t s = (m->k[i] * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
            while (m->k[i] && k[s])
                s = (s + 1) & (cap - 1);
            if (m->k[i]) {
                k[s] = m->k[i];
                v[s] = m->v[i];
            }
        }
        free(m->k);
        free(m->v);
        m->k = k;
        m->v = v;
        m->cap = cap;
    }
    size_t s = (key * 0x9e3779b97f4a7c15ull >> 20) & (m->cap - 1);
    while (m->k[s] && m->k[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (!m->k[s]) {
        m->k[s] = key;
        m->n++;
    }
    return &m->v[s];
}

typedef struct pctx {
    dcpi_pprof_t *pp;
    pimg_t *img;
    size_t nimg, capimg;
    int laid_out;    /* mappings made: an image registered later is placed on its own */
    uint64_t next;   /* the shifted images go at or above it */
    int kernel_kept; /* a kernel image kept its addresses */
    u64map_t locs, funcs;
    uint64_t unknown_loc;
    size_t ntypes, values_type; /* values_type: index of "values/count" or ntypes */
    int64_t *vals;
    uint64_t vprof_skipped;
    char title[512]; /* "": the program is pprof's main binary; else the name of a mapping
                        put first (samples of several commands: a system-wide profile) */
} pctx_t;

static void pctx_free(pctx_t *c)
{
    for (size_t i = 0; i < c->nimg; i++) {
        dcpi_symtab_free(c->img[i].st);
        dcpi_srclines_free(c->img[i].sl);
    }
    free(c->img);
    free(c->locs.k);
    free(c->locs.v);
    free(c->funcs.k);
    free(c->funcs.v);
    free(c->vals);
    dcpi_pprof_free(c->pp);
}

static uint64_t page_up(uint64_t a)
{
    return a > UINT64_MAX - (PAGE - 1) ? UINT64_MAX : (a + PAGE - 1) & ~(PAGE - 1);
}

/* [start, limit) of im once placed; the limit saturates (the kernel's text reaches the top of
 * the address space). */
static uint64_t pimg_start(const pimg_t *im)
{
    return im->tstart + im->delta;
}

static uint64_t pimg_limit(const pimg_t *im)
{
    uint64_t start = pimg_start(im), limit = start + (im->tsize ? im->tsize : 1);
    return limit < start ? UINT64_MAX : limit;
}

/* Give im its addresses: the program (first) and the kernel keep theirs (a second kernel
 * image is shifted like the others), every other image goes to the next free page at or above
 * DCPI_EXPORT_LIB_BASE and above the program, at the same page offset as its ELF address (delta
 * is a multiple of the page size). */
static void pimg_place(pctx_t *c, pimg_t *im, int first)
{
    int keep = first || (im->kernel && !c->kernel_kept);
    im->delta = keep ? 0 : page_up(c->next) + (im->tstart & (PAGE - 1)) - im->tstart;
    c->kernel_kept |= keep && im->kernel;
    if (!im->kernel && pimg_limit(im) > c->next)
        c->next = pimg_limit(im);
}

static int pimg_map(pctx_t *c, pimg_t *im)
{
    int64_t m = dcpi_pprof_mapping(c->pp, pimg_start(im), pimg_limit(im), im->file_offset, im->path,
                                   im->id, im->sl != NULL);
    if (m < 0)
        return (int)m;
    im->mapping = (uint64_t)m;
    return 0;
}

typedef struct placed {
    uint64_t start;
    size_t i;
} placed_t;

static int cmp_placed(const void *a, const void *b)
{
    const placed_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Place every registered image and make the mappings: the first image's (the program), then
 * the others in ascending memory_start. */
static int pprof_layout(pctx_t *c)
{
    placed_t *p = malloc((c->nimg ? c->nimg : 1) * sizeof(*p));
    size_t n = 0;
    if (!p)
        return DCPI_ENOMEM;
    c->next = DCPI_EXPORT_LIB_BASE;
    for (size_t i = 0; i < c->nimg; i++)
        if (c->img[i].mapped) {
            pimg_place(c, &c->img[i], n == 0);
            p[n++] = (placed_t){pimg_start(&c->img[i]), i};
        }
    if (n > 1)
        qsort(p + 1, n - 1, sizeof(*p), cmp_placed);
    int rc = 0;
    /* pprof names a profile after its first mapping ("File:"): a profile of several commands
     * gets a first mapping of its own, one page at 0 holding no location, named after the
     * database (when no image starts in that page) */
    int low = 0;
    for (size_t k = 0; k < n; k++)
        low |= p[k].start < PAGE;
    if (c->title[0] && !low) {
        int64_t m = dcpi_pprof_mapping(c->pp, 0, PAGE, 0, c->title, NULL, 0);
        rc = m < 0 ? (int)m : 0;
    }
    for (size_t k = 0; rc == 0 && k < n; k++)
        rc = pimg_map(c, &c->img[p[k].i]);
    free(p);
    c->laid_out = 1;
    return rc;
}

/* The exported image with id and tstart, added (symbols, lines; placed and mapped when the
 * layout is done) when new. */
static long pimg_get(pctx_t *c, const char *id, const char *path, uint64_t tstart, uint64_t tsize,
                     const dcpi_profset_image_t *setimg, long set_idx)
{
    for (size_t i = 0; i < c->nimg; i++)
        if (c->img[i].tstart == tstart && !strcmp(c->img[i].id, id))
            return (long)i;
    if (dcpi__grow((void **)&c->img, &c->capimg, c->nimg + 1, sizeof(*c->img)) < 0)
        return DCPI_ENOMEM;
    pimg_t *im = &c->img[c->nimg];
    *im = (pimg_t){.id = id, .path = path, .tstart = tstart, .tsize = tsize, .set_idx = set_idx};
    dcpi_profset_image_t fake = {.id = (char *)id,
                                 .kind = DCPI_PSET_FILE,
                                 .path = (char *)path,
                                 .tstart = tstart,
                                 .tsize = tsize};
    if (!setimg && path[0] != '/')
        fake.kind = DCPI_PSET_PSEUDO;
    const dcpi_profset_image_t *src = setimg ? setimg : &fake;
    dcpi_profset_open_symbols(src, &im->st, NULL, NULL);
    if (src->kind == DCPI_PSET_FILE && im->st)
        dcpi_srclines_open(path, &im->sl, NULL);
    im->mapped = src->kind != DCPI_PSET_UNKNOWN;
    im->kernel = src->kind == DCPI_PSET_KERNEL ||
                 (!setimg && path[0] == '[' && strstr(path, "kernel") != NULL);
    im->file_offset = src->kind == DCPI_PSET_FILE ? dcpi_export_text_offset(src) : 0;
    if (c->laid_out && im->mapped) {
        pimg_place(c, im, 0);
        int rc = pimg_map(c, im);
        if (rc < 0)
            return rc;
    }
    return (long)c->nimg++;
}

static int64_t pfunction(pctx_t *c, const pimg_t *im, const dcpi_symbol_t *sym)
{
    uint64_t *slot = map_slot(&c->funcs, (uint64_t)(uintptr_t)sym);
    if (!slot)
        return DCPI_ENOMEM;
    if (*slot)
        return (int64_t)*slot;
    const char *file = NULL;
    int line = 0;
    if (im->sl)
        dcpi_srclines_lookup(im->sl, sym->addr, &file, &line);
    int64_t id = dcpi_pprof_function(c->pp, sym->name, sym->name, file, line);
    if (id > 0)
        *slot = (uint64_t)id;
    return id;
}

/* Location of (exported image i, offset); caller frames (depth > 0) look up their line at the
 * return address - 1, inside the call, and are locations of their own: one location for both
 * took the symbol of whichever came first, so a leaf sample at a function's first instruction
 * that a kernel sample's chain had reached first (its user frame, at depth > 0) could count for
 * the function before it (the likely cause of e2e_export_pprof_go's rare failure: go pprof's
 * flat one short of dcpiprof's, twice in ~100 runs). */
static int64_t plocation(pctx_t *c, long i, uint32_t offset, unsigned depth)
{
    uint64_t *slot =
        map_slot(&c->locs, ((uint64_t)(i + 1) << 32) | offset | (depth ? 1ull << 63 : 0));
    if (!slot)
        return DCPI_ENOMEM;
    if (*slot)
        return (int64_t)*slot;
    const pimg_t *im = &c->img[i];
    uint64_t addr = im->tstart + offset, at = depth && addr ? addr - 1 : addr; /* ELF address */
    const dcpi_symbol_t *sym = im->st ? dcpi_symtab_lookup(im->st, at) : NULL;
    int64_t fid = sym && sym->name && *sym->name ? pfunction(c, im, sym) : 0;
    const char *file = NULL;
    int line = 0;
    if (fid > 0 && im->sl)
        dcpi_srclines_lookup(im->sl, at, &file, &line);
    int64_t id =
        fid < 0 ? fid
                : dcpi_pprof_location(c->pp, im->mapping, addr + im->delta, (uint64_t)fid, line);
    if (id > 0)
        *slot = (uint64_t)id;
    return id;
}

/* The one location of samples outside every image. */
static int64_t punknown(pctx_t *c)
{
    if (c->unknown_loc)
        return (int64_t)c->unknown_loc;
    int64_t f = dcpi_pprof_function(c->pp, DCPI_UNKNOWN_ROUTINE, NULL, NULL, 0);
    int64_t l = f < 0 ? f : dcpi_pprof_location(c->pp, 0, DCPI_EXPORT_UNKNOWN_PC, (uint64_t)f, 0);
    if (l > 0)
        c->unknown_loc = (uint64_t)l;
    return l;
}

/* Values of one sample of event e: count and count x period. */
static const int64_t *pvalues(pctx_t *c, const dcpi_profset_t *set, int e, uint64_t count,
                              size_t values_slot)
{
    memset(c->vals, 0, c->ntypes * sizeof(*c->vals));
    if (e >= 0) {
        c->vals[2 * e] = (int64_t)count;
        c->vals[2 * e + 1] = (int64_t)(count * set->events[e].period);
    } else {
        c->vals[values_slot] = (int64_t)count;
    }
    return c->vals;
}

/* The exported image of stack frame f (not DCPI_STACK_NOIMAGE), registered when new. */
static long frame_image(pctx_t *c, const dcpi_profset_t *set, const dcpi_export_stacks_t *xs,
                        dcpi_frame_t f)
{
    const dcpi_stack_image_t *si = dcpi_stackprof_image_get(xs->sp, f.image);
    long pi = xs->pset[f.image];
    return pimg_get(c, si->id, si->path, si->tstart, si->tsize, pi >= 0 ? &set->images[pi] : NULL,
                    pi);
}

/* Register the images of the chains pprof_chains exports (before the layout). */
static int pprof_chain_images(pctx_t *c, const dcpi_profset_t *set, const dcpi_export_stacks_t *xs)
{
    long rc = 0;
    for (size_t i = 0; rc >= 0 && xs->sp && i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t cnt;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &cnt);
        for (unsigned j = 0; rc >= 0 && dcpi_export_chain_in_set(xs, f) && j < n; j++)
            if (f[j].image != DCPI_STACK_NOIMAGE)
                rc = frame_image(c, set, xs, f[j]);
    }
    return rc < 0 ? (int)rc : 0;
}

static int pprof_chains(pctx_t *c, const dcpi_profset_t *set, int e, const dcpi_export_stacks_t *xs)
{
    uint64_t locs[DCPI_STACK_MAXFRAMES];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t cnt;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &cnt);
        if (!dcpi_export_chain_in_set(xs, f))
            continue;
        for (unsigned j = 0; rc == 0 && j < n; j++) {
            long k = f[j].image == DCPI_STACK_NOIMAGE ? 0 : frame_image(c, set, xs, f[j]);
            int64_t id = k < 0                              ? k
                         : f[j].image == DCPI_STACK_NOIMAGE ? punknown(c)
                                                            : plocation(c, k, f[j].offset, j);
            rc = id < 0 ? (int)id : 0;
            locs[j] = (uint64_t)id;
        }
        if (rc == 0)
            rc = dcpi_pprof_sample(c->pp, locs, n, pvalues(c, set, e, cnt, 0), NULL, 0);
    }
    return rc;
}

/* One sample of count at location loc, labelled with the process when pe is not NULL
 * ("pid" numeric, "comm" string). */
static int pprof_pc_sample(pctx_t *c, const dcpi_profset_t *set, int e, uint64_t loc,
                           uint64_t count, const dcpi_procprof_entry_t *pe)
{
    dcpi_pprof_label_t lab[2] = {{"pid", pe ? (int64_t)pe->pid : 0, NULL},
                                 {"comm", 0, pe ? pe->comm : NULL}};
    return dcpi_pprof_sample(c->pp, &loc, 1, pvalues(c, set, e, count, 0), pe ? lab : NULL,
                             pe ? 2 : 0);
}

/* Image i's PC samples of event e split by process (its .procs, every file of the image has
 * one): a labelled sample per (process, offset) of the selected processes at offsets no chain
 * ends at; at offsets where chains end (they are not per process) the rest, unlabelled. */
static int pprof_pcs_split(pctx_t *c, const dcpi_profset_t *set, int e,
                           const dcpi_export_stacks_t *xs, const dcpi_procsel_t *sel, long k,
                           size_t i)
{
    const dcpi_profset_image_t *img = &set->images[i];
    const dcpi_procprof_t *pp = img->procs[e];
    int unknown = img->kind == DCPI_PSET_UNKNOWN;
    size_t n = 0;
    const dcpi_profile_entry_t *ent = dcpi_profile_entries(img->prof[e], &n);
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < n; j++) {
        uint64_t cnt = ent[j].count, done = dcpi_export_leaf_count(xs, (long)i, ent[j].offset);
        if (done == 0 || cnt <= done)
            continue;
        int64_t id = unknown ? punknown(c) : plocation(c, k, ent[j].offset, 0);
        rc = id < 0 ? (int)id : pprof_pc_sample(c, set, e, (uint64_t)id, cnt - done, NULL);
    }
    for (size_t j = 0; rc == 0 && j < pp->n; j++) {
        const dcpi_procprof_entry_t *pe = &pp->e[j];
        if ((sel && !dcpi_procsel_matches(sel, pe->pid, pe->comm)) ||
            dcpi_export_leaf_count(xs, (long)i, pe->offset))
            continue;
        int64_t id = unknown ? punknown(c) : plocation(c, k, pe->offset, 0);
        rc = id < 0 ? (int)id : pprof_pc_sample(c, set, e, (uint64_t)id, pe->count, pe);
    }
    return rc;
}

/* One-location samples of event e's PC samples no chain accounts for. */
static int pprof_pcs(pctx_t *c, const dcpi_profset_t *set, int e, const dcpi_export_stacks_t *xs,
                     const dcpi_procsel_t *sel)
{
    uint64_t noimage = xs->noimage;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        size_t n = 0;
        const dcpi_profile_entry_t *ent =
            img->prof[e] ? dcpi_profile_entries(img->prof[e], &n) : NULL;
        int unknown = img->kind == DCPI_PSET_UNKNOWN;
        long k = n && !unknown
                     ? pimg_get(c, img->id, img->path, img->tstart, img->tsize, img, (long)i)
                     : 0;
        rc = k < 0 ? (int)k : 0;
        if (rc == 0 && n && img->procs && img->procs[e] && !img->procs_missing &&
            !(unknown && noimage)) {
            rc = pprof_pcs_split(c, set, e, xs, sel, k, i);
            continue;
        }
        for (size_t j = 0; rc == 0 && j < n; j++) {
            uint64_t cnt = ent[j].count, done = dcpi_export_leaf_count(xs, (long)i, ent[j].offset);
            if (unknown) {
                done = noimage < cnt ? noimage : cnt;
                noimage -= done;
            }
            if (cnt <= done)
                continue;
            int64_t id = unknown ? punknown(c) : plocation(c, k, ent[j].offset, 0);
            rc = id < 0 ? (int)id : pprof_pc_sample(c, set, e, (uint64_t)id, cnt - done, NULL);
        }
    }
    return rc;
}

static int pprof_event(pctx_t *c, const dcpi_profset_t *set, int e, const dcpi_export_stacks_t *xs,
                       const dcpi_procsel_t *sel)
{
    int rc = xs->sp ? pprof_chains(c, set, e, xs) : 0;
    return rc ? rc : pprof_pcs(c, set, e, xs, sel);
}

/* Hotlist entries of one value profile as samples of "values" with a numeric label (key = the
 * plugin's name, num = the value), at the instruction's location. */
static int pprof_vprof(pctx_t *c, const dcpi_profset_t *set, const dcpi_vprof_t *vp)
{
    const char *id = dcpi_vprof_get(vp, "image"), *plugin = dcpi_vprof_get(vp, "vprof");
    const char *ts = dcpi_vprof_get(vp, "tstart"), *ctx = dcpi_vprof_get(vp, "contexts");
    uint64_t tstart = ts ? strtoull(ts, NULL, 16) : 0;
    long si = -1;
    for (size_t i = 0; id && i < set->nimages && si < 0; i++)
        if (set->images[i].tstart == tstart && !strcmp(set->images[i].id, id) &&
            set->images[i].kind != DCPI_PSET_UNKNOWN)
            si = (long)i;
    if (si < 0 || !plugin) {
        c->vprof_skipped++;
        return 0;
    }
    const dcpi_profset_image_t *img = &set->images[si];
    long k = pimg_get(c, img->id, img->path, img->tstart, img->tsize, img, si);
    int rc = k < 0 ? (int)k : 0;
    char k0[300], k1[300];
    snprintf(k0, sizeof(k0), "%s.context0", plugin);
    snprintf(k1, sizeof(k1), "%s.context1", plugin);
    for (size_t i = 0; rc == 0 && i < dcpi_vprof_count(vp); i++) {
        uint32_t off;
        const dcpi_vsummary_t *s;
        dcpi_vprof_entry(vp, i, &off, &s);
        int64_t loc = plocation(c, k, off, 0);
        rc = loc < 0 ? (int)loc : 0;
        for (uint32_t j = 0; rc == 0 && j < s->n; j++) {
            dcpi_pprof_label_t lab[3] = {{plugin, (int64_t)s->e[j].value, NULL},
                                         {k0, (int64_t)s->e[j].context0, NULL},
                                         {k1, (int64_t)s->e[j].context1, NULL}};
            uint64_t l = (uint64_t)loc;
            rc = dcpi_pprof_sample(c->pp, &l, 1, pvalues(c, set, -1, s->e[j].count, c->values_type),
                                   lab, ctx && !strcmp(ctx, "1") ? 3 : 1);
        }
    }
    return rc;
}

static const char *event_unit(const char *event)
{
    return !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock") ? "nanoseconds" : "events";
}

static int pprof_types(pctx_t *c, const dcpi_profset_t *set, int ev, size_t nvprof)
{
    char name[DCPI_NAMELEN + 16];
    int rc = 0;
    for (size_t e = 0; rc >= 0 && e < set->nevents; e++) {
        const char *n = set->events[e].name;
        snprintf(name, sizeof(name), "%s_total", n);
        rc = dcpi_pprof_sample_type(c->pp, n, "count");
        rc = rc < 0 ? rc : dcpi_pprof_sample_type(c->pp, name, event_unit(n));
    }
    c->ntypes = 2 * set->nevents;
    c->values_type = c->ntypes;
    if (rc >= 0 && nvprof) {
        rc = dcpi_pprof_sample_type(c->pp, "values", "count");
        c->ntypes++;
    }
    const char *evn = set->events[ev].name;
    rc = rc < 0 ? rc
                : dcpi_pprof_period(c->pp, evn, event_unit(evn), (int64_t)set->events[ev].period);
    rc = rc < 0 ? rc : dcpi_pprof_default_type(c->pp, evn);
    c->vals = calloc(c->ntypes + 1, sizeof(*c->vals));
    return rc < 0 ? rc : c->vals ? 0 : DCPI_ENOMEM;
}

/* Profile start time from the epoch name (YYYYMMDDHHMM[SS], UTC). */
static int64_t epoch_nanos(const char *epoch)
{
    struct tm tm = {0};
    if (strlen(epoch) < 12 || sscanf(epoch, "%4d%2d%2d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                                     &tm.tm_hour, &tm.tm_min) != 5)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    if (strlen(epoch) == 14)
        tm.tm_sec = atoi(epoch + 12);
    return (int64_t)timegm(&tm) * 1000000000;
}

/* 1 when the samples of set (of the processes sel selects) come from more than one command,
 * by the splits by process. */
static int several_commands(const dcpi_profset_t *set, const dcpi_procsel_t *sel)
{
    const char *first = NULL;
    for (size_t i = 0; i < set->nimages; i++)
        for (size_t e = 0; set->images[i].procs && e < set->nevents; e++) {
            const dcpi_procprof_t *pp = set->images[i].procs[e];
            for (size_t j = 0; pp && j < pp->n; j++) {
                const char *comm = pp->e[j].comm;
                if (sel && !dcpi_procsel_matches(sel, pp->e[j].pid, comm))
                    continue;
                if (first && strcmp(first, comm))
                    return 1;
                first = comm;
            }
        }
    return 0;
}

/* The profile's name, pprof's first comment (shown under "File:" in its reports): the
 * database and the epoch, and which processes (-comm/-pid, else every one). With samples of
 * several commands and no program named, also the name of the first mapping (c->title). */
static int pprof_title(pctx_t *c, const dcpi_export_src_t *src, const dcpi_profset_t *set)
{
    const dcpi_procsel_t *sel = src->procsel;
    char who[128] = "all processes";
    if (sel && sel->pid >= 0 && sel->comm)
        snprintf(who, sizeof(who), "process %ld (%.15s)", sel->pid, sel->comm);
    else if (sel && sel->pid >= 0)
        snprintf(who, sizeof(who), "process %ld", sel->pid);
    else if (sel && sel->comm)
        snprintf(who, sizeof(who), "processes named %.15s", sel->comm);
    if (src->nnames == 0 && several_commands(set, sel)) {
        const char *base = strrchr(src->db, '/');
        base = base && base[1] ? base + 1 : src->db;
        snprintf(c->title, sizeof(c->title), "%s epoch %s (%s)", base, src->epoch, who);
    }
    char title[4096 + 256];
    snprintf(title, sizeof(title), "dcpi database %s, epoch %s, %s", src->db, src->epoch, who);
    return dcpi_pprof_comment(c->pp, title);
}

/* Every event's stacks (xs[e]), and every exported image registered (the set's in order: the
 * program first; then the chains'), then laid out. */
static int pprof_images(pctx_t *c, const dcpi_export_src_t *src, const dcpi_profset_t *set,
                        const size_t *order, dcpi_export_stacks_t *xs, char *err)
{
    int rc = 0;
    dcpi__progress_t pg;
    dcpi__progress_start(&pg, stderr, -1, set->nimages, "dcpiexport: images");
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        dcpi__progress_update(&pg, k);
        const dcpi_profset_image_t *img = &set->images[order[k]];
        if (img->kind != DCPI_PSET_UNKNOWN) {
            long i = pimg_get(c, img->id, img->path, img->tstart, img->tsize, img, (long)order[k]);
            rc = i < 0 ? (int)i : 0;
        }
    }
    dcpi__progress_done(&pg);
    for (size_t e = 0; rc == 0 && e < set->nevents; e++) {
        rc = dcpi_export_stacks_load(src, set, order, (int)e, &xs[e], err);
        rc = rc ? rc : pprof_chain_images(c, set, &xs[e]);
    }
    return rc ? rc : pprof_layout(c);
}

int dcpi_export_pprof(const dcpi_export_t *x, char *err)
{
    const dcpi_export_src_t *src = x->src;
    const dcpi_profset_t *set = x->set;
    pctx_t c = {0};
    const char *const *ev = src->nepochs ? src->epochs : &src->epoch;
    dcpi_vprof_t **vps = NULL;
    size_t nvps = 0;
    int rc = dcpi_export_vprofs(src, set, x->order, NULL, &vps, &nvps, err);
    if (rc < 0)
        return rc;
    dcpi_export_stacks_t *xs = calloc(set->nevents ? set->nevents : 1, sizeof(*xs));
    rc = xs ? dcpi_pprof_new(&c.pp) : DCPI_ENOMEM;
    rc = rc ? rc : pprof_types(&c, set, x->ev, nvps);
    if (rc == 0) {
        dcpi_pprof_time(c.pp, epoch_nanos(ev[0])); /* several: the first one's start */
        rc = pprof_title(&c, src, set);
    }
    err[0] = '\0';
    rc = rc ? rc : pprof_images(&c, src, set, x->order, xs, err);
    for (size_t e = 0; rc == 0 && e < set->nevents; e++)
        rc = pprof_event(&c, set, (int)e, &xs[e], src->procsel);
    for (size_t i = 0; rc == 0 && i < nvps; i++)
        rc = pprof_vprof(&c, set, vps[i]);
    if (rc == 0 && c.vprof_skipped)
        fprintf(stderr, "%s: %" PRIu64 " value profiles of images not exported were left out\n",
                src->tool, c.vprof_skipped);
    dcpi_export_vprofs_free(vps, nvps);
    if (rc < 0 && !err[0])
        dcpi__errf(err, rc, "%s: %s: %s", src->tool, x->out, dcpi_strerror(rc));
    else if (rc == 0 && (rc = dcpi_pprof_write(x->out, c.pp, err)) < 0)
        dcpi__err_prefix(err, src->tool);
    for (size_t e = 0; xs && e < set->nevents; e++)
        dcpi_export_stacks_free(&xs[e]);
    free(xs);
    pctx_free(&c);
    return rc;
}
