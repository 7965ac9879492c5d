/*
 * undefined_sym.c - loader test plugin: calls a function defined nowhere, so dlopen(RTLD_NOW)
 * fails.
 */
#include "tp-common.h"

TP_HOOKS("tp-undefined")

extern int dcpi_test_no_such_function(void);

static int undefined_load(void)
{
    return dcpi_test_no_such_function();
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      undefined_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
static int (*const keep)(void) __attribute__((used)) = tp_load;
