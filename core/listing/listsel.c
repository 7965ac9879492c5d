/*
 * listsel.c - dcpilist's selection: the image file and its check against the profile set, the
 * procedure, the events and samples of the image, the listing built from them, and the view
 * printed (see listsel.h; value profiles in listvals.c).
 */
#include "core/listing/listsel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/store/codecache.h"
#include "dcpi/errno.h"

/* ---- the image ---- */

/* A profiled image whose path's basename is the operand, preferring one whose file still
 * has the profiled id. */
static const dcpi_profset_image_t *image_by_basename(const dcpi_profset_t *set, const char *name)
{
    const dcpi_profset_image_t *first = NULL;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (img->kind != DCPI_PSET_FILE || !dcpi_profset_image_matches(img, name))
            continue;
        dcpi_image_info_t info;
        if (dcpi_image_probe(img->path, &info, NULL) == 0 && !strcmp(info.id, img->id))
            return img;
        if (!first)
            first = img;
    }
    return first;
}

/* The operand names a profiled image that is no file (the kernel, [vdso], unknown@P): there is
 * no code to list. DCPI_ENOTSUP with why, or 0. */
static int no_file_image(const dcpi_lstsel_t *s, const char *name, char *err)
{
    for (size_t i = 0; i < s->set->nimages; i++) {
        const dcpi_profset_image_t *img = &s->set->images[i];
        if (img->kind == DCPI_PSET_FILE || !dcpi_profset_image_matches(img, name))
            continue;
        const char *what = img->kind == DCPI_PSET_KERNEL    ? "the kernel's code is in no file"
                           : img->kind == DCPI_PSET_UNKNOWN ? "its samples fell outside every image"
                                                            : "a [name] mapping is in no file";
        return dcpi__errf(err, DCPI_ENOTSUP,
                          "%s: no instructions to list (%s); 'dcpiprof %s' shows where its "
                          "samples went, by procedure",
                          name, what, name);
    }
    return 0;
}

/* The copy dcpid kept of img's build (DB/.codecache/ID, core/store/codecache.h) becomes the file
 * listed, for a file rebuilt or deleted since it was profiled: 1 when there is one. */
static int use_kept_code(dcpi_lstsel_t *s, const dcpi_profset_image_t *img)
{
    char kept[4096];
    dcpi_image_info_t info;
    if (!s->db || img->kind != DCPI_PSET_FILE)
        return 0;
    dcpi_codecache_path(s->db, img->id, kept, sizeof kept);
    if (access(kept, R_OK) != 0 || dcpi_image_probe(kept, &info, NULL) != 0 ||
        strcmp(info.id, img->id) != 0)
        return 0;
    snprintf(s->kept, sizeof(s->kept), "%s", img->path);
    snprintf(s->path, sizeof(s->path), "%s", kept);
    s->info = info;
    return 1;
}

/* A profiled image named by the operand (path or basename) whose file is gone: its kept code. */
static int kept_for_missing(dcpi_lstsel_t *s, const char *file)
{
    for (size_t i = 0; i < s->set->nimages; i++)
        if (dcpi_profset_image_matches(&s->set->images[i], file) &&
            use_kept_code(s, &s->set->images[i]))
            return 1;
    return 0;
}

static int resolve_path(dcpi_lstsel_t *s, const char *image, const char *pfile, char *err)
{
    const char *file = pfile ? pfile : image;
    if (!pfile && access(file, F_OK) != 0) {
        int rc = no_file_image(s, file, err);
        if (rc < 0)
            return rc;
    }
    if (!pfile && !strchr(file, '/')) {
        const dcpi_profset_image_t *img = image_by_basename(s->set, file);
        if (img && access(file, F_OK) != 0)
            file = img->path;
    }
    snprintf(s->path, sizeof(s->path), "%s", file);
    int rc = dcpi_image_probe(s->path, &s->info, err);
    if (rc == DCPI_ENOENT && !pfile && kept_for_missing(s, file)) {
        err[0] = '\0'; /* deleted since: the code dcpid kept of the build profiled */
        return 0;
    }
    if (rc == DCPI_ENOENT && !pfile && file == image) {
        return dcpi__errf(err, rc,
                          "%s: no such file, and no image profiled in epoch %s has that name "
                          "('dcpiprof -i' lists them)",
                          image, s->epoch);
    }
    if (rc < 0 && rc != DCPI_EFULL && rc != DCPI_EFORMAT)
        return rc;
    err[0] = '\0'; /* the id is there: what the probe said does not matter here */
    return 0;
}

/* 1 when img holds samples of the file being listed. */
static int same_image(const dcpi_lstsel_t *s, const dcpi_profset_image_t *img)
{
    return img->kind == DCPI_PSET_FILE && !strcmp(img->id, s->info.id);
}

static int check_profiled(dcpi_lstsel_t *s, char *err)
{
    for (size_t i = 0; i < s->set->nimages; i++)
        if (same_image(s, &s->set->images[i]))
            return 0;
    const char *base = strrchr(s->path, '/') ? strrchr(s->path, '/') + 1 : s->path;
    for (size_t i = 0; i < s->set->nimages; i++) {
        const dcpi_profset_image_t *img = &s->set->images[i];
        if (img->kind == DCPI_PSET_FILE && dcpi_profset_image_matches(img, base)) {
            if (use_kept_code(s, img))
                return 0; /* rebuilt since: the code dcpid kept of the build profiled */
            return dcpi__errf(err, DCPI_EFORMAT,
                              "%s changed since it was profiled (id %s, profile %s in epoch %s)",
                              s->path, s->info.id, img->id, s->epoch);
        }
    }
    return dcpi__errf(err, DCPI_ENOENT, "no profile of %s (id %s) in epoch %s", s->path, s->info.id,
                      s->epoch);
}

/* ---- the procedure ---- */

uint64_t dcpi_lstsel_symbol_end(const dcpi_symtab_t *st, const dcpi_symbol_t *sym,
                                const dcpi_image_info_t *info)
{
    if (sym->size)
        return sym->addr + sym->size;
    size_t n = dcpi_symtab_count(st);
    for (size_t i = 0; i < n; i++) {
        const dcpi_symbol_t *t = dcpi_symtab_get(st, i);
        if (t->addr > sym->addr)
            return t->addr;
    }
    return info->tstart + info->tsize;
}

/* Whether the demangled C++ name full is a's function: without its parameter list, its template
 * arguments and its return type, it is a or ends with "::a" (a short name: "bitmap_set_bit",
 * "geo::norm2", "tally" for "long tally<std::string, double>(...)"). */
static int short_name_is(const char *full, const char *a)
{
    const char *paren = strchr(full, '(');
    size_t n = paren ? (size_t)(paren - full) : 0, k = strlen(a);
    if (!paren || k == 0)
        return 0;
    if (n > 0 && full[n - 1] == '>') { /* drop the template arguments */
        int depth = 0;
        while (n > 0) {
            char c = full[--n];
            depth += c == '>' ? 1 : c == '<' ? -1 : 0;
            if (depth == 0)
                break;
        }
    }
    if (n < k || strncmp(full + n - k, a, k) != 0)
        return 0;
    if (n == k || full[n - k - 1] == ' ') /* the whole name, or after the return type */
        return 1;
    return n > k + 1 && full[n - k - 1] == ':' && full[n - k - 2] == ':';
}

/* The one function whose short name is a; DCPI_ENOENT when none, DCPI_EINVAL (naming up to 4 in
 * err) when several. */
static int lookup_short(const dcpi_symtab_t *st, const char *a, const char *path,
                        const dcpi_symbol_t **out, char *err)
{
    size_t n = dcpi_symtab_count(st), found = 0;
    char names[768] = "";
    for (size_t i = 0; i < n; i++) {
        const dcpi_symbol_t *t = dcpi_symtab_get(st, i);
        if (!short_name_is(t->name, a))
            continue;
        if (found < 4) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s'%.150s'", found ? ", " : "", t->name);
        }
        if (found++ == 0)
            *out = t;
    }
    if (found > 1)
        return dcpi__errf(err, DCPI_EINVAL,
                          "procedure '%s' is ambiguous in %s: %zu functions match (%s%s); give "
                          "the full name or an address",
                          a, path, found, names, found > 4 ? ", ..." : "");
    return found ? 0 : DCPI_ENOENT;
}

int dcpi_lstsel_lookup(const dcpi_symtab_t *st, const char *a, const char *path,
                       const dcpi_symbol_t **out, char *err)
{
    const dcpi_symbol_t *sym = NULL;
    if (!strncmp(a, "0x", 2) || !strncmp(a, "0X", 2)) {
        char *end = NULL;
        errno = 0;
        uint64_t addr = strtoull(a + 2, &end, 16);
        if (!errno && end != a + 2 && !*end)
            sym = dcpi_symtab_lookup(st, addr);
    }
    if (!sym)
        sym = dcpi_symtab_find(st, a);
    if (sym) {
        *out = sym;
        return 0;
    }
    return lookup_short(st, a, path, out, err);
}

/* A range "0xA:0xB" (ELF addresses, A < B): 1 with [*lo, *hi), 0 when proc is no range. */
static int parse_range(const char *proc, uint64_t *lo, uint64_t *hi)
{
    const char *colon = strchr(proc, ':');
    if (!colon || strncasecmp(proc, "0x", 2) != 0 || strncasecmp(colon + 1, "0x", 2) != 0)
        return 0;
    char *end = NULL;
    errno = 0;
    *lo = strtoull(proc + 2, &end, 16);
    if (errno || end != colon || end == proc + 2)
        return 0;
    *hi = strtoull(colon + 3, &end, 16);
    return !errno && end != colon + 3 && !*end;
}

static int find_procedure(dcpi_lstsel_t *s, const char *proc, char *err)
{
    int rc = dcpi_symtab_open(s->path, &s->st, err);
    if (rc < 0)
        return rc;
    if (parse_range(proc, &s->lo, &s->hi)) {
        if (s->lo >= s->hi || s->hi - s->lo > DCPI_LSTSEL_RANGE_MAX)
            return dcpi__errf(err, DCPI_EINVAL,
                              "bad range '%s': want 0xLO:0xHI with LO < HI, at most %d bytes", proc,
                              DCPI_LSTSEL_RANGE_MAX);
        const dcpi_symbol_t *sym = dcpi_symtab_lookup(s->st, s->lo);
        s->proc = sym ? sym->name : proc;
        return 0;
    }
    const dcpi_symbol_t *sym = NULL;
    rc = dcpi_lstsel_lookup(s->st, proc, s->path, &sym, err);
    if (rc == DCPI_ENOENT)
        return dcpi__errf(err, DCPI_ENOENT, "no procedure '%s' in %s", proc, s->path);
    if (rc < 0)
        return rc;
    s->proc = sym->name;
    s->lo = sym->addr;
    s->hi = dcpi_lstsel_symbol_end(s->st, sym, &s->info);
    return 0;
}

int dcpi_lstsel_open(dcpi_lstsel_t *s, const char *proc, const char *image, const char *pfile,
                     char *err)
{
    err[0] = '\0';
    int rc = resolve_path(s, image, pfile, err);
    if (rc == 0)
        rc = check_profiled(s, err);
    if (rc == 0)
        rc = find_procedure(s, proc, err);
    return rc;
}

/* ---- samples ---- */

static int pick_events(dcpi_lstsel_t *s)
{
    s->events = calloc(s->set->nevents + 1, sizeof(*s->events));
    s->event_idx = calloc(s->set->nevents + 1, sizeof(*s->event_idx));
    if (!s->events || !s->event_idx)
        return DCPI_ENOMEM;
    for (size_t e = 0; e < s->set->nevents; e++) {
        int has = 0;
        for (size_t i = 0; i < s->set->nimages && !has; i++)
            has = same_image(s, &s->set->images[i]) && s->set->images[i].prof[e];
        if (has) {
            s->events[s->nevents] = s->set->events[e].name;
            s->event_idx[s->nevents++] = (int)e;
        }
    }
    return 0;
}

static void add_samples(dcpi_lstsel_t *s)
{
    for (size_t i = 0; i < s->set->nimages; i++) {
        const dcpi_profset_image_t *img = &s->set->images[i];
        if (!same_image(s, img))
            continue;
        for (size_t k = 0; k < s->nevents; k++) {
            const dcpi_profile_t *p = img->prof[s->event_idx[k]];
            size_t n = 0;
            const dcpi_profile_entry_t *ent = p ? dcpi_profile_entries(p, &n) : NULL;
            for (size_t j = 0; j < n; j++)
                dcpi_listing_add_samples(s->ls, k, img->tstart + ent[j].offset, ent[j].count);
            if (p)
                dcpi_listing_add_image_total(s->ls, k, dcpi_profile_total(p));
        }
    }
}

int dcpi_lstsel_build(dcpi_lstsel_t *s, char *err)
{
    err[0] = '\0';
    if (pick_events(s) < 0 ||
        dcpi_listing_new(s->proc, s->lo, s->hi, s->events, s->nevents, s->nvp, &s->ls) < 0)
        return DCPI_ENOMEM;
    int rc = dcpi_listing_decode(s->ls, s->path, &s->info, err);
    if (rc < 0)
        return rc;
    dcpi_listing_name_targets(s->ls, s->st);
    add_samples(s);
    return dcpi_lstsel_attach_values(s, err);
}

/* ---- printing ---- */

/* -best: source when the procedure has line information and a readable source file. */
static enum dcpi_lst_mode pick_mode(dcpi_lstsel_t *s, enum dcpi_lst_mode mode, int values)
{
    enum dcpi_lst_mode m = values && mode == DCPI_LST_BEST ? DCPI_LST_ASM : mode;
    char err[DCPI_ERRLEN] = "";
    if (m == DCPI_LST_ASM)
        return m;
    int rc = dcpi_srclines_open(s->path, &s->sl, err);
    size_t found = rc == 0 ? dcpi_listing_set_lines(s->ls, s->sl) : 0;
    if (m == DCPI_LST_BEST)
        return found && dcpi_listing_has_source(s->ls) ? DCPI_LST_SOURCE : DCPI_LST_ASM;
    if (!found)
        fprintf(stderr, "%s: %s\n", s->tool,
                rc < 0 ? err : "no line information for this procedure");
    return m;
}

void dcpi_lstsel_print(dcpi_lstsel_t *s, enum dcpi_lst_mode mode, const dcpi_lst_vopts_t *vo,
                       FILE *f)
{
    if (s->kept[0]) /* rebuilt, deleted or a memfd: say whose code this is */
        fprintf(f, "%s  %s [code kept by build-id: %s]  (0x%" PRIx64 "..0x%" PRIx64 ")  epoch %s\n",
                s->proc, s->kept, s->path, s->lo, s->hi, s->epoch);
    else
        fprintf(f, "%s  %s  (0x%" PRIx64 "..0x%" PRIx64 ")  epoch %s\n", s->proc, s->path, s->lo,
                s->hi, s->epoch);
    switch (pick_mode(s, mode, vo != NULL)) {
    case DCPI_LST_SOURCE:
        dcpi_listing_print_source(s->ls, 0, f);
        break;
    case DCPI_LST_BOTH:
        dcpi_listing_print_source(s->ls, 1, f);
        break;
    default:
        dcpi_listing_print_asm(s->ls, vo, f);
        break;
    }
}

void dcpi_lstsel_free(dcpi_lstsel_t *s)
{
    for (size_t v = 0; v < s->nvp; v++) {
        if (s->vprofs)
            dcpi_vprof_free(s->vprofs[v]);
        if (s->vmiss)
            free(s->vmiss[v]);
        if (s->vpnames)
            free(s->vpnames[v]);
    }
    free(s->vpnames);
    free(s->vprofs);
    free(s->vmiss);
    dcpi_listing_free(s->ls);
    dcpi_vp_set_free(s->plugins);
    dcpi_srclines_free(s->sl);
    free(s->event_idx);
    free(s->events);
    dcpi_symtab_free(s->st);
}
