/*
 * listing.c - dcpilist's model of one procedure (instructions, per-event counts, source lines,
 * value hotlists) and its three printers: annotated disassembly, source, and both interleaved.
 */
#include "core/analysis/listing.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "dcpi/api.h"
#include "dcpi/errno.h"

#define ADDR_MIN_WIDTH 8
#define INSN_MIN_WIDTH 36
#define HOTLIST_LEN    1024

int dcpi_listing_new(const char *proc, uint64_t lo, uint64_t hi, const char *const *events,
                     size_t nevents, size_t nvp, dcpi_listing_t **out)
{
    *out = NULL;
    if (hi < lo)
        return DCPI_EINVAL;
    dcpi_listing_t *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return DCPI_ENOMEM;
    *ls = (dcpi_listing_t){
        .proc = proc, .lo = lo, .hi = hi, .events = events, .nevents = nevents, .nvp = nvp};
    ls->proc_total = calloc(nevents + 1, sizeof(uint64_t));
    ls->image_total = calloc(nevents + 1, sizeof(uint64_t));
    ls->vp = calloc(nvp + 1, sizeof(*ls->vp));
    if (!ls->proc_total || !ls->image_total || !ls->vp) {
        dcpi_listing_free(ls);
        return DCPI_ENOMEM;
    }
    *out = ls;
    return 0;
}

void dcpi_listing_free(dcpi_listing_t *ls)
{
    if (!ls)
        return;
    for (size_t i = 0; i < ls->n; i++) {
        for (size_t v = 0; ls->insns[i].vtext && v < ls->nvp; v++)
            free(ls->insns[i].vtext[v]);
        free(ls->insns[i].vtext);
        free(ls->insns[i].counts);
        free(ls->insns[i].vs);
    }
    free(ls->insns);
    free(ls->vp);
    free(ls->image_total);
    free(ls->proc_total);
    free(ls);
}

/* ---- decoding ---- */

static dcpi_lst_insn_t *insn_append(dcpi_listing_t *ls, size_t *cap)
{
    if (ls->n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        dcpi_lst_insn_t *v = realloc(ls->insns, ncap * sizeof(*v));
        if (!v)
            return NULL;
        ls->insns = v;
        *cap = ncap;
    }
    dcpi_lst_insn_t *in = &ls->insns[ls->n];
    *in = (dcpi_lst_insn_t){0};
    in->counts = calloc(ls->nevents + 1, sizeof(uint64_t));
    in->vs = calloc(ls->nvp + 1, sizeof(*in->vs));
    if (!in->counts || !in->vs) {
        free(in->counts);
        free(in->vs);
        return NULL;
    }
    ls->n++;
    return in;
}

/* The target of a relative jmp/jcc/loop at addr, or 0 when it is not one. */
static uint64_t branch_target(const ZydisDecoder *dec, const uint8_t *p, size_t len, uint64_t addr)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(dec, p, len, &in, ops)))
        return 0;
    if (in.meta.category != ZYDIS_CATEGORY_COND_BR && in.meta.category != ZYDIS_CATEGORY_UNCOND_BR)
        return 0;
    ZyanU64 target = 0;
    for (unsigned i = 0; i < in.operand_count_visible; i++) {
        if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative &&
            ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[i], addr, &target)))
            return target;
    }
    return 0;
}

static void mark_targets(dcpi_listing_t *ls, const uint64_t *targets, size_t nt)
{
    for (size_t i = 0; i < nt; i++) {
        dcpi_lst_insn_t *in = dcpi_listing_find(ls, targets[i]);
        if (in && in->addr == targets[i])
            in->is_target = 1;
    }
}

/* Decode one instruction at p (or one "(bad)" byte); returns its length. */
static size_t decode_one(dcpi_lst_insn_t *in, const uint8_t *p, size_t left, uint64_t addr)
{
    int n = trace_inst_decode(p, left > 15 ? 15 : (int)left, &in->inst);
    in->addr = addr;
    if (n <= 0 || trace_inst_format(&in->inst, addr, in->text, sizeof(in->text)) < 0) {
        in->bad = 1;
        snprintf(in->text, sizeof(in->text), "(bad) 0x%02x", p[0]);
        return 1;
    }
    return (size_t)n;
}

int dcpi_listing_decode_bytes(dcpi_listing_t *ls, const uint8_t *bytes, size_t len)
{
    ZydisDecoder dec;
    if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
        return DCPI_EINVAL;
    uint64_t *targets = malloc((len + 1) * sizeof(*targets));
    if (!targets)
        return DCPI_ENOMEM;
    size_t cap = ls->n, nt = 0, off = 0;
    int rc = 0;
    while (off < len) {
        dcpi_lst_insn_t *in = insn_append(ls, &cap);
        if (!in) {
            rc = DCPI_ENOMEM;
            break;
        }
        size_t n = decode_one(in, bytes + off, len - off, ls->lo + off);
        uint64_t t = in->bad ? 0 : branch_target(&dec, bytes + off, n, in->addr);
        if (t >= ls->lo && t < ls->hi)
            targets[nt++] = t;
        off += n;
    }
    if (rc == 0)
        mark_targets(ls, targets, nt);
    free(targets);
    return rc;
}

static int read_range(const char *path, const dcpi_image_info_t *info, uint64_t lo, size_t len,
                      uint8_t *buf, char *err)
{
    uint64_t off = 0;
    uint64_t last = 0;
    if (dcpi_image_vaddr_to_file(info, lo + len - 1, &last) < 0 ||
        dcpi_image_vaddr_to_file(info, lo, &off) < 0 || last - off != len - 1) {
        if (err)
            snprintf(err, DCPI_ERRLEN, "%s: 0x%" PRIx64 "..0x%" PRIx64 " is not in the file", path,
                     lo, lo + len);
        return DCPI_ERANGE;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out_errno;
    ssize_t got = pread(fd, buf, len, (off_t)off);
    int saved = errno;
    close(fd);
    errno = saved;
    if (got < 0)
        goto out_errno;
    if ((size_t)got != len) {
        if (err)
            snprintf(err, DCPI_ERRLEN, "%s: file ends inside 0x%" PRIx64 "..0x%" PRIx64, path, lo,
                     lo + len);
        return DCPI_ETRUNC;
    }
    return 0;
out_errno:
    if (err)
        snprintf(err, DCPI_ERRLEN, "%s: %s", path, strerror(errno));
    return -errno;
}

int dcpi_listing_decode(dcpi_listing_t *ls, const char *path, const dcpi_image_info_t *info,
                        char *err)
{
    size_t len = (size_t)(ls->hi - ls->lo);
    if (len == 0)
        return 0;
    uint8_t *buf = malloc(len);
    if (!buf)
        return DCPI_ENOMEM;
    int rc = read_range(path, info, ls->lo, len, buf, err);
    if (rc == 0)
        rc = dcpi_listing_decode_bytes(ls, buf, len);
    free(buf);
    return rc;
}

/* ---- data ---- */

dcpi_lst_insn_t *dcpi_listing_find(dcpi_listing_t *ls, uint64_t vaddr)
{
    size_t a = 0, b = ls->n;
    while (a < b) { /* first instruction starting after vaddr */
        size_t m = a + (b - a) / 2;
        if (ls->insns[m].addr <= vaddr)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0)
        return NULL;
    dcpi_lst_insn_t *in = &ls->insns[a - 1];
    uint64_t len = in->bad ? 1 : in->inst.length;
    return vaddr < in->addr + len ? in : NULL;
}

int dcpi_listing_add_samples(dcpi_listing_t *ls, size_t e, uint64_t vaddr, uint64_t count)
{
    dcpi_lst_insn_t *in = e < ls->nevents ? dcpi_listing_find(ls, vaddr) : NULL;
    if (!in) {
        ls->outside += count;
        return DCPI_ENOENT;
    }
    in->counts[e] += count;
    ls->proc_total[e] += count;
    return 0;
}

void dcpi_listing_add_image_total(dcpi_listing_t *ls, size_t e, uint64_t count)
{
    if (e < ls->nevents)
        ls->image_total[e] += count;
}

size_t dcpi_listing_set_lines(dcpi_listing_t *ls, const dcpi_srclines_t *sl)
{
    size_t found = 0;
    for (size_t i = 0; i < ls->n; i++) {
        dcpi_lst_insn_t *in = &ls->insns[i];
        found += dcpi_srclines_lookup(sl, in->addr, &in->file, &in->line) == 0;
    }
    return found;
}

int dcpi_listing_set_values(dcpi_listing_t *ls, size_t v, uint64_t vaddr, const dcpi_vsummary_t *s)
{
    dcpi_lst_insn_t *in = v < ls->nvp ? dcpi_listing_find(ls, vaddr) : NULL;
    if (!in || in->addr != vaddr)
        return DCPI_ENOENT;
    in->vs[v] = s;
    if (s && s->err > ls->vp[v].max_err)
        ls->vp[v].max_err = s->err;
    return 0;
}

/* ---- hotlist text ---- */

typedef struct sbuf {
    char *p;
    size_t len, used;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) DCPI_PRINTF(2, 3);
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->used < b->len ? b->len - b->used : 0;
    int n = vsnprintf(room ? b->p + b->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->used += (size_t)n;
}

/* ---- guarded plugin calls ---- */

static const int guard_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM};
#define NGUARD          (sizeof(guard_sigs) / sizeof(guard_sigs[0]))
#define GUARD_STACK_LEN 65536

static sigjmp_buf guard_jmp;
static volatile sig_atomic_t guard_armed; /* 1 while a plugin call runs */
static volatile sig_atomic_t guard_sig;   /* the signal that ended it */
static char guard_stack[GUARD_STACK_LEN]; /* handlers run here: a stack overflow is caught */

/* What guard_enter replaced, put back by guard_leave. */
typedef struct guard {
    struct sigaction old[NGUARD];
    stack_t old_stack;
    int stack_set;
} guard_t;

enum { CALL_PREFACE, CALL_FORMAT };

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

static void guard_enter(guard_t *g)
{
    stack_t st = {.ss_sp = guard_stack, .ss_size = sizeof(guard_stack)};
    g->stack_set = sigaltstack(&st, &g->old_stack) == 0;
    struct sigaction sa = {.sa_handler = guard_handler, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NGUARD; i++)
        sigaddset(&sa.sa_mask, guard_sigs[i]);
    for (size_t i = 0; i < NGUARD; i++)
        sigaction(guard_sigs[i], &sa, &g->old[i]);
}

static void guard_leave(guard_t *g)
{
    guard_armed = 0;
    guard_timer(0);
    for (size_t i = NGUARD; i-- > 0;)
        sigaction(guard_sigs[i], &g->old[i], NULL);
    if (g->stack_set)
        sigaltstack(&g->old_stack, NULL);
}

static void guard_report(const dcpi_lst_vp_t *vp, int which, int reading, char *err)
{
    if (!err)
        return;
    const char *who = vp->plugin ? vp->plugin : vp->name ? vp->name : "plugin";
    const char *entry = which == CALL_PREFACE ? "vp_preface" : "vp_format";
    if (guard_sig == SIGALRM)
        snprintf(err, DCPI_ERRLEN, "%s: %s did not return within %u s", who, entry,
                 DCPI_LST_PLUGIN_TIMEOUT_MS / 1000);
    else if (reading)
        snprintf(err, DCPI_ERRLEN, "%s: %s returned an invalid pointer", who, entry);
    else
        snprintf(err, DCPI_ERRLEN, "%s: %s crashed (SIG%s)", who, entry,
                 sigabbrev_np(guard_sig) ? sigabbrev_np(guard_sig) : "?");
}

/* One plugin call: what to call, where its answer goes, and how far it got. */
typedef struct pcall {
    const dcpi_lst_vp_t *vp;
    int which; /* CALL_PREFACE or CALL_FORMAT */
    const trace_inst_t *inst;
    uint64_t v;
    char *out;
    size_t len;
    volatile int reading; /* 1 once the plugin returned: a fault now is its pointer's */
} pcall_t;

/* Call the plugin and copy its answer (control characters as '?'). 1: answer, 0: NULL. */
static int call_and_copy(pcall_t *pc)
{
    const vp_dispatch_t *d = pc->vp->d;
    const char *s =
        pc->which == CALL_PREFACE ? d->vp_preface(pc->inst) : d->vp_format(pc->inst, pc->v);
    pc->reading = 1;
    size_t n = 0;
    for (; s && n + 1 < pc->len && s[n]; n++)
        pc->out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    pc->out[n] = '\0';
    return s != NULL;
}

/* One plugin call with the guard entered. Returns 1 (answer), 0 (NULL answer) or DCPI_EPLUGIN
 * (fault, err set). */
static int guarded_call(pcall_t *pc, char *err)
{
    if (sigsetjmp(guard_jmp, 1)) {
        guard_timer(0);
        guard_report(pc->vp, pc->which, pc->reading, err);
        return DCPI_EPLUGIN;
    }
    guard_armed = 1;
    guard_timer(DCPI_LST_PLUGIN_TIMEOUT_MS);
    int rc = call_and_copy(pc);
    guard_armed = 0;
    guard_timer(0);
    return rc;
}

/* The text of value v: the plugin's vp_format, else (none, or NULL answer) "0x..." in hex. */
static int format_value(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, uint64_t v, char *out,
                        size_t len, char *err)
{
    int rc = 0;
    if (vp->d && vp->d->vp_format)
        rc = guarded_call(
            &(pcall_t){
                .vp = vp, .which = CALL_FORMAT, .inst = inst, .v = v, .out = out, .len = len},
            err);
    if (rc == 0)
        snprintf(out, len, "0x%llx", (unsigned long long)v);
    return rc < 0 ? rc : 0;
}

/* The preface into out: 1 with one (possibly ""), 0 when the plugin omits the hotlist. */
static int get_preface(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, char *out, size_t len,
                       char *err)
{
    out[0] = '\0';
    if (!vp->d || !vp->d->vp_preface)
        return 1;
    return guarded_call(
        &(pcall_t){.vp = vp, .which = CALL_PREFACE, .inst = inst, .out = out, .len = len}, err);
}

static int cmp_entry(const void *a, const void *b)
{
    const dcpi_ventry_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->context0 != y->context0)
        return x->context0 < y->context0 ? -1 : 1;
    return x->context1 < y->context1 ? -1 : x->context1 > y->context1;
}

/* The pairs of the hotlist after the preface. 0 or DCPI_EPLUGIN. */
static int format_pairs(sbuf_t *b, const dcpi_ventry_t *e, const dcpi_vsummary_t *s,
                        const trace_inst_t *inst, const dcpi_lst_vp_t *vp,
                        const dcpi_lst_vopts_t *o, char *err)
{
    int dots = 0;
    for (size_t i = 0; i < s->n && i < o->show; i++) {
        double pct = 100.0 * (double)e[i].count / (double)s->vtot;
        if (pct < o->cutoff) {
            sb_printf(b, "%s.", dots++ || !b->used ? "" : " ");
            continue;
        }
        char v[DCPI_LST_PLUGIN_TEXT_MAX];
        int rc = format_value(inst, vp, e[i].value, v, sizeof(v), err);
        if (rc < 0)
            return rc;
        sb_printf(b, "%s(%.1f%% %s", b->used ? " " : "", pct, v);
        if (e[i].context0 || e[i].context1)
            sb_printf(b, " @0x%llx,0x%llx", (unsigned long long)e[i].context0,
                      (unsigned long long)e[i].context1);
        sb_printf(b, ")");
    }
    return 0;
}

/* dcpi_listing_hotlist with the guard entered. */
static int hotlist_text(const dcpi_vsummary_t *s, const trace_inst_t *inst, const dcpi_lst_vp_t *vp,
                        const dcpi_lst_vopts_t *o, char *buf, size_t len, char *err)
{
    sbuf_t b = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    if (!s || s->n == 0 || s->vtot == 0)
        return 0;
    char preface[DCPI_LST_PLUGIN_TEXT_MAX];
    int rc = get_preface(inst, vp, preface, sizeof(preface), err);
    if (rc <= 0)
        return rc; /* a fault, or the plugin omits this instruction's hotlist */
    dcpi_ventry_t *e = malloc(s->n * sizeof(*e));
    if (!e)
        return 0;
    memcpy(e, s->e, s->n * sizeof(*e));
    qsort(e, s->n, sizeof(*e), cmp_entry);
    sb_printf(&b, "%s", preface);
    rc = format_pairs(&b, e, s, inst, vp, o, err);
    free(e);
    if (rc < 0 && len)
        buf[0] = '\0';
    return rc < 0 ? rc : (int)(b.used < INT32_MAX ? b.used : INT32_MAX);
}

int dcpi_listing_hotlist(const dcpi_vsummary_t *s, const trace_inst_t *inst,
                         const dcpi_lst_vp_t *vp, const dcpi_lst_vopts_t *o, char *buf, size_t len,
                         char *err)
{
    guard_t g;
    guard_enter(&g);
    int rc = hotlist_text(s, inst, vp, o, buf, len, err);
    guard_leave(&g);
    return rc;
}

size_t dcpi_listing_format_hotlist(const dcpi_vsummary_t *s, const trace_inst_t *inst,
                                   const vp_dispatch_t *d, const dcpi_lst_vopts_t *o, char *buf,
                                   size_t len)
{
    dcpi_lst_vp_t vp = {.name = "plugin", .d = d};
    int rc = dcpi_listing_hotlist(s, inst, &vp, o, buf, len, NULL);
    return rc > 0 ? (size_t)rc : 0;
}

/* The texts of one instruction (its vtext array made here). */
static int prepare_insn(dcpi_listing_t *ls, dcpi_lst_insn_t *in, const dcpi_lst_vopts_t *vo,
                        char *err)
{
    if (in->bad)
        return 0;
    if (!in->vtext && !(in->vtext = calloc(ls->nvp + 1, sizeof(*in->vtext))))
        return DCPI_ENOMEM;
    for (size_t v = 0; v < ls->nvp; v++) {
        char text[HOTLIST_LEN];
        if (!in->vs[v] || in->vtext[v])
            continue;
        int rc = hotlist_text(in->vs[v], &in->inst, &ls->vp[v], vo, text, sizeof(text), err);
        if (rc < 0)
            return rc;
        if (!(in->vtext[v] = strdup(text)))
            return DCPI_ENOMEM;
    }
    return 0;
}

int dcpi_listing_prepare_values(dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, char *err)
{
    guard_t g;
    guard_enter(&g);
    int rc = 0;
    for (size_t i = 0; i < ls->n && rc == 0; i++)
        rc = prepare_insn(ls, &ls->insns[i], vo, err);
    guard_leave(&g);
    if (rc == DCPI_ENOMEM && err)
        snprintf(err, DCPI_ERRLEN, "%s: %s", ls->proc ? ls->proc : "listing", dcpi_strerror(rc));
    return rc;
}

/* ---- printing ---- */

typedef struct widths {
    int *count; /* [nevents] */
    int addr, insn;
} widths_t;

static int count_width(const dcpi_listing_t *ls, size_t e)
{
    int w = (int)strlen(ls->events[e]);
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, ls->proc_total[e]);
    return n > w ? n : w;
}

static int widths_init(const dcpi_listing_t *ls, widths_t *w)
{
    w->count = calloc(ls->nevents + 1, sizeof(int));
    if (!w->count)
        return DCPI_ENOMEM;
    for (size_t e = 0; e < ls->nevents; e++)
        w->count[e] = count_width(ls, e);
    w->addr = ADDR_MIN_WIDTH;
    w->insn = INSN_MIN_WIDTH;
    for (size_t i = 0; i < ls->n; i++) {
        char tmp[32];
        int n = snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ls->insns[i].addr);
        int t = (int)strlen(ls->insns[i].text) + 2 * ls->insns[i].is_target;
        w->addr = n > w->addr ? n : w->addr;
        w->insn = t > w->insn ? t : w->insn;
    }
    return 0;
}

static void print_counts(const dcpi_listing_t *ls, const widths_t *w, const uint64_t *c, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++) {
        if (c)
            fprintf(f, "%*" PRIu64 "  ", w->count[e], c[e]);
        else
            fprintf(f, "%*s  ", w->count[e], "");
    }
}

static void print_count_header(const dcpi_listing_t *ls, const widths_t *w, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++)
        fprintf(f, "%*s  ", w->count[e], ls->events[e]);
}

static void print_values(const dcpi_listing_t *ls, const dcpi_lst_insn_t *in, size_t v,
                         const dcpi_lst_vopts_t *vo, FILE *f)
{
    const dcpi_vsummary_t *s = in->vs[v];
    if (!s)
        return; /* no value columns: nothing to show (and no trailing blanks) */
    double thld = s->vtot ? (double)s->seen / (double)s->vtot : 0.0;
    fprintf(f, " %6" PRIu64 " %6.1f %3u", s->vtot, thld, s->n);
    if (in->bad)
        return;
    if (in->vtext && in->vtext[v]) { /* made by dcpi_listing_prepare_values */
        if (in->vtext[v][0])
            fprintf(f, "  %s", in->vtext[v]);
        return;
    }
    char text[HOTLIST_LEN];
    if (dcpi_listing_hotlist(s, &in->inst, &ls->vp[v], vo, text, sizeof(text), NULL) > 0)
        fprintf(f, "  %s", text);
}

static void print_insn(const dcpi_listing_t *ls, const widths_t *w, const dcpi_lst_insn_t *in,
                       const dcpi_lst_vopts_t *vo, FILE *f)
{
    char addr[32], text[sizeof(in->text) + 2];
    snprintf(addr, sizeof(addr), "0x%" PRIx64, in->addr);
    snprintf(text, sizeof(text), "%s%s", in->is_target ? ": " : "", in->text);
    print_counts(ls, w, in->counts, f);
    if (!vo || ls->nvp == 0) {
        fprintf(f, "%-*s  %s\n", w->addr, addr, text);
        return;
    }
    if (in->vs[0])
        fprintf(f, "%-*s  %-*s", w->addr, addr, w->insn, text);
    else
        fprintf(f, "%-*s  %s", w->addr, addr, text);
    print_values(ls, in, 0, vo, f);
    fputc('\n', f);
    for (size_t v = 1; v < ls->nvp; v++) { /* further profiles: continuation lines */
        if (!in->vs[v])
            continue;
        print_counts(ls, w, NULL, f);
        fprintf(f, "%-*s  %-*s", w->addr, "", w->insn, ls->vp[v].name);
        print_values(ls, in, v, vo, f);
        fputc('\n', f);
    }
}

static void print_asm_header(const dcpi_listing_t *ls, const widths_t *w, int values, FILE *f)
{
    print_count_header(ls, w, f);
    if (!values) {
        fprintf(f, "%-*s  %s\n", w->addr, "address", "instruction");
        return;
    }
    fprintf(f, "%-*s  %-*s %6s %6s %3s", w->addr, "address", w->insn, "instruction", "vtot", "thld",
            "nv");
    if (ls->nvp > 1)
        fprintf(f, "  (%s)", ls->vp[0].name);
    fputc('\n', f);
}

void dcpi_listing_print_totals(const dcpi_listing_t *ls, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++) {
        double pct = ls->image_total[e]
                         ? 100.0 * (double)ls->proc_total[e] / (double)ls->image_total[e]
                         : 0.0;
        fprintf(f, "total  %" PRIu64 " samples (%.2f%% of the image's %s)\n", ls->proc_total[e],
                pct, ls->events[e]);
    }
}

static void print_vp_footers(const dcpi_listing_t *ls, FILE *f)
{
    for (size_t v = 0; v < ls->nvp; v++)
        fprintf(f,
                "%s: hotlists hold at most %u values per instruction; each count may exceed the "
                "truth by at most err (largest err in this procedure: %" PRIu64 ")\n",
                ls->vp[v].name, ls->vp[v].hotsize, ls->vp[v].max_err);
}

void dcpi_listing_print_asm(const dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, FILE *f)
{
    widths_t w;
    if (widths_init(ls, &w) < 0)
        return;
    int values = vo && ls->nvp > 0;
    print_asm_header(ls, &w, values, f);
    for (size_t i = 0; i < ls->n; i++)
        print_insn(ls, &w, &ls->insns[i], values ? vo : NULL, f);
    dcpi_listing_print_totals(ls, f);
    if (values)
        print_vp_footers(ls, f);
    free(w.count);
}

/* ---- source view ---- */

/* One source line of the procedure: its counts and the instructions on it. */
typedef struct srow {
    const char *file;
    int file_rank; /* order of the file's first appearance in address order */
    int line;
    size_t first; /* index of its first instruction (address order within a line) */
} srow_t;

static int cmp_srow(const void *a, const void *b)
{
    const srow_t *x = a, *y = b;
    if (x->file_rank != y->file_rank)
        return x->file_rank - y->file_rank;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* One row per instruction with a position, sorted by (file rank, line, address). */
static srow_t *source_rows(const dcpi_listing_t *ls, size_t *nrows)
{
    srow_t *r = malloc((ls->n + 1) * sizeof(*r));
    const char **files = malloc((ls->n + 1) * sizeof(*files));
    size_t n = 0, nfiles = 0;
    if (!r || !files) {
        free(r);
        free(files);
        return NULL;
    }
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (!in->file)
            continue;
        size_t k = 0;
        while (k < nfiles && strcmp(files[k], in->file) != 0)
            k++;
        if (k == nfiles)
            files[nfiles++] = in->file;
        r[n++] = (srow_t){in->file, (int)k, in->line, i};
    }
    free(files);
    qsort(r, n, sizeof(*r), cmp_srow);
    *nrows = n;
    return r;
}

int dcpi_listing_has_source(const dcpi_listing_t *ls)
{
    for (size_t i = 0; i < ls->n; i++) {
        if (ls->insns[i].file && access(ls->insns[i].file, R_OK) == 0)
            return 1;
    }
    return 0;
}

typedef struct srcview {
    const dcpi_listing_t *ls;
    widths_t w;
    int both;
    FILE *f;
    uint64_t *sum; /* [nevents] */
    dcpi_srctext_t text;
    int have_text;
} srcview_t;

static void print_source_line(srcview_t *sv, const char *file, int line, const uint64_t *counts)
{
    print_counts(sv->ls, &sv->w, counts, sv->f);
    const char *t = sv->have_text ? dcpi_srctext_line(&sv->text, line) : NULL;
    if (t)
        fprintf(sv->f, "%6d  %s\n", line, t);
    else
        fprintf(sv->f, "%6d  %s:%d\n", line, file, line);
}

/* Lines without code between two lines with code (-source with the text: shown blank). */
static void print_gap(srcview_t *sv, const char *file, int from, int to)
{
    if (sv->both || !sv->have_text) {
        if (to > from)
            fprintf(sv->f, "....\n");
        return;
    }
    for (int l = from; l < to; l++)
        print_source_line(sv, file, l, NULL);
}

/* The rows [a, b) share file and line: print the line, then (-both) its instructions. */
static void print_line_group(srcview_t *sv, const srow_t *r, size_t a, size_t b)
{
    memset(sv->sum, 0, sv->ls->nevents * sizeof(uint64_t));
    for (size_t k = a; k < b; k++) {
        for (size_t e = 0; e < sv->ls->nevents; e++)
            sv->sum[e] += sv->ls->insns[r[k].first].counts[e];
    }
    print_source_line(sv, r[a].file, r[a].line, sv->sum);
    for (size_t k = a; sv->both && k < b; k++)
        print_insn(sv->ls, &sv->w, &sv->ls->insns[r[k].first], NULL, sv->f);
}

static void print_file(srcview_t *sv, const srow_t *r, size_t a, size_t b)
{
    fprintf(sv->f, "%s:\n", r[a].file);
    sv->have_text = dcpi_srctext_read(r[a].file, &sv->text) == 0;
    int prev = 0;
    for (size_t k = a; k < b;) {
        size_t end = k + 1;
        while (end < b && r[end].line == r[k].line)
            end++;
        if (prev)
            print_gap(sv, r[k].file, prev + 1, r[k].line);
        print_line_group(sv, r, k, end);
        prev = r[k].line;
        k = end;
    }
    dcpi_srctext_free(&sv->text);
    sv->have_text = 0;
}

static void print_unplaced(srcview_t *sv)
{
    size_t n = 0;
    memset(sv->sum, 0, sv->ls->nevents * sizeof(uint64_t));
    for (size_t i = 0; i < sv->ls->n; i++) {
        if (sv->ls->insns[i].file)
            continue;
        n++;
        for (size_t e = 0; e < sv->ls->nevents; e++)
            sv->sum[e] += sv->ls->insns[i].counts[e];
    }
    if (n == 0)
        return;
    print_counts(sv->ls, &sv->w, sv->sum, sv->f);
    fprintf(sv->f, "%6s  (%zu instructions without line information)\n", "?", n);
    for (size_t i = 0; sv->both && i < sv->ls->n; i++) {
        if (!sv->ls->insns[i].file)
            print_insn(sv->ls, &sv->w, &sv->ls->insns[i], NULL, sv->f);
    }
}

void dcpi_listing_print_source(const dcpi_listing_t *ls, int both, FILE *f)
{
    srcview_t sv = {.ls = ls, .both = both, .f = f};
    size_t n = 0;
    srow_t *r = NULL;
    if (widths_init(ls, &sv.w) < 0)
        return;
    sv.sum = calloc(ls->nevents + 1, sizeof(uint64_t));
    if (!sv.sum || !(r = source_rows(ls, &n)))
        goto out;
    print_count_header(ls, &sv.w, f);
    fprintf(f, "%6s  %s\n", "line", both ? "source / address  instruction" : "source");
    for (size_t k = 0; k < n;) {
        size_t end = k + 1;
        while (end < n && r[end].file_rank == r[k].file_rank)
            end++;
        print_file(&sv, r, k, end);
        k = end;
    }
    print_unplaced(&sv);
    dcpi_listing_print_totals(ls, f);
out:
    free(r);
    free(sv.sum);
    free(sv.w.count);
}
