/*
 * export_gperf.c - dcpiexport -format gperftools: the event's samples as gperftools' legacy CPU
 * profile (core/formats/gperf.h), read by google-pprof. A record per stack chain (leaf first),
 * one-PC records for the PC samples no chain accounts for, and a mapping line per file image
 * at its exported load address. Kernel addresses (0xffffffff8...) are moved below 2^63, to
 * GPERF_KERNEL_BASE + offset: google-pprof reads addresses as signed and drops the others,
 * so its Total would not be the sum of its rows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/base/progress.h"
#include "core/formats/export.h"
#include "core/formats/gperf.h"
#include "dcpi/errno.h"

/* Where kernel samples go in a gperftools profile: the slot below the libraries' (no image
 * is placed there; a kernel profile's offsets are 32-bit, within one stride). */
#define GPERF_KERNEL_BASE (DCPI_EXPORT_LIB_BASE - DCPI_EXPORT_LIB_STRIDE)

/* -symbols: the name of every exported pc, for google-pprof's "--- symbol" section (it then
 * needs no binary: stripped images keep dcpi's names, e.g. IMAGE+0xADDR from .eh_frame). */
typedef struct symline {
    uint64_t pc;
    const char *name; /* borrowed from a symbol table that outlives the export */
} symline_t;

typedef struct symlist {
    symline_t *v;
    size_t n, cap;
} symlist_t;

static int sym_add(symlist_t *l, uint64_t pc, const dcpi_symbol_t *sym)
{
    if (!l || !sym)
        return 0;
    if (dcpi__grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0)
        return DCPI_ENOMEM;
    l->v[l->n++] = (symline_t){pc, sym->name};
    return 0;
}

static int cmp_symline(const void *a, const void *b)
{
    const symline_t *x = a, *y = b;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* "--- symbol" (binary=, then "0xPC name" for each pc and pc - 1, the address google-pprof
 * looks callers up at), "---", "--- profile", then the binary profile, written atomically. */
static int write_symbolized(const char *out, const dcpi_gperf_t *g, symlist_t *l,
                            const char *binary, char *err)
{
    void *prof = NULL;
    size_t plen = 0;
    char *text = NULL;
    size_t tlen = 0;
    int rc = dcpi_gperf_encode(g, &prof, &plen);
    FILE *m = rc == 0 ? open_memstream(&text, &tlen) : NULL;
    if (rc == 0 && !m)
        rc = DCPI_ENOMEM;
    if (rc == 0) {
        if (l->n > 1)
            qsort(l->v, l->n, sizeof *l->v, cmp_symline);
        fprintf(m, "--- symbol\nbinary=%s\n", binary);
        for (size_t i = 0; i < l->n; i++) {
            if (i && l->v[i].pc == l->v[i - 1].pc)
                continue;
            fprintf(m, "0x%" PRIx64 " %s\n", l->v[i].pc, l->v[i].name);
            if (l->v[i].pc > 0)
                fprintf(m, "0x%" PRIx64 " %s\n", l->v[i].pc - 1, l->v[i].name);
        }
        fprintf(m, "---\n--- profile\n");
        fclose(m);
        char *all = text ? malloc(tlen + plen) : NULL;
        if (!all) {
            rc = DCPI_ENOMEM;
        } else {
            memcpy(all, text, tlen);
            memcpy(all + tlen, prof, plen);
            rc = dcpi__write_output(out, all, tlen + plen, err);
            free(all);
        }
    }
    if (rc < 0 && err && !err[0])
        dcpi__errf(err, rc, "%s: %s", out, dcpi_strerror(rc));
    free(text);
    free(prof);
    return rc;
}

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
                       uint64_t base, const dcpi_export_stacks_t *xs, uint64_t *noimage,
                       symlist_t *syms, const dcpi_symtab_t *st)
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
        if (rc == 0 && c > done && !unknown && st)
            rc = sym_add(syms, pc, dcpi_symtab_lookup(st, img->tstart + ent[k].offset));
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
/* The pc of a chain's frame, kernel frames moved below 2^63 as the kernel's PC samples are. */
static uint64_t gperf_frame_pc(const dcpi_export_stacks_t *xs, dcpi_frame_t f)
{
    if (f.image != DCPI_STACK_NOIMAGE) {
        const char *path = dcpi_stackprof_image_get(xs->sp, f.image)->path;
        if (path[0] == '[' && strstr(path, "kernel"))
            return GPERF_KERNEL_BASE + f.offset;
    }
    return dcpi_export_frame_pc(xs, f);
}

static int gperf_chains(dcpi_gperf_t *g, const dcpi_export_stacks_t *xs, symlist_t *syms)
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
        for (unsigned j = 0; j < n && rc == 0; j++) {
            pcs[j] = gperf_frame_pc(xs, f[j]);
            if (syms && f[j].image != DCPI_STACK_NOIMAGE && xs->tabs[f[j].image])
                rc = sym_add(
                    syms, pcs[j],
                    dcpi_symtab_lookup(xs->tabs[f[j].image],
                                       dcpi_stackprof_image_get(xs->sp, f[j].image)->tstart +
                                           f[j].offset));
        }
        rc = rc ? rc : dcpi_gperf_add(g, c, pcs, n);
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
    symlist_t list = {0}, *syms = x->symbolized ? &list : NULL;
    dcpi_symtab_t **tabs = calloc(set->nimages + 1, sizeof *tabs);
    int rc = tabs ? dcpi_gperf_new(period >= 1000 ? period / 1000 : 1, &g) : DCPI_ENOMEM;
    if (rc == 0 && xs->sp)
        rc = gperf_chains(g, xs, syms);
    dcpi__progress_t pg;
    dcpi__progress_start(&pg, stderr, -1, set->nimages, "dcpiexport: images");
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        dcpi__progress_update(&pg, k);
        const dcpi_profset_image_t *img = &set->images[x->order[k]];
        uint64_t base = img->kind == DCPI_PSET_KERNEL ? GPERF_KERNEL_BASE - img->tstart
                        : k == 0                      ? 0
                                 : DCPI_EXPORT_LIB_BASE + k * DCPI_EXPORT_LIB_STRIDE;
        if (syms)
            dcpi_profset_open_symbols(img, &tabs[k], NULL, NULL);
        rc = gperf_image(g, img, (long)x->order[k], x->ev, base, xs, &noimage, syms, tabs[k]);
    }
    dcpi__progress_done(&pg);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s: %s", x->src->tool, x->out, dcpi_strerror(rc));
    else if (syms &&
             (rc = write_symbolized(x->out, g, syms,
                                    set->nimages ? set->images[x->order[0]].path : "", err)) < 0)
        dcpi__err_prefix(err, x->src->tool);
    else if (!syms && (rc = dcpi_gperf_write(x->out, g, err)) < 0)
        dcpi__err_prefix(err, x->src->tool);
    for (size_t k = 0; tabs && k < set->nimages; k++)
        dcpi_symtab_free(tabs[k]);
    free(tabs);
    free(list.v);
    dcpi_gperf_free(g);
    return rc;
}
