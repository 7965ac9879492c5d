/*
 * vp-divisor.c - a value profiler with its unit test (test_vp_divisor.c) and an out-of-tree
 * build (Makefile): the divisors of div/idiv, the first source operand (TRACE_REGA: the divisor
 * register, or the memory divisor where the backend reads memory). Missing divisors are skipped.
 *   dcpid -vtrace ./vp-divisor.so -- ./prog;  dcpilist -vtrace ./vp-divisor.so proc ./prog
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
    trace_vlist_t *v = trace_vlist_alloc();
    spec = trace_vlist_table_alloc();
    if (!v || !spec || trace_add_value_to_vlist(v, TRACE_REGA) < 0 ||
        trace_add_vlist_by_select(spec, is_div, v) < 0) {
        trace_vlist_table_free(spec);
        spec = NULL;
    }
    trace_vlist_free(v);
    return spec;
}

static void done(void)
{
    trace_vlist_table_free(spec);
    spec = NULL;
}

static int process(unsigned pid, trace_parser_t *p, vsample_t **vsamples)
{
    int n = 0, k;
    uint64_t pc, c0, c1, divisor;
    (void)pid;
    while (n < VSAMPLE_BUFFER_SIZE && (k = trace_parser_next(p, NULL, &pc, &c0, &c1, 1, &divisor)) >= 0)
        if (k >= 1 && !(trace_parser_missing(p) & 1u))
            out[n++] = (vsample_t){.pc = pc, .value = divisor, .context0 = c0, .context1 = c1};
    *vsamples = out;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *name(void) { return "vp-divisor"; }
static const char *preface(const trace_inst_t *inst) { (void)inst; return "divisor"; }

static const char *format(const trace_inst_t *inst, uint64_t v)
{
    static char s[32];
    (void)inst;
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return s;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, .vp_name = name, .vp_prof_init = init,
    .vp_prof_done = done, .vp_prof_process = process, .vp_preface = preface, .vp_format = format};
