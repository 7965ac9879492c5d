/*
 * agent.c - libdcpi-agent.so, the in-process agent (LD_PRELOAD) of the step backend and, with
 * DCPI_AGENT_MODE=arm, of the inproc backend (core/values/inproc.c).
 *
 * With DCPI_AGENT_RING=<prefix> in the environment it creates the ring file
 * <prefix>.<pid>.<gen> (core/capture/stepring.h), and gives every thread a timer on its own CPU
 * clock (DCPI_AGENT_RATE bursts/s, default 100) that sends a real-time signal. The signal's handler
 * sets the trap flag in the interrupted context, so the thread traps after each instruction;
 * the SIGTRAP handler records registers before/after, instruction bytes and the memory operand
 * into the thread's ring until DCPI_AGENT_BURST instructions (default 16) ran, or until the next
 * instruction is a system call (or int/int3/pushf/...), or a signal of the program arrives.
 * With DCPI_AGENT_MODE=arm there are no bursts: every thread opens a cpu-clock event of its own
 * that signals it (sigtrap) at random periods and up to four execute breakpoints; at each tick
 * it arms them on the targets dcpid wrote into the ring file's table for the procedure the tick
 * interrupted, and each hit (a synchronous SIGTRAP, TRAP_PERF) becomes one STEP_REC_HIT record
 * (core/capture/stepring.h says the protocol).
 * Without DCPI_AGENT_RING it does nothing at all.
 * One file (~1000 lines) on purpose: the agent is injected into arbitrary programs, links libc only
 * and exports nothing; a single translation unit keeps every function static and async-signal-
 * safe code reviewable in one place.
 *
 * The program keeps its behaviour: sigaction/signal are wrapped so its handlers are called for
 * its own signals (SIGTRAP included: traps that are not ours are forwarded), sigprocmask and
 * pthread_sigmask never block the agent's two signals, fork gives the child its own ring and
 * timer, exec re-arms through the environment. Instruction decoding uses Zydis, loaded with
 * dlopen; without it memory operands are not recorded (counted in no_decoder).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "core/capture/stepring.h"

#define EXPORT     __attribute__((visibility("default")))
#define TICK_MAGIC 0x5dc1
/* TF, the trap flag of a step, and RF, the resume flag the kernel sets in the context of an
 * execute breakpoint's hit so that the instruction runs on return instead of trapping again: the
 * program sees neither (pushf stores RF cleared), so a value sample's rflags leaves both out */
#define TF_BIT 0x100ull
#define RF_BIT 0x10000ull

/* perf register order (core/capture/capture.h DCPI_REG_*), repeated here: the agent links no
 * libdcpi */
enum {
    R_AX,
    R_BX,
    R_CX,
    R_DX,
    R_SI,
    R_DI,
    R_BP,
    R_SP,
    R_IP,
    R_FL,
    R_CS,
    R_SS,
    R_DS,
    R_ES,
    R_FS,
    R_GS,
    R_R8,
    R_R9,
    R_R10,
    R_R11,
    R_R12,
    R_R13,
    R_R14,
    R_R15
};

typedef ZyanStatus (*dec_init_fn)(ZydisDecoder *, ZydisMachineMode, ZydisStackWidth);
typedef ZyanStatus (*dec_full_fn)(const ZydisDecoder *, const void *, ZyanUSize,
                                  ZydisDecodedInstruction *, ZydisDecodedOperand *);
typedef ZydisRegister (*reg_enc_fn)(ZydisMachineMode, ZydisRegister);

struct agent_thread {
    int live, slot, stepping, index, tid;
    timer_t timer;
    /* arm mode: the tick event, the breakpoints (fd -1: none), their targets and state */
    int tick_fd, nbp, bp_fd[STEP_ARM_SLOTS];
    uint64_t bp_addr[STEP_ARM_SLOTS];
    uint8_t bp_armed[STEP_ARM_SLOTS], bp_index[STEP_ARM_SLOTS];
    uint16_t bp_hits[STEP_ARM_SLOTS]; /* executions the arm of each breakpoint took so far */
    uint16_t bp_cap[STEP_ARM_SLOTS];  /* and at most (the table's hits, g.hits) */
    uint64_t last_hit; /* CLOCK_MONOTONIC of the last hit since the last tick that armed, 0: none */
    uint32_t rot, arm_seq; /* arm_seq: the thread's arms so far (a hit's cluster) */
    uint64_t rng, period_ns;
    uint64_t rest_ns;  /* not 0: the next tick closes the arms still waiting (arm_close_tick),
                          then this remains of the sampling period */
    uint64_t armed_at; /* the thread's CPU ns when the arms waiting were made */
    uint64_t burst, t0;
    step_record_t cur; /* the instruction about to run: before regs, bytes, ea */
};

static __thread struct agent_thread self __attribute__((tls_model("initial-exec")));

static struct {
    int active, sig, burst_len, rate, arm, maxbp, hits;
    int dump_fd; /* arm mode: each hit's record is appended here too (STEP_DUMP_ENV; -1: not) */
    uint64_t window_ns; /* arm mode: how long an arm waits for its hit (0: until the next tick) */
    step_ring_header_t *hdr;
    size_t size;
    char prefix[200];
    pthread_key_t key;
    struct sigaction prog[NSIG];
    unsigned char prog_set[NSIG];
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    int (*sigprocmask)(int, const sigset_t *, sigset_t *);
    int (*pthread_sigmask)(int, const sigset_t *, sigset_t *);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    ZydisDecoder dec;
    dec_full_fn decode;
    reg_enc_fn enclosing;
} g;

/* ---- small helpers (async-signal-safe) ---------------------------------------------------- */

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* The thread's CPU time, ns. */
static uint64_t cpu_ns(void)
{
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int self_read(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)addr, len};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static uint64_t fs_base(void)
{
    uint64_t v;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(v));
    return v;
}

static void regs_from_uc(const ucontext_t *uc, uint64_t *r)
{
    const greg_t *gr = uc->uc_mcontext.gregs;
    memset(r, 0, STEP_NREGS * sizeof(*r));
    r[R_AX] = gr[REG_RAX], r[R_BX] = gr[REG_RBX], r[R_CX] = gr[REG_RCX];
    r[R_DX] = gr[REG_RDX], r[R_SI] = gr[REG_RSI], r[R_DI] = gr[REG_RDI];
    r[R_BP] = gr[REG_RBP], r[R_SP] = gr[REG_RSP], r[R_IP] = gr[REG_RIP];
    r[R_FL] = gr[REG_EFL] & ~(TF_BIT | RF_BIT), r[R_FS] = fs_base();
    r[R_R8] = gr[REG_R8], r[R_R9] = gr[REG_R9], r[R_R10] = gr[REG_R10];
    r[R_R11] = gr[REG_R11], r[R_R12] = gr[REG_R12], r[R_R13] = gr[REG_R13];
    r[R_R14] = gr[REG_R14], r[R_R15] = gr[REG_R15];
}

static void set_tf(ucontext_t *uc, int on)
{
    if (on)
        uc->uc_mcontext.gregs[REG_EFL] |= TF_BIT;
    else
        uc->uc_mcontext.gregs[REG_EFL] &= ~TF_BIT;
}

static int is_ours(int sig)
{
    return g.active && (sig == SIGTRAP || sig == g.sig);
}

static void strip_ours(sigset_t *set)
{
    sigdelset(set, SIGTRAP);
    sigdelset(set, g.sig);
}

/* ---- decoding ------------------------------------------------------------------------------ */

static int reg_index(ZydisRegister r)
{
    static const int8_t map[16] = {R_AX, R_CX, R_DX,  R_BX,  R_SP,  R_BP,  R_SI,  R_DI,
                                   R_R8, R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15};
    ZydisRegister big = g.enclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    if (big >= ZYDIS_REGISTER_RAX && big <= ZYDIS_REGISTER_R15)
        return map[big - ZYDIS_REGISTER_RAX];
    return -1;
}

static int reg_val(ZydisRegister r, const uint64_t *regs, uint64_t *v)
{
    if (r == ZYDIS_REGISTER_NONE) {
        *v = 0;
        return 0;
    }
    int i = reg_index(r);
    if (i < 0)
        return -1;
    *v = regs[i];
    return 0;
}

/* Effective address of a memory operand (core/capture/capture.c rules, plus the fs base). */
static int operand_ea(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *op,
                      const uint64_t *regs, uint64_t *ea)
{
    ZydisMnemonic m = zi->mnemonic;
    if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && op->mem.base == ZYDIS_REGISTER_RSP) {
        if (m == ZYDIS_MNEMONIC_PUSH || m == ZYDIS_MNEMONIC_CALL)
            *ea = regs[R_SP] - op->size / 8;
        else if (m == ZYDIS_MNEMONIC_POP || m == ZYDIS_MNEMONIC_RET)
            *ea = regs[R_SP];
        else
            return -1;
        return 0;
    }
    uint64_t base, index;
    if (op->mem.segment == ZYDIS_REGISTER_GS)
        return -1;
    if (op->mem.base == ZYDIS_REGISTER_RIP)
        base = regs[R_IP] + zi->length;
    else if (reg_val(op->mem.base, regs, &base) != 0)
        return -1;
    if (reg_val(op->mem.index, regs, &index) != 0)
        return -1;
    uint64_t a = base + index * op->mem.scale + (uint64_t)op->mem.disp.value;
    if (zi->address_width == 32)
        a &= 0xffffffffull;
    if (op->mem.segment == ZYDIS_REGISTER_FS)
        a += regs[R_FS];
    *ea = a;
    return 0;
}

static int is_stop(ZydisMnemonic m)
{
    switch (m) {
    case ZYDIS_MNEMONIC_SYSCALL:
    case ZYDIS_MNEMONIC_SYSENTER:
    case ZYDIS_MNEMONIC_INT:
    case ZYDIS_MNEMONIC_INT1:
    case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_INTO:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFD:
    case ZYDIS_MNEMONIC_PUSHFQ:
    case ZYDIS_MNEMONIC_IRETQ:
    case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_XBEGIN:
        return 1;
    default:
        return 0;
    }
}

/* Byte check used without Zydis: syscall, sysenter, int n, int3, pushf after prefixes. */
static int is_stop_bytes(const uint8_t *b, int len)
{
    int i = 0;
    while (i < len && (b[i] == 0x66 || (b[i] & 0xf0) == 0x40))
        i++;
    if (i >= len)
        return 1;
    if (b[i] == 0xcc || b[i] == 0xcd || b[i] == 0x9c || b[i] == 0xf1)
        return 1;
    return i + 1 < len && b[i] == 0x0f && (b[i + 1] == 0x05 || b[i + 1] == 0x34);
}

/* The index of the instruction's first memory operand, -1 when none. */
static int mem_index(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops)
{
    for (int i = 0; i < zi->operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM)
            return i;
    return -1;
}

/* rec's memory operand fields from op (its address from rec's registers before). */
static void mem_operand(step_record_t *rec, const ZydisDecodedInstruction *zi,
                        const ZydisDecodedOperand *op)
{
    if (operand_ea(zi, op, rec->before, &rec->ea) != 0)
        return;
    rec->flags |= STEP_REC_EA;
    rec->mem_size = op->size / 8 > 8 ? 8 : (uint8_t)(op->size / 8);
    if (rec->mem_size && (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ) &&
        self_read(rec->ea, &rec->mem_before, rec->mem_size) == 0)
        rec->flags |= STEP_REC_MEMRD;
    if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
        rec->flags |= STEP_REC_MEMWR; /* mem_after read after the instruction */
}

/* Fill rec's memory operand fields; 1 when the instruction must end the burst. */
static int analyse(step_record_t *rec)
{
    if (!g.decode) {
        atomic_fetch_add_explicit(&g.hdr->no_decoder, 1, memory_order_relaxed);
        return is_stop_bytes(rec->insn, rec->insn_len);
    }
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (ZYAN_FAILED(g.decode(&g.dec, rec->insn, rec->insn_len, &zi, ops)))
        return 1;
    if (is_stop(zi.mnemonic))
        return 1;
    int m = mem_index(&zi, ops);
    if (m >= 0)
        mem_operand(rec, &zi, &ops[m]);
    return 0;
}

/* self.cur from regs (before) and the bytes at their rip. */
static void read_insn(const uint64_t *regs)
{
    step_record_t *c = &self.cur;
    memset(c, 0, offsetof(step_record_t, before));
    memcpy(c->before, regs, sizeof(c->before));
    uint64_t pc = regs[R_IP];
    uint64_t to_page = 4096 - (pc & 4095);
    size_t n = to_page < 16 ? (size_t)to_page : 16;
    memcpy(c->insn, (const void *)pc, n); /* the page at pc is mapped: it runs */
    if (n < 16 && self_read(pc + n, c->insn + n, 16 - n) == 0)
        n = 16;
    c->insn_len = (uint8_t)n;
}

/* Read the instruction at regs' rip into self.cur; 1 when the burst must end before it. */
static int prepare(const uint64_t *regs)
{
    read_insn(regs);
    return analyse(&self.cur);
}

/* ---- bursts ------------------------------------------------------------------------------- */

static void end_burst(ucontext_t *uc, int why)
{
    step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
    atomic_fetch_add_explicit(&s->end_count[why], 1, memory_order_relaxed);
    set_tf(uc, 0);
    self.stepping = 0;
}

static void write_record(const uint64_t *after, int last, int why)
{
    step_record_t *c = &self.cur;
    step_record_t *r = step_ring_next(g.hdr, (uint32_t)self.slot);
    c->time_ns = self.t0;
    c->burst = self.burst;
    c->tid = (uint32_t)self.tid;
    c->index = (uint8_t)self.index;
    c->flags |= (self.index == 0 ? STEP_REC_FIRST : 0) | (last ? STEP_REC_LAST : 0);
    c->end = (uint8_t)why;
    if ((c->flags & STEP_REC_MEMWR) && self_read(c->ea, &c->mem_after, c->mem_size) != 0)
        c->flags &= (uint16_t)~STEP_REC_MEMWR;
    memcpy(c->after, after, sizeof(c->after));
    memcpy(r, c, sizeof(*r));
    step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
    atomic_fetch_add_explicit(&s->steps, 1, memory_order_relaxed);
    step_ring_publish(s);
}

static void on_step(ucontext_t *uc)
{
    uint64_t now[STEP_NREGS];
    regs_from_uc(uc, now);
    int why = -1;
    if (self.index + 1 >= g.burst_len)
        why = STEP_END_DONE;
    /* Decode the next instruction first so the last record can carry the end reason. */
    step_record_t done = self.cur;
    if (why < 0 && prepare(now))
        why = STEP_END_SYSCALL;
    step_record_t next = self.cur;
    self.cur = done;
    write_record(now, why >= 0, why < 0 ? 0 : why);
    self.cur = next;
    self.index++;
    if (why >= 0)
        end_burst(uc, why);
}

static void start_burst(ucontext_t *uc)
{
    step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
    if (!step_ring_room(g.hdr, s, (uint32_t)g.burst_len)) {
        atomic_fetch_add_explicit(&s->lost_bursts, 1, memory_order_relaxed);
        return;
    }
    uint64_t regs[STEP_NREGS];
    regs_from_uc(uc, regs);
    self.index = 0;
    self.burst = atomic_fetch_add_explicit(&s->bursts, 1, memory_order_relaxed);
    self.t0 = now_ns();
    if (prepare(regs)) {
        atomic_fetch_add_explicit(&s->end_count[STEP_END_SYSCALL], 1, memory_order_relaxed);
        return;
    }
    self.stepping = 1;
    set_tf(uc, 1);
}

/* ---- the program's handlers ----------------------------------------------------------------- */

static void call_program(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *pa = &g.prog[sig];
    void (*h)(int) = pa->sa_handler;
    int flags = pa->sa_flags;
    if (flags & SA_RESETHAND) {
        pa->sa_handler = SIG_DFL;
        pa->sa_flags &= ~SA_SIGINFO;
    }
    if (h == SIG_IGN)
        return;
    if (h == SIG_DFL) { /* only SIGTRAP / our signal get here: act as the default would */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        g.sigaction(sig, &dfl, NULL);
        raise(sig); /* blocked in this handler: delivered with SIG_DFL on return */
        return;
    }
    if (flags & SA_SIGINFO)
        pa->sa_sigaction(sig, si, uc);
    else
        h(sig);
}

static void on_program_signal(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    if (self.stepping)
        end_burst(ucv, STEP_END_SIGNAL);
    errno = saved;
    call_program(sig, si, ucv);
}

/* ---- arm mode (stepring.h: dcpid's table of targets, the breakpoints, STEP_REC_HIT) ---------- */

#define ARM_COOKIE 0x5dc1a000ul /* sig_data of our events: + k for breakpoint k */
#define ARM_TICK   (ARM_COOKIE + 0xff)
#define ARM_MIN_NS 20000ull   /* the shortest mean tick period */
#define ARM_DEF_NS 4000000ull /* the mean period until dcpid's table gives one */
#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif
#define TRAP_PERF_ASYNC (1u << 31) /* the signal came late: SIGTRAP was blocked at the event */

/* siginfo's perf fields (TRAP_PERF, Linux 5.13+), laid out after si_addr as the kernel does */
struct perf_si {
    void *addr;
    unsigned long data;
    uint32_t type, flags;
};

static const struct perf_si *perf_si(const siginfo_t *si)
{
    return (const struct perf_si *)(const void *)&si->si_addr;
}

static int perf_open(struct perf_event_attr *a)
{
    return (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Breakpoint k of this thread at addr: one sample per execution, signalled to the thread. */
static void bp_attr(struct perf_event_attr *a, uint64_t addr, int k, int disabled)
{
    memset(a, 0, sizeof(*a));
    a->type = PERF_TYPE_BREAKPOINT;
    a->size = sizeof(*a);
    a->bp_type = HW_BREAKPOINT_X;
    a->bp_len = sizeof(long);
    a->bp_addr = addr;
    a->sample_period = 1;
    a->sigtrap = 1;
    a->remove_on_exec = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->disabled = (uint64_t)disabled;
    a->sig_data = ARM_COOKIE + (unsigned long)k;
}

static uint64_t rnd(void)
{
    uint64_t x = self.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return self.rng = x;
}

/* The next tick's period, uniform in [mean/4, 7 mean/4): ticks keep no step with the program. */
static uint64_t next_period(uint64_t mean)
{
    return mean / 4 + rnd() % (mean * 3 / 2 + 1);
}

static void note_errno(int e)
{
    uint32_t zero = 0;
    atomic_compare_exchange_strong(&g.hdr->arm_errno, &zero, (uint32_t)e);
}

static void arm_close(void)
{
    for (int k = 0; k < STEP_ARM_SLOTS; k++) {
        if (self.bp_fd[k] >= 0)
            close(self.bp_fd[k]);
        self.bp_fd[k] = -1;
    }
    if (self.tick_fd >= 0)
        close(self.tick_fd);
    self.tick_fd = -1;
    self.nbp = 0;
}

/* The thread's breakpoints (as many as it gets, up to STEP_ARM_SLOTS: a debugger may hold
 * some) and its tick; none at all when perf refuses (the first errno goes to the header). */
static void arm_open(void)
{
    struct perf_event_attr a;
    self.tick_fd = -1;
    for (int k = 0; k < STEP_ARM_SLOTS; k++)
        self.bp_fd[k] = -1;
    for (int k = 0; k < g.maxbp; k++) {
        bp_attr(&a, (uint64_t)(uintptr_t)&arm_open, k, 1); /* disabled: a placeholder */
        int fd = perf_open(&a);
        if (fd < 0) {
            note_errno(errno);
            break;
        }
        self.bp_fd[k] = fd;
        self.bp_addr[k] = a.bp_addr;
        self.nbp++;
    }
    uint32_t fewest = atomic_load(&g.hdr->arm_bps);
    while ((uint32_t)self.nbp < fewest &&
           !atomic_compare_exchange_weak(&g.hdr->arm_bps, &fewest, (uint32_t)self.nbp))
        ;
    if (self.nbp == 0)
        return;
    self.rng = now_ns() ^ ((uint64_t)self.tid << 32) ^ 0x9e3779b97f4a7c15ull;
    self.period_ns = ARM_DEF_NS;
    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.size = sizeof(a);
    a.sample_period = next_period(self.period_ns);
    a.sigtrap = 1;
    a.remove_on_exec = 1;
    a.exclude_kernel = 1; /* ticks in the kernel arm nothing */
    a.sig_data = ARM_TICK;
    if ((self.tick_fd = perf_open(&a)) < 0) {
        note_errno(errno);
        arm_close();
    }
}

/* Breakpoint k on addr (the table's index-th target), for up to cap executions. */
static void arm_slot(step_slot_t *s, int k, unsigned index, uint64_t addr, unsigned cap)
{
    int rc;
    if (self.bp_addr[k] == addr) {
        rc = ioctl(self.bp_fd[k], PERF_EVENT_IOC_ENABLE, 0);
    } else {
        struct perf_event_attr a;
        bp_attr(&a, addr, k, 0);
        rc = ioctl(self.bp_fd[k], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a);
        if (rc == 0)
            self.bp_addr[k] = addr;
    }
    if (rc != 0) {
        note_errno(errno);
        ioctl(self.bp_fd[k], PERF_EVENT_IOC_DISABLE, 0);
        return;
    }
    self.bp_armed[k] = 1;
    self.bp_hits[k] = 0;
    self.bp_cap[k] = (uint16_t)(cap && cap < (unsigned)g.hits ? cap : (unsigned)g.hits);
    self.bp_index[k] = (uint8_t)index;
    atomic_fetch_add_explicit(&s->arms, 1, memory_order_relaxed);
    if (index < STEP_ARM_MAX)
        atomic_fetch_add_explicit(&g.hdr->arms_at[index], 1, memory_order_relaxed);
}

/* The breakpoint for target addr: the one on it already, else one that is not, else -1. */
static int slot_for(uint64_t addr, const uint8_t *taken)
{
    for (int k = 0; k < self.nbp; k++)
        if (!taken[k] && self.bp_addr[k] == addr)
            return k;
    return -1;
}

/* Breakpoints still armed: disabled, counted as expired when they took no execution. */
static void expire_arms(step_slot_t *s, const uint8_t *keep)
{
    for (int k = 0; k < self.nbp; k++)
        if (self.bp_armed[k] && !(keep && keep[k])) {
            ioctl(self.bp_fd[k], PERF_EVENT_IOC_DISABLE, 0);
            self.bp_armed[k] = 0;
            if (self.bp_hits[k] == 0)
                atomic_fetch_add_explicit(&s->expired, 1, memory_order_relaxed);
        }
}

/* The closing tick, g.window_ns after a tick that armed: the arms not hit by then expire, and
 * the sampling period goes on (the next tick is where it would have been without this one).
 * An armed execute breakpoint slows the code of its whole 64-byte line while it waits (x86
 * parts bypass their decoded-uop cache there: a loop sharing the line with a breakpoint on a
 * cold instruction ran 4.3 times as long here, bench/trap_cost.c), so a wait costs far more
 * than this tick's interrupt; the unit becomes "the first execution within the window after a
 * random moment", which caps the weight of an execution after a long gap at the window. */
static void arm_close_tick(step_slot_t *s)
{
    atomic_fetch_add_explicit(&s->closes, 1, memory_order_relaxed);
    expire_arms(s, NULL);
    uint64_t p = self.rest_ns;
    self.rest_ns = 0;
    ioctl(self.tick_fd, PERF_EVENT_IOC_PERIOD, &p);
}

/* After a hit: when no arm waits any more, the closing tick is not needed; the tick is set
 * where the sampling period would end (the window's rest, then the period's). */
static void skip_close(void)
{
    for (int k = 0; k < self.nbp; k++)
        if (self.bp_armed[k])
            return;
    uint64_t spent = cpu_ns() - self.armed_at;
    uint64_t p = self.rest_ns + (spent < g.window_ns ? g.window_ns - spent : 0);
    self.rest_ns = 0;
    ioctl(self.tick_fd, PERF_EVENT_IOC_PERIOD, &p);
}

/* A tick at pc: the arms still waiting expire (the thread's own next tick ends them), then the
 * table's targets in the procedure holding pc are armed (in turn when there are more of them
 * than breakpoints), each for the first execution after this moment, and closed g.window_ns
 * later (arm_close_tick). Arming only there keeps
 * the sampling unit "the first execution after a random moment spent in its procedure": an
 * execution after a long gap elsewhere (a loop's first iteration) is not taken more often than
 * one inside a run. */
static void arm_tick(uint64_t pc)
{
    step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
    if (self.rest_ns) {
        arm_close_tick(s);
        return;
    }
    atomic_fetch_add_explicit(&s->ticks, 1, memory_order_relaxed);
    step_arm_table_t t;
    if (step_arm_read(g.hdr, &t) != 0) {
        t.n = 0; /* being written: nothing this tick */
        t.period_ns = 0;
    }
    if (t.period_ns)
        self.period_ns = t.period_ns < ARM_MIN_NS ? ARM_MIN_NS : t.period_ns;
    uint64_t p = next_period(self.period_ns);
    unsigned want[STEP_ARM_MAX], nw = 0;
    for (unsigned i = 0; i < t.n; i++)
        if (pc >= t.lo[i] && pc < t.hi[i] &&
            (t.take[i] == STEP_TAKE_ALL || (rnd() & 0xffff) < t.take[i]))
            want[nw++] = i;
    unsigned nbp = (unsigned)self.nbp, m = nw < nbp ? nw : nbp, first = nw > nbp ? self.rot : 0;
    if (nw > nbp)
        self.rot = (self.rot + nbp) % nw;
    uint8_t taken[STEP_ARM_SLOTS] = {0};
    int pick[STEP_ARM_SLOTS];
    for (unsigned j = 0; j < m; j++) { /* breakpoints already on their target first */
        pick[j] = slot_for(t.addr[want[(first + j) % nw]], taken);
        if (pick[j] >= 0)
            taken[pick[j]] = 1;
    }
    for (unsigned j = 0; j < m; j++)
        for (int k = 0; pick[j] < 0 && k < self.nbp; k++)
            if (!taken[k]) {
                pick[j] = k;
                taken[k] = 1;
            }
    expire_arms(s, taken);
    self.arm_seq += m > 0;
    self.last_hit = 0; /* the gap from the tick to the first hit is the program's */
    for (unsigned j = 0; j < m; j++) {
        unsigned i = want[(first + j) % nw];
        int k = pick[j];
        if (self.bp_armed[k] && self.bp_addr[k] == t.addr[i] && self.bp_hits[k] == 0)
            atomic_fetch_add_explicit(&s->expired, 1, memory_order_relaxed);
        arm_slot(s, k, i, t.addr[i], t.hits[i]);
    }
    if (m > 0 && g.window_ns && p > 2 * g.window_ns) { /* rest_ns > window_ns > 0 */
        self.rest_ns = p - g.window_ns;
        self.armed_at = cpu_ns();
        p = g.window_ns;
    }
    ioctl(self.tick_fd, PERF_EVENT_IOC_PERIOD, &p);
}

/* Each breakpoint's instruction, decoded at its first hit (a target is hit again and again). */
struct arm_decoded {
    uint64_t addr; /* 0: none */
    int mem;       /* whether it has a memory operand (op) */
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand op;
};
static __thread struct arm_decoded decoded[STEP_ARM_SLOTS]
    __attribute__((tls_model("initial-exec")));

/* self.cur from regs at breakpoint k's hit: bytes, and the memory operand through the decoding
 * of the instruction kept for k. */
static void hit_prepare(const uint64_t *regs, int k)
{
    read_insn(regs);
    step_record_t *c = &self.cur;
    struct arm_decoded *d = &decoded[k];
    if (!g.decode) {
        atomic_fetch_add_explicit(&g.hdr->no_decoder, 1, memory_order_relaxed);
        return;
    }
    if (d->addr != regs[R_IP]) {
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        d->addr = 0;
        if (ZYAN_FAILED(g.decode(&g.dec, c->insn, c->insn_len, &d->zi, ops)))
            return;
        int m = mem_index(&d->zi, ops);
        d->mem = m >= 0;
        if (m >= 0)
            d->op = ops[m];
        d->addr = regs[R_IP];
    }
    if (d->mem)
        mem_operand(c, &d->zi, &d->op);
}

/* Breakpoint k hit: the state before the instruction into one record. The arm stays on for the
 * executions that follow, up to g.hits of them, until its window closes (arm_close_tick); the
 * arm's hits are one cluster of consecutive executions (arm_seq, arm_hit), which dcpilist's
 * bound counts as such. */
static void arm_hit(ucontext_t *uc, int k, uint32_t flags)
{
    step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
    int armed = self.bp_armed[k];
    unsigned nth = armed ? ++self.bp_hits[k] : 0;
    uint64_t now = now_ns(), gap = now - self.last_hit;
    if (armed && self.last_hit && gap < STEP_GAP_MAX_NS) { /* a hit's cost, for the budget */
        atomic_fetch_add_explicit(&s->gap_ns, gap, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->gap_n, 1, memory_order_relaxed);
    }
    self.last_hit = armed ? now : self.last_hit;
    if (!armed || nth >= self.bp_cap[k]) {
        ioctl(self.bp_fd[k], PERF_EVENT_IOC_DISABLE, 0);
        self.bp_armed[k] = 0;
        if (self.rest_ns)
            skip_close();
    }
    uint64_t regs[STEP_NREGS];
    regs_from_uc(uc, regs);
    if ((flags & TRAP_PERF_ASYNC) || !armed || regs[R_IP] != self.bp_addr[k] ||
        !step_ring_room(g.hdr, s, 1)) {
        atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
        return;
    }
    hit_prepare(regs, k);
    step_record_t *c = &self.cur;
    c->time_ns = now;
    c->burst = atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
    c->tid = (uint32_t)self.tid;
    c->index = self.bp_index[k];
    c->arm_hit = (uint16_t)nth;
    c->arm_seq = self.arm_seq;
    c->flags |= STEP_REC_HIT | STEP_REC_LAST;
    c->end = STEP_END_DONE;
    memcpy(c->after, c->before, sizeof(c->after));
    memcpy(step_ring_next(g.hdr, (uint32_t)self.slot), c, sizeof(*c));
    step_ring_publish(s);
    if (g.dump_fd >= 0)
        (void)!write(g.dump_fd, c, sizeof(*c));
}

/* 1 when si is one of the arm mode's signals (handled), 0 when not. */
static int arm_signal(const siginfo_t *si, ucontext_t *uc)
{
    if (!g.arm || si->si_code != TRAP_PERF)
        return 0;
    const struct perf_si *p = perf_si(si);
    int tick = p->data == ARM_TICK;
    if (!tick && (p->data < ARM_COOKIE || p->data >= ARM_COOKIE + STEP_ARM_SLOTS))
        return 0;
    uint64_t t0 = now_ns();
    if (tick && self.live && self.tick_fd >= 0)
        arm_tick((uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
    else if (!tick && self.live && self.bp_fd[p->data - ARM_COOKIE] >= 0)
        arm_hit(uc, (int)(p->data - ARM_COOKIE), p->flags);
    uint64_t dt = now_ns() - t0;
    if (self.live && self.slot >= 0 && dt < STEP_HANDLER_MAX_NS) { /* dcpid's live cost */
        step_slot_t *s = step_ring_slot(g.hdr, (uint32_t)self.slot);
        atomic_fetch_add_explicit(&s->handler_ns, dt, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->handler_n, 1, memory_order_relaxed);
    }
    return 1;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    if (arm_signal(si, ucv)) {
        errno = saved;
        return;
    }
    if (self.stepping && si->si_code == TRAP_TRACE) {
        on_step(ucv);
        errno = saved;
        return;
    }
    if (self.stepping)
        end_burst(ucv, STEP_END_SIGNAL);
    errno = saved;
    call_program(sig, si, ucv);
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    if (si->si_code != SI_TIMER || si->si_value.sival_int != TICK_MAGIC) {
        on_program_signal(sig, si, ucv);
        return;
    }
    if (self.live && !self.stepping)
        start_burst(ucv);
    errno = saved;
}

/* ---- wrappers ------------------------------------------------------------------------------ */

static int install(int sig, void (*fn)(int, siginfo_t *, void *), const sigset_t *mask, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = (flags & ~(SA_RESETHAND | SA_NODEFER)) | SA_SIGINFO | SA_RESTART;
    if (mask)
        sa.sa_mask = *mask;
    else
        sigfillset(&sa.sa_mask);
    strip_ours(&sa.sa_mask);
    if (fn == on_trap || fn == on_tick)
        sigfillset(&sa.sa_mask); /* nothing interrupts the agent's own handlers */
    return g.sigaction(sig, &sa, NULL);
}

static void report_old(int sig, struct sigaction *old)
{
    if (g.prog_set[sig]) {
        *old = g.prog[sig];
    } else {
        memset(old, 0, sizeof(*old));
        old->sa_handler = SIG_DFL;
    }
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!g.sigaction)
        g.sigaction = dlsym(RTLD_NEXT, "sigaction");
    if (!g.active || sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
        return g.sigaction(sig, act, old);
    struct sigaction prev;
    if (!g.prog_set[sig] && !is_ours(sig) && g.sigaction(sig, NULL, &prev) == 0) {
        g.prog[sig] = prev; /* adopt what was there before the first wrapped call */
        g.prog_set[sig] = 1;
    }
    struct sigaction before;
    report_old(sig, &before);
    if (act) {
        int fn = act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
        int rc = 0;
        if (sig == SIGTRAP)
            rc = 0; /* on_trap stays; it forwards */
        else if (sig == g.sig)
            rc = 0; /* on_tick stays; it forwards what is not a tick */
        else if (fn)
            rc = install(sig, on_program_signal, &act->sa_mask, act->sa_flags);
        else
            rc = g.sigaction(sig, act, NULL);
        if (rc != 0)
            return rc;
        g.prog[sig] = *act;
        g.prog_set[sig] = 1;
    }
    if (old)
        *old = before;
    return 0;
}

EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

static int mask_call(int (*fn)(int, const sigset_t *, sigset_t *), int how, const sigset_t *set,
                     sigset_t *old)
{
    if (!g.active || !set || how == SIG_UNBLOCK)
        return fn(how, set, old);
    sigset_t copy = *set;
    strip_ours(&copy);
    return fn(how, &copy, old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!g.sigprocmask)
        g.sigprocmask = dlsym(RTLD_NEXT, "sigprocmask");
    return mask_call(g.sigprocmask, how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!g.pthread_sigmask)
        g.pthread_sigmask = dlsym(RTLD_NEXT, "pthread_sigmask");
    return mask_call(g.pthread_sigmask, how, set, old);
}

/* ---- threads ------------------------------------------------------------------------------- */

static int claim_slot(void)
{
    for (uint32_t i = 0; i < g.hdr->nslots; i++) {
        step_slot_t *s = step_ring_slot(g.hdr, i);
        uint32_t expect = STEP_SLOT_FREE;
        if (atomic_compare_exchange_strong(&s->state, &expect, STEP_SLOT_LIVE)) {
            atomic_store(&s->tid, (uint32_t)self.tid);
            return (int)i;
        }
    }
    atomic_fetch_add(&g.hdr->lost_threads, 1);
    return -1;
}

static void thread_arm(void)
{
    memset(&self, 0, sizeof(self));
    self.tid = (int)syscall(SYS_gettid);
    self.slot = claim_slot();
    if (self.slot < 0)
        return;
    if (g.arm) { /* a tick event and breakpoints of its own instead of the burst timer */
        arm_open();
        pthread_setspecific(g.key, &self);
        self.live = 1;
        return;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = g.sig;
    sev.sigev_value.sival_int = TICK_MAGIC;
    sev._sigev_un._tid = self.tid;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &self.timer) != 0)
        return;
    long ns = 1000000000L / g.rate;
    struct itimerspec it = {{ns / 1000000000L, ns % 1000000000L},
                            {ns / 1000000000L, ns % 1000000000L}};
    timer_settime(self.timer, 0, &it, NULL);
    pthread_setspecific(g.key, &self);
    self.live = 1;
}

static void thread_disarm(void *unused)
{
    if (!self.live)
        return;
    self.live = 0;
    if (g.arm)
        arm_close();
    else
        timer_delete(self.timer);
    atomic_store(&step_ring_slot(g.hdr, (uint32_t)self.slot)->state, STEP_SLOT_DONE);
}

struct start_arg {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_start(void *p)
{
    struct start_arg a = *(struct start_arg *)p;
    free(p);
    thread_arm();
    return a.fn(a.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!g.pthread_create)
        g.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
    struct start_arg *a = g.active ? malloc(sizeof(*a)) : NULL;
    if (!a)
        return g.pthread_create(t, attr, fn, arg);
    a->fn = fn;
    a->arg = arg;
    int rc = g.pthread_create(t, attr, thread_start, a);
    if (rc != 0)
        free(a);
    return rc;
}

/* ---- process set-up ----------------------------------------------------------------------- */

/* STEP_DUMP_ENV's file for this process (PATH.PID), or -1. */
static int open_dump(void)
{
    const char *p = getenv(STEP_DUMP_ENV);
    char path[4096];
    if (!p || !*p || snprintf(path, sizeof path, "%s.%d", p, (int)getpid()) >= (int)sizeof path)
        return -1;
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *s = getenv(name);
    long v = s && *s ? strtol(s, NULL, 10) : def;
    return v < lo || v > hi ? def : (int)v;
}

static int open_ring(void)
{
    char path[256];
    size_t size = step_ring_file_size(STEP_DEF_SLOTS, STEP_DEF_RECORDS);
    for (int gen = 0; gen < 1000; gen++) {
        snprintf(path, sizeof(path), "%s.%d.%d", g.prefix, (int)getpid(), gen);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return -1;
        void *m = MAP_FAILED;
        if (ftruncate(fd, (off_t)size) == 0)
            m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
            return -1;
        g.hdr = m;
        g.size = size;
        step_ring_init(g.hdr, (uint32_t)getpid(), STEP_DEF_SLOTS, STEP_DEF_RECORDS);
        g.hdr->burst_len = (uint32_t)g.burst_len;
        g.hdr->rate = (uint32_t)g.rate;
        g.hdr->signo = (uint32_t)g.sig;
        g.hdr->arm_mode = (uint32_t)g.arm;
        atomic_store(&g.hdr->ready, 1);
        return 0;
    }
    return -1;
}

static void load_zydis(void)
{
    void *h = dlopen("libZydis.so.4.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libZydis.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    dec_init_fn init = (dec_init_fn)dlsym(h, "ZydisDecoderInit");
    g.enclosing = (reg_enc_fn)dlsym(h, "ZydisRegisterGetLargestEnclosing");
    dec_full_fn full = (dec_full_fn)dlsym(h, "ZydisDecoderDecodeFull");
    if (init && full && g.enclosing &&
        ZYAN_SUCCESS(init(&g.dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
        g.decode = full;
}

static int pick_signal(void)
{
    int n = env_int(STEP_SIGNAL_ENV, -1, 0, SIGRTMAX - SIGRTMIN);
    if (n >= 0)
        return SIGRTMIN + n;
    for (int s = SIGRTMIN + 6; s <= SIGRTMAX; s++) {
        struct sigaction cur;
        if (g.sigaction(s, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
            return s;
    }
    return SIGRTMAX;
}

static void unblock_ours(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTRAP);
    sigaddset(&set, g.sig);
    g.pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void after_fork_child(void)
{
    if (!g.active)
        return;
    step_arm_table_t t = {.n = 0};
    if (g.arm) { /* the parent's breakpoints and tick are not the child's; its table is */
        arm_close();
        if (step_arm_read(g.hdr, &t) != 0)
            t.n = 0;
    }
    munmap(g.hdr, g.size);
    g.hdr = NULL;
    if (g.dump_fd >= 0) { /* the child's hits into a file of its own */
        close(g.dump_fd);
        g.dump_fd = open_dump();
    }
    if (open_ring() != 0) {
        g.active = 0;
        self.live = 0;
        return;
    }
    if (t.n) /* the same code at the same addresses until dcpid writes the child's own table */
        step_arm_publish(g.hdr, t.addr, t.lo, t.hi, t.take, t.hits, t.n, t.period_ns);
    thread_arm();
}

static void resolve(void)
{
    g.sigaction = dlsym(RTLD_NEXT, "sigaction");
    g.sigprocmask = dlsym(RTLD_NEXT, "sigprocmask");
    g.pthread_sigmask = dlsym(RTLD_NEXT, "pthread_sigmask");
    g.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
}

__attribute__((constructor)) static void agent_init(void)
{
    g.dump_fd = -1;
    resolve();
    const char *prefix = getenv(STEP_RING_ENV);
    if (!prefix || !*prefix || strlen(prefix) >= sizeof(g.prefix) || !g.sigaction ||
        !g.pthread_sigmask || !g.pthread_create)
        return;
    snprintf(g.prefix, sizeof(g.prefix), "%s", prefix);
    g.burst_len = env_int(STEP_BURST_ENV, 16, 1, STEP_BURST_MAX);
    g.rate = env_int(STEP_RATE_ENV, 100, 1, 100000);
    const char *mode = getenv(STEP_MODE_ENV);
    g.arm = mode && strcmp(mode, "arm") == 0;
    g.maxbp = env_int(STEP_BPS_ENV, STEP_ARM_SLOTS, 1, STEP_ARM_SLOTS);
    g.window_ns = 1000ull * (uint64_t)env_int(STEP_WINDOW_ENV, STEP_ARM_WINDOW_US, 0, 1000000);
    g.hits = env_int(STEP_HITS_ENV, STEP_ARM_HITS, 1, STEP_ARM_HITS_MAX);
    g.dump_fd = open_dump();
    g.sig = pick_signal();
    load_zydis();
    if (pthread_key_create(&g.key, thread_disarm) != 0 || open_ring() != 0)
        return;
    g.active = 1;
    if (install(SIGTRAP, on_trap, NULL, 0) != 0 || install(g.sig, on_tick, NULL, 0) != 0) {
        g.active = 0;
        return;
    }
    unblock_ours();
    pthread_atfork(NULL, NULL, after_fork_child);
    thread_arm();
}
