/*
 * bpfmem.h - memory operands read at the moment of a breakpoint sample (the bp backend's loaded
 * and stored values, docs/vprofiler.md "WHERE VALUES COME FROM"): a BPF program
 * (core/capture/bpfmem.bpf.c, built with clang, embedded, loaded with libbpf) is attached to
 * each execute breakpoint; before each breakpoint sample it reads the memory operand of the
 * armed instruction (as set here for the CPU before the arm) and logs (address, value) per CPU.
 * A sample pairs with the CPU's next log entry whose key (a hash of the 16 GPRs and rip,
 * dcpi_bpfmem_key) is its own: entries of lost samples are skipped; the capture also checks the
 * address against the one it computes from the sample's registers, so a pairing that went
 * wrong gives a missing value, never a wrong one.
 * Where BPF cannot be loaded (no CAP_BPF / CAP_PERFMON, a kernel without BPF, a build without
 * libbpf or clang) dcpi_bpfmem_open fails with the reason and memory values stay missing.
 */
#ifndef DCPI_CORE_BPFMEM_H
#define DCPI_CORE_BPFMEM_H

#include <stdint.h>

#include "core/capture/cpustate.h"

typedef struct dcpi_bpfmem dcpi_bpfmem_t;

/* Load the program and map its tables. 0, or a negative DCPI_E* with the reason in err. */
int dcpi_bpfmem_open(dcpi_bpfmem_t **out, char *err);
void dcpi_bpfmem_close(dcpi_bpfmem_t *m);
/* The program's fd, for PERF_EVENT_IOC_SET_BPF. */
int dcpi_bpfmem_prog_fd(const dcpi_bpfmem_t *m);
/* The next breakpoint samples of cpu read the memory operand of insn (its first MEM operand;
 * none, or an fs:/gs: one: nothing is read). */
void dcpi_bpfmem_set(dcpi_bpfmem_t *m, int cpu, const dcpi_insn_t *insn);
/* What was read for the breakpoint sample of cpu with these registers (the 16 GPRs and rip
 * needed), into regs (mem_ea, mem_val, mem_ok): 1 when the log had its entry, 0 when not
 * (mem_ok 0). Samples of a CPU are given in their order. */
int dcpi_bpfmem_next(dcpi_bpfmem_t *m, int cpu, dcpi_regs_t *regs);

#endif
