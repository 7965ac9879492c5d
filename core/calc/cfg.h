/*
 * cfg.h - dcpicalc's model of one procedure (docs/dcpicalc.md): the control-flow graph of a
 * decoded listing (core/listing/listing.h) split into basic blocks, the samples of one event
 * summed per block, and an estimate of every block's execution frequency from those samples.
 * cfg.c builds the graph, cfgfreq.c estimates the frequencies, cfgprint.c prints text and
 * Graphviz dot.
 *
 * Blocks: a block starts at the procedure's entry, at the target of a direct branch inside the
 * procedure, and after every instruction that ends a block: a conditional or unconditional
 * branch, a return, an instruction that never falls through (ud2, hlt, int3) and a call whose
 * target the caller says does not return (noreturn callback). Other calls do not end a block.
 *
 * Edges: a conditional branch gives its taken edge and its fall-through; a direct jump its
 * target; a branch to an address outside the procedure (a tail call) and a return leave the
 * procedure (DCPI_CFG_EXIT); an indirect jump (jump table) leads to DCPI_CFG_UNKNOWN; a block
 * whose last instruction does not end it falls through into the next block (or out of the
 * procedure, DCPI_CFG_EXIT, at its end). The entry and every other block that no edge reaches
 * are fed from outside (DCPI_CFG_ENTRY: the calls, and for the others code the graph cannot see:
 * jump tables' targets, or padding nothing reaches).
 */
#ifndef DCPI_CORE_CALC_CFG_H
#define DCPI_CORE_CALC_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "core/listing/listing.h"
#include "core/image/symbols.h"

/* The ends of edges that are no block (the values of dcpi_cfg_edge_t.from / .to). */
#define DCPI_CFG_ENTRY   (-1) /* from outside: the calls (into block 0), or code not seen */
#define DCPI_CFG_EXIT    (-2) /* out of the procedure: ret, tail jump, fall off its end */
#define DCPI_CFG_UNKNOWN (-3) /* an indirect jump's targets */
#define DCPI_CFG_NORET   (-4) /* nowhere: ud2, hlt, int3, a call that does not return */

enum dcpi_cfg_ekind {
    DCPI_CFG_E_FALL,   /* fall-through (a conditional branch not taken, or no branch) */
    DCPI_CFG_E_TAKEN,  /* a conditional branch taken */
    DCPI_CFG_E_JUMP,   /* an unconditional direct jump */
    DCPI_CFG_E_RET,    /* a return */
    DCPI_CFG_E_IND,    /* an indirect jump */
    DCPI_CFG_E_STOP,   /* the block stops the thread or the call does not return */
    DCPI_CFG_E_OUTSIDE /* fed from outside (from DCPI_CFG_ENTRY) */
};

typedef struct dcpi_cfg_edge {
    int from, to; /* block indexes, or DCPI_CFG_ENTRY/EXIT/UNKNOWN/NORET */
    enum dcpi_cfg_ekind kind;
    double freq; /* estimated executions, in the blocks' unit (cfgfreq.c); < 0: unknown */
} dcpi_cfg_edge_t;

/* How a block's frequency was found (cfgfreq.c). */
enum dcpi_cfg_fsrc {
    DCPI_CFG_F_NONE,    /* not estimated */
    DCPI_CFG_F_SAMPLES, /* its own samples / its cost */
    DCPI_CFG_F_FLOW     /* flow conservation from blocks estimated before it */
};

typedef struct dcpi_cfg_block {
    uint64_t lo, hi;  /* [lo, hi): its bytes */
    size_t first, n;  /* its instructions: ls->insns[first .. first + n) */
    uint64_t samples; /* the samples of the chosen event on its instructions */
    double cost;      /* static cost of one execution (cfgfreq.c's model) */
    double local;     /* samples / cost */
    double freq;      /* estimated frequency (samples per unit of cost, after the flow) */
    enum dcpi_cfg_fsrc src;
    size_t *succ, nsucc; /* indexes into cfg->edges of its out-edges, in order */
    size_t *pred, npred; /* and its in-edges */
} dcpi_cfg_block_t;

/* The cost model of a block's execution time (docs/dcpicalc.md). */
enum dcpi_cfg_model {
    DCPI_CFG_LATENCY, /* a static latency per instruction class (the default) */
    DCPI_CFG_INSNS    /* one unit per instruction */
};

typedef struct dcpi_cfg {
    const dcpi_listing_t *ls; /* borrowed */
    size_t event;             /* the event of ls whose samples are used */
    dcpi_cfg_block_t *blocks; /* address order; blocks[0] is the entry */
    size_t nblocks;
    dcpi_cfg_edge_t *edges;
    size_t nedges;
    uint64_t samples; /* the procedure's samples of the event */
    int has_unknown;  /* 1: an indirect jump (edges to DCPI_CFG_UNKNOWN) */
    int n_noreturn;   /* calls taken for calls that do not return */
    int per_call;     /* 1: the entry's estimate rests on enough samples (freq / entry) */
} dcpi_cfg_t;

/* The caller's answer whether a call to target never returns (NULL callback: every call
 * returns). */
typedef int (*dcpi_cfg_noreturn_fn)(void *arg, uint64_t target);

/*
 * A dcpi_cfg_noreturn_fn over a symbol table (arg: a dcpi_symtab_t): 1 when a symbol starts at
 * target and its name (without "@plt" and a version "@...") is one of the C library's and C++
 * runtime's functions that never return: abort, exit, _exit, _Exit, quick_exit, pthread_exit,
 * __stack_chk_fail, __assert_fail, __assert_perror_fail, __chk_fail, __fortify_fail, err, errx,
 * verr, verrx, longjmp, siglongjmp, __longjmp_chk, __cxa_throw, __cxa_rethrow,
 * __cxa_bad_cast, __cxa_bad_typeid, __cxa_throw_bad_array_new_length, _Unwind_Resume and the
 * std::__throw_* functions.
 */
int dcpi_cfg_symtab_noreturn(void *symtab, uint64_t target);
/* 1 when name (as above) is one of those functions. */
int dcpi_cfg_noreturn_name(const char *name);

/*
 * The graph of ls's instructions (decoded, samples attributed) with the samples of event e.
 * 0, DCPI_ENOMEM, or DCPI_EINVAL (no instructions, e out of range).
 */
int dcpi_cfg_build(const dcpi_listing_t *ls, size_t e, dcpi_cfg_noreturn_fn noreturn, void *arg,
                   dcpi_cfg_t **out);
void dcpi_cfg_free(dcpi_cfg_t *g);

/* The block holding vaddr (a block's lo..hi), or -1. */
int dcpi_cfg_block_at(const dcpi_cfg_t *g, uint64_t vaddr);

/* The static cost of one instruction under model m (cfgfreq.c). */
double dcpi_cfg_insn_cost(const dcpi_lst_insn_t *in, enum dcpi_cfg_model m);

/* The entry block needs this many samples of its own for per-call figures. */
#define DCPI_CFG_MIN_ENTRY 20

/*
 * Estimate every block's and edge's frequency (docs/dcpicalc.md, "The estimator"): each block's
 * local estimate is samples / cost; then, hottest block first, a block whose frequency flow
 * conservation does not yet fix from the blocks estimated before it takes its local estimate,
 * and the flow rules are applied until nothing changes. Sets g->per_call.
 */
void dcpi_cfg_estimate(dcpi_cfg_t *g, enum dcpi_cfg_model m);
/* The estimated calls (the edge from outside into the entry block), or -1 when the flow did not
 * fix it. Per-call figures are freq / calls (when g->per_call). */
double dcpi_cfg_calls(const dcpi_cfg_t *g);

/* Printing options. */
typedef struct dcpi_cfg_popts {
    double cutoff; /* blocks under this % of the procedure's samples are left out */
} dcpi_cfg_popts_t;

/* Text: the summary lines, the blocks hottest first, then each block's instructions. */
void dcpi_cfg_print_text(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f);
/* Graphviz dot: one node per block (address, samples, frequency; colour by heat), one edge per
 * edge (kind and frequency). */
void dcpi_cfg_print_dot(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f);
/* A block's name in the printouts ("B3"), or the name of a virtual end ("exit", ...). */
const char *dcpi_cfg_end_name(int end, char *buf, size_t len);

#endif
