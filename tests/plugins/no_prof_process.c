/*
 * no_prof_process.c - loader test plugin: no vp_prof_process entry (required).
 */
#include "tp-common.h"

TP_HOOKS("tp-no-prof-process")

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER, tp_name, tp_load, tp_unload, tp_prof_init, NULL, NULL, tp_preface, NULL};
