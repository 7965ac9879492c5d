/*
 * vp-sizearg.c - the size argument (rsi) of the calls in one function, acc_size_arg of
 * samples/work-accuracy (SDK 2: trace_vlist_table_set_symbol keeps every backend to it, no maps
 * or ELF parsing of the plugin's own).
 */
#include <stdio.h>
#include <string.h>
#include <dcpi/vprofiler.h>

static vsample_t out[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *spec;

static int is_call(const trace_opc_info_t *info)
{
    return info->iclass == TRACE_CLASS_CALL;
}

static trace_vlist_table_t *init(void)
{
    spec = trace_vlist_table_select1(is_call, TRACE_RSI);
    if (spec)
        trace_vlist_table_set_symbol(spec, "acc_size_arg");
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
    return trace_parser_collect(p, out, VSAMPLE_BUFFER_SIZE, 0);
}

static const char *name(void)
{
    return "vp-sizearg";
}

static const char *format(const trace_inst_t *inst, uint64_t v)
{
    static char s[32];
    (void)inst;
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return s;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER,         .vp_name = name,
                                     .vp_prof_init = init,       .vp_prof_done = done,
                                     .vp_prof_process = process, .vp_format = format};
