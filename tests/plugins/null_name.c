/*
 * null_name.c - loader test plugin: vp_name returns NULL.
 */
#include "tp-common.h"

TP_HOOKS("tp-null-name")

static const char *null_name(void)
{
    return NULL;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, null_name,    tp_load,
                                     tp_unload,          tp_prof_init, NULL,
                                     tp_prof_process,    tp_preface,   NULL};
static const char *(*const keep)(void)__attribute__((used)) = tp_name;
