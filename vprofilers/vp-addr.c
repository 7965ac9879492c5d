/*
 * vp-addr.c - effective addresses of the memory operands of loads and stores: which addresses
 * each memory instruction touches most (dcpid -vtrace vp-addr).
 *
 * What it captures: TRACE_EA for every key with a memory operand (memory form read, write or
 * both) whose class is LOAD, STORE, ALU, MULDIV or FPSIMD. Stack traffic is left out: calls and
 * returns by class, push and pop by mnemonic (they are LOAD/STORE keys otherwise). String
 * instructions (movs, stos, ...) are left out too: they have two addresses that move.
 *
 * Both backends can give TRACE_EA: the address is computed from the decoded operand and the
 * registers (base + index * scale + displacement), which the regs backend has before the
 * instruction runs. An entry whose address is marked missing is skipped.
 *
 * Everything but _dispatch is static.
 */
#include <stdio.h>
#include <string.h>

#include <dcpi/errno.h>
#include <dcpi/vprofiler.h>

/* User-space addresses on x86-64 have 48 significant bits. */
#define ADDR_MASK ((1ULL << 48) - 1)

/* One trace never holds more entries than this, so the buffer cannot overflow. */
static vsample_t vsample_buffer[VSAMPLE_BUFFER_SIZE];

static trace_vlist_table_t *table;

static int is_stack_op(const char *mnemonic)
{
    return strcmp(mnemonic, "push") == 0 || strcmp(mnemonic, "pop") == 0;
}

/* Data accesses through an explicit memory operand. */
static int select_memory_ops(const trace_opc_info_t *info)
{
    if (info->memform == TRACE_MEM_NONE || is_stack_op(info->mnemonic))
        return 0;
    switch (info->iclass) {
    case TRACE_CLASS_LOAD:
    case TRACE_CLASS_STORE:
    case TRACE_CLASS_ALU:
    case TRACE_CLASS_MULDIV:
    case TRACE_CLASS_FPSIMD:
        return 1;
    default:
        return 0; /* call, return, branch through memory, string, other */
    }
}

static trace_vlist_table_t *vp_prof_init(void)
{
    trace_vlist_t *vlist = trace_vlist_alloc();
    table = trace_vlist_table_alloc();
    if (!vlist || !table || trace_add_value_to_vlist(vlist, TRACE_EA) < 0 ||
        trace_add_vlist_by_select(table, select_memory_ops, vlist) < 0) {
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

/* Each entry carries the one value of the vlist: the effective address. */
static int vp_prof_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)
{
    int n = 0, nvalues = 0;
    uint64_t pc, c0, c1, ea;

    (void)pid;
    while (n < VSAMPLE_BUFFER_SIZE &&
           (nvalues = trace_parser_next(parser, NULL, &pc, &c0, &c1, 1, &ea)) >= 0) {
        if (nvalues < 1 || (trace_parser_missing(parser) & 1u))
            continue;
        vsample_buffer[n].pc = pc;
        vsample_buffer[n].value = ea;
        vsample_buffer[n].context0 = c0; /* 0 without -vcontext */
        vsample_buffer[n].context1 = c1;
        n++;
    }
    *vsamples = vsample_buffer;
    return nvalues == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}

static const char *vp_name(void)
{
    return "vp-addr";
}

static const char *vp_preface(const trace_inst_t *inst)
{
    (void)inst;
    return "addr";
}

static const char *vp_format(const trace_inst_t *inst, uint64_t value)
{
    static char buffer[32];

    (void)inst;
    snprintf(buffer, sizeof(buffer), "0x%llx", (unsigned long long)(value & ADDR_MASK));
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
