/*
 * export_gperf.c - dcpiexport -format gperftools: the event's samples as gperftools' legacy CPU
 * profile (core/formats/gperf.h), read by google-pprof. A record per stack chain (leaf first),
 * one-PC records for the PC samples no chain accounts for, and a mapping line per file image
 * at its exported load address.
 */
#include <inttypes.h>
#include <stdio.h>
#include "core/base/err.h"
#include "core/formats/export.h"
#include "core/formats/gperf.h"
#include "dcpi/errno.h"

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
                       uint64_t base, const dcpi_export_stacks_t *xs, uint64_t *noimage)
{
    size_t n = 0;
    const dcpi_profile_entry_t *ent =
        img->prof[ev] ? dcpi_profile_entries(img->prof[ev], &n) : NULL;
    if (n == 0)
        return 0;
    int unknown = img->kind == DCPI_PSET_UNKNOWN;
    for (size_t k = 0; k < n; k++) {
        uint64_t pc = unknown ? DCPI_EXPORT_UNKNOWN_PC : base + img->tstart + ent[k].offset;
        uint64_t c = ent[k].count, done = dcpi_export_leaf_count(xs, idx, ent[k].offset);
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
    return gperf_map_line(g, base + img->tstart, img->tsize, dcpi_export_text_offset(img),
                          img->path);
}

/* One record per chain (leaf first; callers are return addresses, which pprof decrements),
 * and a mapping line per stack image the set does not hold. */
static int gperf_chains(dcpi_gperf_t *g, const dcpi_export_stacks_t *xs)
{
    uint64_t pcs[DCPI_STACK_MAXFRAMES];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < dcpi_stackprof_count(xs->sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t c;
        dcpi_stackprof_chain(xs->sp, i, &f, &n, &c);
        if (!dcpi_export_chain_in_set(xs, f))
            continue;
        for (unsigned j = 0; j < n; j++)
            pcs[j] = dcpi_export_frame_pc(xs, f[j]);
        rc = dcpi_gperf_add(g, c, pcs, n);
    }
    for (size_t i = 0; rc == 0 && i < xs->nimg; i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(xs->sp, i);
        if (xs->pset[i] < 0 && im->path[0] == '/')
            rc = gperf_map_line(g, xs->base[i] + im->tstart, im->tsize, im->tstart, im->path);
    }
    return rc;
}

int dcpi_export_gperf(const dcpi_export_t *x, char *err)
{
    const dcpi_profset_t *set = x->set;
    const dcpi_export_stacks_t *xs = &x->xs;
    uint64_t period = set->events[x->ev].period, noimage = xs->noimage;
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_new(period >= 1000 ? period / 1000 : 1, &g);
    if (rc == 0 && xs->sp)
        rc = gperf_chains(g, xs);
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        const dcpi_profset_image_t *img = &set->images[x->order[k]];
        uint64_t base = k == 0 || img->kind == DCPI_PSET_KERNEL
                            ? 0
                            : DCPI_EXPORT_LIB_BASE + k * DCPI_EXPORT_LIB_STRIDE;
        rc = gperf_image(g, img, (long)x->order[k], x->ev, base, xs, &noimage);
    }
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s: %s", x->cli->tool, x->out, dcpi_strerror(rc));
    else if ((rc = dcpi_gperf_write(x->out, g, err)) < 0)
        dcpi_cli_prefix_err(x->cli, err);
    dcpi_gperf_free(g);
    return rc;
}
