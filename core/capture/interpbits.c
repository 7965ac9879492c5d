/*
 * interpbits.c - the x86-64 result interpreter's bit-level families (see interp.h): bit test
 * (bt/bts/btr/btc), bit scans and counts (lzcnt/tzcnt/bsf/bsr), rotates through carry (rcl/rcr)
 * and double shifts (shld/shrd), each a self-contained handler with its own width and count
 * rules. interp.c dispatches to them and owns the shared state and flag helpers
 * (interp-int.h); checked against the CPU by check_interp like the rest. An input whose result
 * is undefined (bsf/bsr of 0, a 16-bit shld/shrd by more
 * than 16) gives DCPI_ERANGE: the value is
 * missing, never invented.
 */
#include "core/capture/interp.h"

#include "core/capture/interp-int.h"

/* ---- bit test ---------------------------------------------------------------------------------
 */

/* bt / bts / btr / btc with a register base: the offset (register or imm8) is taken modulo the
 * width. CF = the bit before; OF, SF, AF, PF undefined; ZF kept. bt: the result is the new
 * rflags; the others: the register with the bit set / cleared / flipped. */
int dcpi__interp_bt(ictx_t *c)
{
    uint64_t a, b;
    int rc = opval2(c, &a, &b);
    if (rc)
        return rc;
    unsigned n = (unsigned)(b & (c->w - 1));
    uint64_t bit = 1ull << n;
    setf(c, DCPI_FLAG_CF, (a >> n) & 1);
    undef(c, DCPI_FLAG_OF | DCPI_FLAG_SF | DCPI_FLAG_AF | DCPI_FLAG_PF);
    switch (c->insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_BTS:
        c->res = a | bit;
        break;
    case ZYDIS_MNEMONIC_BTR:
        c->res = a & ~bit;
        break;
    case ZYDIS_MNEMONIC_BTC:
        c->res = a ^ bit;
        break;
    default: /* BT */
        c->res = a;
        c->dest = DEST_FLAGS;
        break;
    }
    return 0;
}

/* ---- bit scans ------------------------------------------------------------------------------- */

/* lzcnt / tzcnt: the count (the width for a zero source); CF = source is 0, ZF = count is 0,
 * OF, SF, AF, PF undefined. bsf / bsr: the index of the lowest / highest set bit, ZF = 0, the
 * others undefined; a zero source leaves the destination undefined: DCPI_ERANGE. */
int dcpi__interp_bitscan(ictx_t *c)
{
    uint64_t s;
    int rc = opval(c, 1, &s);
    if (rc)
        return rc;
    unsigned w = c->w;
    s &= mask_w(w);
    ZydisMnemonic mn = c->insn->zi.mnemonic;
    if (mn == ZYDIS_MNEMONIC_BSF || mn == ZYDIS_MNEMONIC_BSR) {
        if (s == 0)
            return DCPI_ERANGE;
        c->res = mn == ZYDIS_MNEMONIC_BSF ? (uint64_t)__builtin_ctzll(s)
                                          : (uint64_t)(63 - __builtin_clzll(s));
        setf(c, DCPI_FLAG_ZF, 0);
        undef(c, DCPI_FLAG_CF | DCPI_FLAG_OF | DCPI_FLAG_SF | DCPI_FLAG_AF | DCPI_FLAG_PF);
        return 0;
    }
    if (s == 0)
        c->res = w;
    else if (mn == ZYDIS_MNEMONIC_LZCNT)
        c->res = (uint64_t)(__builtin_clzll(s) - (64 - (int)w));
    else
        c->res = (uint64_t)__builtin_ctzll(s);
    setf(c, DCPI_FLAG_CF, s == 0);
    setf(c, DCPI_FLAG_ZF, c->res == 0);
    undef(c, DCPI_FLAG_OF | DCPI_FLAG_SF | DCPI_FLAG_AF | DCPI_FLAG_PF);
    return 0;
}

/* ---- rotates through carry ------------------------------------------------------------------- */

/* rcl / rcr by 1, imm8 or cl: the count is masked to 5 bits (6 for 64-bit), then taken modulo 9
 * (8-bit) or 17 (16-bit); the w + 1 bits of the register and CF rotate. Masked count 0: no flag
 * changes. CF = the last bit rotated into it; OF for a masked count of 1 only (rcl: msb ^ CF
 * after; rcr: msb ^ CF before); SF, ZF, AF, PF kept. */
int dcpi__interp_rcx(ictx_t *c)
{
    uint64_t a, cnt = 1;
    int rc = opval(c, 0, &a);
    if (!rc && nops(c) > 1)
        rc = opval(c, 1, &cnt);
    if (rc)
        return rc;
    unsigned w = c->w, n = dcpi__interp_count(c, cnt);
    c->res = a;
    if (n == 0)
        return 0;
    unsigned k = w == 8 ? n % 9 : w == 16 ? n % 17 : n;
    uint64_t cf = (c->flags & DCPI_FLAG_CF) != 0, m = mask_w(w);
    int left = c->insn->zi.mnemonic == ZYDIS_MNEMONIC_RCL;
    for (unsigned i = 0; i < k; i++) {
        uint64_t out = left ? msb(a, w) : a & 1;
        a = left ? ((a << 1) | cf) & m : (a >> 1) | (cf << (w - 1));
        cf = out;
    }
    c->res = a;
    setf(c, DCPI_FLAG_CF, cf);
    setf(c, DCPI_FLAG_OF, left ? msb(a, w) ^ cf : msb(a, w) ^ ((a >> (w - 2)) & 1));
    if (n != 1)
        undef(c, DCPI_FLAG_OF);
    return 0;
}

/* ---- double shifts --------------------------------------------------------------------------- */

/* shld / shrd dst, src, imm8 or cl: the count is masked to 5 bits (6 for 64-bit); 0 changes no
 * flag. dst shifts, src's bits fill in. CF = the last bit shifted out of dst; SF, ZF, PF from the
 * result; OF (sign change) for a count of 1 only; AF undefined. A count above the width (16-bit
 * only: 17..31) leaves result and flags undefined: DCPI_ERANGE. */
int dcpi__interp_shxd(ictx_t *c)
{
    uint64_t a, b, cnt;
    int rc = opval2(c, &a, &b);
    if (!rc)
        rc = opval(c, 2, &cnt);
    if (rc)
        return rc;
    unsigned w = c->w, n = dcpi__interp_count(c, cnt);
    c->res = a;
    if (n == 0)
        return 0;
    if (n > w)
        return DCPI_ERANGE;
    uint64_t m = mask_w(w), cf;
    if (c->insn->zi.mnemonic == ZYDIS_MNEMONIC_SHLD) {
        c->res = n == w ? b : ((a << n) | (b >> (w - n))) & m;
        cf = (a >> (w - n)) & 1;
    } else {
        c->res = n == w ? b : ((a >> n) | (b << (w - n))) & m;
        cf = (a >> (n - 1)) & 1;
    }
    setf(c, DCPI_FLAG_CF, cf);
    set_szp(c, c->res);
    setf(c, DCPI_FLAG_OF, msb(c->res, w) ^ msb(a, w));
    if (n != 1)
        undef(c, DCPI_FLAG_OF);
    undef(c, DCPI_FLAG_AF);
    return 0;
}
