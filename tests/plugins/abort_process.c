/*
 * abort_process.c - isolation test plugin "tp-abort-process": after its first good calls,
 * vp_prof_process calls abort() (SIGABRT). See tp-fault.h.
 */
#include "tp-fault.h"

TP_FAULT_PLUGIN("tp-abort-process", { abort(); })
