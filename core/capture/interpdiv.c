/*
 * interpdiv.c - the x86-64 result interpreter's division (see interp.h): div and idiv of every
 * width, 128-bit dividends, the quotient in rax (8-bit: ax = remainder << 8 | quotient).
 * interp.c dispatches to it and owns the shared state and flag helpers (interp-int.h); checked
 * against the CPU by check_interp like the rest. A dividend whose quotient overflows, or a zero
 * divisor (the CPU faults, #DE), gives DCPI_ERANGE: the value is missing, never invented.
 */
#include "core/capture/interp.h"

#include "core/capture/interp-int.h"

/* ---- division -------------------------------------------------------------------------------- */

/* All ones in the low bits bits of a 128-bit value (bits 1..128). */
static unsigned __int128 mask128(unsigned bits)
{
    return bits >= 128 ? ~(unsigned __int128)0 : ((unsigned __int128)1 << bits) - 1;
}

/* div / idiv with a register divisor: the dividend is ax (8 bits) or dx:ax, edx:eax, rdx:rax;
 * the quotient goes to al / ax / eax / rax, the remainder to ah / dx / edx / rdx. The result is
 * rax (as for one-operand mul: for 8 bits ax holds both). #DE (divisor 0, quotient out of
 * range): DCPI_ERANGE. All six status flags are undefined. */
int dcpi__interp_div(ictx_t *c)
{
    uint64_t v, rax, rdx = 0;
    unsigned w = c->w;
    int rc = opval(c, 0, &v);
    if (!rc)
        rc = dcpi_capture_read_reg(c->regs, ZYDIS_REGISTER_RAX, &rax);
    if (!rc && w > 8)
        rc = dcpi_capture_read_reg(c->regs, ZYDIS_REGISTER_RDX, &rdx);
    if (rc)
        return rc;
    uint64_t m = mask_w(w);
    uint64_t lo = rax & m, hi = w == 8 ? (rax >> 8) & 0xff : rdx & m;
    unsigned __int128 d = ((unsigned __int128)hi << w) | lo, md = d, mv = v & m;
    int is_signed = c->insn->zi.mnemonic == ZYDIS_MNEMONIC_IDIV;
    int sd = is_signed && msb(hi, w), sv = is_signed && msb(v, w);
    if (sd)
        md = (0 - d) & mask128(2 * w);
    if (sv)
        mv = (0 - v) & m;
    if (mv == 0)
        return DCPI_ERANGE;
    unsigned __int128 uq = md / mv, ur = md % mv;
    unsigned __int128 limit = is_signed ? ((unsigned __int128)1 << (w - 1)) - (sd == sv) : m;
    if (uq > limit)
        return DCPI_ERANGE;
    uint64_t q = (uint64_t)(sd != sv ? 0 - uq : uq) & m, r = (uint64_t)(sd ? 0 - ur : ur) & m;
    if (w == 8)
        c->res = dcpi_capture_merge_reg(ZYDIS_REGISTER_AX, rax, q | (r << 8));
    else
        c->res = dcpi_capture_merge_reg(w == 16   ? ZYDIS_REGISTER_AX
                                        : w == 32 ? ZYDIS_REGISTER_EAX
                                                  : ZYDIS_REGISTER_RAX,
                                        rax, q);
    c->dest = DEST_RAX64;
    undef(c, DCPI_FLAGS_STATUS);
    return 0;
}
