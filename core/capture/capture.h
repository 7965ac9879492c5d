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
 *     address operand its computed address; a memory source is missing unless the backend read
 *     it at the sample (dcpi_regs_t.mem_ok at the address computed here: the bp backend with BPF).
 *     Examples: `add rax, rbx`: REGA = rax, REGB = rbx; `mov rax, rbx`: REGA = rbx, REGB
 *     missing; `imul rax, rbx, 7`: REGA = rbx, REGB = 7; `mul rbx`: REGA = rbx, REGB = rax.
 *   TRACE_REGC: the result, from the interpreter (core/capture/interp.h): the destination
 * register after the instruction at its width (al: 8 bits, ah: bits 8..15 shifted down, ax: 16,
 * eax: 32, zero-extended as the CPU does); cmp/test/bt: the new rflags; one-operand mul/imul and
 * div/idiv: their first written register (rax/eax/ax: the product's low half or the quotient;
 * 8-bit: ax, remainder in ah). Missing for everything the interpreter does not evaluate
 * (memory sources or destinations, stores, branches...) and where the instruction would fault or
 * leave its result undefined (div by 0 or quotient overflow, bsf/bsr of 0). TRACE_EA:
 * the address of the instruction's memory operand (visible operands first; lea: the computed
 * address; push/call: rsp - size; pop/ret: rsp). Missing when there is none, for fs:/gs: operands
 * (the segment base is not in perf's registers) and for the other implicit rsp-based forms (enter,
 * pushf, popf...; leave's [rbp] is given). TRACE_MEMVAL: what the first memory operand loads, when
 * the backend read it (as for memory sources above), or what a plain store (mov [m], src)
 * stores: its source; a read-modify-write's: missing; TRACE_LATENCY: always missing.
 * TRACE_BR_TAKEN: jcc / jrcxz / jecxz / loop / loope / loopne from flags and rcx; 1 for jmp / call
 * / ret; missing for any other instruction. TRACE_BR_TARGET: direct jumps, jcc (whether taken or
 * not) and calls: pc + length + rel; register-indirect jmp/call: the register; memory-indirect: the
 * memory read by the backend (else missing); far and ret: missing. A value that cannot be computed
 * (including one that needs a register perf did not deliver, see dcpi_regs_t.valid) is set to 0 and
 * its missing bit is set: nothing is ever invented.
 */
#ifndef DCPI_CORE_CAPTURE_H
#define DCPI_CORE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "core/capture/cpustate.h"
#include "dcpi/trace-vlist.h"

/* The sample_regs_user mask a vlist needs: exactly the registers its kinds read (TRACE_RAX
 * alone: AX only; TRACE_RIP: nothing; TRACE_RFLAGS: FLAGS;
 * REGA/REGB/REGC/EA/BR_TAKEN/BR_TARGET/MEMVAL: the 16 GPRs, IP and FLAGS (MEMVAL: to check the
 * address of a read value); LATENCY/NONE: nothing). Unknown kinds add nothing. */
uint64_t dcpi_capture_perf_mask(const trace_value_t *kinds, int n);

/* Whether dcpi_capture_values can give a value of kind k at some instruction of key in (NULL:
 * none): an address needs a memory operand or is lea's computed one, a loaded or stored value a
 * memory operand, a branch's outcome a branch, call or return (1 for the last two), a target a
 * branch or call (a return's is not read), a latency never; a register, rflags, rip or an
 * operand always. */
int dcpi_capture_can(trace_value_t k, const trace_opc_info_t *in);

/* Compute n (<= 32) values of kinds for insn with the registers before it: values[i] is set
 * for every i; bit i of *missing is set (and values[i] is 0) when value i is not computable. */
void dcpi_capture_values(const dcpi_insn_t *insn, const dcpi_regs_t *before,
                         const trace_value_t *kinds, int n, uint64_t *values, unsigned *missing);

#endif
