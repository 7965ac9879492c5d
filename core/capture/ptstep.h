/*
 * ptstep.h - the step backend for an attached process (dcpid -vstep -p PID): ptrace bursts.
 *
 * dcpi_ptstep_attach seizes every thread of the process (PTRACE_SEIZE with TRACECLONE, so new
 * threads are traced too) without stopping it. dcpi_ptstep_burst stops one thread
 * (PTRACE_INTERRUPT), single-steps up to n instructions (PTRACE_SINGLESTEP + waitpid +
 * PTRACE_GETREGS), filling one step_record_t (core/capture/stepring.h) per instruction, with the
 * memory operand read by process_vm_readv before (reads) and after (writes) it, and resumes
 * the thread. A burst ends before a syscall/sysenter/int/int3/pushf instruction, when the
 * thread receives a signal (the signal is delivered when the thread resumes: the program's
 * signals are never swallowed) and when it exits. Between bursts call dcpi_ptstep_poll often:
 * while traced, every signal of the program stops the receiving thread until the tracer
 * resumes it, and poll does that (re-injecting the signal), adopts new threads and forgets
 * exited ones. dcpi_ptstep_detach leaves every thread running as before.
 * All calls must come from the one thread that attached (ptrace is per tracer thread).
 * Records are turned into trace entries with dcpi_step_encode (core/capture/stepdrain.h).
 */
#ifndef DCPI_CORE_PTSTEP_H
#define DCPI_CORE_PTSTEP_H

#include <sys/types.h>
#include "core/capture/stepring.h"

typedef struct dcpi_ptstep dcpi_ptstep_t;

/* Attach to all threads of pid. 0, DCPI_ESRCH (no such process), DCPI_EPERM (ptrace refused,
 * e.g. yama ptrace_scope or another tracer), DCPI_ENOMEM; err: "ptstep: reason". */
int dcpi_ptstep_attach(pid_t pid, dcpi_ptstep_t **out, char *err);
/* Threads traced now (up to max tids written); returns the count. */
int dcpi_ptstep_threads(const dcpi_ptstep_t *pt, pid_t *tids, int max);
/* One burst of up to n (1..STEP_BURST_MAX) instructions of thread tid into recs[0..n).
 * Returns the number of records (0 is possible: the thread stood before a syscall, or was
 * group-stopped), with *end (may be NULL) = enum step_end; DCPI_ESRCH when the thread is not
 * traced (any more), DCPI_EINVAL. */
int dcpi_ptstep_burst(dcpi_ptstep_t *pt, pid_t tid, int n, step_record_t *recs, int *end,
                      char *err);
/* Handle pending stops without blocking (see above). Returns the number of threads traced; 0
 * once the process is gone. */
int dcpi_ptstep_poll(dcpi_ptstep_t *pt);
/* Counters: bursts, steps, signals re-injected. */
void dcpi_ptstep_counts(const dcpi_ptstep_t *pt, uint64_t *bursts, uint64_t *steps,
                        uint64_t *signals);
/* Detach from every thread (each keeps running; a pending signal is delivered) and free pt.
 * Returns 0 or the first error. NULL is fine. */
int dcpi_ptstep_detach(dcpi_ptstep_t *pt);

#endif
