/*
 * bblocks.c - basic blocks of a decoded procedure: leaders at its start, at branch targets and
 * after branches and returns (see bblocks.h).
 */
#include "core/analysis/bblocks.h"

#include "dcpi/insn.h"

/* 1 when the instruction ends a block: a branch or a return. */
static int ends_block(const dcpi_lst_insn_t *in)
{
    if (in->bad)
        return 0;
    const trace_opc_info_t *info = trace_opc_info(in->inst.opc);
    return info && (info->iclass == TRACE_CLASS_BRANCH || info->iclass == TRACE_CLASS_RETURN);
}

size_t dcpi_bblocks_split(const dcpi_listing_t *ls, uint32_t *block)
{
    size_t nb = 0;
    for (size_t i = 0; i < ls->n; i++) {
        if (i == 0 || ls->insns[i].is_target || ends_block(&ls->insns[i - 1]))
            nb++;
        block[i] = (uint32_t)(nb - 1);
    }
    return nb;
}
