/*
 * declare.c - declarative value profilers (see declare.h): the specification's parser, and the
 * plugin entries as libffi closures (ffi_closure_alloc + ffi_prep_closure_loc) whose user data
 * is the parsed specification, so one set of handlers serves every declarative plugin.
 */
#include "core/plugin/declare.h"

#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/err.h"
#include "dcpi/errno.h"
#include "dcpi/resolve.h"

#define MAXSEL   16
#define RELATIVE (1ull << 63) /* reduce=relative: an image-relative ELF address */

enum { R_VALUE, R_RELATIVE, R_BITS, R_DIFF };
enum { F_HEX, F_DEC, F_SIGNED, F_SYMBOL, F_FLOAT };
enum { E_NAME, E_INIT, E_DONE, E_PROCESS, E_PREFACE, E_FORMAT2, E_SELECT, E_FILTER, E_COUNT };

struct dcpi_decl {
    char name[256], preface[64];
    char sel[MAXSEL][32];
    int nsel, by_class, memform; /* memform -1: any */
    int operand;                 /* the first operand's trace_operand_kind_t, 0: any */
    int conditional;             /* -1 any, 0 not, 1 conditional only */
    char symbol[128];            /* "" anywhere */
    unsigned long long lo, hi;   /* range=LO-HI (ELF addresses), lo == hi anywhere */
    trace_value_t kinds[2];
    int nkinds, reduce, format;
    int show_missing; /* missing=show: a vp_missing() vsample instead of nothing */
    unsigned bit_lo, bit_n;
    trace_vlist_table_t *spec;
    vsample_t *out;
    char text[128];
    vp_dispatch_t table;
    ffi_closure *cl[E_COUNT];
    void *code[E_COUNT];
    ffi_cif cif[E_COUNT];
    ffi_type *args[E_COUNT][3];
};

/* ---------------------------------------------------------------- the entries */

static int selected(const dcpi_decl_t *d, const trace_opc_info_t *info)
{
    if (d->memform >= 0 && (int)info->memform != d->memform)
        return 0;
    for (int i = 0; i < d->nsel; i++) {
        const char *what = d->by_class ? trace_iclass_name(info->iclass) : info->mnemonic;
        if (strcasecmp(what, d->sel[i]) == 0)
            return 1;
    }
    return 0;
}

/* The instruction filter (operand=, conditional=). */
static int filtered(const dcpi_decl_t *d, const trace_inst_t *inst)
{
    trace_operand_t o[1];
    if (d->operand && (trace_inst_operands(inst, o, 1) < 1 || o[0].kind != d->operand))
        return 0;
    return d->conditional < 0 || trace_inst_is_conditional(inst) == d->conditional;
}

static uint64_t reduce(const dcpi_decl_t *d, unsigned pid, uint64_t pc, const uint64_t *v)
{
    dcpi_resolved_t at, to;
    switch (d->reduce) {
    case R_RELATIVE:
        if (dcpi_resolve(pid, pc, &at) == 0 && dcpi_resolve(pid, v[0], &to) == 0 &&
            strcmp(at.path, to.path) == 0)
            return to.vaddr | RELATIVE;
        return v[0] & ~RELATIVE;
    case R_BITS:
        return d->bit_n >= 64 ? v[0] >> d->bit_lo : (v[0] >> d->bit_lo) & ((1ull << d->bit_n) - 1);
    case R_DIFF:
        return v[0] - v[1];
    default:
        return v[0];
    }
}

static int process(dcpi_decl_t *d, unsigned pid, trace_parser_t *p, vsample_t **vsamples)
{
    int n = 0, k;
    uint64_t pc, c0, c1, v[2] = {0, 0};
    unsigned need = d->nkinds == 2 ? 3u : 1u;
    while (n < VSAMPLE_BUFFER_SIZE &&
           (k = trace_parser_next(p, NULL, &pc, &c0, &c1, 2, &v[0], &v[1])) >= 0) {
        if (k < d->nkinds || (trace_parser_missing(p) & need)) {
            if (d->show_missing)
                d->out[n++] = vp_missing(pc);
            continue;
        }
        d->out[n++] =
            (vsample_t){.pc = pc, .value = reduce(d, pid, pc, v), .context0 = c0, .context1 = c1};
    }
    *vsamples = d->out;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *format(dcpi_decl_t *d, const vp_context_t *ctx, uint64_t v)
{
    const char *sym = NULL;
    double f;
    switch (d->format) {
    case F_DEC:
        snprintf(d->text, sizeof d->text, "%llu", (unsigned long long)v);
        break;
    case F_SIGNED:
        snprintf(d->text, sizeof d->text, "%lld", (long long)v);
        break;
    case F_FLOAT:
        memcpy(&f, &v, sizeof f);
        snprintf(d->text, sizeof d->text, "%g", f);
        break;
    case F_SYMBOL:
        if ((v & RELATIVE) && ctx && ctx->size >= sizeof(vp_context_t) && ctx->symbolize)
            sym = ctx->symbolize(ctx, v & ~RELATIVE);
        if (sym)
            return sym;
        __attribute__((fallthrough)); /* not in the image, or no symbol: hex */
    default:
        snprintf(d->text, sizeof d->text, "0x%llx", (unsigned long long)(v & ~RELATIVE));
    }
    return d->text;
}

static trace_vlist_table_t *init(dcpi_decl_t *d)
{
    trace_vlist_t *v = trace_vlist_alloc();
    d->spec = trace_vlist_table_alloc();
    int ok = v && d->spec;
    for (int i = 0; ok && i < d->nkinds; i++)
        ok = trace_add_value_to_vlist(v, d->kinds[i]) >= 0;
    if (ok && d->symbol[0])
        ok = trace_vlist_table_set_symbol(d->spec, d->symbol) == 0;
    if (ok && d->hi > d->lo)
        ok = trace_vlist_table_set_range(d->spec, d->lo, d->hi) == 0;
    if (ok && (d->operand || d->conditional >= 0))
        ok = trace_vlist_table_set_filter(d->spec, (trace_inst_filter_fn)d->code[E_FILTER]) == 0;
    if (!ok || trace_add_vlist_by_select(d->spec, (trace_selector_fn)d->code[E_SELECT], v) < 0) {
        trace_vlist_table_free(d->spec);
        d->spec = NULL;
    }
    trace_vlist_free(v);
    return d->spec;
}

/* The one libffi handler: which entry is which by its cif. */
static void entry(ffi_cif *cif, void *ret, void **args, void *user)
{
    dcpi_decl_t *d = user;
    int e = (int)(cif - d->cif);
    switch (e) {
    case E_NAME:
        *(const char **)ret = d->name;
        break;
    case E_INIT:
        *(trace_vlist_table_t **)ret = init(d);
        break;
    case E_DONE:
        trace_vlist_table_free(d->spec);
        d->spec = NULL;
        break;
    case E_PROCESS:
        *(ffi_sarg *)ret =
            process(d, *(unsigned *)args[0], *(trace_parser_t **)args[1], *(vsample_t ***)args[2]);
        break;
    case E_PREFACE:
        *(const char **)ret = d->preface;
        break;
    case E_FORMAT2:
        *(const char **)ret = format(d, *(const vp_context_t **)args[0], *(uint64_t *)args[2]);
        break;
    case E_SELECT:
        *(ffi_sarg *)ret = selected(d, *(const trace_opc_info_t **)args[0]);
        break;
    case E_FILTER:
        *(ffi_sarg *)ret = filtered(d, *(const trace_inst_t **)args[0]);
        break;
    }
}

/* ---------------------------------------------------------------- closures */

static int make_closure(dcpi_decl_t *d, int e, ffi_type *rtype, unsigned nargs)
{
    d->cl[e] = ffi_closure_alloc(sizeof(ffi_closure), &d->code[e]);
    if (!d->cl[e])
        return DCPI_ENOMEM;
    if (ffi_prep_cif(&d->cif[e], FFI_DEFAULT_ABI, nargs, rtype, d->args[e]) != FFI_OK ||
        ffi_prep_closure_loc(d->cl[e], &d->cif[e], entry, d, d->code[e]) != FFI_OK)
        return DCPI_ENOTSUP;
    return 0;
}

static int make_closures(dcpi_decl_t *d)
{
    d->args[E_PROCESS][0] = &ffi_type_uint;
    d->args[E_PROCESS][1] = d->args[E_PROCESS][2] = &ffi_type_pointer;
    d->args[E_PREFACE][0] = &ffi_type_pointer;
    d->args[E_FORMAT2][0] = d->args[E_FORMAT2][1] = &ffi_type_pointer;
    d->args[E_FORMAT2][2] = &ffi_type_uint64;
    d->args[E_SELECT][0] = d->args[E_FILTER][0] = &ffi_type_pointer;
    int rc = make_closure(d, E_NAME, &ffi_type_pointer, 0);
    rc = rc ? rc : make_closure(d, E_INIT, &ffi_type_pointer, 0);
    rc = rc ? rc : make_closure(d, E_DONE, &ffi_type_void, 0);
    rc = rc ? rc : make_closure(d, E_PROCESS, &ffi_type_sint, 3);
    rc = rc ? rc : make_closure(d, E_PREFACE, &ffi_type_pointer, 1);
    rc = rc ? rc : make_closure(d, E_FORMAT2, &ffi_type_pointer, 3);
    rc = rc ? rc : make_closure(d, E_SELECT, &ffi_type_sint, 1);
    rc = rc ? rc : make_closure(d, E_FILTER, &ffi_type_sint, 1);
    if (rc)
        return rc;
    d->table = (vp_dispatch_t){.abi_version = 2, .struct_size = sizeof(vp_dispatch_t)};
    *(void **)&d->table.vp_name = d->code[E_NAME];
    *(void **)&d->table.vp_prof_init = d->code[E_INIT];
    *(void **)&d->table.vp_prof_done = d->code[E_DONE];
    *(void **)&d->table.vp_prof_process = d->code[E_PROCESS];
    *(void **)&d->table.vp_preface = d->code[E_PREFACE];
    *(void **)&d->table.vp_format2 = d->code[E_FORMAT2];
    return 0;
}

/* ---------------------------------------------------------------- the specification */

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

static int set_select(dcpi_decl_t *d, const char *v)
{
    const char *list = NULL;
    if (strncmp(v, "mnemonic:", 9) == 0)
        list = v + 9;
    else if (strncmp(v, "class:", 6) == 0)
        list = v + 6, d->by_class = 1;
    if (!list || !*list)
        return -1;
    for (const char *p = list; *p && d->nsel < MAXSEL;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof d->sel[0])
            return -1;
        memcpy(d->sel[d->nsel], p, n);
        d->sel[d->nsel++][n] = '\0';
        p += n + (p[n] == ',');
    }
    return 0;
}

static int set_capture(dcpi_decl_t *d, const char *v)
{
    char a[32] = "", b[32] = "";
    if (sscanf(v, "%31[^,],%31s", a, b) < 1 || trace_value_from_name(a, &d->kinds[0]) < 0 ||
        d->kinds[0] == TRACE_NONE)
        return -1;
    d->nkinds = 1;
    if (b[0] && (trace_value_from_name(b, &d->kinds[1]) < 0 || d->kinds[1] == TRACE_NONE))
        return -1;
    d->nkinds += b[0] != 0;
    return 0;
}

static int set_reduce(dcpi_decl_t *d, const char *v)
{
    static const char *const names[] = {"value", "relative"};
    if (sscanf(v, "bits:%u:%u", &d->bit_lo, &d->bit_n) == 2)
        return d->bit_lo < 64 && d->bit_n > 0 ? (d->reduce = R_BITS, 0) : -1;
    if (strcmp(v, "diff") == 0)
        return d->reduce = R_DIFF, 0;
    int r = pick(v, names, 2);
    return r < 0 ? -1 : (d->reduce = r == 1 ? R_RELATIVE : R_VALUE, 0);
}

static int set_key(dcpi_decl_t *d, const char *k, const char *v)
{
    static const char *const formats[] = {"hex", "dec", "signed", "symbol", "float"};
    static const char *const memforms[] = {"none", "read", "write", "rw"};
    if (strcmp(k, "name") == 0)
        return snprintf(d->name, sizeof d->name, "%s", v) < (int)sizeof d->name ? 0 : -1;
    if (strcmp(k, "preface") == 0)
        return snprintf(d->preface, sizeof d->preface, "%s", v) < (int)sizeof d->preface ? 0 : -1;
    if (strcmp(k, "select") == 0)
        return set_select(d, v);
    if (strcmp(k, "capture") == 0)
        return set_capture(d, v);
    if (strcmp(k, "reduce") == 0)
        return set_reduce(d, v);
    if (strcmp(k, "format") == 0)
        return (d->format = pick(v, formats, 5)) < 0 ? -1 : 0;
    if (strcmp(k, "memform") == 0)
        return (d->memform = pick(v, memforms, 4)) < 0 ? -1 : 0;
    if (strcmp(k, "missing") == 0) {
        static const char *const ms[] = {"skip", "show"};
        return (d->show_missing = pick(v, ms, 2)) < 0 ? -1 : 0;
    }
    if (strcmp(k, "range") == 0) {
        int used = 0;
        return sscanf(v, "%llx-%llx%n", &d->lo, &d->hi, &used) == 2 && !v[used] && d->lo < d->hi
                   ? 0
                   : -1;
    }
    if (strcmp(k, "symbol") == 0)
        return snprintf(d->symbol, sizeof d->symbol, "%s", v) < (int)sizeof d->symbol ? 0 : -1;
    if (strcmp(k, "operand") == 0) { /* the first operand's kind */
        static const char *const kinds[] = {"any", "reg", "mem", "imm"};
        return (d->operand = pick(v, kinds, 4)) < 0 ? -1 : 0;
    }
    if (strcmp(k, "conditional") == 0) {
        static const char *const yn[] = {"no", "yes"};
        return (d->conditional = pick(v, yn, 2)) < 0 ? -1 : 0;
    }
    return -2;
}

static int parse(dcpi_decl_t *d, const char *text, const char *label, char *err)
{
    char word[512];
    for (const char *p = text; *p;) {
        p += strspn(p, " \t\r\n");
        if (*p == '#') {
            p += strcspn(p, "\n");
            continue;
        }
        size_t n = strcspn(p, " \t\r\n");
        if (n == 0)
            break;
        if (n >= sizeof word)
            return dcpi__errf(err, DCPI_EINVAL, "%s: '%.40s...' is too long", label, p);
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        char *eq = strchr(word, '=');
        if (!eq)
            return dcpi__errf(err, DCPI_EINVAL, "%s: '%s' is not KEY=VALUE", label, word);
        *eq = '\0';
        int rc = set_key(d, word, eq + 1);
        if (rc == -2)
            return dcpi__errf(err, DCPI_EINVAL,
                              "%s: unknown key '%s' (name select memform operand conditional "
                              "symbol range capture reduce format preface missing)",
                              label, word);
        if (rc < 0)
            return dcpi__errf(err, DCPI_EINVAL, "%s: bad value for %s: '%s'", label, word, eq + 1);
    }
    if (!d->name[0] || !d->nsel)
        return dcpi__errf(err, DCPI_EINVAL, "%s: needs name= and select=", label);
    if (d->reduce == R_DIFF && d->nkinds != 2)
        return dcpi__errf(err, DCPI_EINVAL, "%s: reduce=diff needs capture=V,V2", label);
    if (!d->preface[0])
        snprintf(d->preface, sizeof d->preface, "%.63s", d->name);
    return 0;
}

/* ---------------------------------------------------------------- API */

int dcpi_decl_is(const char *arg)
{
    size_t n = arg ? strlen(arg) : 0;
    return n && (strstr(arg, "name=") || (n > 3 && strcmp(arg + n - 3, ".vp") == 0));
}

int dcpi_decl_new(const char *text, const char *label, dcpi_decl_t **out,
                  const vp_dispatch_t **table, char *err)
{
    dcpi_decl_t *d = calloc(1, sizeof *d);
    if (!d || !(d->out = malloc(VSAMPLE_BUFFER_SIZE * sizeof *d->out))) {
        free(d);
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", label);
    }
    d->memform = -1;
    d->conditional = -1;
    d->kinds[0] = TRACE_REGA;
    d->nkinds = 1;
    int rc = parse(d, text, label, err);
    if (rc == 0 && (rc = make_closures(d)) < 0)
        dcpi__errf(err, rc, "%s: libffi closures: %s", label, dcpi_strerror(rc));
    if (rc < 0) {
        dcpi_decl_free(d);
        return rc;
    }
    *out = d;
    *table = &d->table;
    return 0;
}

void dcpi_decl_free(dcpi_decl_t *d)
{
    if (!d)
        return;
    for (int e = 0; e < E_COUNT; e++)
        if (d->cl[e])
            ffi_closure_free(d->cl[e]);
    trace_vlist_table_free(d->spec);
    free(d->out);
    free(d);
}
