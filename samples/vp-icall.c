/*
 * vp-icall.c - call targets by name (SDK 2): a target in the caller's own image is stored as its
 * ELF address (dcpi_resolve) and printed with the listing context's symbolize (vp_format2).
 */
#define VP_WANT_ABI 2 /* vp_format2 and its context */
#include <stdio.h>
#include <string.h>
#include <dcpi/resolve.h>
#include <dcpi/vprofiler.h>

#define RELATIVE (1ull << 63) /* the value is an ELF address of the caller's image */

static vsample_t out[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *spec;

static int is_call(const trace_opc_info_t *info)
{
    return info->iclass == TRACE_CLASS_CALL;
}

static trace_vlist_table_t *init(void)
{
    return spec = trace_vlist_table_select1(is_call, TRACE_BR_TARGET);
}

static void done(void)
{
    trace_vlist_table_free(spec);
}

static int process(unsigned pid, trace_parser_t *p, vsample_t **vsamples)
{
    dcpi_resolved_t at, to;
    int n = trace_parser_collect(p, out, VSAMPLE_BUFFER_SIZE, 0);
    for (int i = 0; i < n; i++) /* a target in the caller's image: its ELF address, marked */
        if (dcpi_resolve(pid, out[i].pc, &at) == 0 && dcpi_resolve(pid, out[i].value, &to) == 0 &&
            strcmp(at.path, to.path) == 0)
            out[i].value = to.vaddr | RELATIVE;
    *vsamples = out;
    return n;
}

static const char *name(void)
{
    return "vp-icall";
}

static const char *format2(const vp_context_t *ctx, const trace_inst_t *inst, uint64_t v)
{
    static char s[32];
    const char *sym = (v & RELATIVE) ? ctx->symbolize(ctx, v & ~RELATIVE) : NULL;
    (void)inst;
    snprintf(s, sizeof s, "0x%llx", (unsigned long long)(v & ~RELATIVE));
    return sym ? sym : s;
}

VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER,         .vp_name = name,
                                     .vp_prof_init = init,       .vp_prof_done = done,
                                     .vp_prof_process = process, .vp_format2 = format2};
