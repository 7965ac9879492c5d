/*
 * interp-int.h - what the interpreter's files share (internal to it, see interp.h): the
 * evaluation state, the flag helpers and operand reads; the handlers of interpdiv.c and
 * interpbits.c, which interp.c dispatches to. Include core/capture/interp.h (the DCPI_FLAG_* bits)
 * first: this header does not, so that interp.c including it makes no include cycle (deps.sh).
 */
#ifndef DCPI_CORE_INTERP_INT_H
#define DCPI_CORE_INTERP_INT_H

#include <stdint.h>
#include "core/capture/cpustate.h"
#include "dcpi/errno.h"

/* State of one evaluation. Values are kept masked to the operation width w. */
typedef struct ictx {
    const dcpi_insn_t *insn;
    const dcpi_regs_t *regs;
    unsigned w;       /* operation width in bits */
    uint64_t flags;   /* rflags before */
    uint64_t res;     /* the destination's value (w bits), or the full rax for mul/div */
    uint64_t written; /* status flags the instruction writes */
    uint64_t newf;    /* their new values */
    uint64_t undef;   /* status flags left undefined */
    int dest;         /* DEST_* */
    int has_mem;      /* dcpi_interp_mem: the memory source operand's value is memv */
    uint64_t memv;
} ictx_t;

enum { DEST_OP0, DEST_FLAGS, DEST_RAX64 };

static inline uint64_t mask_w(unsigned w)
{
    return w >= 64 ? ~0ull : (1ull << w) - 1;
}

static inline uint64_t msb(uint64_t v, unsigned w)
{
    return (v >> (w - 1)) & 1;
}

static inline int64_t sext(uint64_t v, unsigned w)
{
    if (w >= 64)
        return (int64_t)v;
    uint64_t sign = 1ull << (w - 1);
    return (int64_t)(((v & mask_w(w)) ^ sign) - sign);
}

/* Set flag bit f (one of DCPI_FLAG_*) to value v as written by the instruction. */
static inline void setf(ictx_t *c, uint64_t f, uint64_t v)
{
    c->written |= f;
    c->newf = v ? (c->newf | f) : (c->newf & ~f);
}

static inline void undef(ictx_t *c, uint64_t f)
{
    c->undef |= f;
}

static inline void set_szp(ictx_t *c, uint64_t r)
{
    setf(c, DCPI_FLAG_ZF, (r & mask_w(c->w)) == 0);
    setf(c, DCPI_FLAG_SF, msb(r, c->w));
    setf(c, DCPI_FLAG_PF, !__builtin_parity((unsigned)(r & 0xff)));
}

/* Operands. */
static inline int nops(const ictx_t *c)
{
    return c->insn->zi.operand_count_visible;
}

/* Operand i as a value of width w (registers: the sub-register; immediates: truncated). */
static inline int opval(const ictx_t *c, int i, uint64_t *v)
{
    const ZydisDecodedOperand *op = &c->insn->ops[i];
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
        return dcpi_capture_read_reg(c->regs, op->reg.value, v);
    if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && !op->imm.is_relative) {
        *v = op->imm.value.u & mask_w(c->w);
        return 0;
    }
    if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type == ZYDIS_MEMOP_TYPE_MEM &&
        c->has_mem) {
        *v = c->memv & mask_w(op->size ? op->size : 64);
        return 0;
    }
    return DCPI_ENOTSUP;
}

/* Both operands of a two-operand form (a = op0, b = op1). */
static inline int opval2(const ictx_t *c, uint64_t *a, uint64_t *b)
{
    int rc = opval(c, 0, a);
    return rc ? rc : opval(c, 1, b);
}

/* interpdiv.c: div/idiv. */
int dcpi__interp_div(ictx_t *c);
/* interpbits.c: bt/bts/btr/btc, lzcnt/tzcnt/bsf/bsr, rcl/rcr, shld/shrd. */
int dcpi__interp_bt(ictx_t *c);
int dcpi__interp_bitscan(ictx_t *c);
int dcpi__interp_rcx(ictx_t *c);
int dcpi__interp_shxd(ictx_t *c);

/* The count a shift or rotate uses: cnt masked to 6 bits for 64-bit operands, else 5 (SDM). */
static inline unsigned dcpi__interp_count(const ictx_t *c, uint64_t cnt)
{
    return (unsigned)(cnt & (c->w == 64 ? 63 : 31));
}

#endif
