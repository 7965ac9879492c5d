/*
 * bad_abi.c - loader test plugin: abi_version 7, an ABI this dcpi does not know.
 */
#include "tp-common.h"

TP_HOOKS("tp-bad-abi")

VP_EXPORT vp_dispatch_t _dispatch = {7,          (uint32_t)sizeof(vp_dispatch_t),
                                     tp_name,    tp_load,
                                     tp_unload,  tp_prof_init,
                                     NULL,       tp_prof_process,
                                     tp_preface, NULL};
