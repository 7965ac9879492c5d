/*
 * reportcalls.c - the caller/callee view of dcpireport's page: from every chain of the stack
 * profile of the sort event, each procedure's samples in chains through it (once per chain, as
 * dcpiprof's children column), its samples as the leaf, its samples as the outermost frame, and
 * each call edge (caller, callee) with the samples of the chains holding it (once per chain).
 * Frames are named as dcpiprof's children column names them (the set's image names, unknown_rou
 * in an image without a symbol there, "[unknown]" outside every image). Written as a table of
 * procedures (by decreasing samples) and a flat list of edges (by decreasing samples), at most
 * CALLS_EDGES_MAX of them (see report.h).
 */
#include "core/report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/image/symbols.h"
#include "core/model/stackview.h"
#include "dcpi/errno.h"

#define UNKNOWN_FRAME "[unknown]"
/* Edges written at most (the smallest beyond are counted in a note). */
#define CALLS_EDGES_MAX 50000

typedef struct cproc {
    const char *name, *image;
    long img; /* index in set->images, -1 outside the set */
    uint64_t total, self, root;
    size_t stamp; /* chain index + 1 of the last chain counted */
    uint32_t out; /* its number in the page (see number_procs) */
} cproc_t;

typedef struct cedge {
    uint32_t caller, callee;
    uint64_t count;
    size_t stamp;
} cedge_t;

typedef struct graph {
    cproc_t *p;
    size_t np, capp;
    uint32_t *pslots; /* open addressing: proc index + 1, 0 empty */
    size_t npslots;
    cedge_t *e;
    size_t ne, cape;
    uint32_t *eslots; /* edge index + 1 */
    size_t neslots;
} graph_t;

static uint64_t proc_hash(const char *name, const char *image)
{
    return dcpi__fnv1a(dcpi__fnv1a(DCPI_FNV64_OFFSET, name, strlen(name) + 1), image,
                       strlen(image));
}

static uint64_t edge_hash(uint32_t a, uint32_t b)
{
    uint32_t k[2] = {a, b};
    return dcpi__fnv1a(DCPI_FNV64_OFFSET, k, sizeof(k));
}

static uint64_t hash_of(const graph_t *g, int edges, size_t i)
{
    return edges ? edge_hash(g->e[i].caller, g->e[i].callee)
                 : proc_hash(g->p[i].name, g->p[i].image);
}

/* Grow a slot table to hold count entries at most half full (the entries there are kept). */
static int rehash(graph_t *g, int edges, size_t count)
{
    uint32_t **slots = edges ? &g->eslots : &g->pslots;
    size_t *nslots = edges ? &g->neslots : &g->npslots;
    size_t have = edges ? g->ne : g->np;
    if (count * 2 < *nslots)
        return 0;
    size_t n = 1024;
    while (n < count * 4)
        n *= 2;
    uint32_t *s = calloc(n, sizeof(*s));
    if (!s)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < have; i++) {
        size_t j = hash_of(g, edges, i) & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = n;
    return 0;
}

/* The index of procedure (name, image), added when new; -1 when out of memory. */
static long proc_of(graph_t *g, const char *name, const char *image, long img)
{
    if (rehash(g, 0, g->np + 1) < 0)
        return -1;
    size_t j = proc_hash(name, image) & (g->npslots - 1);
    for (; g->pslots[j]; j = (j + 1) & (g->npslots - 1)) {
        const cproc_t *p = &g->p[g->pslots[j] - 1];
        if (!strcmp(p->name, name) && !strcmp(p->image, image))
            return (long)g->pslots[j] - 1;
    }
    if (dcpi__grow((void **)&g->p, &g->capp, g->np + 1, sizeof(*g->p)) < 0)
        return -1;
    g->p[g->np] = (cproc_t){.name = name, .image = image, .img = img};
    g->pslots[j] = (uint32_t)++g->np;
    return (long)g->np - 1;
}

/* Count chain (index stamp - 1, count c) once for the edge caller -> callee. */
static int add_edge(graph_t *g, uint32_t caller, uint32_t callee, uint64_t c, size_t stamp)
{
    if (rehash(g, 1, g->ne + 1) < 0)
        return DCPI_ENOMEM;
    size_t j = edge_hash(caller, callee) & (g->neslots - 1);
    for (; g->eslots[j]; j = (j + 1) & (g->neslots - 1)) {
        cedge_t *e = &g->e[g->eslots[j] - 1];
        if (e->caller == caller && e->callee == callee) {
            if (e->stamp != stamp) /* recursion: a pair seen twice in a chain counts once */
                e->count += c;
            e->stamp = stamp;
            return 0;
        }
    }
    if (dcpi__grow((void **)&g->e, &g->cape, g->ne + 1, sizeof(*g->e)) < 0)
        return DCPI_ENOMEM;
    g->e[g->ne] = (cedge_t){caller, callee, c, stamp};
    g->eslots[j] = (uint32_t)++g->ne;
    return 0;
}

static const char *frame_name(const dcpi_profset_t *set, const dcpi_stackprof_t *sp,
                              const long *pset, dcpi_symtab_t *const *tabs, dcpi_frame_t f,
                              unsigned depth, const char **image, long *img)
{
    int in_set = f.image != DCPI_STACK_NOIMAGE && pset[f.image] >= 0;
    *img = in_set ? pset[f.image] : -1;
    if (in_set)
        *image = set->images[pset[f.image]].name;
    else
        *image = f.image != DCPI_STACK_NOIMAGE ? dcpi_stackprof_image_get(sp, f.image)->path : "";
    const dcpi_symbol_t *s = dcpi_stackprof_frame_symbol(sp, tabs, f, depth);
    if (s && s->name && *s->name)
        return s->name;
    return in_set ? DCPI_UNKNOWN_ROUTINE : UNKNOWN_FRAME;
}

/* One chain (leaf first): its procedures and edges, each counted once. */
static int add_chain(graph_t *g, const dcpi_profset_t *set, const dcpi_stackprof_t *sp,
                     const long *pset, dcpi_symtab_t *const *tabs, size_t chain)
{
    const dcpi_frame_t *f;
    unsigned nf;
    uint64_t c;
    dcpi_stackprof_chain(sp, chain, &f, &nf, &c);
    size_t stamp = chain + 1;
    long callee = -1;
    for (unsigned k = 0; k < nf; k++) {
        const char *image;
        long img;
        const char *name = frame_name(set, sp, pset, tabs, f[k], k, &image, &img);
        long at = proc_of(g, name, image, img);
        if (at < 0)
            return DCPI_ENOMEM;
        cproc_t *p = &g->p[at];
        if (p->stamp != stamp)
            p->total += c;
        p->stamp = stamp;
        p->self += k == 0 ? c : 0;
        p->root += k + 1 == nf ? c : 0;
        if (callee >= 0 && add_edge(g, (uint32_t)at, (uint32_t)callee, c, stamp) < 0)
            return DCPI_ENOMEM;
        callee = at;
    }
    return 0;
}

static const graph_t *g_sort; /* qsort has no context argument in C11 */

static int cmp_proc(const void *a, const void *b)
{
    const cproc_t *x = &g_sort->p[*(const uint32_t *)a], *y = &g_sort->p[*(const uint32_t *)b];
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->image, y->image);
}

static int cmp_edge(const void *a, const void *b)
{
    const cedge_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    return (x->callee > y->callee) - (x->callee < y->callee);
}

static uint64_t row_hash(const char *name, long img)
{
    return dcpi__fnv1a(DCPI_FNV64_OFFSET, name, strlen(name)) ^ (uint64_t)(img + 1);
}

/* p->out for every procedure: the index of its row in the page's procedure table (which
 * holds its name, image and samples in chains: the children column), or nrows + k for the
 * k-th of the others (by decreasing samples), which are written in "extra". Their number. */
static int number_procs(graph_t *g, const dcpi_procs_table_t *t, size_t nrows, uint32_t *extra,
                        size_t *nextra)
{
    size_t ns = 1024;
    while (ns < nrows * 2)
        ns *= 2;
    uint32_t *slots = calloc(ns, sizeof(*slots)); /* row index + 1 */
    if (!slots)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < nrows; i++) {
        size_t j = row_hash(t->v[i].proc, t->v[i].img) & (ns - 1);
        while (slots[j])
            j = (j + 1) & (ns - 1);
        slots[j] = (uint32_t)i + 1;
    }
    size_t n = 0;
    for (size_t k = 0; k < g->np; k++) {
        cproc_t *p = &g->p[k];
        size_t j = p->img >= 0 ? row_hash(p->name, p->img) & (ns - 1) : 0;
        for (; p->img >= 0 && slots[j]; j = (j + 1) & (ns - 1)) {
            const dcpi_procs_row_t *r = &t->v[slots[j] - 1];
            if (r->img == p->img && !strcmp(r->proc, p->name))
                break;
        }
        if (p->img >= 0 && slots[j])
            p->out = slots[j] - 1;
        else
            extra[n++] = (uint32_t)k;
    }
    free(slots);
    g_sort = g;
    if (n > 0)
        qsort(extra, n, sizeof(*extra), cmp_proc);
    for (size_t k = 0; k < n; k++)
        g->p[extra[k]].out = (uint32_t)(nrows + k);
    *nextra = n;
    return 0;
}

/* Images as a string table: the index of image in imgs (added when new). */
static size_t image_index(const char **imgs, size_t *n, const char *image)
{
    for (size_t i = 0; i < *n; i++)
        if (imgs[i] == image || !strcmp(imgs[i], image))
            return i;
    imgs[*n] = image;
    return (*n)++;
}

/* "KEY":[id,count,...] for the procedures whose field (self or root) is not 0. */
static void write_sparse(FILE *f, const char *key, const graph_t *g, int root)
{
    fprintf(f, ",\"%s\":[", key);
    int first = 1;
    for (size_t k = 0; k < g->np; k++) {
        uint64_t v = root ? g->p[k].root : g->p[k].self;
        if (!v)
            continue;
        fprintf(f, "%s%" PRIu32 ",%" PRIu64, first ? "" : ",", g->p[k].out, v);
        first = 0;
    }
    fputc(']', f);
}

static void write_extra(FILE *f, const graph_t *g, const uint32_t *extra, size_t n,
                        const char **imgs)
{
    size_t nimgs = 0;
    fputs(",\"extra\":[", f); /* [name, image, samples in chains] */
    for (size_t k = 0; k < n; k++) {
        const cproc_t *p = &g->p[extra[k]];
        fputs(k ? ",[" : "[", f);
        dcpi_report_json_str(f, p->name);
        fprintf(f, ",%zu,%" PRIu64 "]", image_index(imgs, &nimgs, p->image), p->total);
    }
    fputs("],\"images\":[", f);
    for (size_t i = 0; i < nimgs; i++) {
        fputs(i ? "," : "", f);
        dcpi_report_json_str(f, imgs[i]);
    }
    fputc(']', f);
}

static void write_edges(FILE *f, graph_t *g)
{
    if (g->ne > 0)
        qsort(g->e, g->ne, sizeof(*g->e), cmp_edge);
    size_t shown = g->ne < CALLS_EDGES_MAX ? g->ne : CALLS_EDGES_MAX;
    uint64_t cut_samples = 0;
    fputs(",\"edges\":[", f); /* caller, callee, count, ... */
    for (size_t i = 0; i < g->ne; i++) {
        const cedge_t *e = &g->e[i];
        if (i >= shown) {
            cut_samples += e->count;
            continue;
        }
        fprintf(f, "%s%" PRIu32 ",%" PRIu32 ",%" PRIu64, i ? "," : "", g->p[e->caller].out,
                g->p[e->callee].out, e->count);
    }
    fprintf(f, "],\"edges_cut\":%zu,\"edges_cut_samples\":%" PRIu64, g->ne - shown, cut_samples);
}

static int write_graph(FILE *f, graph_t *g, const dcpi_procs_table_t *t, const char *event,
                       uint64_t total)
{
    size_t nrows = t->n < DCPI_REPORT_ROWS_MAX ? t->n : DCPI_REPORT_ROWS_MAX, nextra = 0;
    uint32_t *extra = malloc((g->np + 1) * sizeof(*extra));
    const char **imgs = malloc((g->np + 1) * sizeof(*imgs));
    int rc = extra && imgs ? number_procs(g, t, nrows, extra, &nextra) : DCPI_ENOMEM;
    if (rc == 0) {
        fputs("\"calls\":{\"event\":", f);
        dcpi_report_json_str(f, event);
        fprintf(f, ",\"total\":%" PRIu64 ",\"rows\":%zu", total, nrows);
        write_extra(f, g, extra, nextra, imgs);
        write_sparse(f, "self", g, 0);
        write_sparse(f, "root", g, 1);
        write_edges(f, g);
        fputc('}', f);
    }
    free(imgs);
    free(extra);
    return rc;
}

int dcpi__report_calls(FILE *f, const dcpi_profset_t *set, const dcpi_procs_table_t *t,
                       const char *event, const dcpi_stackprof_t *sp, const long *pset,
                       dcpi_symtab_t *const *tabs)
{
    graph_t g = {0};
    int rc = 0;
    for (size_t i = 0; i < dcpi_stackprof_count(sp) && rc == 0; i++)
        rc = add_chain(&g, set, sp, pset, tabs, i);
    if (rc == 0)
        rc = write_graph(f, &g, t, event, dcpi_stackprof_total(sp));
    free(g.p);
    free(g.pslots);
    free(g.e);
    free(g.eslots);
    return rc;
}
