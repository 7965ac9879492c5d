/*
 * small_struct.c - loader test plugin: struct_size 24, smaller than the ABI-1 table.
 */
#include "tp-common.h"

TP_HOOKS("tp-small-struct")

VP_EXPORT vp_dispatch_t _dispatch = {
    1, 24, tp_name, tp_load, tp_unload, tp_prof_init, NULL, tp_prof_process, tp_preface, NULL};
