/*
 * reportflame.c - the flame graph of dcpireport's page: the chains of the stack profile of the
 * sort event (core/store/stackprof.h), their frames named as dcpiprof's children column names
 * them (core/model/stackview.h), merged into a tree from the outermost caller to the leaf.
 * Frames under o->flame_min % of the samples are left out (their count and samples are said).
 * Written as a flat pre-order list of (name, image, count, depth) with children by decreasing
 * count, names and images as indices into string tables (see report.h).
 */
#include "core/report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/stackview.h"
#include "core/base/err.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/image/symbols.h"
#include "core/store/stackprof.h"
#include "dcpi/errno.h"

#define UNKNOWN_FRAME "[unknown]"

typedef struct node {
    uint32_t name; /* index in the name table */
    uint32_t img;  /* stack image index, DCPI_STACK_NOIMAGE */
    uint32_t parent, child, next;
    uint64_t count;
} node_t;

typedef struct tree {
    node_t *v;
    size_t n, cap;
    uint32_t *slots; /* open addressing: node index + 1, 0 empty; keyed (parent, name, img) */
    size_t nslots;
    const char **names; /* interned by pointer: every name comes from one place per string */
    size_t nnames, capnames;
    uint32_t *nslot; /* name index + 1 per slot (names hashed by content) */
    size_t nnslots;
} tree_t;

static uint64_t node_hash(uint32_t parent, uint32_t name, uint32_t img)
{
    uint64_t k[3] = {parent, name, img};
    return dcpi__fnv1a(DCPI_FNV64_OFFSET, k, sizeof(k));
}

static int rehash(uint32_t **slots, size_t *nslots, size_t want,
                  uint64_t (*h)(const tree_t *, uint32_t), const tree_t *t, size_t count)
{
    size_t n = 1024;
    while (n < want * 2)
        n *= 2;
    uint32_t *s = calloc(n, sizeof(*s));
    if (!s)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < count; i++) {
        size_t j = h(t, (uint32_t)i) & (n - 1);
        while (s[j])
            j = (j + 1) & (n - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = n;
    return 0;
}

static uint64_t hash_of_node(const tree_t *t, uint32_t i)
{
    return node_hash(t->v[i].parent, t->v[i].name, t->v[i].img);
}

static uint64_t hash_of_name(const tree_t *t, uint32_t i)
{
    return dcpi__fnv1a(DCPI_FNV64_OFFSET, t->names[i], strlen(t->names[i]));
}

/* The index of name in the table, added when new; -1 when out of memory. */
static long intern(tree_t *t, const char *name)
{
    if (t->nnames * 2 >= t->nnslots &&
        rehash(&t->nslot, &t->nnslots, t->nnames + 1, hash_of_name, t, t->nnames) < 0)
        return -1;
    size_t j = dcpi__fnv1a(DCPI_FNV64_OFFSET, name, strlen(name)) & (t->nnslots - 1);
    for (; t->nslot[j]; j = (j + 1) & (t->nnslots - 1))
        if (!strcmp(t->names[t->nslot[j] - 1], name))
            return (long)t->nslot[j] - 1;
    if (dcpi__grow((void **)&t->names, &t->capnames, t->nnames + 1, sizeof(*t->names)) < 0)
        return -1;
    t->names[t->nnames] = name;
    t->nslot[j] = (uint32_t)++t->nnames;
    return (long)t->nnames - 1;
}

/* The child (name, img) of parent, added when new; -1 when out of memory. */
static long child(tree_t *t, uint32_t parent, uint32_t name, uint32_t img)
{
    if (t->n * 2 >= t->nslots && rehash(&t->slots, &t->nslots, t->n + 1, hash_of_node, t, t->n) < 0)
        return -1;
    size_t j = node_hash(parent, name, img) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
        const node_t *c = &t->v[t->slots[j] - 1];
        if (c->parent == parent && c->name == name && c->img == img)
            return (long)t->slots[j] - 1;
    }
    if (dcpi__grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0)
        return -1;
    uint32_t i = (uint32_t)t->n++;
    t->v[i] = (node_t){name, img, parent, 0, t->v[parent].child, 0};
    t->v[parent].child = i; /* node 0 is the root: never a child, so 0 means none */
    t->slots[j] = i + 1;
    return i;
}

static void tree_free(tree_t *t)
{
    free(t->v);
    free(t->slots);
    free(t->names);
    free(t->nslot);
}

/* Add one chain (leaf first) from its outermost frame down. */
static int add_chain(tree_t *t, const dcpi_stackprof_t *sp, dcpi_symtab_t *const *tabs,
                     const dcpi_frame_t *f, unsigned nf, uint64_t count)
{
    uint32_t at = 0;
    t->v[0].count += count;
    for (unsigned k = nf; k-- > 0;) {
        const dcpi_symbol_t *s = dcpi_stackprof_frame_symbol(sp, tabs, f[k], k);
        long name = intern(t, s && s->name && *s->name ? s->name : UNKNOWN_FRAME);
        long c = name < 0 ? -1 : child(t, at, (uint32_t)name, f[k].image);
        if (c < 0)
            return DCPI_ENOMEM;
        at = (uint32_t)c;
        t->v[at].count += count;
    }
    return 0;
}

static int build(tree_t *t, const dcpi_stackprof_t *sp, dcpi_symtab_t *const *tabs)
{
    if (dcpi__grow((void **)&t->v, &t->cap, 1, sizeof(*t->v)) < 0 || intern(t, "all") < 0)
        return DCPI_ENOMEM;
    t->v[0] = (node_t){0, DCPI_STACK_NOIMAGE, 0, 0, 0, 0};
    t->n = 1;
    int rc = 0;
    for (size_t i = 0; i < dcpi_stackprof_count(sp) && rc == 0; i++) {
        const dcpi_frame_t *f;
        unsigned nf;
        uint64_t c;
        dcpi_stackprof_chain(sp, i, &f, &nf, &c);
        rc = add_chain(t, sp, tabs, f, nf, c);
    }
    return rc;
}

/* ---- writing ---- */

typedef struct out {
    FILE *f;
    const tree_t *t;
    const dcpi_stackprof_t *sp;
    double min;         /* samples a frame needs (under: left out) */
    long *name_out;     /* [nnames]: index in the written name table, -1 not yet */
    long *img_out;      /* [nimages + 1]: the same for images (last: no image) */
    const char **names; /* the written tables */
    size_t nnames;
    const char **imgs;
    size_t nimgs;
    size_t written, hidden; /* frames written and left out */
    uint64_t hidden_samples;
    int first;
} out_t;

static int cmp_count_desc(const void *a, const void *b)
{
    const node_t *x = *(const node_t *const *)a, *y = *(const node_t *const *)b;
    return x->count != y->count ? (x->count > y->count ? -1 : 1)
                                : (x->name > y->name) - (x->name < y->name);
}

static long out_name(out_t *o, uint32_t name)
{
    if (o->name_out[name] < 0) {
        o->names[o->nnames] = o->t->names[name];
        o->name_out[name] = (long)o->nnames++;
    }
    return o->name_out[name];
}

static long out_img(out_t *o, uint32_t img)
{
    size_t ni = dcpi_stackprof_nimages(o->sp);
    size_t k = img < ni ? img : ni;
    if (o->img_out[k] < 0) {
        o->imgs[o->nimgs] = k < ni ? dcpi_stackprof_image_get(o->sp, k)->path : "";
        o->img_out[k] = (long)o->nimgs++;
    }
    return o->img_out[k];
}

static int write_node(out_t *o, uint32_t i, unsigned depth)
{
    const node_t *n = &o->t->v[i];
    fprintf(o->f, "%s%ld,%ld,%" PRIu64 ",%u", o->first ? "" : ",", out_name(o, n->name),
            out_img(o, n->img), n->count, depth);
    o->first = 0;
    o->written++;
    size_t nc = 0;
    for (uint32_t c = n->child; c; c = o->t->v[c].next)
        nc++;
    const node_t **kids = malloc((nc + 1) * sizeof(*kids));
    if (!kids)
        return DCPI_ENOMEM;
    nc = 0;
    for (uint32_t c = n->child; c; c = o->t->v[c].next)
        kids[nc++] = &o->t->v[c];
    if (nc > 0) /* qsort's array may not be NULL, even empty */
        qsort(kids, nc, sizeof(*kids), cmp_count_desc);
    int rc = 0;
    for (size_t k = 0; k < nc && rc == 0; k++) {
        if ((double)kids[k]->count < o->min) { /* sorted: every later one is smaller */
            o->hidden++;
            o->hidden_samples += kids[k]->count;
            continue;
        }
        rc = write_node(o, (uint32_t)(kids[k] - o->t->v), depth + 1);
    }
    free(kids);
    return rc;
}

static void write_table(FILE *f, const char *key, const char **v, size_t n)
{
    fprintf(f, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        dcpi_report_json_str(f, v[i]);
    }
    fputc(']', f);
}

static int write_tree(FILE *f, const tree_t *t, const dcpi_stackprof_t *sp, const char *event,
                      double min_pct)
{
    size_t ni = dcpi_stackprof_nimages(sp);
    out_t o = {.f = f, .t = t, .sp = sp, .first = 1};
    o.min = (double)t->v[0].count * min_pct / 100.0;
    o.name_out = malloc((t->nnames + 1) * sizeof(*o.name_out));
    o.img_out = malloc((ni + 1) * sizeof(*o.img_out));
    o.names = malloc((t->nnames + 1) * sizeof(*o.names));
    o.imgs = malloc((ni + 1) * sizeof(*o.imgs));
    int rc = o.name_out && o.img_out && o.names && o.imgs ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        memset(o.name_out, 0xff, (t->nnames + 1) * sizeof(*o.name_out));
        memset(o.img_out, 0xff, (ni + 1) * sizeof(*o.img_out));
        fprintf(f, "\"flame\":{\"event\":");
        dcpi_report_json_str(f, event);
        fprintf(f,
                ",\"total\":%" PRIu64 ",\"chains\":%zu,\"lost\":%" PRIu64 ",\"min\":%g,\"nodes\":[",
                t->v[0].count, dcpi_stackprof_count(sp), dcpi_stackprof_lost(sp), min_pct);
        rc = write_node(&o, 0, 0);
    }
    if (rc == 0) {
        fputc(']', f);
        write_table(f, "names", o.names, o.nnames);
        write_table(f, "images", o.imgs, o.nimgs);
        fprintf(f, ",\"frames\":%zu,\"hidden\":%zu,\"hidden_samples\":%" PRIu64 "}", t->n - 1,
                o.hidden, o.hidden_samples);
    }
    free(o.imgs);
    free(o.names);
    free(o.img_out);
    free(o.name_out);
    return rc;
}

int dcpi__report_flame(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                       const dcpi_procs_table_t *rows, char *err)
{
    const char *event = set->events[rows->sort].name;
    dcpi_stackprof_t *sp = NULL;
    int rc = o->stacks        ? o->stacks(o->source_arg, set, event, &sp, err)
             : o->nepochs > 1 ? dcpi_stackprof_load_epochs(o->db, o->epochs, o->nepochs,
                                                           o->platform, event, &sp, err)
                              : dcpi_stackprof_load(o->db, o->epoch, o->platform, event, &sp, err);
    if (rc < 0)
        return rc;
    if (!sp || dcpi_stackprof_total(sp) == 0) {
        fprintf(f, "\"flame\":null,\"flame_none\":");
        dcpi_report_json_str(f, "the epoch has no stack profile of this event (profile with "
                                "dcpid -g for call chains)");
        fputs(",\"calls\":null", f);
        dcpi_stackprof_free(sp);
        return 0;
    }
    size_t ni = dcpi_stackprof_nimages(sp);
    long *pset = calloc(ni + 1, sizeof(*pset));
    dcpi_symtab_t **tabs = calloc(ni + 1, sizeof(*tabs));
    tree_t t = {0};
    rc = pset && tabs ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        dcpi_stackprof_symbols(sp, set, pset, tabs);
        rc = build(&t, sp, tabs);
    }
    if (rc == 0)
        rc = write_tree(f, &t, sp, event, o->flame_min);
    if (rc == 0) {
        fputc(',', f);
        rc = dcpi__report_calls(f, set, rows, event, sp, pset, tabs);
    }
    if (rc < 0)
        dcpi__errf(err, rc, "flame graph and calls: %s", dcpi_strerror(rc));
    tree_free(&t);
    if (tabs)
        dcpi_stackprof_symbols_free(sp, tabs);
    free(tabs);
    free(pset);
    dcpi_stackprof_free(sp);
    return rc;
}
