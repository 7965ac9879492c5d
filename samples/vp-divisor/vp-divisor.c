/*
 * vp-divisor.c - the divisors of div/idiv (TRACE_REGA: the divisor register, or the memory
 * divisor where the backend reads memory), with its unit test (test_vp_divisor.c) and an
 * out-of-tree build (Makefile). Missing divisors are skipped.
 */
#include <stdio.h>
#include <string.h>
#include <dcpi/vprofiler.h>

static vsample_t out[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *spec;

static int is_div(const trace_opc_info_t *info)
{
    return strcmp(info->mnemonic, "div") == 0 || strcmp(info->mnemonic, "idiv") == 0;
}

static trace_vlist_table_t *init(void)
{
    return spec = trace_vlist_table_select1(is_div, TRACE_REGA);
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
    return "vp-divisor";
}

static const char *preface(const trace_inst_t *inst)
{
    (void)inst;
    return "divisor";
}

static const char *format(const trace_inst_t *inst, uint64_t v)
{
    static char s[32];
    (void)inst;
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return s;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, .vp_name = name, .vp_prof_init = init,
    .vp_prof_done = done, .vp_prof_process = process, .vp_preface = preface, .vp_format = format};
