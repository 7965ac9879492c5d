/*
 * vp-load-addr.c - the sample value profiler of HP DCPI's dcpivprofiler(5) page (dcpi's page
 * is vprofiler(5)), carried to x86-64 line by line: it captures the effective addresses of the
 * memory operands of 64-bit loads.
 *
 * On Alpha the sample selected the opcodes ldq and ldq_u, captured Rb and added the
 * instruction's displacement to get the address. On x86-64:
 *   - a selector sees a key (mnemonic x memory form), not an opcode: loads are class LOAD, and
 *     "mov" with a memory source is the integer load. The operand size is not part of the key,
 *     so "64-bit" cannot be decided by the selector; vp_prof_process checks it per entry, from
 *     the instruction bytes (a 64-bit mov from memory carries REX.W);
 *   - the backend captures the effective address itself (TRACE_EA), so no displacement
 *     arithmetic is needed.
 *
 * Build it against an installed dcpi (see samples/README.md):
 *   cc -shared -fPIC -fvisibility=hidden -o vp-load-addr.so vp-load-addr.c \
 *       $(pkg-config --cflags --libs dcpi)
 * Use it:
 *   dcpid -vtrace ./vp-load-addr.so -- ./prog
 *   dcpilist -vprof -vtrace ./vp-load-addr.so procedure ./prog
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dcpi/vprofiler.h>

static vsample_t vsample_buffer[VSAMPLE_BUFFER_SIZE];

/* The seed's name is kept; here only loads are selected (as the seed's body did). */
static int select_loads_stores(const trace_opc_info_t *info)
{
    return info->iclass == TRACE_CLASS_LOAD && info->memform == TRACE_MEM_READ &&
           strcmp(info->mnemonic, "mov") == 0;
}

/* 64-bit operand size: a REX prefix (0x40-0x4f) with W set, after any legacy prefixes. */
static int is_64bit(const trace_inst_t *inst)
{
    for (int i = 0; i < inst->length; i++) {
        uint8_t b = inst->bytes[i];
        if ((b & 0xf0) == 0x40)
            return (b & 0x08) != 0;
        if (b != 0x66 && b != 0x67 && b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x2e &&
            b != 0x36 && b != 0x3e && b != 0x26 && b != 0x64 && b != 0x65)
            return 0; /* the opcode, and no REX prefix before it */
    }
    return 0;
}

static trace_vlist_table_t *table;

static trace_vlist_table_t *vp_prof_init(void)
{
    trace_vlist_t *vlist;

    table = trace_vlist_table_alloc();
    vlist = trace_vlist_alloc();
    if (table == NULL || vlist == NULL) {
        trace_vlist_table_free(table);
        trace_vlist_free(vlist);
        return table = NULL;
    }
    trace_add_value_to_vlist(vlist, TRACE_EA);
    trace_add_vlist_by_select(table, select_loads_stores, vlist);
    trace_vlist_free(vlist); /* the table holds a copy of its values */

    return table;
}

static void vp_prof_done(void)
{
    trace_vlist_table_free(table);
    table = NULL;
}

static int vp_prof_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)
{
    int n = 0, nvalues = 0;
    uint64_t pc, c0, c1, ea;
    trace_inst_t inst;

    (void)pid;
    /* The buffer-full check comes before the next entry is read, so no entry is read and then
     * dropped, and n never passes VSAMPLE_BUFFER_SIZE (a trace holds at most that many). */
    while (n < VSAMPLE_BUFFER_SIZE &&
           (nvalues = trace_parser_next(parser, &inst, &pc, &c0, &c1, 1, &ea)) >= 0) {
        if (nvalues == 1 && !(trace_parser_missing(parser) & 1u) && is_64bit(&inst)) {
            /* Without -vcontext the parser already gives c0 = c1 = 0. */
            vsample_buffer[n].pc = pc;
            vsample_buffer[n].value = ea;
            vsample_buffer[n].context0 = c0;
            vsample_buffer[n].context1 = c1;
            n++;
        }
    }

    *vsamples = vsample_buffer;
    if (nvalues == TRACE_PARSE_ERROR)
        return DCPI_EFORMAT; /* a corrupt trace: tell dcpid (trace_parser_error says why) */
    return n;
}

static const char *vp_name(void)
{
    return "vp-ldq-addr";
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
    sprintf(buffer, "%lx", (unsigned long)(value & ((1UL << 48) - 1)));
    return buffer;
}

VP_EXPORT vp_dispatch_t _dispatch = {
    VP_DISPATCH_HEADER, vp_name,         NULL,       NULL,      vp_prof_init,
    vp_prof_done,       vp_prof_process, vp_preface, vp_format,
};
