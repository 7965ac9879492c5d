/*
 * tp-fault.h - shared body of the isolation test plugins (segv_process.c, abort_process.c,
 * hang_process.c, too_many_process.c, badptr_process.c; tests/e2e/plugin_faults.sh,
 * tests/check_values.c): a valid plugin recording the basic entry for every key whose
 * vp_prof_process returns one vsample (value 1) per entry for its first calls, then misbehaves
 * in one way from call number $DCPI_TEST_FAULT_AFTER + 1 on (default 3 good calls).
 */
#ifndef DCPI_TESTS_TP_FAULT_H
#define DCPI_TESTS_TP_FAULT_H

#include <stdlib.h>
#include "tp-common.h"

static vsample_t tpf_buffer[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *tpf_table;
static int tpf_calls;

static int tpf_pick_none(const trace_opc_info_t *info)
{
    (void)info;
    return TRACE_NONE;
}

static trace_vlist_table_t *tpf_init(void)
{
    tpf_table = trace_vlist_table_alloc();
    if (tpf_table && trace_set_vlist_by_pick_value(tpf_table, tpf_pick_none) < 0) {
        trace_vlist_table_free(tpf_table);
        tpf_table = NULL;
    }
    return tpf_table;
}

static void tpf_done(void)
{
    trace_vlist_table_free(tpf_table);
    tpf_table = NULL;
}

/* The good behaviour: one vsample per entry. */
static int tpf_good(trace_parser_t *parser, vsample_t **vsamples)
{
    int n = 0;
    uint64_t pc, c0, c1;
    while (n < VSAMPLE_BUFFER_SIZE && trace_parser_next(parser, NULL, &pc, &c0, &c1, 0, NULL) >= 0)
        tpf_buffer[n++] = (vsample_t){.pc = pc, .value = 1, .context0 = c0, .context1 = c1};
    *vsamples = tpf_buffer;
    return n;
}

static int tpf_misbehaving(void)
{
    const char *e = getenv("DCPI_TEST_FAULT_AFTER");
    return ++tpf_calls > (e ? atoi(e) : 3);
}

/* A plugin named NAME whose misbehaviour is the statement list BAD (it may return). */
#define TP_FAULT_PLUGIN(NAME, BAD)                                                                 \
    static int tpf_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)             \
    {                                                                                              \
        (void)pid;                                                                                 \
        if (tpf_misbehaving()) {                                                                   \
            BAD                                                                                    \
        }                                                                                          \
        return tpf_good(parser, vsamples);                                                         \
    }                                                                                              \
    static const char *tpf_name(void)                                                              \
    {                                                                                              \
        return NAME;                                                                               \
    }                                                                                              \
    VP_EXPORT vp_dispatch_t _dispatch = {                                                          \
        VP_DISPATCH_HEADER,                                                                        \
        .vp_name = tpf_name,                                                                       \
        .vp_prof_init = tpf_init,                                                                  \
        .vp_prof_done = tpf_done,                                                                  \
        .vp_prof_process = tpf_process,                                                            \
        .vp_preface = tp_preface,                                                                  \
    };

#endif
