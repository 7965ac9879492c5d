/*
 * interp.c - the x86-64 result interpreter of the regs backend (see interp.h): evaluates
 * register/immediate-only integer instructions from the registers before them, with the
 * status flags they write.
 * This file holds the dispatch table (a case per mnemonic family) and the conditions, moves,
 * add/sub and logic, shifts and rotates, multiplication; interpdiv.c the division, interpbits.c the
 * bit-level families (bt*, bit scans, rcl/rcr, shld/shrd). They share the state and flag helpers
 * through interp-int.h; check_interp checks all of them against the CPU.
 */
#include "core/capture/interp.h"

#include "core/capture/interp-int.h"

/* ---- conditions ----------------------------------------------------------------------------- */

int dcpi_interp_cond(int cc, uint64_t f)
{
    int cf = (f & DCPI_FLAG_CF) != 0, zf = (f & DCPI_FLAG_ZF) != 0;
    int sf = (f & DCPI_FLAG_SF) != 0, of = (f & DCPI_FLAG_OF) != 0;
    int pf = (f & DCPI_FLAG_PF) != 0;
    int r;
    switch (cc >> 1) {
    case 0:
        r = of;
        break;
    case 1:
        r = cf;
        break;
    case 2:
        r = zf;
        break;
    case 3:
        r = cf || zf;
        break;
    case 4:
        r = sf;
        break;
    case 5:
        r = pf;
        break;
    case 6:
        r = sf != of;
        break;
    default:
        r = zf || sf != of;
        break;
    }
    return (cc & 1) ? !r : r;
}

#define CC3(n, cc)                                                                                 \
    {ZYDIS_MNEMONIC_J##n, cc}, {ZYDIS_MNEMONIC_CMOV##n, cc},                                       \
    {                                                                                              \
        ZYDIS_MNEMONIC_SET##n, cc                                                                  \
    }

static const struct {
    ZydisMnemonic m;
    int8_t cc;
} cond_table[] = {
    CC3(O, 0),  CC3(NO, 1),  CC3(B, 2),   CC3(NB, 3),   CC3(Z, 4),  CC3(NZ, 5),
    CC3(BE, 6), CC3(NBE, 7), CC3(S, 8),   CC3(NS, 9),   CC3(P, 10), CC3(NP, 11),
    CC3(L, 12), CC3(NL, 13), CC3(LE, 14), CC3(NLE, 15),
};

int dcpi_interp_cond_of(ZydisMnemonic m)
{
    for (size_t i = 0; i < sizeof(cond_table) / sizeof(cond_table[0]); i++) {
        if (cond_table[i].m == m)
            return cond_table[i].cc;
    }
    return -1;
}

/* ---- moves --------------------------------------------------------------------------------- */

static int do_mov(ictx_t *c)
{
    return opval(c, 1, &c->res);
}

static int do_movx(ictx_t *c)
{
    uint64_t v;
    int rc = opval(c, 1, &v);
    if (rc)
        return rc;
    unsigned sw = c->insn->ops[1].size;
    c->res = c->insn->zi.mnemonic == ZYDIS_MNEMONIC_MOVZX ? v : (uint64_t)sext(v, sw);
    c->res &= mask_w(c->w);
    return 0;
}

static int do_lea(ictx_t *c)
{
    uint64_t ea;
    int rc = dcpi_capture_ea(c->insn, &c->insn->ops[1], c->regs, &ea);
    if (rc)
        return rc;
    c->res = ea & mask_w(c->w);
    return 0;
}

static int do_cmov(ictx_t *c)
{
    uint64_t a, b;
    int rc = opval2(c, &a, &b);
    if (rc)
        return rc;
    /* The destination is written even when the condition fails (32-bit: zero-extended). */
    c->res = dcpi_interp_cond(dcpi_interp_cond_of(c->insn->zi.mnemonic), c->flags) ? b : a;
    return 0;
}

static int do_setcc(ictx_t *c)
{
    c->res = (uint64_t)dcpi_interp_cond(dcpi_interp_cond_of(c->insn->zi.mnemonic), c->flags);
    return 0;
}

static int do_xchg(ictx_t *c)
{
    if (c->insn->ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
        return DCPI_ENOTSUP;
    return opval(c, 1, &c->res); /* op0 receives op1's old value */
}

static int do_bswap(ictx_t *c)
{
    uint64_t a;
    int rc = opval(c, 0, &a);
    if (rc)
        return rc;
    if (c->w == 64)
        c->res = __builtin_bswap64(a);
    else if (c->w == 32)
        c->res = __builtin_bswap32((uint32_t)a);
    else
        return DCPI_ENOTSUP; /* 16-bit bswap is undefined */
    return 0;
}

static int do_popcnt(ictx_t *c)
{
    uint64_t b;
    int rc = opval(c, 1, &b);
    if (rc)
        return rc;
    c->res = (uint64_t)__builtin_popcountll(b);
    setf(c, DCPI_FLAG_ZF, b == 0);
    setf(c, DCPI_FLAG_CF, 0);
    setf(c, DCPI_FLAG_PF, 0);
    setf(c, DCPI_FLAG_AF, 0);
    setf(c, DCPI_FLAG_SF, 0);
    setf(c, DCPI_FLAG_OF, 0);
    return 0;
}

/* ---- add / sub family ------------------------------------------------------------------------ */

static void flags_add(ictx_t *c, uint64_t a, uint64_t b, uint64_t cin, uint64_t r)
{
    uint64_t cf = c->w < 64 ? ((a + b + cin) >> c->w) & 1 : (r < a || (cin && r == a));
    setf(c, DCPI_FLAG_CF, cf);
    setf(c, DCPI_FLAG_OF, msb((a ^ r) & (b ^ r), c->w));
    setf(c, DCPI_FLAG_AF, ((a ^ b ^ r) >> 4) & 1);
    set_szp(c, r);
}

static void flags_sub(ictx_t *c, uint64_t a, uint64_t b, uint64_t bin, uint64_t r)
{
    setf(c, DCPI_FLAG_CF, a < b || (bin && a == b));
    setf(c, DCPI_FLAG_OF, msb((a ^ b) & (a ^ r), c->w));
    setf(c, DCPI_FLAG_AF, ((a ^ b ^ r) >> 4) & 1);
    set_szp(c, r);
}

static int do_addsub(ictx_t *c)
{
    uint64_t a, b;
    int rc = opval2(c, &a, &b);
    if (rc)
        return rc;
    uint64_t m = mask_w(c->w), carry = (c->flags & DCPI_FLAG_CF) != 0;
    switch (c->insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_ADD:
        carry = 0; /* fall through */
    case ZYDIS_MNEMONIC_ADC:
        c->res = (a + b + carry) & m;
        flags_add(c, a, b, carry, c->res);
        break;
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_CMP:
        carry = 0; /* fall through */
    default:       /* SBB */
        c->res = (a - b - carry) & m;
        flags_sub(c, a, b, carry, c->res);
        break;
    }
    if (c->insn->zi.mnemonic == ZYDIS_MNEMONIC_CMP)
        c->dest = DEST_FLAGS;
    return 0;
}

static int do_incdec(ictx_t *c)
{
    uint64_t a;
    int rc = opval(c, 0, &a);
    if (rc)
        return rc;
    uint64_t m = mask_w(c->w);
    if (c->insn->zi.mnemonic == ZYDIS_MNEMONIC_INC) {
        c->res = (a + 1) & m;
        flags_add(c, a, 1, 0, c->res);
    } else {
        c->res = (a - 1) & m;
        flags_sub(c, a, 1, 0, c->res);
    }
    c->written &= ~DCPI_FLAG_CF; /* CF is kept */
    return 0;
}

static int do_neg(ictx_t *c)
{
    uint64_t a;
    int rc = opval(c, 0, &a);
    if (rc)
        return rc;
    c->res = (0 - a) & mask_w(c->w);
    flags_sub(c, 0, a, 0, c->res);
    setf(c, DCPI_FLAG_CF, a != 0);
    return 0;
}

static int do_not(ictx_t *c)
{
    uint64_t a;
    int rc = opval(c, 0, &a);
    if (rc)
        return rc;
    c->res = ~a & mask_w(c->w);
    return 0;
}

static int do_logic(ictx_t *c)
{
    uint64_t a, b;
    int rc = opval2(c, &a, &b);
    if (rc)
        return rc;
    switch (c->insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_OR:
        c->res = a | b;
        break;
    case ZYDIS_MNEMONIC_XOR:
        c->res = a ^ b;
        break;
    default:
        c->res = a & b;
        break; /* AND, TEST */
    }
    setf(c, DCPI_FLAG_CF, 0);
    setf(c, DCPI_FLAG_OF, 0);
    set_szp(c, c->res);
    undef(c, DCPI_FLAG_AF);
    if (c->insn->zi.mnemonic == ZYDIS_MNEMONIC_TEST)
        c->dest = DEST_FLAGS;
    return 0;
}

/* ---- shifts and rotates --------------------------------------------------------------------- */

static void shift_flags(ictx_t *c, unsigned n, uint64_t cf, int cf_defined, uint64_t of)
{
    setf(c, DCPI_FLAG_CF, cf);
    if (!cf_defined)
        undef(c, DCPI_FLAG_CF);
    setf(c, DCPI_FLAG_OF, of);
    if (n != 1)
        undef(c, DCPI_FLAG_OF);
    set_szp(c, c->res);
    setf(c, DCPI_FLAG_AF, 0);
    undef(c, DCPI_FLAG_AF);
}

static void do_shl(ictx_t *c, uint64_t a, unsigned n)
{
    c->res = (a << n) & mask_w(c->w);
    uint64_t cf = n <= c->w ? (a >> (c->w - n)) & 1 : 0;
    shift_flags(c, n, cf, n < c->w, msb(c->res, c->w) ^ cf);
}

static void do_shr(ictx_t *c, uint64_t a, unsigned n)
{
    c->res = a >> n;
    uint64_t cf = n <= c->w ? (a >> (n - 1)) & 1 : 0;
    shift_flags(c, n, cf, n < c->w, msb(a, c->w));
}

static void do_sar(ictx_t *c, uint64_t a, unsigned n)
{
    int64_t sa = sext(a, c->w);
    c->res = (uint64_t)(sa >> n) & mask_w(c->w);
    shift_flags(c, n, (uint64_t)(sa >> (n - 1)) & 1, 1, 0);
}

static void do_rotate(ictx_t *c, uint64_t a, unsigned n)
{
    unsigned k = n % c->w, w = c->w;
    int left = c->insn->zi.mnemonic == ZYDIS_MNEMONIC_ROL;
    uint64_t r = a;
    if (k)
        r = left ? (a << k) | (a >> (w - k)) : (a >> k) | (a << (w - k));
    c->res = r & mask_w(w);
    uint64_t cf = left ? c->res & 1 : msb(c->res, w);
    uint64_t of = left ? msb(c->res, w) ^ cf : msb(c->res, w) ^ ((c->res >> (w - 2)) & 1);
    setf(c, DCPI_FLAG_CF, cf);
    setf(c, DCPI_FLAG_OF, of);
    if (n != 1)
        undef(c, DCPI_FLAG_OF);
}

static int do_shift(ictx_t *c)
{
    uint64_t a, cnt = 1;
    int rc = opval(c, 0, &a);
    if (!rc && nops(c) > 1)
        rc = opval(c, 1, &cnt);
    if (rc)
        return rc;
    unsigned n = dcpi__interp_count(c, cnt);
    c->res = a;
    if (n == 0)
        return 0; /* no flag changes; the register is still written */
    switch (c->insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_SHL:
        do_shl(c, a, n);
        break;
    case ZYDIS_MNEMONIC_SHR:
        do_shr(c, a, n);
        break;
    case ZYDIS_MNEMONIC_SAR:
        do_sar(c, a, n);
        break;
    default:
        do_rotate(c, a, n);
        break;
    }
    return 0;
}

/* ---- multiplication ------------------------------------------------------------------------ */

static void mul_flags(ictx_t *c, int overflow)
{
    setf(c, DCPI_FLAG_CF, overflow);
    setf(c, DCPI_FLAG_OF, overflow);
    undef(c, DCPI_FLAG_SF | DCPI_FLAG_ZF | DCPI_FLAG_AF | DCPI_FLAG_PF);
}

/* High 64 bits of the unsigned 128-bit product a * b. */
static uint64_t mulhi_u64(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* imul with two or three operands: truncated signed product. */
static int do_imul_n(ictx_t *c)
{
    uint64_t a, b;
    int first = nops(c) == 3 ? 1 : 0;
    int rc = opval(c, first, &a);
    if (!rc)
        rc = opval(c, first + 1, &b);
    if (rc)
        return rc;
    int64_t sa = sext(a, c->w), sb = sext(b, c->w), p;
    int ovf;
    if (c->w == 64) {
        ovf = __builtin_mul_overflow(sa, sb, &p);
        p = (int64_t)((uint64_t)sa * (uint64_t)sb);
    } else {
        p = sa * sb;
        ovf = sext((uint64_t)p, c->w) != p;
    }
    c->res = (uint64_t)p & mask_w(c->w);
    mul_flags(c, ovf);
    return 0;
}

/* Low and high halves (w bits each) of the one-operand product of a and b. */
static int mul_halves(unsigned w, int is_signed, uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi)
{
    if (w == 64) {
        uint64_t h = mulhi_u64(a, b);
        if (is_signed)
            h -= ((int64_t)a < 0 ? b : 0) + ((int64_t)b < 0 ? a : 0);
        *lo = a * b;
        *hi = h;
        return is_signed ? (*hi != (uint64_t)((int64_t)*lo >> 63)) : *hi != 0;
    }
    uint64_t p = is_signed ? (uint64_t)(sext(a, w) * sext(b, w)) : a * b;
    *lo = p & mask_w(w);
    *hi = (p >> w) & mask_w(w);
    return is_signed ? sext(*lo, w) != (int64_t)p : *hi != 0;
}

/* mul / imul with one operand: rdx:rax (ax for 8 bits) = rax * src; the result is rax. */
static int do_mul1(ictx_t *c)
{
    uint64_t src, a, rax, lo, hi;
    int rc = opval(c, 0, &src);
    if (!rc)
        rc = dcpi_capture_read_reg(c->regs, ZYDIS_REGISTER_RAX, &rax);
    if (rc)
        return rc;
    a = rax & mask_w(c->w);
    int is_signed = c->insn->zi.mnemonic == ZYDIS_MNEMONIC_IMUL;
    int ovf = mul_halves(c->w, is_signed, a, src, &lo, &hi);
    if (c->w == 8)
        c->res = dcpi_capture_merge_reg(ZYDIS_REGISTER_AX, rax, lo | (hi << 8));
    else
        c->res = dcpi_capture_merge_reg(c->w == 16   ? ZYDIS_REGISTER_AX
                                        : c->w == 32 ? ZYDIS_REGISTER_EAX
                                                     : ZYDIS_REGISTER_RAX,
                                        rax, lo);
    c->dest = DEST_RAX64;
    mul_flags(c, ovf);
    return 0;
}

static int do_imul(ictx_t *c)
{
    return nops(c) == 1 ? do_mul1(c) : do_imul_n(c);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

typedef int (*handler_fn)(ictx_t *c);

/* The handler of the moves, additions and logic (NULL: none of them). */
static handler_fn handler_of_common(ZydisMnemonic m)
{
    switch (m) {
    case ZYDIS_MNEMONIC_MOV:
        return do_mov;
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
        return do_movx;
    case ZYDIS_MNEMONIC_LEA:
        return do_lea;
    case ZYDIS_MNEMONIC_XCHG:
        return do_xchg;
    case ZYDIS_MNEMONIC_BSWAP:
        return do_bswap;
    case ZYDIS_MNEMONIC_POPCNT:
        return do_popcnt;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_ADC:
    case ZYDIS_MNEMONIC_SUB:
    case ZYDIS_MNEMONIC_SBB:
    case ZYDIS_MNEMONIC_CMP:
        return do_addsub;
    case ZYDIS_MNEMONIC_INC:
    case ZYDIS_MNEMONIC_DEC:
        return do_incdec;
    case ZYDIS_MNEMONIC_NEG:
        return do_neg;
    case ZYDIS_MNEMONIC_NOT:
        return do_not;
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_TEST:
        return do_logic;
    default:
        return NULL;
    }
}

/* The handler of the shifts, multiplications, divisions and bit families (NULL: none). */
static handler_fn handler_of_bits(ZydisMnemonic m)
{
    switch (m) {
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR:
    case ZYDIS_MNEMONIC_ROL:
    case ZYDIS_MNEMONIC_ROR:
        return do_shift;
    case ZYDIS_MNEMONIC_IMUL:
        return do_imul;
    case ZYDIS_MNEMONIC_MUL:
        return do_mul1;
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
        return dcpi__interp_div;
    case ZYDIS_MNEMONIC_BT:
    case ZYDIS_MNEMONIC_BTS:
    case ZYDIS_MNEMONIC_BTR:
    case ZYDIS_MNEMONIC_BTC:
        return dcpi__interp_bt;
    case ZYDIS_MNEMONIC_LZCNT:
    case ZYDIS_MNEMONIC_TZCNT:
    case ZYDIS_MNEMONIC_BSF:
    case ZYDIS_MNEMONIC_BSR:
        return dcpi__interp_bitscan;
    case ZYDIS_MNEMONIC_RCL:
    case ZYDIS_MNEMONIC_RCR:
        return dcpi__interp_rcx;
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD:
        return dcpi__interp_shxd;
    default:
        return NULL;
    }
}

static handler_fn handler_of(ZydisMnemonic m)
{
    handler_fn fn = handler_of_common(m);
    if (!fn)
        fn = handler_of_bits(m);
    if (fn)
        return fn;
    int cc = dcpi_interp_cond_of(m);
    if (cc < 0)
        return NULL;
    if (m >= ZYDIS_MNEMONIC_CMOVB && m <= ZYDIS_MNEMONIC_CMOVZ)
        return do_cmov;
    if (m >= ZYDIS_MNEMONIC_SETB && m <= ZYDIS_MNEMONIC_SETZ)
        return do_setcc;
    return NULL; /* jcc */
}

/* Whether insn touches memory (anything but lea's address computation). */
static int uses_memory(const dcpi_insn_t *insn)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        if (op->type == ZYDIS_OPERAND_TYPE_POINTER)
            return 1;
        if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type != ZYDIS_MEMOP_TYPE_AGEN)
            return 1;
    }
    return 0;
}

/* The full 64-bit result (see interp.h) after a successful handler. */
static int finish(const ictx_t *c, uint64_t *result)
{
    if (c->dest == DEST_RAX64) {
        *result = c->res;
        return 0;
    }
    uint64_t f = (c->flags & ~c->written) | (c->newf & c->written);
    if (c->dest == DEST_FLAGS) {
        *result = f;
        return 0;
    }
    const ZydisDecodedOperand *op = &c->insn->ops[0];
    if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
        return DCPI_ENOTSUP;
    int idx = dcpi_capture_perf_index(op->reg.value);
    if (idx < 0)
        return DCPI_ENOTSUP;
    if (!(c->regs->valid & (1ull << idx)))
        return DCPI_ENOENT;
    *result = dcpi_capture_merge_reg(op->reg.value, c->regs->r[idx], c->res);
    return 0;
}

/* Whether insn's only memory access is one read of one operand (a load's source, an ALU op's
 * memory source, cmp/test's memory operand): nothing written to memory, no stack, no pointer. */
static int reads_one_memory(const dcpi_insn_t *insn)
{
    int n = 0;
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        if (op->type == ZYDIS_OPERAND_TYPE_POINTER)
            return 0;
        if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
            continue;
        if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) ||
            op->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
            return 0;
        n++;
    }
    return n == 1;
}

static int interp_run(const dcpi_insn_t *insn, const dcpi_regs_t *before, int has_mem,
                      uint64_t memv, uint64_t *result, uint64_t *new_flags, uint64_t *undefined)
{
    if (!insn || !before || !result || !new_flags)
        return DCPI_EINVAL;
    handler_fn fn = handler_of(insn->zi.mnemonic);
    if (!fn || insn->zi.operand_count_visible == 0 ||
        (uses_memory(insn) && !(has_mem && reads_one_memory(insn))))
        return DCPI_ENOTSUP;
    if (!(before->valid & (1ull << DCPI_REG_FLAGS)))
        return DCPI_ENOENT; /* the new rflags are built on the old ones */
    ictx_t c = {
        .insn = insn,
        .regs = before,
        .w = insn->ops[0].size,
        .flags = before->r[DCPI_REG_FLAGS],
        .dest = DEST_OP0,
        .has_mem = has_mem,
        .memv = memv,
    };
    if (c.w != 8 && c.w != 16 && c.w != 32 && c.w != 64)
        return DCPI_ENOTSUP;
    uint64_t res;
    int rc = fn(&c);
    if (!rc)
        rc = finish(&c, &res);
    if (rc)
        return rc;
    *result = res;
    *new_flags = (c.flags & ~c.written) | (c.newf & c.written);
    if (undefined)
        *undefined = c.undef;
    return 0;
}

int dcpi_interp(const dcpi_insn_t *insn, const dcpi_regs_t *before, uint64_t *result,
                uint64_t *new_flags, uint64_t *undefined)
{
    return interp_run(insn, before, 0, 0, result, new_flags, undefined);
}

int dcpi_interp_mem(const dcpi_insn_t *insn, const dcpi_regs_t *before, uint64_t memval,
                    uint64_t *result, uint64_t *new_flags)
{
    return interp_run(insn, before, 1, memval, result, new_flags, NULL);
}
