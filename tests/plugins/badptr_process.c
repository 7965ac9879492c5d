/*
 * badptr_process.c - isolation test plugin "tp-badptr-process": after its first good calls,
 * vp_prof_process returns 10 samples at an address that is not mapped. See tp-fault.h.
 */
#include <stdint.h>
#include "tp-fault.h"

TP_FAULT_PLUGIN("tp-badptr-process", {
    *vsamples = (vsample_t *)(uintptr_t)0x10;
    return 10;
})
