/*
 * stackview.h - naming the frames of a stack profile (core/store/stackprof.h) for the analysis
 * tools (dcpiprof's children column, dcpiexport's call graphs): each stack image matched to the
 * profile set's image or to the file at its path, and frames looked up in their symbol tables.
 */
#ifndef DCPI_CORE_MODEL_STACKVIEW_H
#define DCPI_CORE_MODEL_STACKVIEW_H

#include "core/store/stackprof.h"

struct dcpi_profset;
struct dcpi_symtab;
struct dcpi_symbol;

/* For every image i of sp: pset[i] = index of the image of set with the same id and tstart, or
 * -1; tabs[i] = its symbol table (from the set's image, else from the file at the stack image's
 * path when it still has that id), or NULL. Both arrays hold dcpi_stackprof_nimages(sp)
 * entries; free the tables with dcpi_stackprof_symbols_free. */
void dcpi_stackprof_symbols(const dcpi_stackprof_t *sp, const struct dcpi_profset *set, long *pset,
                            struct dcpi_symtab **tabs);
void dcpi_stackprof_symbols_free(const dcpi_stackprof_t *sp, struct dcpi_symtab **tabs);
/* The symbol of frame f at depth (0 = leaf; callers are looked up at their return address - 1,
 * inside the call), or NULL. */
const struct dcpi_symbol *dcpi_stackprof_frame_symbol(const dcpi_stackprof_t *sp,
                                                      struct dcpi_symtab *const *tabs,
                                                      dcpi_frame_t f, unsigned depth);

#endif
