/*
 * crash_format.c - dcpilist fault test plugin (name "tp-crash-format"): valid, but its
 * vp_format dereferences NULL (SIGSEGV). tests/e2e/reliab_list_plugins.sh.
 */
#include "tp-common.h"

TP_HOOKS("tp-crash-format")

static const char *crash_format(const trace_inst_t *inst, uint64_t value)
{
    (void)inst;
    volatile char *p = NULL;
    p[value & 1] = 1; /* SIGSEGV */
    return "unreached";
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   crash_format};
