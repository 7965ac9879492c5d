/*
 * empty_name.c - loader test plugin: an empty profile name.
 */
#include "tp-common.h"

TP_HOOKS("")

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
