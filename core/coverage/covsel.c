/*
 * covsel.c - dcpicoverage's selection: the image file, its samples of one event over the
 * profile sets of several epochs, and the procedures decoded into a coverage model (see
 * dcpi_cov_build in coverage.h). A procedure operand is looked up as dcpilist's (listsel.h).
 */
#include "core/coverage/coverage.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/listing/listsel.h"
#include "core/base/err.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"

static int probe_ok(int rc)
{
    return rc == 0 || rc == DCPI_EFULL || rc == DCPI_EFORMAT;
}

/* The path of a profiled image of that basename, preferring one whose file has the id. */
static const char *path_by_basename(const dcpi_covsel_t *s, const char *name)
{
    const char *first = NULL;
    for (size_t k = 0; k < s->nsets; k++)
        for (size_t i = 0; i < s->sets[k]->nimages; i++) {
            const dcpi_profset_image_t *img = &s->sets[k]->images[i];
            if (img->kind != DCPI_PSET_FILE || !dcpi_profset_image_matches(img, name))
                continue;
            dcpi_image_info_t info;
            if (probe_ok(dcpi_image_probe(img->path, &info, NULL)) && !strcmp(info.id, img->id))
                return img->path;
            if (!first)
                first = img->path;
        }
    return first;
}

static int find_file(dcpi_covsel_t *s, const char *image, char *err)
{
    const char *file = image;
    if (!strchr(image, '/') && access(image, F_OK) != 0) {
        const char *p = path_by_basename(s, image);
        if (p)
            file = p;
    }
    snprintf(s->path, sizeof s->path, "%s", file);
    int rc = dcpi_image_probe(s->path, &s->info, err);
    if (!probe_ok(rc))
        return rc;
    err[0] = '\0';
    if (!s->info.is_elf)
        return dcpi__errf(err, DCPI_EFORMAT, "%s: not an ELF file", s->path);
    return 0;
}

/* 1 when the sets hold samples of the file's id; else the error. */
static int check_profiled(const dcpi_covsel_t *s, char *err)
{
    const dcpi_profset_image_t *other = NULL;
    for (size_t k = 0; k < s->nsets; k++)
        for (size_t i = 0; i < s->sets[k]->nimages; i++) {
            const dcpi_profset_image_t *img = &s->sets[k]->images[i];
            if (img->kind != DCPI_PSET_FILE)
                continue;
            if (!strcmp(img->id, s->info.id))
                return 0;
            const char *b = strrchr(s->path, '/');
            if (dcpi_profset_image_matches(img, b ? b + 1 : s->path))
                other = img;
        }
    if (other)
        return dcpi__errf(err, DCPI_EFORMAT,
                          "%s changed since it was profiled (id %s, profile %s; -m maps an id to "
                          "its file)",
                          s->path, s->info.id, other->id);
    return dcpi__errf(err, DCPI_ENOENT, "no profile of %s (id %s) in the epochs read", s->path,
                      s->info.id);
}

/* The event: -s, else the one with the most samples of the image over the sets. */
static int pick_event(dcpi_covsel_t *s, char *err)
{
    uint64_t best = 0;
    s->event_name[0] = '\0';
    for (size_t k = 0; k < s->nsets; k++) {
        const dcpi_profset_t *set = s->sets[k];
        for (size_t e = 0; e < set->nevents; e++) {
            if (s->event && strcmp(s->event, set->events[e].name) != 0)
                continue;
            uint64_t t = 0; /* this event's samples of the image over every set */
            for (size_t j = 0; j < s->nsets; j++) {
                int ej = dcpi_profset_event_index(s->sets[j], set->events[e].name);
                for (size_t i = 0; ej >= 0 && i < s->sets[j]->nimages; i++) {
                    const dcpi_profset_image_t *img = &s->sets[j]->images[i];
                    if (img->kind == DCPI_PSET_FILE && !strcmp(img->id, s->info.id) &&
                        img->prof[ej])
                        t += dcpi_profile_total(img->prof[ej]);
                }
            }
            if (t > best || (s->event && !s->event_name[0])) {
                best = t;
                snprintf(s->event_name, sizeof s->event_name, "%s", set->events[e].name);
            }
        }
    }
    if (!s->event_name[0] && s->event)
        return dcpi__errf(err, DCPI_ENOENT, "no samples of event '%s' of %s in the epochs read",
                          s->event, s->path);
    if (!s->event_name[0])
        return dcpi__errf(err, DCPI_ENOENT, "no samples of %s in the epochs read", s->path);
    return 0;
}

/* 1 when [lo, hi) lies in an executable segment of the file. */
static int in_text(const dcpi_image_info_t *info, uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < info->nseg; i++) {
        const dcpi_segment_t *g = &info->seg[i];
        if ((g->flags & 1u) && lo >= g->vaddr && hi <= g->vaddr + g->filesz && lo < hi)
            return 1;
    }
    return 0;
}

static int add_procs(dcpi_covsel_t *s, const char *proc, dcpi_cov_t *cv, char *err)
{
    dcpi_symtab_t *st = NULL;
    int rc = dcpi_symtab_open(s->path, &st, err);
    if (rc < 0)
        return rc;
    cv->noreturn = dcpi_cfg_symtab_noreturn; /* blocks end at calls that do not return */
    cv->noreturn_arg = st;
    if (proc) {
        const dcpi_symbol_t *sym = NULL;
        rc = dcpi_lstsel_lookup(st, proc, s->path, &sym, err);
        if (rc == DCPI_ENOENT)
            rc = dcpi__errf(err, DCPI_ENOENT, "no procedure '%s' in %s", proc, s->path);
        else if (rc == 0)
            rc = dcpi_cov_add_proc(cv, sym->name, sym->addr,
                                   dcpi_lstsel_symbol_end(st, sym, &s->info), s->path, &s->info,
                                   err);
    }
    size_t n = proc ? 0 : dcpi_symtab_count(st);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const dcpi_symbol_t *sym = dcpi_symtab_get(st, i);
        uint64_t end = dcpi_lstsel_symbol_end(st, sym, &s->info);
        if (in_text(&s->info, sym->addr, end))
            rc = dcpi_cov_add_proc(cv, sym->name, sym->addr, end, s->path, &s->info, err);
    }
    if (rc == 0 && cv->nprocs == 0)
        rc = dcpi__errf(err, DCPI_ENOENT, "no function symbols in %s", s->path);
    cv->noreturn = NULL;
    cv->noreturn_arg = NULL;
    dcpi_symtab_free(st);
    return rc;
}

static void add_samples(const dcpi_covsel_t *s, dcpi_cov_t *cv)
{
    for (size_t k = 0; k < s->nsets; k++) {
        const dcpi_profset_t *set = s->sets[k];
        int e = dcpi_profset_event_index(set, s->event_name);
        for (size_t i = 0; e >= 0 && i < set->nimages; i++) {
            const dcpi_profset_image_t *img = &set->images[i];
            if (img->kind != DCPI_PSET_FILE || strcmp(img->id, s->info.id) != 0 || !img->prof[e])
                continue;
            size_t n = 0;
            const dcpi_profile_entry_t *ent = dcpi_profile_entries(img->prof[e], &n);
            for (size_t j = 0; j < n; j++)
                dcpi_cov_add_samples(cv, img->tstart + ent[j].offset, ent[j].count);
        }
    }
}

int dcpi_cov_build(dcpi_covsel_t *s, const char *proc, const char *image, dcpi_cov_t *cv, char *err)
{
    err[0] = '\0';
    int rc = find_file(s, image, err);
    if (rc == 0)
        rc = check_profiled(s, err);
    if (rc == 0)
        rc = pick_event(s, err);
    if (rc == 0)
        rc = add_procs(s, proc, cv, err);
    if (rc == 0)
        add_samples(s, cv);
    return rc;
}
