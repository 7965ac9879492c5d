/*
 * load_fails.c - loader test plugin: vp_load returns 3. The loader must then dlclose without
 * calling vp_unload (the plugin never finished loading): its vp_unload logs, and the test checks
 * that it did not run.
 */
#include "tp-common.h"

TP_HOOKS("tp-load-fails")

static int failing_load(void)
{
    tp_log("load", "tp-load-fails");
    return 3;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      failing_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
static int (*const keep)(void) __attribute__((used)) = tp_load;
