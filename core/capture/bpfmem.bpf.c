/*
 * bpfmem.bpf.c - the BPF program of the bp backend's memory values (built with clang -target
 * bpf, embedded in libdcpi, loaded by core/capture/bpfmem.c). Attached to each execute
 * breakpoint dcpid arms (PERF_EVENT_IOC_SET_BPF), it runs at each breakpoint sample, before the
 * instruction executes: it computes the effective address of the memory operand dcpid wrote for
 * this process and breakpoint address (the breakpoint may fire on any CPU: it follows its
 * thread), reads up to 8 bytes of user memory there (bpf_probe_read_user) and appends
 * (address, value, ok, time) to this CPU's log (an entry with ok 0 when there is nothing to
 * read). It returns 1: the sample itself is written as usual, and dcpid pairs it with the entry
 * whose key (a hash of the registers) is its own.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#include "core/capture/bpfmem-abi.h"

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, DCPI_BPFMEM_OPS);
    __type(key, struct dcpi_bpfmem_opkey);
    __type(value, struct dcpi_bpfmem_op);
} dcpi_ops SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, DCPI_BPFMEM_MAXCPU);
    __type(key, __u32);
    __type(value, struct dcpi_bpfmem_log);
} dcpi_logs SEC(".maps");

/* The context's user registers by perf's numbering (core/capture/cpustate.h): each read at a
 * constant offset (the verifier rewrites every context access; the context's own bytes are not
 * pt_regs, and a computed context pointer is refused). */
static __always_inline void user_regs(const struct bpf_perf_event_data *ctx, __u64 *g)
{
    g[0] = ctx->regs.rax;
    g[1] = ctx->regs.rbx;
    g[2] = ctx->regs.rcx;
    g[3] = ctx->regs.rdx;
    g[4] = ctx->regs.rsi;
    g[5] = ctx->regs.rdi;
    g[6] = ctx->regs.rbp;
    g[7] = ctx->regs.rsp;
    g[8] = ctx->regs.rip;
    g[16] = ctx->regs.r8;
    g[17] = ctx->regs.r9;
    g[18] = ctx->regs.r10;
    g[19] = ctx->regs.r11;
    g[20] = ctx->regs.r12;
    g[21] = ctx->regs.r13;
    g[22] = ctx->regs.r14;
    g[23] = ctx->regs.r15;
}

SEC("perf_event")
int dcpi_bpfmem(struct bpf_perf_event_data *ctx)
{
    __u32 cpu = bpf_get_smp_processor_id();
    struct dcpi_bpfmem_opkey k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32),
                                  .addr = ctx->addr};
    struct dcpi_bpfmem_op *op = bpf_map_lookup_elem(&dcpi_ops, &k);
    struct dcpi_bpfmem_log *log = bpf_map_lookup_elem(&dcpi_logs, &cpu);
    __u64 ea = 0, v = 0, g[32] = {0};
    long rc = -1;
    if (!log)
        return 1;
    user_regs(ctx, g);
    /* every sample gets an entry (ok 0 when nothing was read) */
    if (op && op->on) {
        ea = (__u64)op->disp;
        if (op->base != DCPI_BPFMEM_NOREG)
            ea += g[op->base & 31];
        if (op->index != DCPI_BPFMEM_NOREG)
            ea += g[op->index & 31] << (op->shift & 3);
        __u32 size = op->size;
        if (size > 8)
            size = 8;
        if (size)
            rc = bpf_probe_read_user(&v, size, (const void *)ea);
    }
    __u64 n = log->n;
    struct dcpi_bpfmem_entry *e = &log->e[n % DCPI_BPFMEM_ENTRIES];
    e->key = dcpi_bpfmem_key((const unsigned long long *)g);
    e->ea = ea;
    e->val = v;
    e->ok = rc == 0;
    e->time = bpf_ktime_get_ns();
    log->n = n + 1;
    return 1;
}

char LICENSE[] SEC("license") = "GPL";
