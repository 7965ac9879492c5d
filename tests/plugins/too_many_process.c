/*
 * too_many_process.c - isolation test plugin "tp-too-many-process": after its first good
 * calls, vp_prof_process returns 5000 samples (its buffer holds VSAMPLE_BUFFER_SIZE, 4096).
 * See tp-fault.h (too_many.c breaks the same rule from the first call).
 */
#include "tp-fault.h"

TP_FAULT_PLUGIN("tp-too-many-process", {
    *vsamples = tpf_buffer;
    return 5000;
})
