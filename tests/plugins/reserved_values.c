/*
 * reserved_values.c - loader test plugin: the reserved profile name "values".
 */
#include "tp-common.h"

TP_HOOKS("values")

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,      tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
