/*
 * no_prof_init.c - loader test plugin: no vp_prof_init entry (required).
 */
#include "tp-common.h"

TP_HOOKS("tp-no-prof-init")

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,    tp_load, tp_unload, NULL, NULL,
                                     tp_prof_process,    tp_preface, NULL};
