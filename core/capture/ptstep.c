/*
 * ptstep.c - ptrace bursts for an attached process (see ptstep.h).
 */
#include "core/capture/ptstep.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include "core/base/err.h"
#include "core/capture/capture.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define MAX_THREADS 1024

struct dcpi_ptstep {
    pid_t pid;
    int n;
    pid_t tids[MAX_THREADS];
    uint64_t bursts[MAX_THREADS];
    uint64_t nbursts, nsteps, nsignals;
};

static int find(const dcpi_ptstep_t *pt, pid_t tid)
{
    for (int i = 0; i < pt->n; i++)
        if (pt->tids[i] == tid)
            return i;
    return -1;
}

static void add(dcpi_ptstep_t *pt, pid_t tid)
{
    if (find(pt, tid) < 0 && pt->n < MAX_THREADS) {
        pt->bursts[pt->n] = 0;
        pt->tids[pt->n++] = tid;
    }
}

static void drop(dcpi_ptstep_t *pt, pid_t tid)
{
    int i = find(pt, tid);
    if (i < 0)
        return;
    pt->n--;
    pt->tids[i] = pt->tids[pt->n];
    pt->bursts[i] = pt->bursts[pt->n];
}

static int is_group_stop(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Resume tid after a stop that is not ours to keep; re-inject signals. */
static void handle_stop(dcpi_ptstep_t *pt, pid_t tid, int status)
{
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        drop(pt, tid);
        return;
    }
    if (!WIFSTOPPED(status))
        return;
    add(pt, tid); /* a new thread's first stop may come before its parent's event */
    int event = status >> 16, sig = WSTOPSIG(status);
    if (event == PTRACE_EVENT_CLONE) {
        unsigned long child;
        if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0)
            add(pt, (pid_t)child);
        ptrace(PTRACE_CONT, tid, 0, 0);
    } else if (event == PTRACE_EVENT_STOP) {
        if (is_group_stop(sig))
            ptrace(PTRACE_LISTEN, tid, 0, 0);
        else
            ptrace(PTRACE_CONT, tid, 0, 0);
    } else if (event) {
        ptrace(PTRACE_CONT, tid, 0, 0);
    } else {
        pt->nsignals++;
        ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
    }
}

static int seize_all(dcpi_ptstep_t *pt, char *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pt->pid);
    for (int added = 1; added;) {
        added = 0;
        DIR *d = opendir(path);
        if (!d)
            return dcpi__errf(err, pt->n ? 0 : DCPI_ESRCH, "ptstep: cannot list threads: %s",
                              strerror(errno));
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            pid_t tid = (pid_t)atoi(e->d_name);
            if (tid <= 0 || find(pt, tid) >= 0)
                continue;
            if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACECLONE) != 0) {
                int e2 = errno;
                if (e2 == ESRCH)
                    continue; /* exited meanwhile */
                closedir(d);
                return dcpi__errf(err, e2 == EPERM ? DCPI_EPERM : -e2, "ptstep: PTRACE_SEIZE: %s",
                                  strerror(e2));
            }
            add(pt, tid);
            added = 1;
        }
        closedir(d);
    }
    return 0;
}

int dcpi_ptstep_attach(pid_t pid, dcpi_ptstep_t **out, char *err)
{
    if (pid <= 0 || !out)
        return DCPI_EINVAL;
    dcpi_ptstep_t *pt = calloc(1, sizeof(*pt));
    if (!pt)
        return DCPI_ENOMEM;
    pt->pid = pid;
    int rc = seize_all(pt, err);
    if (rc == 0 && pt->n == 0)
        rc = dcpi__errf(err, DCPI_ESRCH, "ptstep: no threads: %s", strerror(ESRCH));
    if (rc != 0) {
        dcpi_ptstep_detach(pt);
        return rc;
    }
    *out = pt;
    return 0;
}

int dcpi_ptstep_threads(const dcpi_ptstep_t *pt, pid_t *tids, int max)
{
    int k = 0;
    for (int i = 0; pt && i < pt->n && k < max; i++)
        tids[k++] = pt->tids[i];
    return pt ? pt->n : 0;
}

int dcpi_ptstep_poll(dcpi_ptstep_t *pt)
{
    if (!pt)
        return 0;
    for (int again = 1; again;) {
        again = 0;
        for (int i = 0; i < pt->n; i++) {
            int status;
            pid_t tid = pt->tids[i];
            pid_t w = waitpid(tid, &status, WNOHANG | __WALL);
            if (w == tid) {
                handle_stop(pt, tid, status);
                again = 1;
            } else if (w < 0 && errno == ECHILD) {
                drop(pt, tid);
                again = 1;
            }
        }
    }
    return pt->n;
}

void dcpi_ptstep_counts(const dcpi_ptstep_t *pt, uint64_t *bursts, uint64_t *steps,
                        uint64_t *signals)
{
    if (bursts)
        *bursts = pt ? pt->nbursts : 0;
    if (steps)
        *steps = pt ? pt->nsteps : 0;
    if (signals)
        *signals = pt ? pt->nsignals : 0;
}

/* ---- one burst ---------------------------------------------------------------------------- */

static void regs_to_perf(const struct user_regs_struct *u, uint64_t *r)
{
    memset(r, 0, STEP_NREGS * sizeof(*r));
    r[DCPI_REG_AX] = u->rax, r[DCPI_REG_BX] = u->rbx, r[DCPI_REG_CX] = u->rcx;
    r[DCPI_REG_DX] = u->rdx, r[DCPI_REG_SI] = u->rsi, r[DCPI_REG_DI] = u->rdi;
    r[DCPI_REG_BP] = u->rbp, r[DCPI_REG_SP] = u->rsp, r[DCPI_REG_IP] = u->rip;
    r[DCPI_REG_FLAGS] = u->eflags & ~0x100ull, r[DCPI_REG_FS] = u->fs_base;
    r[DCPI_REG_R8] = u->r8, r[DCPI_REG_R9] = u->r9, r[DCPI_REG_R10] = u->r10;
    r[DCPI_REG_R11] = u->r11, r[DCPI_REG_R12] = u->r12, r[DCPI_REG_R13] = u->r13;
    r[DCPI_REG_R14] = u->r14, r[DCPI_REG_R15] = u->r15;
}

static int get_regs(pid_t tid, uint64_t *r)
{
    struct user_regs_struct u;
    if (ptrace(PTRACE_GETREGS, tid, 0, &u) != 0)
        return -1;
    regs_to_perf(&u, r);
    return 0;
}

static int peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)addr, len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    return n < 0 ? 0 : (int)n;
}

/* Wait until our PTRACE_INTERRUPT stop; other stops are handled on the way. 0 stopped,
 * 1 group-stopped (no burst), DCPI_ESRCH gone. */
static int wait_interrupt(dcpi_ptstep_t *pt, pid_t tid)
{
    for (;;) {
        int status;
        if (waitpid(tid, &status, __WALL) != tid) {
            drop(pt, tid);
            return DCPI_ESRCH;
        }
        if (WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP) {
            if (!is_group_stop(WSTOPSIG(status)))
                return 0;
            ptrace(PTRACE_LISTEN, tid, 0, 0);
            return 1;
        }
        handle_stop(pt, tid, status);
        if (find(pt, tid) < 0)
            return DCPI_ESRCH;
    }
}

static int is_stop_insn(const dcpi_insn_t *in)
{
    switch (in->zi.mnemonic) {
    case ZYDIS_MNEMONIC_SYSCALL:
    case ZYDIS_MNEMONIC_SYSENTER:
    case ZYDIS_MNEMONIC_INT:
    case ZYDIS_MNEMONIC_INT1:
    case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_INTO:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFQ:
    case ZYDIS_MNEMONIC_UD2:
        return 1;
    default:
        return 0;
    }
}

/* EA and memory before the instruction, as the agent records them. */
static void mem_operand(pid_t tid, step_record_t *rec, const dcpi_insn_t *in)
{
    dcpi_regs_t regs;
    memcpy(regs.r, rec->before, sizeof(regs.r));
    regs.valid = DCPI_REGS_FULL_MASK;
    for (int i = 0; i < in->zi.operand_count; i++) {
        ZydisDecodedOperand op = in->ops[i];
        if (op.type != ZYDIS_OPERAND_TYPE_MEMORY || op.mem.type != ZYDIS_MEMOP_TYPE_MEM)
            continue;
        uint64_t add = 0;
        if (op.mem.segment == ZYDIS_REGISTER_FS) {
            op.mem.segment = ZYDIS_REGISTER_DS;
            add = rec->before[DCPI_REG_FS];
        }
        if (dcpi_capture_ea(in, &op, &regs, &rec->ea) != 0)
            return;
        rec->ea += add;
        rec->flags |= STEP_REC_EA;
        rec->mem_size = op.size / 8 > 8 ? 8 : (uint8_t)(op.size / 8);
        if (rec->mem_size && (op.actions & ZYDIS_OPERAND_ACTION_MASK_READ) &&
            peek(tid, rec->ea, &rec->mem_before, rec->mem_size) == rec->mem_size)
            rec->flags |= STEP_REC_MEMRD;
        if (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
            rec->flags |= STEP_REC_MEMWR;
        return;
    }
}

/* Prepare rec for the instruction at before's rip; 1 when the burst must end before it. */
static int prepare(pid_t tid, step_record_t *rec, const uint64_t *before)
{
    memset(rec, 0, sizeof(*rec));
    memcpy(rec->before, before, sizeof(rec->before));
    int n = peek(tid, before[DCPI_REG_IP], rec->insn, 16);
    if (n <= 0) {
        errno = 0;
        long w = ptrace(PTRACE_PEEKTEXT, tid, (void *)before[DCPI_REG_IP], 0);
        memcpy(rec->insn, &w, sizeof(w));
        n = errno ? 0 : 8;
    }
    rec->insn_len = (uint8_t)n;
    dcpi_insn_t in;
    if (n == 0 || dcpi_capture_decode(rec->insn, (size_t)n, before[DCPI_REG_IP], &in) < 0)
        return -1;
    if (is_stop_insn(&in))
        return 1;
    mem_operand(tid, rec, &in);
    return 0;
}

/* Step once; 0 done (after regs filled), else the end reason (signal, exit). */
static int step_once(dcpi_ptstep_t *pt, pid_t tid, step_record_t *rec, int *pending)
{
    int status;
    if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) != 0 || waitpid(tid, &status, __WALL) != tid) {
        drop(pt, tid);
        return STEP_END_EXIT;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        drop(pt, tid);
        return STEP_END_EXIT;
    }
    if (WIFSTOPPED(status) && (status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP) {
        *pending = WSTOPSIG(status); /* the program's signal: delivered on resume */
        return STEP_END_SIGNAL;
    }
    if (get_regs(tid, rec->after) != 0)
        return STEP_END_EXIT;
    if ((rec->flags & STEP_REC_MEMWR) &&
        peek(tid, rec->ea, &rec->mem_after, rec->mem_size) != rec->mem_size)
        rec->flags &= (uint16_t)~STEP_REC_MEMWR;
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int run_burst(dcpi_ptstep_t *pt, pid_t tid, int n, step_record_t *recs, int *why,
                     int *pending)
{
    uint64_t regs[STEP_NREGS];
    if (get_regs(tid, regs) != 0) {
        *why = STEP_END_EXIT;
        return 0;
    }
    uint64_t t0 = now_ns(), burst = pt->bursts[find(pt, tid)]++;
    int k = 0;
    *why = STEP_END_DONE;
    for (; k < n; k++) {
        step_record_t *r = &recs[k];
        int p = prepare(tid, r, regs);
        if (p != 0) {
            *why = p < 0 ? STEP_END_ERROR : STEP_END_SYSCALL;
            break;
        }
        int e = step_once(pt, tid, r, pending);
        if (e != 0) {
            *why = e;
            break;
        }
        r->time_ns = t0, r->burst = burst, r->tid = (uint32_t)tid, r->index = (uint8_t)k;
        r->flags |= k == 0 ? STEP_REC_FIRST : 0;
        memcpy(regs, r->after, sizeof(regs));
    }
    if (k > 0) {
        recs[k - 1].flags |= STEP_REC_LAST;
        recs[k - 1].end = (uint8_t)*why;
    }
    return k;
}

int dcpi_ptstep_burst(dcpi_ptstep_t *pt, pid_t tid, int n, step_record_t *recs, int *end, char *err)
{
    if (!pt || !recs || n < 1 || n > STEP_BURST_MAX)
        return DCPI_EINVAL;
    if (find(pt, tid) < 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
        return dcpi__errf(err, DCPI_ESRCH, "ptstep: thread not traced: %s", strerror(ESRCH));
    int rc = wait_interrupt(pt, tid);
    if (rc != 0) {
        if (end)
            *end = rc > 0 ? STEP_END_SIGNAL : STEP_END_EXIT;
        return rc > 0 ? 0 : rc;
    }
    int why, pending = 0;
    int k = run_burst(pt, tid, n, recs, &why, &pending);
    if (why != STEP_END_EXIT && find(pt, tid) >= 0) {
        pt->nsignals += pending != 0;
        ptrace(PTRACE_CONT, tid, 0, (void *)(long)pending);
    }
    pt->nbursts++;
    pt->nsteps += (uint64_t)k;
    if (end)
        *end = why;
    return k;
}

/* ---- detach ------------------------------------------------------------------------------- */

static int detach_one(dcpi_ptstep_t *pt, pid_t tid)
{
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
        return errno == ESRCH ? 0 : -errno;
    for (;;) {
        int status;
        if (waitpid(tid, &status, __WALL) != tid)
            return 0;
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return 0;
        int event = status >> 16, sig = WSTOPSIG(status);
        if (event == PTRACE_EVENT_CLONE) {
            unsigned long child;
            if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0)
                add(pt, (pid_t)child);
            ptrace(PTRACE_CONT, tid, 0, 0);
            continue;
        }
        /* signal-delivery-stop: the signal goes with the detach; event stops: none */
        long inject = event == 0 ? sig : 0;
        if (ptrace(PTRACE_DETACH, tid, 0, (void *)inject) != 0 && errno != ESRCH)
            return -errno;
        return 0;
    }
}

int dcpi_ptstep_detach(dcpi_ptstep_t *pt)
{
    if (!pt)
        return 0;
    int first = 0;
    while (pt->n > 0) {
        pid_t tid = pt->tids[pt->n - 1];
        pt->n--;
        int rc = detach_one(pt, tid);
        if (rc && !first)
            first = rc;
    }
    free(pt);
    return first;
}
