/*
 * dcpiexport - write one epoch's samples of one event in another profiler's format:
 * "-format gperftools" (gperftools' CPU profile, read by google-pprof) or "-format gmon"
 * (gprof's gmon.out for one program). See docs/dcpiexport.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/analysis/cli.h"
#include "core/formats/gmon.h"
#include "core/formats/gperf.h"
#include "core/image/image.h"
#include "core/formats/pprof.h"
#include "core/image/srclines.h"
#include "core/store/vprof.h"
#include "core/analysis/stackview.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"

#define TOOL "dcpiexport"

/* Load addresses given to images after the first one (the program, kept at its ELF vaddrs). */
#define LIB_BASE   0x7f0000000000ull
#define LIB_STRIDE 0x100000000ull
/* Where samples outside every image go in a gperftools file (no symbol there). */
#define UNKNOWN_PC 0x10ull

static const dcpi_cli_flag_t flags[] = {
    {"-format", "FMT", "gperftools, gmon or pprof"},
    {"-o", "FILE", "output file (required)"},
    {"-e", "EVENT", "event to export (default: the event with the most samples)"},
    {NULL, NULL, NULL},
};

typedef struct opts {
    const char *format, *out, *event;
} opts_t;

static int parse_opts(const dcpi_cli_t *cli, opts_t *o)
{
    *o = (opts_t){0};
    for (int i = 0; i < cli->nopts; i += 2) {
        const char *f = cli->opts[i], *v = cli->opts[i + 1];
        if (!strcmp(f, "-format"))
            o->format = v;
        else if (!strcmp(f, "-o"))
            o->out = v;
        else if (!strcmp(f, "-e"))
            o->event = v;
    }
    if (!o->format || (strcmp(o->format, "gperftools") && strcmp(o->format, "gmon") &&
                       strcmp(o->format, "pprof"))) {
        fprintf(stderr, TOOL ": -format gperftools|gmon|pprof is required (try -h)\n");
        return 2;
    }
    if (!o->out) {
        fprintf(stderr, TOOL ": -o FILE is required (try -h)\n");
        return 2;
    }
    return 0;
}

static int pick_event(const dcpi_profset_t *set, const char *name, const char *epoch)
{
    if (set->nevents == 0) {
        fprintf(stderr, TOOL ": no samples in epoch %s\n", epoch);
        return -1;
    }
    return dcpi_profset_pick_event(set, name, TOOL, epoch);
}

/* Image order: the first image named by an operand (the program), then the others. */
static void image_order(const dcpi_profset_t *set, const dcpi_cli_t *cli, size_t *order)
{
    size_t k = 0, first = set->nimages;
    for (int a = 0; a < cli->nargs && first == set->nimages; a++)
        for (size_t i = 0; i < set->nimages && first == set->nimages; i++)
            if (dcpi_profset_image_matches(&set->images[i], cli->args[a]))
                first = i;
    for (size_t i = 0; first == set->nimages && i < set->nimages; i++)
        if (set->images[i].kind == DCPI_PSET_FILE)
            first = i;
    if (first < set->nimages)
        order[k++] = first;
    for (size_t i = 0; i < set->nimages; i++)
        if (i != first)
            order[k++] = i;
}

/* File offset of tstart in img's file (for the mapping line), tstart when it cannot tell. */
static uint64_t text_file_offset(const dcpi_profset_image_t *img)
{
    dcpi_image_info_t info;
    uint64_t off = img->tstart;
    if (img->kind == DCPI_PSET_FILE && dcpi_image_probe(img->path, &info, NULL) == 0 &&
        !strcmp(info.id, img->id) && dcpi_image_vaddr_to_file(&info, img->tstart, &off) == 0)
        return off;
    return img->tstart;
}

/* Put the tool's name in front of a "FILE: reason" message. */
static void prefix_err(char *err)
{
    char tmp[DCPI_ERRLEN];
    size_t room = DCPI_ERRLEN - sizeof(TOOL ": ");
    snprintf(tmp, sizeof(tmp), "%s", err);
    snprintf(err, DCPI_ERRLEN, TOOL ": %.*s", (int)room, tmp);
}

/* ---- stacks: the event's stack profile, its images mapped to the set and to addresses ---- */

typedef struct leaf {
    long img; /* set image index */
    uint32_t offset;
    uint64_t count;
} leaf_t;

typedef struct xstacks {
    dcpi_stackprof_t *sp; /* NULL: the epoch has no stacks for the event */
    size_t nimg;
    long *pset;           /* per stack image: set image index or -1 */
    dcpi_symtab_t **tabs; /* per stack image: symbols or NULL */
    uint64_t *base;       /* per stack image: exported address = base + tstart + offset */
    leaf_t *leaves;       /* chain leaves in set images, sorted, counts summed */
    size_t nleaves;
    uint64_t noimage; /* samples of chains whose leaf is in no image */
    int has_unknown;  /* the set holds an unknown image (chains with such leaves count) */
} xstacks_t;

static void xstacks_free(xstacks_t *xs)
{
    if (xs->sp)
        dcpi_stackprof_symbols_free(xs->sp, xs->tabs);
    dcpi_stackprof_free(xs->sp);
    free(xs->pset);
    free(xs->tabs);
    free(xs->base);
    free(xs->leaves);
    *xs = (xstacks_t){0};
}

static int cmp_leaf(const void *a, const void *b)
{
    const leaf_t *x = a, *y = b;
    if (x->img != y->img)
        return x->img < y->img ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int collect_leaves(xstacks_t *xs)
{
    size_t n = dcpi_stackprof_count(xs->sp), k = 0;
    xs->leaves = malloc((n ? n : 1) * sizeof(*xs->leaves));
    if (!xs->leaves)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const dcpi_frame_t *f;
        unsigned nf;
        uint64_t c;
        dcpi_stackprof_chain(xs->sp, i, &f, &nf, &c);
        if (f[0].image == DCPI_STACK_NOIMAGE)
            xs->noimage += xs->has_unknown ? c : 0;
        else if (xs->pset[f[0].image] >= 0)
            xs->leaves[k++] = (leaf_t){xs->pset[f[0].image], f[0].offset, c};
    }
    qsort(xs->leaves, k, sizeof(*xs->leaves), cmp_leaf);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && !cmp_leaf(&xs->leaves[m - 1], &xs->leaves[i]))
            xs->leaves[m - 1].count += xs->leaves[i].count;
        else
            xs->leaves[m++] = xs->leaves[i];
    }
    xs->nleaves = m;
    return 0;
}

/* Samples of chains whose leaf is (set image img, offset). */
static uint64_t leaf_count(const xstacks_t *xs, long img, uint32_t offset)
{
    leaf_t key = {img, offset, 0};
    const leaf_t *l = xs->sp ? bsearch(&key, xs->leaves, xs->nleaves, sizeof(key), cmp_leaf) : NULL;
    return l ? l->count : 0;
}

/* Address bases: a set image keeps the base of its place in order; other images get the
 * places after the set's. */
static void stack_bases(xstacks_t *xs, const dcpi_profset_t *set, const size_t *order)
{
    size_t extra = set->nimages;
    for (size_t i = 0; i < xs->nimg; i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(xs->sp, i);
        size_t place = extra;
        for (size_t k = 0; k < set->nimages; k++)
            if ((long)order[k] == xs->pset[i])
                place = k;
        if (place == extra)
            extra++;
        int kernel = im->path[0] == '[' && strstr(im->path, "kernel");
        xs->base[i] = place == 0 || kernel ? 0 : LIB_BASE + place * LIB_STRIDE;
    }
}

static int load_stacks(const dcpi_cli_t *cli, const dcpi_profset_t *set, const size_t *order,
                       int ev, xstacks_t *xs, char *err)
{
    *xs = (xstacks_t){0};
    int rc =
        dcpi_stackprof_load(cli->db, cli->epoch, cli->platform, set->events[ev].name, &xs->sp, err);
    if (rc < 0) {
        prefix_err(err);
        return rc;
    }
    if (!xs->sp)
        return 0;
    xs->nimg = dcpi_stackprof_nimages(xs->sp);
    size_t n = xs->nimg ? xs->nimg : 1;
    xs->pset = calloc(n, sizeof(*xs->pset));
    xs->tabs = calloc(n, sizeof(*xs->tabs));
    xs->base = calloc(n, sizeof(*xs->base));
    if (!xs->pset || !xs->tabs || !xs->base) {
        snprintf(err, DCPI_ERRLEN, TOOL ": out of memory");
        return DCPI_ENOMEM;
    }
    dcpi_stackprof_symbols(xs->sp, set, xs->pset, xs->tabs);
    stack_bases(xs, set, order);
    for (size_t k = 0; k < set->nimages; k++)
        xs->has_unknown |= set->images[k].kind == DCPI_PSET_UNKNOWN;
    rc = collect_leaves(xs);
    if (rc < 0)
        snprintf(err, DCPI_ERRLEN, TOOL ": out of memory");
    return rc;
}

/* 1 when the chain's samples belong to the exported set: its leaf is in one of the set's
 * images (or in no image, and the set holds the unknown samples). */
static int chain_in_set(const xstacks_t *xs, const dcpi_frame_t *f)
{
    if (f[0].image == DCPI_STACK_NOIMAGE)
        return xs->has_unknown;
    return xs->pset[f[0].image] >= 0;
}

/* Exported address of frame f. */
static uint64_t frame_pc(const xstacks_t *xs, dcpi_frame_t f)
{
    if (f.image == DCPI_STACK_NOIMAGE)
        return UNKNOWN_PC;
    return xs->base[f.image] + dcpi_stackprof_image_get(xs->sp, f.image)->tstart + f.offset;
}

/* ---- gperftools ---- */

static int gperf_map_line(dcpi_gperf_t *g, uint64_t start, uint64_t size, uint64_t off,
                          const char *path)
{
    char line[4400];
    snprintf(line, sizeof(line), "%016" PRIx64 "-%016" PRIx64 " r-xp %08" PRIx64 " 00:00 0 %s",
             start, start + (size ? size : 1), off, path);
    return dcpi_gperf_add_text(g, line);
}

/* One-frame records of img's PC samples that no chain accounts for (all of them without
 * stacks); *noimage is what chains with a leaf in no image still account for. */
static int gperf_image(dcpi_gperf_t *g, const dcpi_profset_image_t *img, long idx, int ev,
                       uint64_t base, const xstacks_t *xs, uint64_t *noimage)
{
    size_t n = 0;
    const dcpi_profile_entry_t *ent =
        img->prof[ev] ? dcpi_profile_entries(img->prof[ev], &n) : NULL;
    if (n == 0)
        return 0;
    int unknown = img->kind == DCPI_PSET_UNKNOWN;
    for (size_t k = 0; k < n; k++) {
        uint64_t pc = unknown ? UNKNOWN_PC : base + img->tstart + ent[k].offset;
        uint64_t c = ent[k].count, done = leaf_count(xs, idx, ent[k].offset);
        if (unknown) {
            done = *noimage < c ? *noimage : c;
            *noimage -= done;
        }
        int rc = c > done ? dcpi_gperf_add(g, c - done, &pc, 1) : 0;
        if (rc < 0)
            return rc;
    }
    if (unknown || img->kind != DCPI_PSET_FILE)
        return 0;
    return gperf_map_line(g, base + img->tstart, img->tsize, text_file_offset(img), img->path);
}

/* One record per chain (leaf first; callers are return addresses, which pprof decrements),
 * and a mapping line per stack image the set does not hold. */
static int gperf_chains(dcpi_gperf_t *g, const xstacks_t *xs)
{
    uint64_t pcs[DCPI_STACK_MAXFRAMES];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t c;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &c);
        if (!chain_in_set(xs, f))
            continue;
        for (unsigned j = 0; j < n; j++)
            pcs[j] = frame_pc(xs, f[j]);
        rc = dcpi_gperf_add(g, c, pcs, n);
    }
    for (size_t i = 0; rc == 0 && i < xs->nimg; i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(xs->sp, i);
        if (xs->pset[i] < 0 && im->path[0] == '/')
            rc = gperf_map_line(g, xs->base[i] + im->tstart, im->tsize, im->tstart, im->path);
    }
    return rc;
}

static int export_gperf(const dcpi_profset_t *set, const size_t *order, int ev, const xstacks_t *xs,
                        const opts_t *o, char *err)
{
    uint64_t period = set->events[ev].period, noimage = xs->noimage;
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_new(period >= 1000 ? period / 1000 : 1, &g);
    if (rc == 0 && xs->sp)
        rc = gperf_chains(g, xs);
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        const dcpi_profset_image_t *img = &set->images[order[k]];
        uint64_t base = k == 0 || img->kind == DCPI_PSET_KERNEL ? 0 : LIB_BASE + k * LIB_STRIDE;
        rc = gperf_image(g, img, (long)order[k], ev, base, xs, &noimage);
    }
    if (rc < 0)
        snprintf(err, DCPI_ERRLEN, TOOL ": %s: %s", o->out, dcpi_strerror(rc));
    else if ((rc = dcpi_gperf_write(o->out, g, err)) < 0)
        prefix_err(err);
    dcpi_gperf_free(g);
    return rc;
}

/* ---- gmon ---- */

/* Histogram records over img's text: 4-byte bins; counts above 65535 spill into further
 * records over the same range, which gprof sums. */
static int gmon_hist(dcpi_gmon_t *g, const dcpi_profset_image_t *img, int ev, uint32_t rate)
{
    size_t n = 0;
    const dcpi_profile_entry_t *ent = dcpi_profile_entries(img->prof[ev], &n);
    uint64_t low = img->tstart & ~3ull, high = (img->tstart + img->tsize + 3) & ~3ull;
    if (high <= low)
        high = low + 4;
    uint32_t nbins = (uint32_t)((high - low) / 4);
    uint64_t *left = calloc(nbins, sizeof(*left));
    if (!left)
        return DCPI_ENOMEM;
    int rc = 0, more = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t bin = (img->tstart + ent[k].offset - low) / 4;
        if (bin >= nbins)
            rc = DCPI_ERANGE;
        else
            more |= (left[bin] += ent[k].count) > 0;
    }
    while (rc == 0 && more) {
        dcpi_gmon_hist_t *h = NULL;
        rc = dcpi_gmon_add_hist(g, low, high, nbins, rate, &h);
        more = 0;
        for (uint32_t i = 0; rc == 0 && i < nbins; i++) {
            uint64_t c = left[i] > 65535 ? 65535 : left[i];
            h->bins[i] = (uint16_t)c;
            left[i] -= c;
            more |= left[i] > 0;
        }
    }
    free(left);
    return rc;
}

static int cmp_arc(const void *a, const void *b)
{
    const dcpi_gmon_arc_t *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return x->self < y->self ? -1 : x->self > y->self;
}

/* Arcs (caller's return address -> callee's start) of every chain pair inside the program
 * (stack image prog), count = samples through that arc (not calls). */
static size_t chain_arcs(const xstacks_t *xs, size_t prog, const dcpi_frame_t *f, unsigned n,
                         uint64_t c, dcpi_gmon_arc_t *out)
{
    size_t k = 0;
    uint64_t tstart = dcpi_stackprof_image_get(xs->sp, prog)->tstart;
    for (unsigned j = 0; j + 1 < n; j++) {
        if (f[j].image != prog || f[j + 1].image != prog)
            continue;
        const dcpi_symbol_t *callee = dcpi_stackprof_frame_symbol(xs->sp, xs->tabs, f[j], j);
        if (!callee)
            continue;
        uint32_t cnt = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
        out[k++] = (dcpi_gmon_arc_t){tstart + f[j + 1].offset, callee->addr, cnt};
    }
    return k;
}

static int gmon_arcs(dcpi_gmon_t *g, const xstacks_t *xs, long prog_idx)
{
    size_t prog = xs->nimg, total = 0, k = 0;
    for (size_t i = 0; i < xs->nimg; i++)
        if (xs->pset[i] == prog_idx)
            prog = i;
    if (prog == xs->nimg || !xs->tabs[prog])
        return 0;
    for (size_t i = 0; i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t c;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &c);
        total += n;
    }
    dcpi_gmon_arc_t *arcs = malloc((total ? total : 1) * sizeof(*arcs));
    if (!arcs)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t c;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &c);
        k += chain_arcs(xs, prog, f, n, c, arcs + k);
    }
    qsort(arcs, k, sizeof(*arcs), cmp_arc);
    int rc = 0;
    for (size_t i = 0; i < k && rc == 0;) {
        uint64_t sum = 0;
        size_t j = i;
        for (; j < k && !cmp_arc(&arcs[i], &arcs[j]); j++)
            sum += arcs[j].count;
        rc = dcpi_gmon_add_arc(g, arcs[i].from, arcs[i].self,
                               sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum);
        i = j;
    }
    free(arcs);
    return rc;
}

static int export_gmon(const dcpi_profset_t *set, const size_t *order, int ev, const xstacks_t *xs,
                       const opts_t *o, char *err)
{
    const dcpi_profset_image_t *img = set->nimages ? &set->images[order[0]] : NULL;
    if (!img || img->kind != DCPI_PSET_FILE || !img->prof[ev]) {
        snprintf(err, DCPI_ERRLEN, TOOL ": no program image with samples to export");
        return DCPI_ENOENT;
    }
    uint64_t period = set->events[ev].period;
    uint32_t rate = period && period <= 1000000000 ? (uint32_t)(1000000000 / period) : 1;
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_new(&g);
    rc = rc ? rc : gmon_hist(g, img, ev, rate);
    if (rc == 0 && xs->sp)
        rc = gmon_arcs(g, xs, (long)order[0]);
    if (rc < 0)
        snprintf(err, DCPI_ERRLEN, TOOL ": %s: %s", img->name, dcpi_strerror(rc));
    else if ((rc = dcpi_gmon_write(o->out, g, err)) < 0)
        prefix_err(err);
    dcpi_gmon_free(g);
    return rc;
}

/* ---- pprof ---- */

/* An exported image: a set image, or a stack image the set does not hold. */
typedef struct pimg {
    const char *id, *path;
    uint64_t tstart, tsize;
    long set_idx; /* -1: stack only */
    dcpi_symtab_t *st;
    dcpi_srclines_t *sl;
    uint64_t mapping; /* 0: none */
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
    u64map_t locs, funcs;
    uint64_t unknown_loc;
    size_t ntypes, values_type; /* values_type: index of "values/count" or ntypes */
    int64_t *vals;
    uint64_t vprof_skipped;
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

/* The exported image with id and tstart, added (symbols, lines, mapping) when new. */
static long pimg_get(pctx_t *c, const char *id, const char *path, uint64_t tstart, uint64_t tsize,
                     const dcpi_profset_image_t *setimg, long set_idx)
{
    for (size_t i = 0; i < c->nimg; i++)
        if (c->img[i].tstart == tstart && !strcmp(c->img[i].id, id))
            return (long)i;
    if (c->nimg == c->capimg) {
        size_t cap = c->capimg ? 2 * c->capimg : 16;
        pimg_t *v = realloc(c->img, cap * sizeof(*v));
        if (!v)
            return DCPI_ENOMEM;
        c->img = v;
        c->capimg = cap;
    }
    pimg_t *im = &c->img[c->nimg];
    *im = (pimg_t){id, path, tstart, tsize, set_idx, NULL, NULL, 0};
    dcpi_profset_image_t fake = {.id = (char *)id,
                                 .kind = DCPI_PSET_FILE,
                                 .path = (char *)path,
                                 .tstart = tstart,
                                 .tsize = tsize};
    if (!setimg && path[0] != '/')
        fake.kind = DCPI_PSET_PSEUDO;
    const dcpi_profset_image_t *src = setimg ? setimg : &fake;
    dcpi_profset_open_symbols(src, &im->st, NULL);
    if (src->kind == DCPI_PSET_FILE && im->st)
        dcpi_srclines_open(path, &im->sl, NULL);
    if (src->kind != DCPI_PSET_UNKNOWN) {
        int64_t m = dcpi_pprof_mapping(c->pp, tstart, tstart + (tsize ? tsize : 1),
                                       src->kind == DCPI_PSET_FILE ? text_file_offset(src) : 0,
                                       path, id, im->sl != NULL);
        if (m < 0)
            return (long)m;
        im->mapping = (uint64_t)m;
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
 * return address - 1, inside the call. */
static int64_t plocation(pctx_t *c, long i, uint32_t offset, unsigned depth)
{
    uint64_t *slot = map_slot(&c->locs, ((uint64_t)(i + 1) << 32) | offset);
    if (!slot)
        return DCPI_ENOMEM;
    if (*slot)
        return (int64_t)*slot;
    const pimg_t *im = &c->img[i];
    uint64_t addr = im->tstart + offset, at = depth && addr ? addr - 1 : addr;
    const dcpi_symbol_t *sym = im->st ? dcpi_symtab_lookup(im->st, at) : NULL;
    int64_t fid = sym && sym->name && *sym->name ? pfunction(c, im, sym) : 0;
    const char *file = NULL;
    int line = 0;
    if (fid > 0 && im->sl)
        dcpi_srclines_lookup(im->sl, at, &file, &line);
    int64_t id = fid < 0 ? fid : dcpi_pprof_location(c->pp, im->mapping, addr, (uint64_t)fid, line);
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
    int64_t l = f < 0 ? f : dcpi_pprof_location(c->pp, 0, UNKNOWN_PC, (uint64_t)f, 0);
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

static int pprof_chains(pctx_t *c, const dcpi_profset_t *set, int e, const xstacks_t *xs)
{
    uint64_t locs[DCPI_STACK_MAXFRAMES];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t cnt;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &cnt);
        if (!chain_in_set(xs, f))
            continue;
        for (unsigned j = 0; rc == 0 && j < n; j++) {
            int64_t id;
            if (f[j].image == DCPI_STACK_NOIMAGE) {
                id = punknown(c);
            } else {
                const dcpi_stack_image_t *si = dcpi_stackprof_image_get(xs->sp, f[j].image);
                long pi = xs->pset[f[j].image];
                long k = pimg_get(c, si->id, si->path, si->tstart, si->tsize,
                                  pi >= 0 ? &set->images[pi] : NULL, pi);
                id = k < 0 ? k : plocation(c, k, f[j].offset, j);
            }
            rc = id < 0 ? (int)id : 0;
            locs[j] = (uint64_t)id;
        }
        if (rc == 0)
            rc = dcpi_pprof_sample(c->pp, locs, n, pvalues(c, set, e, cnt, 0), NULL, 0);
    }
    return rc;
}

/* One-location samples of event e's PC samples no chain accounts for. */
static int pprof_pcs(pctx_t *c, const dcpi_profset_t *set, int e, const xstacks_t *xs)
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
        for (size_t j = 0; rc == 0 && j < n; j++) {
            uint64_t cnt = ent[j].count, done = leaf_count(xs, (long)i, ent[j].offset);
            if (unknown) {
                done = noimage < cnt ? noimage : cnt;
                noimage -= done;
            }
            if (cnt <= done)
                continue;
            int64_t id = unknown ? punknown(c) : plocation(c, k, ent[j].offset, 0);
            uint64_t loc = (uint64_t)id;
            rc = id < 0 ? (int)id
                        : dcpi_pprof_sample(c->pp, &loc, 1, pvalues(c, set, e, cnt - done, 0), NULL,
                                            0);
        }
    }
    return rc;
}

static int pprof_event(pctx_t *c, const dcpi_cli_t *cli, const dcpi_profset_t *set,
                       const size_t *order, int e, char *err)
{
    xstacks_t xs = {0};
    int rc = load_stacks(cli, set, order, e, &xs, err);
    if (rc == 0 && xs.sp)
        rc = pprof_chains(c, set, e, &xs);
    if (rc == 0)
        rc = pprof_pcs(c, set, e, &xs);
    xstacks_free(&xs);
    return rc;
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

static int pprof_values(pctx_t *c, const dcpi_cli_t *cli, const dcpi_profset_t *set,
                        dcpi_db_file_t *files, size_t n, char *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        dcpi_vprof_t *vp = NULL;
        rc = dcpi_vprof_read(files[i].path, &vp, err);
        if (rc < 0)
            prefix_err(err);
        else
            rc = pprof_vprof(c, set, vp);
        dcpi_vprof_free(vp);
    }
    if (c->vprof_skipped)
        fprintf(stderr, TOOL ": %" PRIu64 " value profiles of images not exported were left out\n",
                c->vprof_skipped);
    (void)cli;
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

static int export_pprof(const dcpi_cli_t *cli, const dcpi_profset_t *set, const size_t *order,
                        int ev, const opts_t *o, char *err)
{
    pctx_t c = {0};
    dcpi_db_file_t *files = NULL;
    size_t nfiles = 0;
    int rc = dcpi_db_list_files(cli->db, cli->epoch, cli->platform, ".vprof", &files, &nfiles, err);
    if (rc < 0) {
        prefix_err(err);
        return rc;
    }
    rc = dcpi_pprof_new(&c.pp);
    rc = rc ? rc : pprof_types(&c, set, ev, nfiles);
    if (rc == 0) {
        dcpi_pprof_time(c.pp, epoch_nanos(cli->epoch));
        rc = dcpi_pprof_comment(c.pp, "dcpi epoch");
        rc = rc ? rc : dcpi_pprof_comment(c.pp, cli->epoch);
    }
    /* the program's mapping first (pprof's main binary) */
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        const dcpi_profset_image_t *img = &set->images[order[k]];
        if (img->kind != DCPI_PSET_UNKNOWN) {
            long i = pimg_get(&c, img->id, img->path, img->tstart, img->tsize, img, (long)order[k]);
            rc = i < 0 ? (int)i : 0;
        }
    }
    err[0] = '\0';
    for (size_t e = 0; rc == 0 && e < set->nevents; e++)
        rc = pprof_event(&c, cli, set, order, (int)e, err);
    if (rc == 0)
        rc = pprof_values(&c, cli, set, files, nfiles, err);
    if (rc < 0 && !err[0])
        snprintf(err, DCPI_ERRLEN, TOOL ": %s: %s", o->out, dcpi_strerror(rc));
    else if (rc == 0 && (rc = dcpi_pprof_write(o->out, c.pp, err)) < 0)
        prefix_err(err);
    free(files);
    pctx_free(&c);
    return rc;
}

static int run(dcpi_cli_t *cli, const opts_t *o)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_profset_t *set = NULL;
    int rc = dcpi_cli_load(cli, &set, err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (cli->nargs && dcpi_profset_filter(set, cli->args, (size_t)cli->nargs) == 0) {
        fprintf(stderr, TOOL ": no profile of the images named in epoch %s\n", cli->epoch);
        dcpi_profset_free(set);
        return 1;
    }
    int ev = pick_event(set, o->event, cli->epoch);
    size_t *order = calloc(set->nimages + 1, sizeof(*order));
    xstacks_t xs = {0};
    if (ev >= 0 && order) {
        image_order(set, cli, order);
        rc = load_stacks(cli, set, order, ev, &xs, err);
        if (rc == 0)
            rc = !strcmp(o->format, "gmon")    ? export_gmon(set, order, ev, &xs, o, err)
                 : !strcmp(o->format, "pprof") ? export_pprof(cli, set, order, ev, o, err)
                                               : export_gperf(set, order, ev, &xs, o, err);
        if (rc < 0)
            fprintf(stderr, "%s\n", err);
    }
    xstacks_free(&xs);
    int status = ev < 0 || !order || rc < 0 ? 1 : 0;
    free(order);
    dcpi_profset_free(set);
    return status;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL, .operands = "[image-names...]", .flags = flags};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0) {
        dcpi_cli_free(&cli);
        return dcpi_cli_exit(rc, err);
    }
    opts_t o;
    int status = parse_opts(&cli, &o);
    if (status == 0)
        status = run(&cli, &o);
    dcpi_cli_free(&cli);
    return status;
}
