/*
 * cpustate.c - the machine state the capture works on: perf's user registers (sub-register reads
 * and merges), effective addresses of memory operands, and decoding (Zydis 4). See cpustate.h.
 */
#include "core/capture/cpustate.h"

#include <string.h>
#include "dcpi/errno.h"

/* ---- registers ---------------------------------------------------------------------------- */

int dcpi_capture_perf_index(ZydisRegister reg)
{
    switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg)) {
    case ZYDIS_REGISTER_RAX:
        return DCPI_REG_AX;
    case ZYDIS_REGISTER_RBX:
        return DCPI_REG_BX;
    case ZYDIS_REGISTER_RCX:
        return DCPI_REG_CX;
    case ZYDIS_REGISTER_RDX:
        return DCPI_REG_DX;
    case ZYDIS_REGISTER_RSI:
        return DCPI_REG_SI;
    case ZYDIS_REGISTER_RDI:
        return DCPI_REG_DI;
    case ZYDIS_REGISTER_RBP:
        return DCPI_REG_BP;
    case ZYDIS_REGISTER_RSP:
        return DCPI_REG_SP;
    case ZYDIS_REGISTER_R8:
        return DCPI_REG_R8;
    case ZYDIS_REGISTER_R9:
        return DCPI_REG_R9;
    case ZYDIS_REGISTER_R10:
        return DCPI_REG_R10;
    case ZYDIS_REGISTER_R11:
        return DCPI_REG_R11;
    case ZYDIS_REGISTER_R12:
        return DCPI_REG_R12;
    case ZYDIS_REGISTER_R13:
        return DCPI_REG_R13;
    case ZYDIS_REGISTER_R14:
        return DCPI_REG_R14;
    case ZYDIS_REGISTER_R15:
        return DCPI_REG_R15;
    default:
        return -1;
    }
}

static int is_high_byte(ZydisRegister reg)
{
    return reg == ZYDIS_REGISTER_AH || reg == ZYDIS_REGISTER_BH || reg == ZYDIS_REGISTER_CH ||
           reg == ZYDIS_REGISTER_DH;
}

uint64_t dcpi_capture_width_mask(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

int dcpi_capture_read_reg(const dcpi_regs_t *regs, ZydisRegister reg, uint64_t *value)
{
    int idx = dcpi_capture_perf_index(reg);
    if (idx < 0)
        return DCPI_ENOTSUP;
    if (!(regs->valid & (1ull << idx)))
        return DCPI_ENOENT;
    uint64_t full = regs->r[idx];
    if (is_high_byte(reg))
        full >>= 8;
    *value = full & dcpi_capture_width_mask(ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg));
    return 0;
}

uint64_t dcpi_capture_merge_reg(ZydisRegister reg, uint64_t old, uint64_t value)
{
    unsigned bits = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg);
    if (bits >= 32)
        return value & dcpi_capture_width_mask(bits);
    unsigned shift = is_high_byte(reg) ? 8 : 0;
    uint64_t m = dcpi_capture_width_mask(bits) << shift;
    return (old & ~m) | ((value << shift) & m);
}

uint64_t dcpi_capture_reg_part(ZydisRegister reg, uint64_t full)
{
    unsigned bits = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, reg);
    unsigned shift = bits < 32 && is_high_byte(reg) ? 8 : 0;
    return (full >> shift) & dcpi_capture_width_mask(bits ? bits : 64);
}

/* ---- effective addresses ------------------------------------------------------------------ */

static int is_stack_base(ZydisRegister base)
{
    return base == ZYDIS_REGISTER_RSP || base == ZYDIS_REGISTER_ESP || base == ZYDIS_REGISTER_SP;
}

/* Hidden stack operands: Zydis reports [rsp] before the instruction; push and call store below
 * it. Other implicit stack forms (enter, leave, pushf, ...) are refused rather than guessed. */
static int stack_ea(const dcpi_insn_t *insn, const ZydisDecodedOperand *op, const dcpi_regs_t *regs,
                    uint64_t *ea)
{
    uint64_t sp;
    if (dcpi_capture_read_reg(regs, ZYDIS_REGISTER_RSP, &sp) != 0)
        return DCPI_ENOENT;
    switch (insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_PUSH:
    case ZYDIS_MNEMONIC_CALL:
        *ea = sp - op->size / 8;
        return 0;
    case ZYDIS_MNEMONIC_POP:
    case ZYDIS_MNEMONIC_RET:
        *ea = sp;
        return 0;
    default:
        return DCPI_ENOTSUP;
    }
}

int dcpi_capture_ea(const dcpi_insn_t *insn, const ZydisDecodedOperand *op, const dcpi_regs_t *regs,
                    uint64_t *ea)
{
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY ||
        (op->mem.type != ZYDIS_MEMOP_TYPE_MEM && op->mem.type != ZYDIS_MEMOP_TYPE_AGEN))
        return DCPI_ENOTSUP;
    if (op->mem.type == ZYDIS_MEMOP_TYPE_MEM &&
        (op->mem.segment == ZYDIS_REGISTER_FS || op->mem.segment == ZYDIS_REGISTER_GS))
        return DCPI_ENOTSUP; /* segment base not in perf's registers */
    if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && is_stack_base(op->mem.base))
        return stack_ea(insn, op, regs, ea);

    ZydisRegisterContext ctx; /* only the entries of base and index are read */
    const ZydisRegister used[2] = {op->mem.base, op->mem.index};
    for (int i = 0; i < 2; i++) {
        ZydisRegister r = used[i];
        if (r == ZYDIS_REGISTER_NONE || r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP)
            continue;
        uint64_t v;
        int rc = dcpi_capture_read_reg(regs, r, &v);
        if (rc)
            return rc;
        ctx.values[r] = v;
    }
    ZyanU64 addr;
    if (ZYAN_FAILED(ZydisCalcAbsoluteAddressEx(&insn->zi, op, insn->pc, &ctx, &addr)))
        return DCPI_ENOTSUP;
    *ea = addr;
    return 0;
}

/* ---- decoding ----------------------------------------------------------------------------- */

int dcpi_capture_decode(const void *bytes, size_t len, uint64_t pc, dcpi_insn_t *out)
{
    if (!bytes || !out)
        return DCPI_EINVAL;
    ZydisDecoder dec;
    if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
        return DCPI_EFORMAT;
    memset(out, 0, sizeof(*out));
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, bytes, len, &out->zi, out->ops)))
        return DCPI_EFORMAT;
    out->pc = pc;
    /* The descriptor comes from the trace module so that keys agree everywhere. */
    int rc = trace_inst_decode(bytes, (int)(len < 15 ? len : 15), &out->inst);
    if (rc < 0)
        return rc;
    return out->zi.length;
}
