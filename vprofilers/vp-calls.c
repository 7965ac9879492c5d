/*
 * vp-calls.c - the targets of indirect calls (`call reg`, `call [mem]`, and the tail call
 * through a pointer, `jmp [rip + pointer]`), by name: what dcpiexport -format llvm turns into a
 * call site's target counts for clang's -fprofile-sample-use (docs/dcpiexport.md).
 *
 * What it captures: TRACE_BR_TARGET of every call and jump, kept by an instruction filter to the
 * indirect calls and the unindexed `jmp [mem]` (a key is a mnemonic and a memory form, so `call
 * rel32` and `call rdx` share one; the filter looks at the operands). A tail call is a call in
 * the compiler's IR (sqlite3_mutex_enter is `jmp [sqlite3Config+0x80]`), so its targets belong
 * in the profile. Jump tables (`jmp [table + rax*8]`, `jmp reg`) are left out: no compiler's
 * sample profile has a place for them, and an interpreter's dispatch jump (lua's luaV_execute
 * has 79) took the budget the calls needed (bench/RESULTS.md, "LLVM sample profiles"). A target in
 * the caller's own image is stored as its ELF address with the top bit set (stable across runs: no
 * ASLR); a target elsewhere (another library, JIT code) or in a process already gone stays its
 * run-time address, top bit clear. dcpilist names the first kind with the listing's symbolizer.
 *
 * Reading order: the filter and the specification, vp_prof_process, the listing side, then
 * _dispatch. Everything but _dispatch is static.
 */
#define VP_WANT_ABI 2 /* vp_format2 and its context */
#include <stdio.h>
#include <string.h>

#include <dcpi/insn.h>
#include <dcpi/resolve.h>
#include <dcpi/vprofiler.h>

#define RELATIVE (1ull << 63) /* the value is an ELF address of the caller's image */

static vsample_t out[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *spec;

static int is_call_or_jmp(const trace_opc_info_t *info)
{
    return info->iclass == TRACE_CLASS_CALL ||
           (info->iclass == TRACE_CLASS_BRANCH && strcmp(info->mnemonic, "jmp") == 0);
}

/* An indirect call (the target a register or memory operand, not an immediate), or a jump
 * through an unindexed pointer in memory (a tail call). */
static int is_indirect(const trace_inst_t *inst)
{
    trace_operand_t op[2];
    int n = trace_inst_operands(inst, op, 2);
    if (n < 1 || (op[0].kind != TRACE_OPERAND_REG && op[0].kind != TRACE_OPERAND_MEM))
        return 0;
    if (trace_opc_info(inst->opc)->iclass == TRACE_CLASS_CALL)
        return 1;
    return op[0].kind == TRACE_OPERAND_MEM && trace_inst_mem_indexed(inst) == 0;
}

static trace_vlist_table_t *vp_prof_init(void)
{
    spec = trace_vlist_table_select1(is_call_or_jmp, TRACE_BR_TARGET);
    if (spec && trace_vlist_table_set_filter(spec, is_indirect) < 0) {
        trace_vlist_table_free(spec);
        spec = NULL;
    }
    return spec; /* NULL: dcpid reports that the specification could not be built */
}

static void vp_prof_done(void)
{
    trace_vlist_table_free(spec);
    spec = NULL;
}

static int vp_prof_process(unsigned pid, trace_parser_t *p, vsample_t **vsamples)
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

static const char *vp_name(void)
{
    return "vp-calls";
}

static const char *vp_preface2(const vp_context_t *ctx, const trace_inst_t *inst)
{
    (void)ctx;
    (void)inst;
    return "target:";
}

static const char *vp_format2(const vp_context_t *ctx, const trace_inst_t *inst, uint64_t v)
{
    static char s[48];
    const char *sym = (v & RELATIVE) ? ctx->symbolize(ctx, v & ~RELATIVE) : NULL;
    (void)inst;
    snprintf(s, sizeof s, (v & RELATIVE) ? "0x%llx" : "0x%llx (elsewhere)",
             (unsigned long long)(v & ~RELATIVE));
    return sym ? sym : s;
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,
    .vp_name = vp_name,
    .vp_prof_init = vp_prof_init,
    .vp_prof_done = vp_prof_done,
    .vp_prof_process = vp_prof_process,
    .vp_preface2 = vp_preface2,
    .vp_format2 = vp_format2,
};
