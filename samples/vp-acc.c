/*
 * vp-acc.c - the accuracy plugin of bench/hotlist_accuracy.sh and tests/e2e/values_bp.sh: one
 * value (ACC_VALUE) of every instruction whose mnemonic is ACC_MNEM, both from the environment:
 * ACC_MNEM jbe, call, div, mov...; ACC_VALUE taken, target, rsi, rcx, rflags (before the
 * instruction), memval, ea, or backend
 * (the name trace_parser_backend gives, as a little-endian number: "bp" is 0x7062). A missing
 * value becomes a vp_missing() vsample (SDK 2), which dcpilist shows as "missing", so that
 * missing values are counted, not dropped. With ACC_VALUE=memval the vlist also holds TRACE_EA (not
 * reported). Built like a user's plugin: public headers only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dcpi/errno.h>
#include <dcpi/vprofiler.h>
static vsample_t buf[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *table;
static const char *mnem;
static int backend; /* ACC_VALUE=backend: the value is trace_parser_backend's name */
static int pick(const trace_opc_info_t *i)
{
    return strcmp(i->mnemonic, mnem) == 0;
}
static trace_vlist_table_t *init(void)
{
    static const struct {
        const char *name;
        trace_value_t v;
    } vals[] = {{"taken", TRACE_BR_TAKEN}, {"target", TRACE_BR_TARGET}, {"rsi", TRACE_RSI},
                {"rcx", TRACE_RCX},        {"memval", TRACE_MEMVAL},    {"ea", TRACE_EA},
                {"rflags", TRACE_RFLAGS},  {"backend", TRACE_RIP}};
    const char *val = getenv("ACC_VALUE");
    trace_vlist_t *v;
    mnem = getenv("ACC_MNEM");
    backend = val && strcmp(val, "backend") == 0;
    if (!mnem || !val)
        return NULL;
    v = trace_vlist_alloc();
    table = trace_vlist_table_alloc();
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++)
        if (v && strcmp(val, vals[k].name) == 0 && trace_add_value_to_vlist(v, vals[k].v) >= 0 &&
            (vals[k].v != TRACE_MEMVAL || trace_add_value_to_vlist(v, TRACE_EA) >= 0) && table &&
            trace_add_vlist_by_select(table, pick, v) >= 0) {
            trace_vlist_free(v);
            return table;
        }
    trace_vlist_free(v);
    trace_vlist_table_free(table);
    return table = NULL;
}
static void done(void)
{
    trace_vlist_table_free(table);
}
static int process(unsigned pid, trace_parser_t *p, vsample_t **out)
{
    int n = 0, k = 0;
    uint64_t pc, v;
    (void)pid;
    while (n < VSAMPLE_BUFFER_SIZE &&
           (k = trace_parser_next(p, NULL, &pc, NULL, NULL, 1, &v)) >= 0) {
        if (backend) { /* the backend's name, up to 8 bytes, as the value */
            v = 0;
            memcpy(&v, trace_parser_backend(p), strnlen(trace_parser_backend(p), 8));
        } else if (k < 1 || (trace_parser_missing(p) & 1u)) {
            buf[n++] = vp_missing(pc); /* counted, shown by dcpilist as "missing" */
            continue;
        }
        buf[n++] = (vsample_t){.pc = pc, .value = v};
    }
    *out = buf;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}
static const char *name(void)
{
    return "vp-acc";
}
static const char *preface(const trace_inst_t *i)
{
    (void)i;
    return "value:";
}
static const char *format(const trace_inst_t *i, uint64_t v)
{
    static char s[32];
    (void)i;
    snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
    return s;
}
VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,         .vp_name = name,       .vp_prof_init = init, .vp_prof_done = done,
    .vp_prof_process = process, .vp_preface = preface, .vp_format = format};
