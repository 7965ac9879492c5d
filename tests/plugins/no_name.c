/*
 * no_name.c - loader test plugin: no vp_name entry (required).
 */
#include "tp-common.h"

TP_HOOKS("tp-no-name")

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, NULL,         tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
/* tp_name is unused on purpose. */
static const char *(*const keep)(void)__attribute__((used)) = tp_name;
