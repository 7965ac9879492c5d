/*
 * hang_process.c - isolation test plugin "tp-hang-process": after its first good calls,
 * vp_prof_process never returns. See tp-fault.h.
 */
#include <unistd.h>
#include "tp-fault.h"

TP_FAULT_PLUGIN("tp-hang-process", {
    for (;;)
        sleep(1);
})
