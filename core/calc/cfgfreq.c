/*
 * cfgfreq.c - dcpicalc's frequency estimator (cfg.h; docs/dcpicalc.md, "The estimator"): the
 * static cost model of an instruction, each block's local estimate (samples / cost), and the
 * propagation of frequencies along the edges by flow conservation, hottest block first.
 */
#include "core/calc/cfg.h"

#include <string.h>

/* Static cost of one instruction in cycles on a recent x86-64 core, from its class (rough
 * latencies of the common case: L1 hits, predicted branches; documented in docs/dcpicalc.md). */
static double class_cost(const trace_opc_info_t *oi)
{
    switch (oi->iclass) {
    case TRACE_CLASS_MULDIV:
        return strstr(oi->mnemonic, "div") ? 20 : 3;
    case TRACE_CLASS_LOAD:
    case TRACE_CLASS_FPSIMD:
    case TRACE_CLASS_STRING:
        return 4;
    case TRACE_CLASS_CALL:
    case TRACE_CLASS_RETURN:
        return 2;
    default:
        return 1;
    }
}

double dcpi_cfg_insn_cost(const dcpi_lst_insn_t *in, enum dcpi_cfg_model m)
{
    if (m == DCPI_CFG_INSNS || in->bad)
        return 1;
    const trace_opc_info_t *oi = trace_opc_info(in->inst.opc);
    if (!oi)
        return 1;
    if (!strcmp(oi->mnemonic, "nop") || !strcmp(oi->mnemonic, "endbr64"))
        return 0.5;
    double c = class_cost(oi);
    int reads = oi->memform == TRACE_MEM_READ || oi->memform == TRACE_MEM_RW;
    if (reads && (oi->iclass == TRACE_CLASS_ALU || oi->iclass == TRACE_CLASS_MULDIV))
        c += 4; /* an operation on a loaded operand waits for the load */
    return c;
}

/* ---- propagation ---- */

/* The sum of the known edges of list[0..n) and how many are unknown (the last one in *which). */
static double known_sum(const dcpi_cfg_t *g, const size_t *list, size_t n, size_t *unknown,
                        size_t *which)
{
    double s = 0;
    *unknown = 0;
    for (size_t i = 0; i < n; i++) {
        const dcpi_cfg_edge_t *e = &g->edges[list[i]];
        if (e->freq < 0) {
            ++*unknown;
            *which = list[i];
        } else {
            s += e->freq;
        }
    }
    return s;
}

/* Fix what one block's side (its in- or out-edges) tells: the block from a side whose edges are
 * all known, or the one unknown edge of a known block. 1 when something changed. */
static int side_rule(dcpi_cfg_t *g, dcpi_cfg_block_t *bl, const size_t *list, size_t n)
{
    size_t unknown = 0, which = 0;
    if (n == 0)
        return 0;
    double s = known_sum(g, list, n, &unknown, &which);
    if (bl->src == DCPI_CFG_F_NONE && unknown == 0) {
        bl->freq = s;
        bl->src = DCPI_CFG_F_FLOW;
        return 1;
    }
    if (bl->src != DCPI_CFG_F_NONE && unknown == 1) {
        g->edges[which].freq = bl->freq > s ? bl->freq - s : 0;
        return 1;
    }
    return 0;
}

static void propagate(dcpi_cfg_t *g)
{
    int changed = 1;
    while (changed) {
        changed = 0;
        for (size_t k = 0; k < g->nblocks; k++) {
            dcpi_cfg_block_t *bl = &g->blocks[k];
            changed |= side_rule(g, bl, bl->pred, bl->npred);
            changed |= side_rule(g, bl, bl->succ, bl->nsucc);
        }
    }
}

/* The block not yet estimated with the most samples (the lowest address among equals), or -1. */
static long hottest_open(const dcpi_cfg_t *g)
{
    long best = -1;
    for (size_t k = 0; k < g->nblocks; k++) {
        const dcpi_cfg_block_t *bl = &g->blocks[k];
        if (bl->src == DCPI_CFG_F_NONE && (best < 0 || bl->samples > g->blocks[best].samples))
            best = (long)k;
    }
    return best;
}

/* The calls: the edge from outside into the entry block. */
static double calls(const dcpi_cfg_t *g)
{
    const dcpi_cfg_block_t *b0 = &g->blocks[0];
    for (size_t i = 0; i < b0->npred; i++) {
        const dcpi_cfg_edge_t *e = &g->edges[b0->pred[i]];
        if (e->from == DCPI_CFG_ENTRY)
            return e->freq;
    }
    return -1;
}

void dcpi_cfg_estimate(dcpi_cfg_t *g, enum dcpi_cfg_model m)
{
    for (size_t k = 0; k < g->nblocks; k++) {
        dcpi_cfg_block_t *bl = &g->blocks[k];
        bl->cost = 0;
        for (size_t i = bl->first; i < bl->first + bl->n; i++)
            bl->cost += dcpi_cfg_insn_cost(&g->ls->insns[i], m);
        bl->local = bl->cost > 0 ? (double)bl->samples / bl->cost : 0;
        bl->freq = 0;
        bl->src = DCPI_CFG_F_NONE;
    }
    for (size_t e = 0; e < g->nedges; e++)
        g->edges[e].freq = -1;
    long k;
    propagate(g);
    while ((k = hottest_open(g)) >= 0) {
        g->blocks[k].freq = g->blocks[k].local;
        g->blocks[k].src = DCPI_CFG_F_SAMPLES;
        propagate(g);
    }
    g->per_call = g->blocks[0].samples >= DCPI_CFG_MIN_ENTRY && calls(g) > 0;
}

double dcpi_cfg_calls(const dcpi_cfg_t *g)
{
    return calls(g);
}
