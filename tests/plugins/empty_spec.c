/*
 * empty_spec.c - test plugin: a specification that selects no instruction (a new table, every
 * key ignored), which dcpid refuses with one line instead of running it for "0 traces"
 * (tests/check_values.c).
 */
#include "tp-common.h"

static trace_vlist_table_t *spec;

static trace_vlist_table_t *empty_init(void)
{
    return spec = trace_vlist_table_alloc();
}

static void empty_done(void)
{
    trace_vlist_table_free(spec);
    spec = NULL;
}

static const char *empty_name(void)
{
    return "tp-empty-spec";
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,
    .vp_name = empty_name,
    .vp_prof_init = empty_init,
    .vp_prof_done = empty_done,
    .vp_prof_process = tp_prof_process,
};
