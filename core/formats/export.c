/*
 * export.c - the common driver of dcpiexport's formats: the exported event, the image order
 * (the program first, at its ELF addresses; the other images at DCPI_EXPORT_LIB_BASE + place x
 * DCPI_EXPORT_LIB_STRIDE) and the event's stack profile mapped onto the profile set, with the
 * samples its chains account for per leaf (so PC samples are not exported twice).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/formats/export.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

uint64_t dcpi_export_text_offset(const dcpi_profset_image_t *img)
{
    dcpi_image_info_t info;
    uint64_t off = img->tstart;
    if (img->kind == DCPI_PSET_FILE && dcpi_image_probe(img->path, &info, NULL) == 0 &&
        !strcmp(info.id, img->id) && dcpi_image_vaddr_to_file(&info, img->tstart, &off) == 0)
        return off;
    return img->tstart;
}

/* ---- stacks ---- */

void dcpi_export_stacks_free(dcpi_export_stacks_t *xs)
{
    if (xs->sp)
        dcpi_stackprof_symbols_free(xs->sp, xs->tabs);
    dcpi_stackprof_free(xs->sp);
    free(xs->pset);
    free(xs->tabs);
    free(xs->base);
    free(xs->leaves);
    *xs = (dcpi_export_stacks_t){0};
}

static int cmp_leaf(const void *a, const void *b)
{
    const dcpi_export_leaf_t *x = a, *y = b;
    if (x->img != y->img)
        return x->img < y->img ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int collect_leaves(dcpi_export_stacks_t *xs)
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
            xs->leaves[k++] = (dcpi_export_leaf_t){xs->pset[f[0].image], f[0].offset, c};
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

uint64_t dcpi_export_leaf_count(const dcpi_export_stacks_t *xs, long img, uint32_t offset)
{
    dcpi_export_leaf_t key = {img, offset, 0};
    const dcpi_export_leaf_t *l =
        xs->sp ? bsearch(&key, xs->leaves, xs->nleaves, sizeof(key), cmp_leaf) : NULL;
    return l ? l->count : 0;
}

/* Address bases: a set image keeps the base of its place in order; other images get the
 * places after the set's. */
static void stack_bases(dcpi_export_stacks_t *xs, const dcpi_profset_t *set, const size_t *order)
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
        xs->base[i] =
            place == 0 || kernel ? 0 : DCPI_EXPORT_LIB_BASE + place * DCPI_EXPORT_LIB_STRIDE;
    }
}

int dcpi_export_stacks_load(const dcpi_export_src_t *src, const dcpi_profset_t *set,
                            const size_t *order, int ev, dcpi_export_stacks_t *xs, char *err)
{
    *xs = (dcpi_export_stacks_t){0};
    const char *name = set->events[ev].name;
    int rc = src->stacks ? src->stacks(src->source_arg, set, name, &xs->sp, err)
             : src->nepochs > 1
                 ? dcpi_stackprof_load_epochs(src->db, src->epochs, src->nepochs, src->platform,
                                              name, &xs->sp, err)
                 : dcpi_stackprof_load(src->db, src->epoch, src->platform, name, &xs->sp, err);
    if (rc < 0) {
        dcpi__err_prefix(err, src->tool);
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
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", src->tool);
    }
    dcpi_stackprof_symbols(xs->sp, set, xs->pset, xs->tabs);
    stack_bases(xs, set, order);
    for (size_t k = 0; k < set->nimages; k++)
        xs->has_unknown |= set->images[k].kind == DCPI_PSET_UNKNOWN;
    rc = collect_leaves(xs);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: out of memory", src->tool);
    return rc;
}

int dcpi_export_chain_in_set(const dcpi_export_stacks_t *xs, const dcpi_frame_t *f)
{
    if (f[0].image == DCPI_STACK_NOIMAGE)
        return xs->has_unknown;
    return xs->pset[f[0].image] >= 0;
}

uint64_t dcpi_export_frame_pc(const dcpi_export_stacks_t *xs, dcpi_frame_t f)
{
    if (f.image == DCPI_STACK_NOIMAGE)
        return DCPI_EXPORT_UNKNOWN_PC;
    return xs->base[f.image] + dcpi_stackprof_image_get(xs->sp, f.image)->tstart + f.offset;
}

/* ---- the driver ---- */

/* Whether a file image looks like a program rather than a library or a transient mapping. */
static int looks_like_program(const dcpi_profset_image_t *img)
{
    const char *base = strrchr(img->path, '/') ? strrchr(img->path, '/') + 1 : img->path;
    return img->kind == DCPI_PSET_FILE && !strstr(base, ".so") && strncmp(base, "ld-linux", 8) &&
           !strstr(img->path, "memfd:") && !strstr(img->path, "(deleted)");
}

/* The image pprof shows as the main binary when no operand names it: the most sampled program
 * (not a library, the dynamic loader or a memfd), else the most sampled file image. */
static size_t main_image(const dcpi_profset_t *set)
{
    size_t best = set->nimages, best_lib = set->nimages;
    uint64_t n = 0, n_lib = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        uint64_t t = dcpi_profset_image_total(set, img);
        if (looks_like_program(img) && (best == set->nimages || t > n))
            best = i, n = t;
        if (img->kind == DCPI_PSET_FILE && (best_lib == set->nimages || t > n_lib))
            best_lib = i, n_lib = t;
    }
    return best < set->nimages ? best : best_lib;
}

/* Image order: the first image named by an operand (the program), else main_image, then the
 * others. */
static void image_order(const dcpi_profset_t *set, const dcpi_export_src_t *src, size_t *order)
{
    size_t k = 0, first = set->nimages;
    for (int a = 0; a < src->nnames && first == set->nimages; a++)
        for (size_t i = 0; i < set->nimages && first == set->nimages; i++)
            if (dcpi_profset_image_matches(&set->images[i], src->names[a]))
                first = i;
    if (first == set->nimages)
        first = main_image(set);
    if (first < set->nimages)
        order[k++] = first;
    for (size_t i = 0; i < set->nimages; i++)
        if (i != first)
            order[k++] = i;
}

int dcpi_export_open(dcpi_export_t *x, const dcpi_export_src_t *src, const dcpi_profset_t *set,
                     const char *event, const char *out, char *err)
{
    *x = (dcpi_export_t){.src = src, .set = set, .out = out, .ev = -1};
    err[0] = '\0';
    if (set->nevents == 0) {
        return dcpi__errf(err, DCPI_ENOENT, "%s: no samples in epoch %s", src->tool, src->epoch);
    }
    x->ev = dcpi_profset_pick_event(set, event, src->tool, src->epoch);
    if (x->ev < 0)
        return DCPI_ENOENT;
    x->order = calloc(set->nimages + 1, sizeof(*x->order));
    if (!x->order) {
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", src->tool);
    }
    image_order(set, src, x->order);
    return dcpi_export_stacks_load(src, set, x->order, x->ev, &x->xs, err);
}

void dcpi_export_close(dcpi_export_t *x)
{
    dcpi_export_stacks_free(&x->xs);
    free(x->order);
    x->order = NULL;
}

/* ---- value profiles ---- */

void dcpi_export_vprofs_free(dcpi_vprof_t **vps, size_t n)
{
    for (size_t i = 0; vps && i < n; i++)
        dcpi_vprof_free(vps[i]);
    free(vps);
}

/* Keep vp in *all unless a plugin is asked for and vp is another one's (then it is freed). */
static int keep_vprof(dcpi_vprof_t *vp, const char *plugin, dcpi_vprof_t ***all, size_t *n,
                      size_t *cap)
{
    const char *name = dcpi_vprof_get(vp, "vprof");
    if (plugin && (!name || strcmp(name, plugin))) {
        dcpi_vprof_free(vp);
        return 0;
    }
    if (dcpi__grow((void **)all, cap, *n + 1, sizeof(**all)) < 0) {
        dcpi_vprof_free(vp);
        return DCPI_ENOMEM;
    }
    (*all)[(*n)++] = vp;
    return 0;
}

/* The given source's (the fleet's): every exported image's, in set order. */
static int given_vprofs(const dcpi_export_src_t *src, const dcpi_profset_t *set,
                        const size_t *order, const char *plugin, dcpi_vprof_t ***all, size_t *n,
                        size_t *cap, char *err)
{
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        const dcpi_profset_image_t *img = &set->images[order[k]];
        char **names = NULL;
        dcpi_vprof_t **vps = NULL;
        size_t nv = 0;
        if (img->kind == DCPI_PSET_UNKNOWN)
            continue;
        rc = src->vprofs(src->source_arg, img->id, &names, &vps, &nv, err);
        for (size_t i = 0; i < nv; i++) {
            if (rc == 0)
                rc = keep_vprof(vps[i], plugin, all, n, cap);
            else
                dcpi_vprof_free(vps[i]);
            free(names[i]);
        }
        free(names);
        free(vps);
    }
    return rc;
}

/* The database's .vprof files of the exported epochs; damaged ones named and left out. */
static int db_vprofs(const dcpi_export_src_t *src, const char *plugin, dcpi_vprof_t ***all,
                     size_t *n, size_t *cap, char *err)
{
    dcpi_db_file_t *files = NULL;
    size_t nfiles = 0;
    const char *const *ev = src->nepochs ? src->epochs : &src->epoch;
    int rc = dcpi_db_list_files_epochs(src->db, ev, src->nepochs ? src->nepochs : 1, src->platform,
                                       ".vprof", &files, &nfiles, err);
    for (size_t i = 0; rc == 0 && i < nfiles; i++) {
        dcpi_vprof_t *vp = NULL;
        rc = dcpi_vprof_read(files[i].path, &vp, err);
        if (rc < 0 && rc != DCPI_ENOMEM && dcpi__damage_skip(rc, "%s", err) == 0)
            rc = 0; /* damaged: named, left out, counted in the exit status */
        else if (rc == 0)
            rc = keep_vprof(vp, plugin, all, n, cap);
    }
    free(files);
    return rc;
}

int dcpi_export_vprofs(const dcpi_export_src_t *src, const dcpi_profset_t *set, const size_t *order,
                       const char *plugin, dcpi_vprof_t ***all, size_t *n, char *err)
{
    size_t cap = 0;
    *all = NULL;
    *n = 0;
    int rc = src->vprofs ? given_vprofs(src, set, order, plugin, all, n, &cap, err)
                         : db_vprofs(src, plugin, all, n, &cap, err);
    if (rc < 0) {
        if (rc == DCPI_ENOMEM || !err[0])
            dcpi__errf(err, rc, "%s: value profiles: %s", src->tool, dcpi_strerror(rc));
        else
            dcpi__err_prefix(err, src->tool);
        dcpi_export_vprofs_free(*all, *n);
        *all = NULL;
        *n = 0;
    }
    return rc;
}
