/*
 * stackview.c - naming stack frames: stack images matched to a profile set's images (same id
 * and text start) or to their file, frames looked up in the symbol tables (see stackview.h).
 */
#include "core/model/stackview.h"

#include <string.h>

#include "core/model/profset.h"
#include "core/image/image.h"
#include "core/image/symbols.h"

static long find_pset(const dcpi_profset_t *set, const dcpi_stack_image_t *im)
{
    for (size_t k = 0; set && k < set->nimages; k++)
        if (set->images[k].tstart == im->tstart && !strcmp(set->images[k].id, im->id))
            return (long)k;
    return -1;
}

/* Symbols of a stack image no profile names: the file at its path when its id still matches. */
static dcpi_symtab_t *file_symbols(const dcpi_stack_image_t *im)
{
    dcpi_image_info_t info;
    dcpi_symtab_t *st = NULL;
    if (im->path[0] != '/' || dcpi_image_probe(im->path, &info, NULL) < 0 ||
        strcmp(info.id, im->id) != 0 || dcpi_symtab_open(im->path, &st, NULL) < 0)
        return NULL;
    return st;
}

void dcpi_stackprof_symbols(const dcpi_stackprof_t *sp, const dcpi_profset_t *set, long *pset,
                            dcpi_symtab_t **tabs)
{
    for (size_t i = 0; i < dcpi_stackprof_nimages(sp); i++) {
        pset[i] = find_pset(set, dcpi_stackprof_image_get(sp, i));
        tabs[i] = NULL;
        if (pset[i] >= 0)
            dcpi_profset_open_symbols(&set->images[pset[i]], &tabs[i], NULL, NULL);
        else
            tabs[i] = file_symbols(dcpi_stackprof_image_get(sp, i));
    }
}

void dcpi_stackprof_symbols_free(const dcpi_stackprof_t *sp, dcpi_symtab_t **tabs)
{
    for (size_t i = 0; tabs && i < dcpi_stackprof_nimages(sp); i++)
        dcpi_symtab_free(tabs[i]);
}

const dcpi_symbol_t *dcpi_stackprof_frame_symbol(const dcpi_stackprof_t *sp,
                                                 dcpi_symtab_t *const *tabs, dcpi_frame_t f,
                                                 unsigned depth)
{
    if (f.image == DCPI_STACK_NOIMAGE || f.image >= dcpi_stackprof_nimages(sp) || !tabs[f.image])
        return NULL;
    uint64_t addr = dcpi_stackprof_image_get(sp, f.image)->tstart + f.offset;
    return dcpi_symtab_lookup(tabs[f.image], depth > 0 && addr > 0 ? addr - 1 : addr);
}
