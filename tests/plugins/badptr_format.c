/*
 * badptr_format.c - dcpilist fault test plugin (name "tp-badptr-format"): valid, but its
 * vp_format returns a pointer to a page it has just unmapped. tests/e2e/reliab_list_plugins.sh.
 */
#include <sys/mman.h>

#include "tp-common.h"

TP_HOOKS("tp-badptr-format")

static const char *badptr_format(const trace_inst_t *inst, uint64_t value)
{
    (void)inst;
    (void)value;
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return (const char *)(uintptr_t)16;
    page[0] = 'x';
    munmap(page, 4096);
    return page; /* dangling: reading it faults */
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   badptr_format};
