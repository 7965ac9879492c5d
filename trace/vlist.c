/*
 * trace/vlist.c - trace specifications (dcpi/trace-vlist.h): vlists, the per-key table and
 * the seed's builders, plus value names.
 *
 * A table is one fixed 8-byte vlist per key slot (trace_opc_count() slots, about 56 KB); a slot
 * whose count is VLIST_IGNORED is an ignored key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dcpi/errno.h"
#include "dcpi/trace-vlist.h"
#include "trace/trace.h"

#define VLIST_IGNORED 0xffu

struct trace_vlist {
    uint8_t n;
    uint8_t v[TRACE_VLIST_MAX];
};

struct trace_vlist_table {
    trace_opc_t count;
    trace_inst_filter_fn filter; /* SDK 2: NULL none */
    char symbol[128];            /* SDK 2: "" anywhere */
    uint64_t lo, hi;             /* SDK 2: ELF address range, lo == hi anywhere */
    struct trace_vlist keys[];
};

static const char *const value_names[TRACE_VALUE_COUNT] = {
    "none",   "rax", "rbx", "rcx", "rdx", "rsi",    "rdi",     "rbp",   "rsp",
    "r8",     "r9",  "r10", "r11", "r12", "r13",    "r14",     "r15",   "rip",
    "rflags", "ra",  "rb",  "rc",  "ea",  "memval", "latency", "taken", "target"};

static int value_ok(int v)
{
    return v > TRACE_NONE && v < TRACE_VALUE_COUNT;
}

trace_vlist_table_t *trace_vlist_table_alloc(void)
{
    trace_opc_t count = trace_opc_count();
    trace_vlist_table_t *t = malloc(sizeof(*t) + (size_t)count * sizeof(struct trace_vlist));
    if (t == NULL) {
        return NULL;
    }
    t->count = count;
    t->filter = NULL;
    t->symbol[0] = '\0';
    t->lo = t->hi = 0;
    memset(t->keys, 0, (size_t)count * sizeof(struct trace_vlist));
    for (trace_opc_t i = 0; i < count; i++) {
        t->keys[i].n = VLIST_IGNORED;
    }
    return t;
}

void trace_vlist_table_free(trace_vlist_table_t *spec)
{
    free(spec);
}

trace_vlist_t *trace_vlist_alloc(void)
{
    return calloc(1, sizeof(trace_vlist_t));
}

void trace_vlist_free(trace_vlist_t *vlist)
{
    free(vlist);
}

int trace_add_value_to_vlist(trace_vlist_t *vlist, trace_value_t value)
{
    if (vlist == NULL || !value_ok((int)value)) {
        return DCPI_EINVAL;
    }
    if (vlist->n >= TRACE_VLIST_MAX) {
        return DCPI_EFULL;
    }
    vlist->v[vlist->n++] = (uint8_t)value;
    return 0;
}

static int has_value(const struct trace_vlist *l, uint8_t v)
{
    for (unsigned i = 0; i < l->n; i++) {
        if (l->v[i] == v) {
            return 1;
        }
    }
    return 0;
}

/* Merge src into the key's slot; the slot changes only when the whole merge fits. */
static int merge_into(struct trace_vlist *slot, const trace_vlist_t *src)
{
    struct trace_vlist merged = *slot;
    if (merged.n == VLIST_IGNORED) {
        merged.n = 0;
    }
    for (unsigned i = 0; i < src->n; i++) {
        if (has_value(&merged, src->v[i])) {
            continue;
        }
        if (merged.n >= TRACE_VLIST_MAX) {
            return DCPI_EFULL;
        }
        merged.v[merged.n++] = src->v[i];
    }
    *slot = merged;
    return 0;
}

static int key_ok(const trace_vlist_table_t *spec, trace_opc_t opc)
{
    return opc < spec->count && trace_opc_info(opc) != NULL;
}

int trace_add_vlist_by_opc(trace_vlist_table_t *spec, trace_opc_t opc, const trace_vlist_t *vlist)
{
    if (spec == NULL || vlist == NULL || !key_ok(spec, opc)) {
        return DCPI_EINVAL;
    }
    return merge_into(&spec->keys[opc], vlist);
}

int trace_set_vlist_by_pick_value(trace_vlist_table_t *spec, trace_pick_value_fn func)
{
    int rc = 0;
    if (spec == NULL || func == NULL) {
        return DCPI_EINVAL;
    }
    for (trace_opc_t opc = 0; opc < spec->count; opc++) {
        const trace_opc_info_t *info = trace_opc_info(opc);
        if (info == NULL) {
            continue;
        }
        int v = func(info);
        struct trace_vlist *slot = &spec->keys[opc];
        if (v < 0) {
            slot->n = VLIST_IGNORED;
        } else if (v == TRACE_NONE) {
            slot->n = 0;
        } else if (value_ok(v)) {
            slot->n = 1;
            slot->v[0] = (uint8_t)v;
        } else {
            rc = DCPI_EINVAL; /* unknown value: the key is left as it was */
        }
    }
    return rc;
}

int trace_add_vlist_by_select(trace_vlist_table_t *spec, trace_selector_fn selector,
                              const trace_vlist_t *vlist)
{
    int rc = 0;
    if (spec == NULL || selector == NULL || vlist == NULL) {
        return DCPI_EINVAL;
    }
    for (trace_opc_t opc = 0; opc < spec->count; opc++) {
        const trace_opc_info_t *info = trace_opc_info(opc);
        if (info == NULL || !selector(info)) {
            continue;
        }
        if (merge_into(&spec->keys[opc], vlist) < 0) {
            rc = DCPI_EFULL;
        }
    }
    return rc;
}

int trace_vlist_table_get(const trace_vlist_table_t *spec, trace_opc_t opc, trace_value_t *values)
{
    if (spec == NULL || opc >= spec->count || spec->keys[opc].n == VLIST_IGNORED) {
        return -1;
    }
    const struct trace_vlist *l = &spec->keys[opc];
    if (values != NULL) {
        for (int i = 0; i < TRACE_VLIST_MAX; i++) {
            values[i] = i < l->n ? (trace_value_t)l->v[i] : TRACE_NONE;
        }
    }
    return l->n;
}

int trace_vlist_count(const trace_vlist_t *vlist)
{
    return vlist != NULL ? vlist->n : DCPI_EINVAL;
}

trace_value_t trace_vlist_value(const trace_vlist_t *vlist, int i)
{
    if (vlist == NULL || i < 0 || i >= vlist->n) {
        return TRACE_NONE;
    }
    return (trace_value_t)vlist->v[i];
}

const char *trace_value_name(trace_value_t v)
{
    return (unsigned)v < TRACE_VALUE_COUNT ? value_names[v] : "?";
}

int trace_value_from_name(const char *name, trace_value_t *out)
{
    if (name == NULL) {
        return DCPI_EINVAL;
    }
    for (int v = 0; v < TRACE_VALUE_COUNT; v++) {
        if (strcasecmp(name, value_names[v]) == 0) {
            if (out != NULL) {
                *out = (trace_value_t)v;
            }
            return 0;
        }
    }
    return DCPI_EINVAL;
}

int trace_vlist_table_set_filter(trace_vlist_table_t *spec, trace_inst_filter_fn fn)
{
    if (!spec)
        return DCPI_EINVAL;
    spec->filter = fn;
    return 0;
}

int trace_vlist_table_set_symbol(trace_vlist_table_t *spec, const char *symbol)
{
    if (!spec || (symbol && strlen(symbol) >= sizeof spec->symbol))
        return DCPI_EINVAL;
    snprintf(spec->symbol, sizeof spec->symbol, "%s", symbol ? symbol : "");
    return 0;
}

int trace_vlist_table_set_range(trace_vlist_table_t *spec, uint64_t lo, uint64_t hi)
{
    if (!spec || lo > hi)
        return DCPI_EINVAL;
    spec->lo = lo;
    spec->hi = hi;
    return 0;
}

int trace_vlist_table_get_range(const trace_vlist_table_t *spec, uint64_t *lo, uint64_t *hi)
{
    if (!spec || spec->lo == spec->hi)
        return 0;
    *lo = spec->lo;
    *hi = spec->hi;
    return 1;
}

trace_inst_filter_fn trace_vlist_table_get_filter(const trace_vlist_table_t *spec)
{
    return spec ? spec->filter : NULL;
}

const char *trace_vlist_table_get_symbol(const trace_vlist_table_t *spec)
{
    return spec && spec->symbol[0] ? spec->symbol : NULL;
}

trace_vlist_table_t *trace_vlist_table_select1(trace_selector_fn selector, trace_value_t value)
{
    trace_vlist_t *v = trace_vlist_alloc();
    trace_vlist_table_t *spec = trace_vlist_table_alloc();
    if (!v || !spec || trace_add_value_to_vlist(v, value) < 0 ||
        trace_add_vlist_by_select(spec, selector, v) < 0) {
        trace_vlist_table_free(spec);
        spec = NULL;
    }
    trace_vlist_free(v);
    return spec;
}
