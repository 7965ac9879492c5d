/*
 * bpfmem-abi.h - what the BPF program core/capture/bpfmem.bpf.c and its loader
 * core/capture/bpfmem.c share: the memory operand to read at a breakpoint, by (process, address
 * of the breakpoint) (an LRU hash map written by dcpid before it arms there: an arm follows its
 * thread on every CPU, so the operand cannot be the CPU's), and the per-CPU log of what was read
 * (one entry per breakpoint sample, in the order of the CPU's samples; an array indexed by CPU
 * number, mmap'd by dcpid).
 * Plain C types only: the header is compiled for the BPF target too.
 */
#ifndef DCPI_CORE_BPFMEM_ABI_H
#define DCPI_CORE_BPFMEM_ABI_H

#define DCPI_BPFMEM_NOREG 0xff /* no base / index register */
/* log entries per CPU (a ring; n counts them all): dcpid -voracle's period-1 breakpoint takes
 * ~100k samples/s of a CPU, read every 4 ms or at each half-full sampling ring (~650 samples) */
#define DCPI_BPFMEM_ENTRIES 2048
#define DCPI_BPFMEM_MAXCPU  1024 /* the log map is sized to the possible CPUs at load */
#define DCPI_BPFMEM_OPS     4096 /* operands kept (least recently used ones evicted) */

/* The key of an operand: the process (tgid) and the breakpoint's address (bp_addr, which is
 * the sample's addr for a breakpoint event: bpf_perf_event_data.addr). */
struct dcpi_bpfmem_opkey {
    unsigned int tgid, pad;
    unsigned long long addr;
};

/* The memory operand: ea = disp + reg[base] + (reg[index] << shift), size bytes (1..8) read
 * there; regs are perf's numbering (core/capture/cpustate.h). on == 0: read nothing. */
struct dcpi_bpfmem_op {
    long long disp;
    unsigned char base, index, shift, size;
    unsigned char on, pad[3];
};

struct dcpi_bpfmem_entry {
    unsigned long long key;         /* dcpi_bpfmem_key of the sample's registers */
    unsigned long long ea, val, ok; /* ok: 1 when the read succeeded */
    unsigned long long time;        /* bpf_ktime_get_ns: CLOCK_MONOTONIC, within a microsecond
                                       of the sample's own time (the sampler's clock) */
};

/* The key pairing a log entry with its sample: a hash of the 16 GPRs and rip, g[32] indexed by
 * perf's numbering; the same function on both sides. */
static inline unsigned long long dcpi_bpfmem_key(const unsigned long long *g)
{
    unsigned long long h = 0xcbf29ce484222325ull;
#ifdef __clang__
#pragma unroll
#endif
    for (int i = 0; i < 24; i++)
        if (i < 9 || i >= 16)
            h = (h ^ g[i]) * 0x100000001b3ull;
    return h;
}

struct dcpi_bpfmem_log {
    unsigned long long n; /* entries written so far; entry i is e[i % DCPI_BPFMEM_ENTRIES] */
    struct dcpi_bpfmem_entry e[DCPI_BPFMEM_ENTRIES];
};

#endif
