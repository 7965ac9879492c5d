/*
 * too_many.c - vtrace test plugin: a valid plugin (name "tp-too-many") whose specification
 * records the basic entry for every key, but whose vp_prof_process breaks the contract by
 * returning VSAMPLE_BUFFER_SIZE + 1 samples; dcpid must disable it (tests/check_values.c).
 */
#include "tp-common.h"

static vsample_t buffer[VSAMPLE_BUFFER_SIZE + 1];
static trace_vlist_table_t *table;

static int pick_none(const trace_opc_info_t *info)
{
    (void)info;
    return TRACE_NONE; /* every key: the basic entry only */
}

static trace_vlist_table_t *too_many_init(void)
{
    table = trace_vlist_table_alloc();
    if (table && trace_set_vlist_by_pick_value(table, pick_none) < 0) {
        trace_vlist_table_free(table);
        table = NULL;
    }
    return table;
}

static void too_many_done(void)
{
    trace_vlist_table_free(table);
    table = NULL;
}

static int too_many_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)
{
    (void)pid;
    (void)parser;
    *vsamples = buffer;
    return VSAMPLE_BUFFER_SIZE + 1;
}

static const char *too_many_name(void)
{
    return "tp-too-many";
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,
    .vp_name = too_many_name,
    .vp_prof_init = too_many_init,
    .vp_prof_done = too_many_done,
    .vp_prof_process = too_many_process,
    .vp_preface = tp_preface,
};
