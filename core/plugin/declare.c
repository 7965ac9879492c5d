/*
 * declare.c - declarative value profilers (see declare.h): the plugin entries as libffi closures
 * (ffi_closure_alloc + ffi_prep_closure_loc) whose user data is the specification parsed by
 * declspec.c, so one set of handlers serves every declarative plugin.
 */
#include "core/plugin/declare.h"
#include "core/plugin/declare-int.h"

#include <ffi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/err.h"
#include "dcpi/errno.h"
#include "dcpi/resolve.h"

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
    if (d->operands &&
        (trace_inst_operands(inst, o, 1) < 1 || !(d->operands & (1u << (unsigned)o[0].kind))))
        return 0;
    return d->conditional < 0 || trace_inst_is_conditional(inst) == d->conditional;
}

/* keep=: a value not kept becomes d->other. */
static uint64_t bucket(const dcpi_decl_t *d, uint64_t v)
{
    for (int i = 0; i < d->nkeep; i++)
        if (d->keep[i] == v)
            return v;
    return d->nkeep ? d->other : v;
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
        d->out[n++] = (vsample_t){
            .pc = pc, .value = bucket(d, reduce(d, pid, pc, v)), .context0 = c0, .context1 = c1};
    }
    *vsamples = d->out;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *format(dcpi_decl_t *d, const vp_context_t *ctx, uint64_t v)
{
    const char *sym = NULL;
    double f;
    if (d->nkeep && v == d->other)
        return "other";
    for (int i = 0; i < d->nlabel; i++)
        if (d->label_v[i] == v)
            return d->label_t[i];
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
        snprintf(d->text, sizeof d->text, "0x%llx",
                 (unsigned long long)(d->reduce == R_RELATIVE ? v & ~RELATIVE : v));
    }
    return d->text;
}

/* The specification; NULL with d->why when a builder fails (parse has checked the values, so
 * only memory can run out). */
static trace_vlist_table_t *init(dcpi_decl_t *d)
{
    trace_vlist_t *v = trace_vlist_alloc();
    d->spec = trace_vlist_table_alloc();
    const char *step = v && d->spec ? NULL : "out of memory";
    for (int i = 0; !step && i < d->nkinds; i++)
        if (trace_add_value_to_vlist(v, d->kinds[i]) < 0)
            step = "capture=: trace_add_value_to_vlist failed";
    if (!step && d->symbol[0] && trace_vlist_table_set_symbol(d->spec, d->symbol) != 0)
        step = "symbol=: trace_vlist_table_set_symbol failed";
    if (!step && d->hi > d->lo && trace_vlist_table_set_range(d->spec, d->lo, d->hi) != 0)
        step = "range=: trace_vlist_table_set_range failed";
    if (!step && (d->operands || d->conditional >= 0) &&
        trace_vlist_table_set_filter(d->spec, (trace_inst_filter_fn)d->code[E_FILTER]) != 0)
        step = "operand=/conditional=: trace_vlist_table_set_filter failed";
    if (!step && trace_add_vlist_by_select(d->spec, (trace_selector_fn)d->code[E_SELECT], v) < 0)
        step = "select=: trace_add_vlist_by_select failed";
    if (step) {
        snprintf(d->why, sizeof d->why, "%s", step);
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

/* ---------------------------------------------------------------- API */

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
    int rc = dcpi__decl_parse(d, text, label, err);
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

const char *dcpi_decl_why(const dcpi_decl_t *d)
{
    return d && d->why[0] ? d->why : NULL;
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
