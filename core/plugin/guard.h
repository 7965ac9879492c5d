/*
 * guard.h - calling a value-profiler plugin's vp_preface / vp_format inside the analysis tools'
 * own process (dcpilist's hotlists), so that a plugin that faults or hangs is reported instead
 * of taking the tool down.
 *
 * Between dcpi_guard_enter and dcpi_guard_leave, every dcpi_guard_call runs under handlers for
 * SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL (on an alternate stack, so a stack overflow is
 * caught) and a DCPI_GUARD_TIMEOUT_MS timer (ITIMER_REAL, SIGALRM), and its answer is copied (at
 * most len - 1 bytes, control characters as '?') under the same guard, so a pointer to memory
 * that cannot be read is caught. A fault gives DCPI_EPLUGIN and one line in err:
 * "WHO: vp_format crashed (SIGSEGV)", "WHO: vp_preface did not return within 2 s",
 * "WHO: vp_format returned an invalid pointer". The plugin's state is unknown afterwards:
 * callers stop using it. A plugin that calls exit() or blocks SIGALRM is not caught.
 *
 * The guard is process-wide (not thread-safe, not nested) and dcpi_guard_leave restores the
 * previous handlers, alternate stack and timer. A fault outside a call (the caller's own) is
 * raised again with the default action; a late alarm is dropped.
 */
#ifndef DCPI_CORE_PLUGIN_GUARD_H
#define DCPI_CORE_PLUGIN_GUARD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "dcpi/insn.h"
#include "dcpi/vprofiler.h"

/* Longest time one plugin call may take, and the longest answer worth keeping (with its NUL). */
#define DCPI_GUARD_TIMEOUT_MS 2000
#define DCPI_GUARD_TEXT_MAX   256

/* The signals caught: SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM. */
#define DCPI_GUARD_NSIGS 6

/* What dcpi_guard_enter replaced, put back by dcpi_guard_leave. */
typedef struct dcpi_guard {
    struct sigaction old[DCPI_GUARD_NSIGS];
    stack_t old_stack;
    int stack_set;
} dcpi_guard_t;

/* The plugin entry a dcpi_guard_call calls. */
enum dcpi_guard_entry { DCPI_GUARD_PREFACE, DCPI_GUARD_FORMAT };

/* Install the handlers and the alternate stack (saving the previous ones in g). */
void dcpi_guard_enter(dcpi_guard_t *g);
/* Stop the timer and restore what dcpi_guard_enter replaced. */
void dcpi_guard_leave(dcpi_guard_t *g);

/*
 * Inside the guard: call d->vp_preface(inst) (entry DCPI_GUARD_PREFACE; v unused) or
 * d->vp_format(inst, v) (DCPI_GUARD_FORMAT) - with a context ctx (not NULL) and the plugin's
 * ABI-2 entry present, d->vp_preface2(ctx, inst) / d->vp_format2(ctx, inst, v) instead - which
 * must be non-NULL, and copy its answer into out (len >= 1 bytes). Returns 1 (an answer), 0
 * (the plugin returned NULL; out is "") or DCPI_EPLUGIN with "WHO: reason" in err (DCPI_ERRLEN,
 * may be NULL), who naming the plugin.
 */
int dcpi_guard_call(const vp_dispatch_t *d, int entry, const trace_inst_t *inst,
                    const vp_context_t *ctx, uint64_t v, char *out, size_t len, const char *who,
                    char *err);
/* Whether d has the entry dcpi_guard_call would call for this entry (with a context or not). */
int dcpi_guard_has(const vp_dispatch_t *d, int entry, const vp_context_t *ctx);

#endif
