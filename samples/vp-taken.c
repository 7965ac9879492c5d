/*
 * vp-taken.c - taken / not taken of every conditional branch: TRACE_BR_TAKEN of the branch
 * class, kept to conditional ones by an instruction filter (SDK 2: a key cannot tell jmp from
 * jcc). A direction the backend could not see counts as "missing".
 */
#include <dcpi/vprofiler.h>

static vsample_t out[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *spec;

static int is_branch(const trace_opc_info_t *info)
{
    return info->iclass == TRACE_CLASS_BRANCH;
}

static trace_vlist_table_t *init(void)
{
    spec = trace_vlist_table_select1(is_branch, TRACE_BR_TAKEN);
    if (spec)
        trace_vlist_table_set_filter(spec, trace_inst_is_conditional);
    return spec;
}

static void done(void)
{
    trace_vlist_table_free(spec);
}

static int process(unsigned pid, trace_parser_t *p, vsample_t **vsamples)
{
    (void)pid;
    *vsamples = out;
    return trace_parser_collect(p, out, VSAMPLE_BUFFER_SIZE, TRACE_COLLECT_MISSING);
}

static const char *name(void)
{
    return "vp-taken";
}

static const char *preface(const trace_inst_t *inst)
{
    (void)inst;
    return "branch";
}

static const char *format(const trace_inst_t *inst, uint64_t v)
{
    (void)inst;
    return v ? "taken" : "not-taken";
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,         .vp_name = name,       .vp_prof_init = init, .vp_prof_done = done,
    .vp_prof_process = process, .vp_preface = preface, .vp_format = format};
