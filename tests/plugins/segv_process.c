/*
 * segv_process.c - isolation test plugin "tp-segv-process": after its first good calls,
 * vp_prof_process writes through NULL (SIGSEGV). See tp-fault.h.
 */
#include "tp-fault.h"

TP_FAULT_PLUGIN("tp-segv-process", {
    volatile int *p = NULL;
    *p = 1;
})
