/*
 * no_dispatch.c - loader test plugin: like good.c, but _dispatch has hidden visibility (the
 * forgotten VP_EXPORT).
 */
#include "tp-common.h"

TP_HOOKS("tp-no-dispatch")

__attribute__((visibility("hidden")))
vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, tp_name,    tp_load, tp_unload, tp_prof_init, NULL,
                           tp_prof_process,    tp_preface, NULL};
