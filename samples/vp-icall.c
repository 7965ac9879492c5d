/*
 * vp-icall.c - call targets by name (SDK 2): the target of every call (TRACE_BR_TARGET), stored
 * image-relative when it is in the caller's own image (dcpi_resolve, from vp_prof_process) and
 * printed by dcpilist as symbol+offset (vp_format2's context: ctx->symbolize), so the hotlist of
 * `call rdx` reads "(60.1% acc_t0) (29.9% acc_t1)" whatever the run's load address. Targets in
 * another image (a library) stay run-time addresses, printed in hex.
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
    return strcmp(info->mnemonic, "call") == 0;
}

static trace_vlist_table_t *init(void)
{
    trace_vlist_t *v = trace_vlist_alloc();
    spec = trace_vlist_table_alloc();
    if (!v || !spec || trace_add_value_to_vlist(v, TRACE_BR_TARGET) < 0 ||
        trace_add_vlist_by_select(spec, is_call, v) < 0) {
        trace_vlist_table_free(spec);
        spec = NULL;
    }
    trace_vlist_free(v);
    return spec;
}

static void done(void)
{
    trace_vlist_table_free(spec);
}

static int process(unsigned pid, trace_parser_t *p, vsample_t **vsamples)
{
    int n = 0, k;
    uint64_t pc, target;
    dcpi_resolved_t at, to;
    while (n < VSAMPLE_BUFFER_SIZE &&
           (k = trace_parser_next(p, NULL, &pc, NULL, NULL, 1, &target)) >= 0) {
        if (k < 1 || (trace_parser_missing(p) & 1u))
            continue;
        if (dcpi_resolve(pid, pc, &at) == 0 && dcpi_resolve(pid, target, &to) == 0 &&
            strcmp(at.path, to.path) == 0)
            target = to.vaddr | RELATIVE;
        out[n++] = (vsample_t){.pc = pc, .value = target};
    }
    *vsamples = out;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *name(void)
{
    return "vp-icall";
}
static const char *preface(const trace_inst_t *inst)
{
    (void)inst;
    return "target";
}

static const char *format2(const vp_context_t *ctx, const trace_inst_t *inst, uint64_t v)
{
    static char s[32];
    const char *sym = (v & RELATIVE) ? ctx->symbolize(ctx, v & ~RELATIVE) : NULL;
    (void)inst;
    if (sym)
        return sym;
    snprintf(s, sizeof s, "0x%llx", (unsigned long long)(v & ~RELATIVE));
    return s;
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,         .vp_name = name,       .vp_prof_init = init, .vp_prof_done = done,
    .vp_prof_process = process, .vp_preface = preface, .vp_format2 = format2};
