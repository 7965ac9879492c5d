/*
 * bpfmem.h - memory operands read at the moment of a breakpoint sample (the bp backend's loaded
 * and stored values, docs/vprofiler.md "WHERE VALUES COME FROM"): a BPF program
 * (core/capture/bpfmem.bpf.c, built with clang, embedded, loaded with libbpf) is attached to
 * each execute breakpoint; before each breakpoint sample it reads the memory operand of the
 * armed instruction (as set here for the process and breakpoint address before the arm: a
 * breakpoint that follows its thread fires on any CPU) and logs (address, value, time) per CPU.
 * A sample pairs with a log entry of its CPU whose key (a hash of the 16 GPRs and rip,
 * dcpi_bpfmem_key) is its own: the CPU's next one in order (dcpi_bpfmem_next: the oracle, whose
 * samples of a CPU are all in one ring, read in order), or the newest at or before the sample's
 * time (dcpi_bpfmem_find: the bp backend, whose arms' rings are read one by one, so a CPU's
 * samples are not read in order); the capture also checks the address against the one it
 * computes from the sample's registers, so a pairing that went wrong gives a missing value,
 * never a wrong one.
 * Where BPF cannot be loaded (no CAP_BPF / CAP_PERFMON, a kernel without BPF, a build without
 * libbpf or clang) dcpi_bpfmem_open fails with the reason and memory values stay missing.
 */
#ifndef DCPI_CORE_BPFMEM_H
#define DCPI_CORE_BPFMEM_H

#include <stdint.h>
#include <sys/types.h>

#include "core/capture/cpustate.h"

typedef struct dcpi_bpfmem dcpi_bpfmem_t;

/* Load the program and map its tables. 0, or a negative DCPI_E* with the reason in err. */
int dcpi_bpfmem_open(dcpi_bpfmem_t **out, char *err);
void dcpi_bpfmem_close(dcpi_bpfmem_t *m);
/* The program's fd, for PERF_EVENT_IOC_SET_BPF. */
int dcpi_bpfmem_prog_fd(const dcpi_bpfmem_t *m);
/* Breakpoint samples at addr in process pid read the memory operand of insn (its first MEM
 * operand; none, or an fs:/gs: one: nothing is read), on every CPU. 0, or the negative errno
 * of the map update. */
int dcpi_bpfmem_set(dcpi_bpfmem_t *m, pid_t pid, uint64_t addr, const dcpi_insn_t *insn);
/* What was read for the breakpoint sample of cpu with these registers (the 16 GPRs and rip
 * needed), into regs (mem_ea, mem_val, mem_ok): 1 when the log had its entry, 0 when not
 * (mem_ok 0). Samples of a CPU are given in their order. */
int dcpi_bpfmem_next(dcpi_bpfmem_t *m, int cpu, dcpi_regs_t *regs);
/* The same for a sample taken at time (its perf time, CLOCK_MONOTONIC ns) on cpu, in any order:
 * the newest entry with its key at or before that time. */
int dcpi_bpfmem_find(dcpi_bpfmem_t *m, int cpu, uint64_t time, dcpi_regs_t *regs);

#endif
