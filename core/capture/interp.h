/*
 * interp.h - the x86-64 result interpreter of the regs backend: evaluates one decoded
 * instruction from the registers before it, when its result depends on registers and
 * immediates only.
 *
 * Interpreted (register / immediate operands only; any memory operand other than lea's address
 * makes the instruction not interpretable):
 *   mov (incl. movabs), lea (any address/operand size), movzx, movsx, movsxd, cmovcc, setcc,
 *   add, sub, adc, sbb, and, or, xor, inc, dec, neg, not, cmp, test,
 *   shl/sal, shr, sar, rol, ror (by 1, imm8 or cl; count masked to 5 bits, 6 for 64-bit),
 *   imul (1-, 2- and 3-operand), mul (1-operand), xchg reg,reg, bswap, popcnt,
 *   div, idiv (1-operand), bt, bts, btr, btc (register or imm8 offset), lzcnt, tzcnt, bsf, bsr,
 *   rcl, rcr (by 1, imm8 or cl), shld, shrd (imm8 or cl). div/idiv: interpdiv.c; the bit-level
 * families: interpbits.c.
 *
 * The result: the full 64-bit destination register after the instruction (32-bit writes
 * zero-extend, including cmovcc not taken and shifts by 0; 8/16-bit writes merge into the old
 * register, ah..bh into bits 8..15). cmp/test/bt: the new rflags. One-operand mul/imul: rax (rdx
 * gets the high half and is not returned). div/idiv: rax with the quotient (al/ax/eax/rax; 8-bit:
 * ax = remainder << 8 | quotient; the remainder in dx/edx/rdx is not returned). xchg: the first
 * operand Zydis reports (for the short 0x90+r form that is the r register).
 *
 * The new rflags: the old rflags with the status flags the instruction writes replaced.
 * Flags exact: CF, PF, AF, ZF, SF, OF for add/sub/adc/sbb/cmp/neg; inc/dec (CF kept);
 * CF, PF, ZF, SF, OF for and/or/xor/test (AF undefined); shifts: CF, PF, ZF, SF when the masked
 * count is non-zero (CF undefined when count > width for shl/shr), OF only for a count of 1,
 * AF undefined; rotates: CF, and OF for a count of 1; imul/mul: CF, OF (SF, ZF, AF, PF
 * undefined); popcnt: all six (ZF from the source, the others 0); div/idiv: none (all six
 * undefined); bt*: CF (ZF kept, the others undefined); lzcnt/tzcnt: CF (source 0), ZF (count 0);
 * bsf/bsr: ZF; rcl/rcr: CF (count masked as for rol, then mod 9 / mod 17 for 8 / 16 bits), OF for
 * a count of 1; shld/shrd: CF, PF, ZF, SF, OF for a count of 1, AF undefined. Undefined flags keep
 * their old value in *new_flags and are reported in *undefined so callers can mask them.
 */
#ifndef DCPI_CORE_INTERP_H
#define DCPI_CORE_INTERP_H

#include <stdint.h>
#include "core/capture/cpustate.h"

/* rflags status bits. */
#define DCPI_FLAG_CF      0x001ull
#define DCPI_FLAG_PF      0x004ull
#define DCPI_FLAG_AF      0x010ull
#define DCPI_FLAG_ZF      0x040ull
#define DCPI_FLAG_SF      0x080ull
#define DCPI_FLAG_OF      0x800ull
#define DCPI_FLAGS_STATUS 0x8d5ull

/* Result (see above) and new rflags of insn. Returns 0; DCPI_ENOTSUP when the instruction is
 * not interpretable from registers alone; DCPI_ERANGE when these inputs fault or leave the result
 * undefined (div/idiv: divisor 0 or quotient out of range, #DE; bsf/bsr of 0; shld/shrd of a
 * 16-bit register by a masked count of 17..31); DCPI_ENOENT when a register it reads (rflags
 * included) was not captured; DCPI_EINVAL for NULL arguments. Outputs are written only on 0;
 * undefined (may be NULL) gets the rflags bits whose new value is undefined. */
int dcpi_interp(const dcpi_insn_t *insn, const dcpi_regs_t *before, uint64_t *result,
                uint64_t *new_flags, uint64_t *undefined);
/* The same for an instruction whose one memory access is a read of one explicit operand (a
 * load, an ALU op or cmp/test with a memory source), given what that operand holds (memval,
 * truncated to its width: read by the backend at the instruction, core/capture/bpfmem.h):
 * a load's result is the loaded value (zero- or sign-extended as the instruction does), an ALU
 * op's is computed from it. DCPI_ENOTSUP for anything that writes memory. */
int dcpi_interp_mem(const dcpi_insn_t *insn, const dcpi_regs_t *before, uint64_t memval,
                    uint64_t *result, uint64_t *new_flags);
/* Whether condition code cc (0..15, the x86 encoding: o no b ae e ne be a s ns p np l ge le g)
 * holds for rflags. */
int dcpi_interp_cond(int cc, uint64_t rflags);
/* Condition code of a jcc / cmovcc / setcc mnemonic, or -1. */
int dcpi_interp_cond_of(ZydisMnemonic m);

#endif
