/*
 * capture.h - the regs backend's value capture: from the user registers perf records at a
 * sample (PERF_SAMPLE_REGS_USER, the state BEFORE the sampled instruction runs) and the sampled
 * instruction decoded with Zydis 4, compute the values a vlist asks for (dcpi/trace-vlist.h).
 *
 * What the regs backend can give, per trace_value_t:
 *   TRACE_RAX..TRACE_R15, TRACE_RFLAGS: the captured registers (before).
 *   TRACE_RIP: the pc given to dcpi_capture_decode (the sample's address; no register needed).
 *   TRACE_REGA / TRACE_REGB: the first / second source operand. Sources are the operands the
 *     instruction reads, in Zydis' operand order (visible operands first, then hidden ones such
 *     as rax of a one-operand mul), skipping rflags and rip. A register source gives its
 *     sub-register value (eax, ax, al, ah: zero-extended to 64 bits), an immediate its value
 *     truncated to the operand's width (relative immediates: the absolute target), a lea's
 *     address operand its computed address; a memory source is missing (no memory here).
 *     Examples: `add rax, rbx`: REGA = rax, REGB = rbx; `mov rax, rbx`: REGA = rbx, REGB
 *     missing; `imul rax, rbx, 7`: REGA = rbx, REGB = 7; `mul rbx`: REGA = rbx, REGB = rax.
 *   TRACE_REGC: the result, from the interpreter (core/interp.h): the full 64-bit destination
 *     register after the instruction (32-bit writes zero-extend, 8/16-bit writes merge into the
 *     old value); cmp/test: the new rflags; one-operand mul/imul: rax. Missing for everything
 *     the interpreter does not evaluate (memory sources or destinations, stores, branches...).
 *   TRACE_EA: the address of the instruction's memory operand (visible operands first; lea: the
 *     computed address; push/call: rsp - size; pop/ret: rsp). Missing when there is none, for
 *     fs:/gs: operands (the segment base is not in perf's registers) and for the other implicit
 *     rsp-based forms (enter, pushf, popf...; leave's [rbp] is given).
 *   TRACE_MEMVAL, TRACE_LATENCY: always missing in this backend.
 *   TRACE_BR_TAKEN: jcc / jrcxz / jecxz / loop / loope / loopne from flags and rcx; 1 for
 *     jmp / call / ret; missing for any other instruction.
 *   TRACE_BR_TARGET: direct jumps, jcc (whether taken or not) and calls: pc + length + rel;
 *     register-indirect jmp/call: the register; memory-indirect, far and ret: missing.
 * A value that cannot be computed (including one that needs a register perf did not deliver,
 * see dcpi_regs_t.valid) is set to 0 and its missing bit is set: nothing is ever invented.
 */
#ifndef DCPI_CORE_CAPTURE_H
#define DCPI_CORE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <Zydis/Zydis.h>
#include "dcpi/insn.h"
#include "dcpi/trace-vlist.h"

/* Internal API: exported from libdcpi for dcpi's own tools, no ABI promise. */
#pragma GCC visibility push(default)

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

/* Registers at a sample, indexed by DCPI_REG_*; bit i of valid: r[i] was captured. */
typedef struct dcpi_regs {
    uint64_t r[DCPI_REG_COUNT];
    uint64_t valid;
} dcpi_regs_t;

/* A decoded instruction (fill with dcpi_capture_decode; read-only afterwards). */
typedef struct dcpi_insn {
    uint64_t pc; /* runtime address */
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    trace_inst_t inst; /* bytes, length, opc, mnemonic */
} dcpi_insn_t;

/* The sample_regs_user mask a vlist needs: exactly the registers its kinds read (TRACE_RAX
 * alone: AX only; TRACE_RIP: nothing; TRACE_RFLAGS: FLAGS; REGA/REGB/REGC/EA/BR_*: the 16 GPRs, IP
 * and FLAGS; MEMVAL/LATENCY/NONE: nothing). Unknown kinds add nothing. */
uint64_t dcpi_capture_perf_mask(const trace_value_t *kinds, int n);

/* Decode the instruction at bytes[0..len) (64-bit mode), which runs at address pc. Returns its
 * length, DCPI_EINVAL (NULL argument) or DCPI_EFORMAT (not a valid instruction). */
int dcpi_capture_decode(const void *bytes, size_t len, uint64_t pc, dcpi_insn_t *out);

/* Compute n (<= 32) values of kinds for insn with the registers before it: values[i] is set
 * for every i; bit i of *missing is set (and values[i] is 0) when value i is not computable. */
void dcpi_capture_values(const dcpi_insn_t *insn, const dcpi_regs_t *before,
                         const trace_value_t *kinds, int n, uint64_t *values, unsigned *missing);

/* Helpers shared with the interpreter. */
/* perf register index of the 64-bit register enclosing reg (al, ax, eax, rax -> AX), or -1. */
int dcpi_capture_perf_index(ZydisRegister reg);
/* Value of a register operand (sub-register, zero-extended). 0, DCPI_ENOTSUP when reg is not a
 * general-purpose register, DCPI_ENOENT when it was not captured. */
int dcpi_capture_read_reg(const dcpi_regs_t *regs, ZydisRegister reg, uint64_t *value);
/* The full 64-bit register after writing value to reg (32-bit: zero-extends, 8/16-bit: merges
 * into old, ah..bh: bits 8..15). */
uint64_t dcpi_capture_merge_reg(ZydisRegister reg, uint64_t old, uint64_t value);
/* Address of memory operand op (MEM or AGEN). 0, or DCPI_ENOTSUP (fs/gs segment, implicit stack
 * form not handled), DCPI_ENOENT (a register was not captured). */
int dcpi_capture_ea(const dcpi_insn_t *insn, const ZydisDecodedOperand *op, const dcpi_regs_t *regs,
                    uint64_t *ea);

#pragma GCC visibility pop

#endif
