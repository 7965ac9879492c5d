/*
 * cpustate.h - the machine state value capture works on: perf's x86-64 user registers as a sample
 * gives them (PERF_SAMPLE_REGS_USER, before the sampled instruction), an instruction decoded
 * with Zydis 4, and the helpers both the capture (capture.h) and the interpreter (interp.h)
 * use: sub-register reads and merges, effective addresses.
 */
#ifndef DCPI_CORE_CAPTURE_CPUSTATE_H
#define DCPI_CORE_CAPTURE_CPUSTATE_H

#include <stddef.h>
#include <stdint.h>
#include <Zydis/Zydis.h>
#include "dcpi/insn.h"
#include "dcpi/trace-vlist.h"

/* perf's x86-64 user register order (arch/x86/include/uapi/asm/perf_regs.h). */
enum {
    DCPI_REG_AX = 0,
    DCPI_REG_BX,
    DCPI_REG_CX,
    DCPI_REG_DX,
    DCPI_REG_SI,
    DCPI_REG_DI,
    DCPI_REG_BP,
    DCPI_REG_SP,
    DCPI_REG_IP,
    DCPI_REG_FLAGS,
    DCPI_REG_CS,
    DCPI_REG_SS,
    DCPI_REG_DS,
    DCPI_REG_ES,
    DCPI_REG_FS,
    DCPI_REG_GS,
    DCPI_REG_R8,
    DCPI_REG_R9,
    DCPI_REG_R10,
    DCPI_REG_R11,
    DCPI_REG_R12,
    DCPI_REG_R13,
    DCPI_REG_R14,
    DCPI_REG_R15,
    DCPI_REG_COUNT
};

/* sample_regs_user bits of the 16 GPRs, and of GPRs + IP + FLAGS. */
#define DCPI_REGS_GPR_MASK  0x00ff00ffull
#define DCPI_REGS_FULL_MASK (DCPI_REGS_GPR_MASK | (1ull << DCPI_REG_IP) | (1ull << DCPI_REG_FLAGS))

/* Registers at a sample, indexed by DCPI_REG_*; bit i of valid: r[i] was captured. With mem_ok,
 * a backend also read memory at the moment of the sample (the bp backend's BPF program,
 * core/capture/bpfmem.h): mem_val holds the (up to 8) bytes at address mem_ea, little-endian;
 * the capture uses them for a memory operand only when its own address for it is mem_ea. */
typedef struct dcpi_regs {
    uint64_t r[DCPI_REG_COUNT];
    uint64_t valid;
    uint64_t mem_ea, mem_val;
    int mem_ok;
} dcpi_regs_t;

/* A decoded instruction (fill with dcpi_capture_decode; read-only afterwards). */
typedef struct dcpi_insn {
    uint64_t pc; /* runtime address */
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    trace_inst_t inst; /* bytes, length, opc, mnemonic */
} dcpi_insn_t;

/* Decode the instruction at bytes[0..len) (64-bit mode), which runs at address pc. Returns its
 * length, DCPI_EINVAL (NULL argument) or DCPI_EFORMAT (not a valid instruction). */
int dcpi_capture_decode(const void *bytes, size_t len, uint64_t pc, dcpi_insn_t *out);

/* perf register index of the 64-bit register enclosing reg (al, ax, eax, rax -> AX), or -1. */
int dcpi_capture_perf_index(ZydisRegister reg);
/* Value of a register operand (sub-register, zero-extended). 0, DCPI_ENOTSUP when reg is not a
 * general-purpose register, DCPI_ENOENT when it was not captured. */
int dcpi_capture_read_reg(const dcpi_regs_t *regs, ZydisRegister reg, uint64_t *value);
/* The full 64-bit register after writing value to reg (32-bit: zero-extends, 8/16-bit: merges
 * into old, ah..bh: bits 8..15). */
uint64_t dcpi_capture_merge_reg(ZydisRegister reg, uint64_t old, uint64_t value);
/* The part of full (a whole 64-bit register) that reg names, at its width: al the low 8 bits,
 * ah bits 8..15 shifted down, ax 16 bits, eax 32, rax all 64. */
uint64_t dcpi_capture_reg_part(ZydisRegister reg, uint64_t full);
/* Address of memory operand op (MEM or AGEN). 0, or DCPI_ENOTSUP (fs/gs segment, implicit stack
 * form not handled), DCPI_ENOENT (a register was not captured). */
int dcpi_capture_ea(const dcpi_insn_t *insn, const ZydisDecodedOperand *op, const dcpi_regs_t *regs,
                    uint64_t *ea);

/* Low `bits` bits set (64: all). */
uint64_t dcpi_capture_width_mask(unsigned bits);

#endif
