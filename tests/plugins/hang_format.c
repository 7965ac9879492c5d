/*
 * hang_format.c - dcpilist fault test plugin (name "tp-hang-format"): valid, but its vp_format
 * never returns (a busy loop). tests/e2e/reliab_list_plugins.sh.
 */
#include "tp-common.h"

TP_HOOKS("tp-hang-format")

static const char *hang_format(const trace_inst_t *inst, uint64_t value)
{
    (void)inst;
    volatile uint64_t spin = value;
    for (;;)
        spin++;
    return "unreached";
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   hang_format};
