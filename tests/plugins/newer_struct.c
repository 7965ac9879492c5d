/*
 * newer_struct.c - loader test plugin: a table from a newer dcpi: struct_size covers one more entry
 * (accepted; the extra entry is ignored).
 */
#define VP_WANT_ABI 2 /* the newest table this dcpi knows, plus one entry */
#include "tp-common.h"

TP_HOOKS("tp-newer")

static void future_entry(void)
{
    tp_log("future", "tp-newer");
}

struct newer_dispatch {
    vp_dispatch_t abi1;
    void (*vp_future)(void); /* an entry this dcpi does not know */
};

VP_EXPORT struct newer_dispatch _dispatch = {
    {VP_ABI_VERSION, (uint32_t)sizeof(struct newer_dispatch), tp_name, tp_load, tp_unload,
     tp_prof_init, NULL, tp_prof_process, tp_preface, NULL, NULL, NULL},
    future_entry};
