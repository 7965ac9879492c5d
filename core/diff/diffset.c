/*
 * diffset.c - dcpidiff's rows from whole profile sets: images matched between the sets (by
 * name, else by basename for two builds in two directories) and one piece per image or per
 * (image, procedure) of one event (see diff.h).
 */
#include "core/diff/diff.h"

#include <stdlib.h>
#include <string.h>

#include "dcpi/errno.h"

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int has_name(const dcpi_profset_t *set, const char *name)
{
    for (size_t i = 0; i < set->nimages; i++)
        if (!strcmp(set->images[i].name, name))
            return 1;
    return 0;
}

/* The one image of set not matched by name in other whose basename is base (SIZE_MAX: none or
 * several). */
static size_t unmatched_by_base(const dcpi_profset_t *set, const dcpi_profset_t *other,
                                const char *base)
{
    size_t found = SIZE_MAX;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (img->kind != DCPI_PSET_FILE || has_name(other, img->name) ||
            strcmp(base_name(img->name), base) != 0)
            continue;
        if (found != SIZE_MAX && strcmp(set->images[found].name, img->name) != 0)
            return SIZE_MAX; /* two different paths with that basename */
        if (found == SIZE_MAX)
            found = i;
    }
    return found;
}

void dcpi_diff_image_keys(const dcpi_profset_t *A, const dcpi_profset_t *B, const char **ka,
                          const char **kb)
{
    for (size_t i = 0; i < A->nimages; i++)
        ka[i] = A->images[i].name;
    for (size_t j = 0; j < B->nimages; j++)
        kb[j] = B->images[j].name;
    for (size_t i = 0; i < A->nimages; i++) {
        const dcpi_profset_image_t *img = &A->images[i];
        if (img->kind != DCPI_PSET_FILE || has_name(B, img->name))
            continue;
        const char *base = base_name(img->name);
        size_t j = unmatched_by_base(B, A, base);
        if (j == SIZE_MAX || unmatched_by_base(A, B, base) == SIZE_MAX)
            continue;
        for (size_t k = 0; k < B->nimages; k++) /* every image of B by that name */
            if (!strcmp(B->images[k].name, B->images[j].name))
                kb[k] = img->name;
    }
}

/* One piece per run of consecutive offsets in one procedure (offsets are sorted, so a
 * procedure's samples come in one run unless symbols overlap; runs of one name are summed by
 * dcpi_diff_finish). */
static int add_procedures(dcpi_diff_t *d, int side, const dcpi_profset_image_t *img,
                          const dcpi_profile_t *prof, const char *key, const char *tool)
{
    dcpi_symtab_t *st = dcpi_profset_symbols_or_warn(img, tool);
    size_t n = 0;
    const dcpi_profile_entry_t *ent = dcpi_profile_entries(prof, &n);
    const char *cur = NULL;
    uint64_t sum = 0;
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        const dcpi_symbol_t *s = st ? dcpi_symtab_lookup(st, img->tstart + ent[k].offset) : NULL;
        const char *name = s && s->name && *s->name ? s->name : DCPI_UNKNOWN_ROUTINE;
        if (cur && strcmp(cur, name) != 0) {
            rc = dcpi_diff_add(d, side, key, cur, sum);
            sum = 0;
        }
        cur = name;
        sum += ent[k].count;
    }
    if (rc == 0 && cur)
        rc = dcpi_diff_add(d, side, key, cur, sum);
    dcpi_symtab_free(st);
    return rc;
}

int dcpi_diff_add_set(dcpi_diff_t *d, int side, const dcpi_profset_t *set, int e,
                      const char *const *keys, int by_image, const char *tool)
{
    int rc = 0;
    for (size_t i = 0; i < set->nimages && rc == 0; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        const dcpi_profile_t *prof = e >= 0 ? img->prof[e] : NULL;
        if (!prof || dcpi_profile_total(prof) == 0)
            continue;
        if (by_image)
            rc = dcpi_diff_add(d, side, "", keys[i], dcpi_profile_total(prof));
        else
            rc = add_procedures(d, side, img, prof, keys[i], tool);
    }
    return rc;
}
