/*
 * cfg.c - the control-flow graph of one procedure (cfg.h): each instruction of a decoded listing
 * classified by trace_inst_flow (branch, jump, return, stop, call), the leaders found, the blocks
 * cut and their edges made; the samples of one event summed per block.
 */
#include "core/calc/cfg.h"

#include <stdlib.h>
#include <string.h>

#include "core/base/mem.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

typedef struct iflow {
    trace_flow_t f;
    uint64_t target; /* TRACE_FLOW_COND, _JUMP, _CALL: the direct target (0: none) */
} iflow_t;

static iflow_t classify(const dcpi_lst_insn_t *li)
{
    iflow_t r = {TRACE_FLOW_NONE, 0};
    if (!li->bad)
        r.f = trace_inst_flow(&li->inst, li->addr, &r.target);
    return r;
}

/* The index of the instruction starting at vaddr, or -1. */
static long insn_at(const dcpi_listing_t *ls, uint64_t vaddr)
{
    dcpi_lst_insn_t *in = dcpi_listing_find((dcpi_listing_t *)ls, vaddr);
    return in && in->addr == vaddr ? (long)(in - ls->insns) : -1;
}

/* 1 when the instruction ends its block. */
static int ends_block(const iflow_t *fl, int noret)
{
    return fl->f == TRACE_FLOW_COND || fl->f == TRACE_FLOW_JUMP || fl->f == TRACE_FLOW_IND ||
           fl->f == TRACE_FLOW_RET || fl->f == TRACE_FLOW_STOP ||
           (fl->f == TRACE_FLOW_CALL && noret);
}

typedef struct build {
    const dcpi_listing_t *ls;
    iflow_t *fl;
    char *leader, *noret; /* [n] */
    long *block_of;       /* [n]: the block of each instruction */
    size_t ecap;
} build_t;

static void mark_leaders(build_t *b, dcpi_cfg_noreturn_fn noreturn, void *arg, dcpi_cfg_t *g)
{
    const dcpi_listing_t *ls = b->ls;
    b->leader[0] = 1;
    for (size_t i = 0; i < ls->n; i++) {
        iflow_t *fl = &b->fl[i];
        if (fl->f == TRACE_FLOW_CALL && fl->target && noreturn && noreturn(arg, fl->target)) {
            b->noret[i] = 1;
            g->n_noreturn++;
        }
        if ((fl->f == TRACE_FLOW_COND || fl->f == TRACE_FLOW_JUMP) && fl->target) {
            long t = insn_at(ls, fl->target);
            if (t >= 0)
                b->leader[t] = 1;
        }
        if (ends_block(fl, b->noret[i]) && i + 1 < ls->n)
            b->leader[i + 1] = 1;
    }
}

static int cut_blocks(build_t *b, dcpi_cfg_t *g)
{
    const dcpi_listing_t *ls = b->ls;
    size_t nb = 0;
    for (size_t i = 0; i < ls->n; i++)
        nb += b->leader[i] != 0;
    g->blocks = calloc(nb, sizeof(*g->blocks));
    if (!g->blocks)
        return DCPI_ENOMEM;
    long cur = -1;
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (b->leader[i]) {
            cur = (long)g->nblocks++;
            g->blocks[cur] = (dcpi_cfg_block_t){.lo = in->addr, .first = i};
        }
        dcpi_cfg_block_t *bl = &g->blocks[cur];
        bl->n++;
        bl->hi = in->addr + (in->bad ? 1 : in->inst.length);
        bl->samples += in->counts[g->event];
        g->samples += in->counts[g->event];
        b->block_of[i] = cur;
    }
    return 0;
}

static int add_edge(build_t *b, dcpi_cfg_t *g, int from, int to, enum dcpi_cfg_ekind kind)
{
    if (dcpi__grow((void **)&g->edges, &b->ecap, g->nedges + 1, sizeof(*g->edges)) < 0)
        return DCPI_ENOMEM;
    g->edges[g->nedges++] = (dcpi_cfg_edge_t){.from = from, .to = to, .kind = kind, .freq = -1};
    return 0;
}

/* The end of a branch to target: its block when an instruction of the procedure starts there,
 * else out of the procedure. */
static int target_end(const build_t *b, uint64_t target)
{
    long t = target ? insn_at(b->ls, target) : -1;
    return t >= 0 ? (int)b->block_of[t] : DCPI_CFG_EXIT;
}

static int block_edges(build_t *b, dcpi_cfg_t *g, int k)
{
    const dcpi_cfg_block_t *bl = &g->blocks[k];
    size_t last = bl->first + bl->n - 1;
    const iflow_t *fl = &b->fl[last];
    int next = k + 1 < (int)g->nblocks ? k + 1 : DCPI_CFG_EXIT;
    if (b->noret[last])
        return add_edge(b, g, k, DCPI_CFG_NORET, DCPI_CFG_E_STOP);
    switch (fl->f) {
    case TRACE_FLOW_COND:
        if (add_edge(b, g, k, target_end(b, fl->target), DCPI_CFG_E_TAKEN) < 0)
            return DCPI_ENOMEM;
        return add_edge(b, g, k, next, DCPI_CFG_E_FALL);
    case TRACE_FLOW_JUMP:
        return add_edge(b, g, k, target_end(b, fl->target), DCPI_CFG_E_JUMP);
    case TRACE_FLOW_IND:
        g->has_unknown = 1;
        return add_edge(b, g, k, DCPI_CFG_UNKNOWN, DCPI_CFG_E_IND);
    case TRACE_FLOW_RET:
        return add_edge(b, g, k, DCPI_CFG_EXIT, DCPI_CFG_E_RET);
    case TRACE_FLOW_STOP:
        return add_edge(b, g, k, DCPI_CFG_NORET, DCPI_CFG_E_STOP);
    default:
        return add_edge(b, g, k, next, DCPI_CFG_E_FALL);
    }
}

/* Blocks that no edge reaches (the entry always) are fed from outside. */
static int outside_edges(build_t *b, dcpi_cfg_t *g)
{
    char *reached = calloc(g->nblocks, 1);
    if (!reached)
        return DCPI_ENOMEM;
    for (size_t e = 0; e < g->nedges; e++)
        if (g->edges[e].to >= 0 && g->edges[e].to != g->edges[e].from)
            reached[g->edges[e].to] = 1;
    int rc = 0;
    for (size_t k = 0; k < g->nblocks && rc == 0; k++)
        if (k == 0 || !reached[k])
            rc = add_edge(b, g, DCPI_CFG_ENTRY, (int)k, DCPI_CFG_E_OUTSIDE);
    free(reached);
    return rc;
}

/* Each block's lists of out- and in-edges. */
static int link_edges(dcpi_cfg_t *g)
{
    for (size_t e = 0; e < g->nedges; e++) {
        const dcpi_cfg_edge_t *ed = &g->edges[e];
        if (ed->from >= 0)
            g->blocks[ed->from].nsucc++;
        if (ed->to >= 0)
            g->blocks[ed->to].npred++;
    }
    for (size_t k = 0; k < g->nblocks; k++) {
        dcpi_cfg_block_t *bl = &g->blocks[k];
        bl->succ = calloc(bl->nsucc + 1, sizeof(size_t));
        bl->pred = calloc(bl->npred + 1, sizeof(size_t));
        if (!bl->succ || !bl->pred)
            return DCPI_ENOMEM;
        bl->nsucc = bl->npred = 0;
    }
    for (size_t e = 0; e < g->nedges; e++) {
        const dcpi_cfg_edge_t *ed = &g->edges[e];
        if (ed->from >= 0) {
            dcpi_cfg_block_t *bl = &g->blocks[ed->from];
            bl->succ[bl->nsucc++] = e;
        }
        if (ed->to >= 0) {
            dcpi_cfg_block_t *bl = &g->blocks[ed->to];
            bl->pred[bl->npred++] = e;
        }
    }
    return 0;
}

static int build_graph(build_t *b, dcpi_cfg_noreturn_fn noreturn, void *arg, dcpi_cfg_t *g)
{
    for (size_t i = 0; i < b->ls->n; i++)
        b->fl[i] = classify(&b->ls->insns[i]);
    mark_leaders(b, noreturn, arg, g);
    int rc = cut_blocks(b, g);
    for (size_t k = 0; k < g->nblocks && rc == 0; k++)
        rc = block_edges(b, g, (int)k);
    if (rc == 0)
        rc = outside_edges(b, g);
    if (rc == 0)
        rc = link_edges(g);
    return rc;
}

int dcpi_cfg_build(const dcpi_listing_t *ls, size_t e, dcpi_cfg_noreturn_fn noreturn, void *arg,
                   dcpi_cfg_t **out)
{
    *out = NULL;
    if (!ls || ls->n == 0 || e >= ls->nevents)
        return DCPI_EINVAL;
    dcpi_cfg_t *g = calloc(1, sizeof(*g));
    build_t b = {.ls = ls};
    b.fl = calloc(ls->n, sizeof(*b.fl));
    b.leader = calloc(ls->n, 1);
    b.noret = calloc(ls->n, 1);
    b.block_of = calloc(ls->n, sizeof(*b.block_of));
    int rc = DCPI_ENOMEM;
    if (!g || !b.fl || !b.leader || !b.noret || !b.block_of)
        goto out;
    g->ls = ls;
    g->event = e;
    rc = build_graph(&b, noreturn, arg, g);
out:
    free(b.block_of);
    free(b.noret);
    free(b.leader);
    free(b.fl);
    if (rc < 0)
        dcpi_cfg_free(g);
    else
        *out = g;
    return rc;
}

void dcpi_cfg_free(dcpi_cfg_t *g)
{
    if (!g)
        return;
    for (size_t k = 0; k < g->nblocks; k++) {
        free(g->blocks[k].succ);
        free(g->blocks[k].pred);
    }
    free(g->blocks);
    free(g->edges);
    free(g);
}

int dcpi_cfg_block_at(const dcpi_cfg_t *g, uint64_t vaddr)
{
    size_t a = 0, b = g->nblocks;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (g->blocks[m].hi <= vaddr)
            a = m + 1;
        else
            b = m;
    }
    return a < g->nblocks && g->blocks[a].lo <= vaddr ? (int)a : -1;
}

/* ---- calls that do not return ---- */

int dcpi_cfg_noreturn_name(const char *name)
{
    static const char *const names[] = {"abort",
                                        "exit",
                                        "_exit",
                                        "_Exit",
                                        "quick_exit",
                                        "pthread_exit",
                                        "__stack_chk_fail",
                                        "__assert_fail",
                                        "__assert_perror_fail",
                                        "__chk_fail",
                                        "__fortify_fail",
                                        "err",
                                        "errx",
                                        "verr",
                                        "verrx",
                                        "longjmp",
                                        "siglongjmp",
                                        "__longjmp_chk",
                                        "__cxa_throw",
                                        "__cxa_rethrow",
                                        "__cxa_bad_cast",
                                        "__cxa_bad_typeid",
                                        "__cxa_throw_bad_array_new_length",
                                        "_Unwind_Resume",
                                        NULL};
    size_t n = strcspn(name, "@");
    if (!strncmp(name, "std::__throw_", 13))
        return 1;
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == n && !strncmp(name, names[i], n))
            return 1;
    return 0;
}

int dcpi_cfg_symtab_noreturn(void *symtab, uint64_t target)
{
    const dcpi_symbol_t *sym = dcpi_symtab_lookup(symtab, target);
    return sym && sym->addr == target && dcpi_cfg_noreturn_name(sym->name);
}
