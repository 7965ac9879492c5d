/*
 * export_gmon.c - dcpiexport -format gmon: the program's samples (the first image of the
 * export's order) as a gprof gmon.out (core/formats/gmon.h): a histogram of 4-byte bins over
 * its text at the event's sampling rate, and call-graph arcs from the stack chains inside it
 * (counting samples through each arc, not calls).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/base/err.h"
#include "core/formats/export.h"
#include "core/formats/gmon.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"

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
static size_t chain_arcs(const dcpi_export_stacks_t *xs, size_t prog, const dcpi_frame_t *f,
                         unsigned n, uint64_t c, dcpi_gmon_arc_t *out)
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

static int gmon_arcs(dcpi_gmon_t *g, const dcpi_export_stacks_t *xs, long prog_idx)
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

int dcpi_export_gmon(const dcpi_export_t *x, char *err)
{
    const dcpi_profset_t *set = x->set;
    int ev = x->ev;
    const dcpi_profset_image_t *img = set->nimages ? &set->images[x->order[0]] : NULL;
    if (!img || img->kind != DCPI_PSET_FILE || !img->prof[ev]) {
        return dcpi__errf(err, DCPI_ENOENT, "%s: no program image with samples to export",
                          x->src->tool);
    }
    uint64_t period = set->events[ev].period;
    uint32_t rate = period && period <= 1000000000 ? (uint32_t)(1000000000 / period) : 1;
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_new(&g);
    rc = rc ? rc : gmon_hist(g, img, ev, rate);
    if (rc == 0 && x->xs.sp)
        rc = gmon_arcs(g, &x->xs, (long)x->order[0]);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s: %s", x->src->tool, img->name, dcpi_strerror(rc));
    else if ((rc = dcpi_gmon_write(x->out, g, err)) < 0)
        dcpi__err_prefix(err, x->src->tool);
    dcpi_gmon_free(g);
    return rc;
}
