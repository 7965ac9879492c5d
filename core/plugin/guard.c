/*
 * guard.c - guarded calls of a plugin's vp_preface / vp_format: fault and alarm handlers on an
 * alternate stack, a sigsetjmp around each call, and the answer copied under the guard (see
 * guard.h).
 */
#include "core/plugin/guard.h"

#include <setjmp.h>
#include <string.h>
#include <sys/time.h>

#include "core/base/err.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

static const int guard_sigs[DCPI_GUARD_NSIGS] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM};
#define GUARD_STACK_LEN 65536

static sigjmp_buf guard_jmp;
static volatile sig_atomic_t guard_armed; /* 1 while a plugin call runs */
static volatile sig_atomic_t guard_sig;   /* the signal that ended it */
static char guard_stack[GUARD_STACK_LEN]; /* handlers run here: a stack overflow is caught */

static void guard_handler(int sig)
{
    if (!guard_armed) { /* not the plugin's: a late alarm is dropped, a fault is ours */
        if (sig == SIGALRM)
            return;
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    guard_armed = 0;
    guard_sig = sig;
    siglongjmp(guard_jmp, 1);
}

static void guard_timer(unsigned ms)
{
    struct itimerval it = {.it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

void dcpi_guard_enter(dcpi_guard_t *g)
{
    stack_t st = {.ss_sp = guard_stack, .ss_size = sizeof(guard_stack)};
    g->stack_set = sigaltstack(&st, &g->old_stack) == 0;
    struct sigaction sa = {.sa_handler = guard_handler, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < DCPI_GUARD_NSIGS; i++)
        sigaddset(&sa.sa_mask, guard_sigs[i]);
    for (size_t i = 0; i < DCPI_GUARD_NSIGS; i++)
        sigaction(guard_sigs[i], &sa, &g->old[i]);
}

void dcpi_guard_leave(dcpi_guard_t *g)
{
    guard_armed = 0;
    guard_timer(0);
    for (size_t i = DCPI_GUARD_NSIGS; i-- > 0;)
        sigaction(guard_sigs[i], &g->old[i], NULL);
    if (g->stack_set)
        sigaltstack(&g->old_stack, NULL);
}

/* One plugin call: what to call, where its answer goes, and how far it got. */
typedef struct pcall {
    const vp_dispatch_t *d;
    int which; /* DCPI_GUARD_PREFACE or DCPI_GUARD_FORMAT */
    const trace_inst_t *inst;
    const vp_context_t *ctx; /* NULL: the ABI-1 entries */
    uint64_t v;
    char *out;
    size_t len;
    volatile int reading; /* 1 once the plugin returned: a fault now is its pointer's */
} pcall_t;

/* Put the reason of the fault in err; returns DCPI_EPLUGIN. */
static int guard_report(const char *who, int which, int reading, char *err)
{
    const char *entry = which == DCPI_GUARD_PREFACE ? "vp_preface" : "vp_format";
    /* (vp_preface2 / vp_format2 are reported under the same names: one hook each) */
    if (guard_sig == SIGALRM)
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: %s did not return within %u s", who, entry,
                          DCPI_GUARD_TIMEOUT_MS / 1000);
    if (reading)
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: %s returned an invalid pointer", who, entry);
    return dcpi__errf(err, DCPI_EPLUGIN, "%s: %s crashed (SIG%s)", who, entry,
                      sigabbrev_np(guard_sig) ? sigabbrev_np(guard_sig) : "?");
}

/* Call the plugin and copy its answer (control characters as '?'). 1: answer, 0: NULL. */
static int call_and_copy(pcall_t *pc)
{
    const vp_dispatch_t *d = pc->d;
    const char *s;
    if (pc->which == DCPI_GUARD_PREFACE)
        s = pc->ctx && d->vp_preface2 ? d->vp_preface2(pc->ctx, pc->inst) : d->vp_preface(pc->inst);
    else
        s = pc->ctx && d->vp_format2 ? d->vp_format2(pc->ctx, pc->inst, pc->v)
                                     : d->vp_format(pc->inst, pc->v);
    pc->reading = 1;
    size_t n = 0;
    for (; s && n + 1 < pc->len && s[n]; n++)
        pc->out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    pc->out[n] = '\0';
    return s != NULL;
}

/* One plugin call with the guard entered. Returns 1 (answer), 0 (NULL answer) or DCPI_EPLUGIN
 * (fault, err set). */
static int guarded_call(pcall_t *pc, const char *who, char *err)
{
    if (sigsetjmp(guard_jmp, 1)) {
        guard_timer(0);
        return guard_report(who, pc->which, pc->reading, err);
    }
    guard_armed = 1;
    guard_timer(DCPI_GUARD_TIMEOUT_MS);
    int rc = call_and_copy(pc);
    guard_armed = 0;
    guard_timer(0);
    return rc;
}

int dcpi_guard_call(const vp_dispatch_t *d, int entry, const trace_inst_t *inst,
                    const vp_context_t *ctx, uint64_t v, char *out, size_t len, const char *who,
                    char *err)
{
    pcall_t pc = {.d = d, .which = entry, .inst = inst, .ctx = ctx, .v = v, .out = out, .len = len};
    return guarded_call(&pc, who, err);
}

int dcpi_guard_has(const vp_dispatch_t *d, int entry, const vp_context_t *ctx)
{
    if (!d)
        return 0;
    if (entry == DCPI_GUARD_PREFACE)
        return (ctx && d->vp_preface2) || d->vp_preface;
    return (ctx && d->vp_format2) || d->vp_format;
}
