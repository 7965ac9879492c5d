/*
 * abort_preface.c - dcpilist fault test plugin (name "tp-abort-preface"): valid, but its
 * vp_preface calls abort() (SIGABRT). tests/e2e/reliab_list_plugins.sh.
 */
#include "tp-common.h"

TP_HOOKS("tp-abort-preface")

static const char *abort_preface(const trace_inst_t *inst)
{
    (void)inst;
    abort();
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,       tp_load,
                                     tp_unload,          tp_prof_init,  NULL,
                                     tp_prof_process,    abort_preface, NULL};
