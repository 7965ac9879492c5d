/*
 * good.c - loader test plugin: a valid plugin (name "tp-good"; its hooks append to
 * $DCPI_TEST_HOOK_LOG).
 */
#include "tp-common.h"

TP_HOOKS("tp-good")

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
