/*
 * capture.c - the regs backend's value capture: decode the sampled instruction (Zydis 4) and
 * compute the values of a vlist from the registers perf captured before it (see capture.h).
 */
#include "core/capture/capture.h"

#include <string.h>
#include "core/capture/interp.h"
#include "dcpi/errno.h"

/* perf index of TRACE_RAX..TRACE_R15 (the ABI order used by trace_value_t). */
static const int8_t gpr_perf_index[16] = {
    DCPI_REG_AX,  DCPI_REG_BX,  DCPI_REG_CX,  DCPI_REG_DX,  DCPI_REG_SI,  DCPI_REG_DI,
    DCPI_REG_BP,  DCPI_REG_SP,  DCPI_REG_R8,  DCPI_REG_R9,  DCPI_REG_R10, DCPI_REG_R11,
    DCPI_REG_R12, DCPI_REG_R13, DCPI_REG_R14, DCPI_REG_R15,
};

uint64_t dcpi_capture_perf_mask(const trace_value_t *kinds, int n)
{
    uint64_t mask = 0;
    for (int i = 0; kinds && i < n; i++) {
        trace_value_t k = kinds[i];
        if (k >= TRACE_RAX && k <= TRACE_R15)
            mask |= 1ull << gpr_perf_index[k - TRACE_RAX];
        else if (k == TRACE_RFLAGS)
            mask |= 1ull << DCPI_REG_FLAGS;
        else if (k == TRACE_REGA || k == TRACE_REGB || k == TRACE_REGC || k == TRACE_EA ||
                 k == TRACE_BR_TAKEN || k == TRACE_BR_TARGET || k == TRACE_MEMVAL)
            mask |= DCPI_REGS_FULL_MASK; /* MEMVAL: its address, to check a read value */
        /* TRACE_RIP is the sample's pc (PERF_SAMPLE_IP): no register needed. */
    }
    return mask;
}

int dcpi_capture_can(trace_value_t k, const trace_opc_info_t *in)
{
    if (!in)
        return 0;
    int branch = in->iclass == TRACE_CLASS_BRANCH, call = in->iclass == TRACE_CLASS_CALL;
    switch (k) {
    case TRACE_EA: /* first_ea: a MEM operand, or lea's AGEN */
        return in->memform != TRACE_MEM_NONE || strcmp(in->mnemonic, "lea") == 0;
    case TRACE_MEMVAL:
        return in->memform != TRACE_MEM_NONE;
    case TRACE_LATENCY:
        return 0;
    case TRACE_BR_TAKEN:
        return branch || call || in->iclass == TRACE_CLASS_RETURN;
    case TRACE_BR_TARGET: /* br_target: not a return's */
        return branch || call;
    default:
        return 1;
    }
}

/* ---- operand roles ------------------------------------------------------------------------ */

static int is_role_skipped(ZydisRegister r)
{
    switch (r) {
    case ZYDIS_REGISTER_RFLAGS:
    case ZYDIS_REGISTER_EFLAGS:
    case ZYDIS_REGISTER_FLAGS:
    case ZYDIS_REGISTER_RIP:
    case ZYDIS_REGISTER_EIP:
    case ZYDIS_REGISTER_IP:
        return 1;
    default:
        return 0;
    }
}

/* Whether op counts as a source (read register/immediate/memory, or lea's address). */
static int is_source(const ZydisDecodedOperand *op)
{
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
        return (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && !is_role_skipped(op->reg.value);
    if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
        return op->mem.type == ZYDIS_MEMOP_TYPE_AGEN ||
               (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ);
    return op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
}

static int imm_value(const dcpi_insn_t *insn, const ZydisDecodedOperand *op, uint64_t *v)
{
    if (op->imm.is_relative) {
        ZyanU64 addr;
        if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&insn->zi, op, insn->pc, &addr)))
            return DCPI_ENOTSUP;
        *v = addr;
        return 0;
    }
    *v = op->imm.value.u;
    if (op->imm.is_signed)
        *v &= dcpi_capture_width_mask(insn->zi.operand_width ? insn->zi.operand_width : 64);
    return 0;
}

/* The contents of memory operand op when the backend read them at this address (see
 * dcpi_regs_t.mem_ok), truncated to the operand's width; DCPI_ENOTSUP when it did not. */
static int mem_value(const dcpi_insn_t *insn, const ZydisDecodedOperand *op,
                     const dcpi_regs_t *regs, uint64_t *v)
{
    uint64_t ea;
    if (!regs->mem_ok || op->type != ZYDIS_OPERAND_TYPE_MEMORY ||
        op->mem.type != ZYDIS_MEMOP_TYPE_MEM || dcpi_capture_ea(insn, op, regs, &ea) != 0 ||
        ea != regs->mem_ea)
        return DCPI_ENOTSUP;
    *v = regs->mem_val & dcpi_capture_width_mask(op->size && op->size < 64 ? op->size : 64);
    return 0;
}

static int source_value(const dcpi_insn_t *insn, const dcpi_regs_t *regs, int k, uint64_t *v);

/* TRACE_MEMVAL: what the first MEM operand loads (its contents, when the backend read them)
 * or, for a plain store (mov [m], reg/imm), what it stores: the source. A read-modify-write
 * stores a result this backend does not compute: missing. */
static int first_mem_value(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *v)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.type != ZYDIS_MEMOP_TYPE_MEM)
            continue;
        if (!(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            return mem_value(insn, op, regs, v);
        if (insn->zi.mnemonic != ZYDIS_MNEMONIC_MOV ||
            (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ))
            return DCPI_ENOTSUP;
        int rc = source_value(insn, regs, 0, v);
        if (rc == 0)
            *v &= dcpi_capture_width_mask(op->size && op->size < 64 ? op->size : 64);
        return rc;
    }
    return DCPI_ENOTSUP;
}

/* Value of source number k (0: REGA, 1: REGB). */
static int source_value(const dcpi_insn_t *insn, const dcpi_regs_t *regs, int k, uint64_t *v)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        if (!is_source(op) || k-- > 0)
            continue;
        if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
            return dcpi_capture_read_reg(regs, op->reg.value, v);
        if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
            return imm_value(insn, op, v);
        if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
            return dcpi_capture_ea(insn, op, regs, v);
        return mem_value(insn, op, regs, v); /* missing unless the backend read it */
    }
    return DCPI_ENOENT;
}

/* The register the result goes to: the first written register operand other than rflags and
 * rip, visible operands first (setb al: al; mul bl: the hidden ax); ZYDIS_REGISTER_NONE when
 * none (cmp, test, bt: their result is the new rflags). */
static ZydisRegister result_reg(const dcpi_insn_t *insn)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < insn->zi.operand_count; i++) {
            const ZydisDecodedOperand *op = &insn->ops[i];
            int hidden = op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN;
            if (hidden != pass || op->type != ZYDIS_OPERAND_TYPE_REGISTER ||
                !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
                continue;
            ZydisRegisterClass rc = ZydisRegisterGetClass(op->reg.value);
            if (rc == ZYDIS_REGCLASS_FLAGS || rc == ZYDIS_REGCLASS_IP)
                continue;
            return op->reg.value;
        }
    return ZYDIS_REGISTER_NONE;
}

/* TRACE_REGC: the result from the registers alone, else (a load, an ALU op with a memory
 * source) from the memory operand when the backend read it (bp with BPF); at the width of the
 * register it goes to (the interpreter gives the whole 64-bit register: setb al's is 8 bits). */
static int result_value(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *v)
{
    uint64_t flags, m;
    int rc = dcpi_interp(insn, regs, v, &flags, NULL);
    if (rc == DCPI_ENOTSUP && regs->mem_ok) {
        for (int i = 0; i < insn->zi.operand_count; i++) {
            const ZydisDecodedOperand *op = &insn->ops[i];
            if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type == ZYDIS_MEMOP_TYPE_MEM) {
                rc = mem_value(insn, op, regs, &m) == 0 ? dcpi_interp_mem(insn, regs, m, v, &flags)
                                                        : DCPI_ENOTSUP;
                break;
            }
        }
    }
    ZydisRegister r;
    if (rc == 0 && (r = result_reg(insn)) != ZYDIS_REGISTER_NONE)
        *v = dcpi_capture_reg_part(r, *v);
    return rc;
}

/* ---- branches ----------------------------------------------------------------------------- */

static int is_branch(const dcpi_insn_t *insn)
{
    ZydisInstructionCategory c = insn->zi.meta.category;
    return c == ZYDIS_CATEGORY_COND_BR || c == ZYDIS_CATEGORY_UNCOND_BR ||
           c == ZYDIS_CATEGORY_CALL || c == ZYDIS_CATEGORY_RET;
}

/* rcx (or ecx with a 32-bit address size) for jrcxz / loop. */
static int count_reg(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *v)
{
    ZydisRegister r = insn->zi.address_width == 32 ? ZYDIS_REGISTER_ECX : ZYDIS_REGISTER_RCX;
    return dcpi_capture_read_reg(regs, r, v);
}

static int loop_taken(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *taken)
{
    uint64_t cx;
    if (count_reg(insn, regs, &cx) != 0 || !(regs->valid & (1ull << DCPI_REG_FLAGS)))
        return DCPI_ENOENT;
    cx = (cx - 1) & dcpi_capture_width_mask(insn->zi.address_width);
    int zf = (regs->r[DCPI_REG_FLAGS] & DCPI_FLAG_ZF) != 0;
    switch (insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_LOOPE:
        *taken = cx != 0 && zf;
        break;
    case ZYDIS_MNEMONIC_LOOPNE:
        *taken = cx != 0 && !zf;
        break;
    default:
        *taken = cx != 0;
        break;
    }
    return 0;
}

static int br_taken(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *taken)
{
    ZydisMnemonic m = insn->zi.mnemonic;
    if (m == ZYDIS_MNEMONIC_JRCXZ || m == ZYDIS_MNEMONIC_JECXZ || m == ZYDIS_MNEMONIC_JCXZ) {
        uint64_t cx;
        if (count_reg(insn, regs, &cx) != 0)
            return DCPI_ENOENT;
        *taken = cx == 0;
        return 0;
    }
    if (m == ZYDIS_MNEMONIC_LOOP || m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE)
        return loop_taken(insn, regs, taken);
    int cc = dcpi_interp_cond_of(m);
    if (cc >= 0 && insn->zi.meta.category == ZYDIS_CATEGORY_COND_BR) {
        if (!(regs->valid & (1ull << DCPI_REG_FLAGS)))
            return DCPI_ENOENT;
        *taken = dcpi_interp_cond(cc, regs->r[DCPI_REG_FLAGS]) != 0;
        return 0;
    }
    if (is_branch(insn) && insn->zi.meta.category != ZYDIS_CATEGORY_COND_BR) {
        *taken = 1;
        return 0;
    }
    return DCPI_ENOTSUP;
}

static int br_target(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *target)
{
    if (!is_branch(insn) || insn->zi.meta.category == ZYDIS_CATEGORY_RET)
        return DCPI_ENOTSUP; /* ret: the target is in memory */
    const ZydisDecodedOperand *op = &insn->ops[0];
    if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op->imm.is_relative)
        return imm_value(insn, op, target);
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
        return dcpi_capture_read_reg(regs, op->reg.value, target);
    if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->size == 64)
        return mem_value(insn, op, regs, target); /* memory-indirect: when read */
    return DCPI_ENOTSUP;                          /* far, or memory not read */
}

/* ---- values ------------------------------------------------------------------------------- */

static int first_ea(const dcpi_insn_t *insn, const dcpi_regs_t *regs, uint64_t *ea)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
            (op->mem.type == ZYDIS_MEMOP_TYPE_MEM || op->mem.type == ZYDIS_MEMOP_TYPE_AGEN))
            return dcpi_capture_ea(insn, op, regs, ea);
    }
    return DCPI_ENOTSUP;
}

static int reg_value(const dcpi_regs_t *regs, int idx, uint64_t *v)
{
    if (!(regs->valid & (1ull << idx)))
        return DCPI_ENOENT;
    *v = regs->r[idx];
    return 0;
}

static int one_value(const dcpi_insn_t *insn, const dcpi_regs_t *regs, trace_value_t k, uint64_t *v)
{
    if (k >= TRACE_RAX && k <= TRACE_R15)
        return reg_value(regs, gpr_perf_index[k - TRACE_RAX], v);
    switch (k) {
    case TRACE_RIP:
        *v = insn->pc;
        return 0;
    case TRACE_RFLAGS:
        return reg_value(regs, DCPI_REG_FLAGS, v);
    case TRACE_REGA:
        return source_value(insn, regs, 0, v);
    case TRACE_REGB:
        return source_value(insn, regs, 1, v);
    case TRACE_REGC:
        return result_value(insn, regs, v);
    case TRACE_EA:
        return first_ea(insn, regs, v);
    case TRACE_BR_TAKEN:
        return br_taken(insn, regs, v);
    case TRACE_BR_TARGET:
        return br_target(insn, regs, v);
    case TRACE_MEMVAL:
        return first_mem_value(insn, regs, v);
    default:
        return DCPI_ENOTSUP; /* LATENCY, NONE, unknown */
    }
}

void dcpi_capture_values(const dcpi_insn_t *insn, const dcpi_regs_t *before,
                         const trace_value_t *kinds, int n, uint64_t *values, unsigned *missing)
{
    unsigned miss = 0;
    for (int i = 0; i < n && i < 32; i++) {
        uint64_t v = 0;
        if (!insn || !before || one_value(insn, before, kinds[i], &v) != 0) {
            v = 0;
            miss |= 1u << i;
        }
        values[i] = v;
    }
    if (missing)
        *missing = miss;
}
