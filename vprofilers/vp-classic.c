/*
 * vp-classic.c - DCPI's "classic" value profiling as a plugin: the result values of integer
 * instructions (dcpid -vprof did this built in; dcpid -vtrace vp-classic does it here).
 *
 * What it captures: TRACE_REGC, the value of the destination after the instruction ran, for
 * every key whose class is ALU or MULDIV (without a memory destination: their result goes to a
 * register) or LOAD. A selector sees keys, not instructions, so it cannot ask "does this one
 * write a register?"; it selects by class and the preface names what the value is.
 *
 * What the backends give: the step backend gives every result; the regs backend gives the
 * results of the instructions its interpreter evaluates (mov, lea, add/sub, logic, shifts,
 * imul, cmovcc, setcc, cmp/test flags, ...) and marks the others missing, loads included (the
 * loaded value is not in the registers before the load). Missing values are skipped here.
 *
 * Reading order: the selector, vp_prof_init / vp_prof_done, vp_prof_process, then the listing
 * side (vp_preface names the destination, vp_format prints the value), then _dispatch.
 * Everything but _dispatch is static.
 */
#include <stdio.h>
#include <string.h>

#include <dcpi/errno.h>
#include <dcpi/vprofiler.h>

/* One trace never holds more entries than this, so the buffer cannot overflow. */
static vsample_t vsample_buffer[VSAMPLE_BUFFER_SIZE];

static trace_vlist_table_t *table;

/* Integer instructions whose result goes to a register. */
static int select_results(const trace_opc_info_t *info)
{
    switch (info->iclass) {
    case TRACE_CLASS_ALU:
    case TRACE_CLASS_MULDIV:
        /* add [rbx], rax writes memory: no register result. */
        return info->memform == TRACE_MEM_NONE || info->memform == TRACE_MEM_READ;
    case TRACE_CLASS_LOAD:
        return 1;
    default:
        return 0;
    }
}

static trace_vlist_table_t *vp_prof_init(void)
{
    trace_vlist_t *vlist = trace_vlist_alloc();
    table = trace_vlist_table_alloc();
    if (!vlist || !table || trace_add_value_to_vlist(vlist, TRACE_REGC) < 0 ||
        trace_add_vlist_by_select(table, select_results, vlist) < 0) {
        trace_vlist_table_free(table);
        table = NULL;
    }
    trace_vlist_free(vlist);
    return table; /* NULL: dcpid reports that the specification could not be built */
}

static void vp_prof_done(void)
{
    trace_vlist_table_free(table);
    table = NULL;
}

/* Each entry carries the one value of the vlist: the result. */
static int vp_prof_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)
{
    int n = 0, nvalues = 0;
    uint64_t pc, c0, c1, result;

    (void)pid;
    while (n < VSAMPLE_BUFFER_SIZE &&
           (nvalues = trace_parser_next(parser, NULL, &pc, &c0, &c1, 1, &result)) >= 0) {
        if (nvalues < 1 || (trace_parser_missing(parser) & 1u))
            continue; /* the backend could not compute this result */
        vsample_buffer[n].pc = pc;
        vsample_buffer[n].value = result;
        vsample_buffer[n].context0 = c0; /* 0 without -vcontext */
        vsample_buffer[n].context1 = c1;
        n++;
    }
    *vsamples = vsample_buffer;
    return nvalues == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *vp_name(void)
{
    return "vp-classic";
}

/* The operand text after the mnemonic ("rax, qword ptr [rbx]"), skipping prefixes such as
 * "lock"; "" when the instruction shows no operand. */
static const char *operands_of(char *text, const char *mnemonic)
{
    char *save = NULL;
    for (char *word = strtok_r(text, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        if (strcmp(word, mnemonic) == 0)
            return save ? save : "";
    }
    return "";
}

static int is_flags_only(const char *mnemonic)
{
    return strcmp(mnemonic, "cmp") == 0 || strcmp(mnemonic, "test") == 0 ||
           strcmp(mnemonic, "bt") == 0;
}

static int is_muldiv(const trace_inst_t *inst)
{
    const trace_opc_info_t *info = trace_opc_info(inst->opc);
    return info && info->iclass == TRACE_CLASS_MULDIV;
}

/* "rax:" for mov rax, [rbx]; "rax:" for mul rbx (rdx:rax, low half); "rflags:" for cmp/test.
 * dcpilist calls this once per instruction, so decoding here costs little. */
static const char *vp_preface(const trace_inst_t *inst)
{
    static char buffer[64];
    char text[160];

    if (is_flags_only(inst->mnemonic))
        return "rflags:";
    if (trace_inst_format(inst, 0, text, sizeof(text)) < 0)
        return "result:";
    const char *ops = operands_of(text, inst->mnemonic);
    size_t len = strcspn(ops, ",");
    if (len == 0 || memchr(ops, '[', len))
        return "result:"; /* no operand shown, or a memory operand first */
    if (ops[len] == '\0' && is_muldiv(inst))
        return "rax:"; /* one-operand mul/div/imul: the result is in rax (and rdx) */
    snprintf(buffer, sizeof(buffer), "%.*s:", (int)len, ops);
    return buffer;
}

static const char *vp_format(const trace_inst_t *inst, uint64_t value)
{
    static char buffer[32];

    (void)inst;
    snprintf(buffer, sizeof(buffer), "0x%llx", (unsigned long long)value);
    return buffer;
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER,
    .vp_name = vp_name,
    .vp_prof_init = vp_prof_init,
    .vp_prof_done = vp_prof_done,
    .vp_prof_process = vp_prof_process,
    .vp_preface = vp_preface,
    .vp_format = vp_format,
};
