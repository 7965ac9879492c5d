/*
 * abi2_small.c - loader test plugin: abi_version 2 with an ABI-1-sized table (72 bytes): the
 * ABI-2 entries it claims are not there (refused).
 */
#include "tp-common.h"

TP_HOOKS("tp-abi2-small")

VP_EXPORT vp_dispatch_t _dispatch = {2,          (uint32_t)sizeof(vp_dispatch_t),
                                     tp_name,    tp_load,
                                     tp_unload,  tp_prof_init,
                                     NULL,       tp_prof_process,
                                     tp_preface, NULL};
