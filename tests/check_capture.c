/*
 * check_capture.c - the regs backend's value capture (core/capture/capture.c): the perf register
 * mask of a vlist, instruction decoding, effective addresses, operand roles (REGA/REGB/REGC),
 * branch outcome and target, and the rule that a value never computable is marked missing.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "core/capture/capture.h"
#include "core/capture/interp.h"
#include "dcpi/errno.h"

#define PC     0x401000ull
#define BIT(r) (1ull << (r))

/* ---- helpers ----------------------------------------------------------------------------- */

static dcpi_regs_t base_regs(void)
{
    dcpi_regs_t regs = {.valid = DCPI_REGS_FULL_MASK};
    regs.r[DCPI_REG_AX] = 0x1111;
    regs.r[DCPI_REG_BX] = 0x10000;
    regs.r[DCPI_REG_CX] = 3;
    regs.r[DCPI_REG_DX] = 0xdddd;
    regs.r[DCPI_REG_SI] = 0x5151;
    regs.r[DCPI_REG_DI] = 0xd1d1;
    regs.r[DCPI_REG_BP] = 0x7ffc0100;
    regs.r[DCPI_REG_SP] = 0x7ffc0000;
    regs.r[DCPI_REG_IP] = PC;
    regs.r[DCPI_REG_FLAGS] = 0x202;
    for (int i = DCPI_REG_R8; i <= DCPI_REG_R15; i++)
        regs.r[i] = 0x800 + (uint64_t)i;
    return regs;
}

static void decode(dcpi_insn_t *insn, const uint8_t *b, size_t n)
{
    ck_assert_int_eq(dcpi_capture_decode(b, n, PC, insn), (int)n);
}

#define DECODE(insn, ...)                                                                          \
    decode(insn, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

/* One value of kind k; returns 1 when present (value in *v), 0 when missing (*v must be 0). */
static int value1(const dcpi_insn_t *insn, const dcpi_regs_t *regs, trace_value_t k, uint64_t *v)
{
    unsigned missing = 0xdead;
    *v = 0x5a5a5a5a;
    dcpi_capture_values(insn, regs, &k, 1, v, &missing);
    ck_assert_uint_le(missing, 1);
    if (missing)
        ck_assert_uint_eq(*v, 0);
    return !missing;
}

static void expect(const dcpi_insn_t *insn, const dcpi_regs_t *regs, trace_value_t k, uint64_t want)
{
    uint64_t v;
    ck_assert_msg(value1(insn, regs, k, &v), "%s: %s missing", insn->inst.mnemonic,
                  trace_value_name(k));
    ck_assert_msg(v == want, "%s: %s = %#llx, want %#llx", insn->inst.mnemonic, trace_value_name(k),
                  (unsigned long long)v, (unsigned long long)want);
}

static void expect_missing(const dcpi_insn_t *insn, const dcpi_regs_t *regs, trace_value_t k)
{
    uint64_t v;
    ck_assert_msg(!value1(insn, regs, k, &v), "%s: %s present (%#llx), should be missing",
                  insn->inst.mnemonic, trace_value_name(k), (unsigned long long)v);
}

/* ---- memory read at the sample (the bp backend's BPF) ------------------------------------ */

/* Memory read at the sample: used where the address the capture computes is the one read. */
START_TEST(test_memory_read)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    r.mem_ok = 1;
    r.mem_ea = 0x10008;
    r.mem_val = 0x1122334455667788ull;
    DECODE(&in, 0x48, 0x03, 0x43, 0x08); /* add rax,[rbx+8]: the memory source and the result */
    expect(&in, &r, TRACE_MEMVAL, 0x1122334455667788ull);
    expect(&in, &r, TRACE_REGB, 0x1122334455667788ull);
    DECODE(&in, 0x8b, 0x43, 0x08); /* mov eax,[rbx+8]: 4 bytes of the 8 read */
    expect(&in, &r, TRACE_MEMVAL, 0x55667788);
    DECODE(&in, 0x0f, 0xb6, 0x43, 0x08); /* movzx eax, byte [rbx+8] */
    expect(&in, &r, TRACE_MEMVAL, 0x88);
    DECODE(&in, 0x48, 0x8b, 0x03); /* mov rax,[rbx]: read at another address: missing */
    expect_missing(&in, &r, TRACE_MEMVAL);
    expect_missing(&in, &r, TRACE_REGA);
    DECODE(&in, 0xff, 0x53, 0x08); /* call qword [rbx+8]: the target is the memory */
    expect(&in, &r, TRACE_BR_TARGET, 0x1122334455667788ull);
    DECODE(&in, 0xff, 0x63, 0x08); /* jmp qword [rbx+8] */
    expect(&in, &r, TRACE_BR_TARGET, 0x1122334455667788ull);
    DECODE(&in, 0x48, 0xf7, 0x73, 0x08); /* div qword [rbx+8]: the divisor */
    expect(&in, &r, TRACE_MEMVAL, 0x1122334455667788ull);
    DECODE(&in, 0x48, 0x89, 0x43, 0x08); /* mov [rbx+8],rax: what it stores, not what was there */
    expect(&in, &r, TRACE_MEMVAL, 0x1111);
    DECODE(&in, 0xc6, 0x43, 0x08, 0x7f); /* mov byte [rbx+8],0x7f */
    expect(&in, &r, TRACE_MEMVAL, 0x7f);
    DECODE(&in, 0x48, 0x01, 0x43, 0x08); /* add [rbx+8],rax: the sum is not computed */
    expect_missing(&in, &r, TRACE_MEMVAL);
    DECODE(&in, 0x48, 0x8d, 0x43, 0x08); /* lea rax,[rbx+8]: no memory is read */
    expect_missing(&in, &r, TRACE_MEMVAL);
    r.mem_ok = 0; /* the read failed (or there was none) */
    DECODE(&in, 0x48, 0x03, 0x43, 0x08);
    expect_missing(&in, &r, TRACE_MEMVAL);
    expect_missing(&in, &r, TRACE_REGB);
    DECODE(&in, 0xff, 0x53, 0x08);
    expect_missing(&in, &r, TRACE_BR_TARGET);
}
END_TEST

/* ---- perf mask --------------------------------------------------------------------------- */

static uint64_t mask_of(int n, const trace_value_t *k)
{
    return dcpi_capture_perf_mask(k, n);
}

#define MASK(...)                                                                                  \
    mask_of(sizeof((const trace_value_t[]){__VA_ARGS__}) / sizeof(trace_value_t),                  \
            (const trace_value_t[]){__VA_ARGS__})

START_TEST(test_perf_mask)
{
    ck_assert_uint_eq(MASK(TRACE_RAX), BIT(DCPI_REG_AX));
    ck_assert_uint_eq(MASK(TRACE_RSP), BIT(DCPI_REG_SP));
    ck_assert_uint_eq(MASK(TRACE_R8, TRACE_R15), BIT(DCPI_REG_R8) | BIT(DCPI_REG_R15));
    ck_assert_uint_eq(MASK(TRACE_RBX, TRACE_RFLAGS), BIT(DCPI_REG_BX) | BIT(DCPI_REG_FLAGS));
    ck_assert_uint_eq(MASK(TRACE_RIP), 0); /* the sample's pc */
    ck_assert_uint_eq(MASK(TRACE_LATENCY, TRACE_NONE), 0);
    /* a read memory value is checked against its address: the registers of the address */
    ck_assert_uint_eq(MASK(TRACE_MEMVAL), DCPI_REGS_FULL_MASK);
    ck_assert_uint_eq(MASK(TRACE_REGA), DCPI_REGS_FULL_MASK);
    ck_assert_uint_eq(MASK(TRACE_RAX, TRACE_EA), DCPI_REGS_FULL_MASK);
    ck_assert_uint_eq(MASK(TRACE_BR_TAKEN), DCPI_REGS_FULL_MASK);
    ck_assert_uint_eq(MASK(TRACE_REGC, TRACE_BR_TARGET), DCPI_REGS_FULL_MASK);
    /* GPRs (bits 0-7, 16-23), IP, FLAGS; no segment registers, nothing past R15 (bit 23) */
    ck_assert_uint_eq(DCPI_REGS_FULL_MASK, 0x00ff03ffull);
    ck_assert_uint_eq(dcpi_capture_perf_mask(NULL, 3), 0);
    ck_assert_uint_eq(MASK(TRACE_RAX) & ~0xffffffull, 0);
}
END_TEST

/* ---- decoding ---------------------------------------------------------------------------- */

START_TEST(test_decode)
{
    dcpi_insn_t in;
    DECODE(&in, 0x48, 0x8b, 0x03); /* mov rax,[rbx] */
    ck_assert_str_eq(in.inst.mnemonic, "mov");
    ck_assert_uint_eq(in.inst.length, 3);
    ck_assert_uint_eq(in.inst.bytes[1], 0x8b);
    ck_assert_uint_eq(in.pc, PC);
    ck_assert_uint_eq(in.inst.opc, trace_opc_lookup("mov", TRACE_MEM_READ));
    DECODE(&in, 0x48, 0x89, 0x03); /* mov [rbx],rax */
    ck_assert_uint_eq(in.inst.opc, trace_opc_lookup("mov", TRACE_MEM_WRITE));
    DECODE(&in, 0x48, 0x01, 0x03); /* add [rbx],rax */
    ck_assert_uint_eq(in.inst.opc, trace_opc_lookup("add", TRACE_MEM_RW));
    DECODE(&in, 0x48, 0x8d, 0x03); /* lea rax,[rbx] */
    ck_assert_uint_eq(in.inst.opc, trace_opc_lookup("lea", TRACE_MEM_NONE));
    DECODE(&in, 0x53); /* push rbx */
    ck_assert_uint_eq(in.inst.opc, trace_opc_lookup("push", TRACE_MEM_WRITE));

    uint8_t longer[16] = {0x48, 0x01, 0xd8, 0xcc, 0xcc}; /* add rax,rbx then padding */
    ck_assert_int_eq(dcpi_capture_decode(longer, sizeof(longer), PC, &in), 3);
    ck_assert_int_eq(dcpi_capture_decode((const uint8_t[]){0x06}, 1, PC, &in), DCPI_EFORMAT);
    ck_assert_int_eq(dcpi_capture_decode((const uint8_t[]){0x48, 0x8b}, 2, PC, &in), DCPI_EFORMAT);
    ck_assert_int_eq(dcpi_capture_decode(NULL, 2, PC, &in), DCPI_EINVAL);
}
END_TEST

/* ---- effective addresses ----------------------------------------------------------------- */

START_TEST(test_ea)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x48, 0x8b, 0x44, 0xcb, 0x10); /* mov rax,[rbx+rcx*8+0x10] */
    expect(&in, &r, TRACE_EA, 0x10000 + 3 * 8 + 0x10);
    DECODE(&in, 0x48, 0x8b, 0x43, 0xf8); /* mov rax,[rbx-8] */
    expect(&in, &r, TRACE_EA, 0x10000 - 8);
    DECODE(&in, 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00); /* mov rax,[rip+0x100] */
    expect(&in, &r, TRACE_EA, PC + 7 + 0x100);
    DECODE(&in, 0x48, 0x8b, 0x05, 0xf0, 0xff, 0xff, 0xff); /* mov rax,[rip-0x10] */
    expect(&in, &r, TRACE_EA, PC + 7 - 0x10);
    DECODE(&in, 0x8b, 0x04, 0x25, 0x78, 0x56, 0x34, 0x12); /* mov eax,[0x12345678] */
    expect(&in, &r, TRACE_EA, 0x12345678);
    r.r[DCPI_REG_BX] = 0xffffffff00000010ull;
    DECODE(&in, 0x67, 0x8b, 0x43, 0x04); /* mov eax,[ebx+4] (32-bit address) */
    expect(&in, &r, TRACE_EA, 0x14);
    r = base_regs();
    DECODE(&in, 0x48, 0x8d, 0x44, 0x8b, 0x08); /* lea rax,[rbx+rcx*4+8] */
    expect(&in, &r, TRACE_EA, 0x10000 + 12 + 8);
    DECODE(&in, 0x48, 0x01, 0x04, 0x24); /* add [rsp],rax */
    expect(&in, &r, TRACE_EA, 0x7ffc0000);

    /* fs:/gs: the segment base is not in perf's registers. */
    DECODE(&in, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0); /* mov rax,fs:[0x28] */
    expect_missing(&in, &r, TRACE_EA);
    DECODE(&in, 0x65, 0x48, 0x8b, 0x03); /* mov rax,gs:[rbx] */
    expect_missing(&in, &r, TRACE_EA);
    /* No memory operand, or its base register not captured. */
    DECODE(&in, 0x48, 0x01, 0xd8); /* add rax,rbx */
    expect_missing(&in, &r, TRACE_EA);
    DECODE(&in, 0x48, 0x8b, 0x03); /* mov rax,[rbx] */
    r.valid &= ~BIT(DCPI_REG_BX);
    expect_missing(&in, &r, TRACE_EA);
}
END_TEST

START_TEST(test_ea_stack)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x53); /* push rbx: stores at rsp - 8 */
    expect(&in, &r, TRACE_EA, 0x7ffc0000 - 8);
    DECODE(&in, 0x66, 0x53); /* push bx */
    expect(&in, &r, TRACE_EA, 0x7ffc0000 - 2);
    DECODE(&in, 0x5b); /* pop rbx */
    expect(&in, &r, TRACE_EA, 0x7ffc0000);
    DECODE(&in, 0xe8, 0, 0, 0, 0); /* call rel32 */
    expect(&in, &r, TRACE_EA, 0x7ffc0000 - 8);
    DECODE(&in, 0xc3); /* ret */
    expect(&in, &r, TRACE_EA, 0x7ffc0000);
    DECODE(&in, 0x9c); /* pushfq: not modelled */
    expect_missing(&in, &r, TRACE_EA);
    DECODE(&in, 0xc9); /* leave: loads rbp from [rbp] */
    expect(&in, &r, TRACE_EA, 0x7ffc0100);
    DECODE(&in, 0xc8, 0x10, 0x00, 0x00); /* enter 0x10,0: not modelled */
    expect_missing(&in, &r, TRACE_EA);
    DECODE(&in, 0xa4); /* movsb: [rdi] first */
    expect(&in, &r, TRACE_EA, 0xd1d1);
}
END_TEST

/* ---- operand roles ----------------------------------------------------------------------- */

START_TEST(test_roles_alu)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x48, 0x01, 0xd8); /* add rax,rbx */
    expect(&in, &r, TRACE_REGA, 0x1111);
    expect(&in, &r, TRACE_REGB, 0x10000);
    expect(&in, &r, TRACE_REGC, 0x11111);
    DECODE(&in, 0x01, 0xd8); /* add eax,ebx */
    r.r[DCPI_REG_AX] = 0xffffffff00000001ull;
    expect(&in, &r, TRACE_REGA, 1);
    expect(&in, &r, TRACE_REGC, 0x10001);
    r = base_regs();
    DECODE(&in, 0x83, 0xc0, 0x80); /* add eax,-128 */
    expect(&in, &r, TRACE_REGB, 0xffffff80);
    DECODE(&in, 0x48, 0x89, 0xd8); /* mov rax,rbx */
    expect(&in, &r, TRACE_REGA, 0x10000);
    expect_missing(&in, &r, TRACE_REGB);
    expect(&in, &r, TRACE_REGC, 0x10000);
    DECODE(&in, 0x88, 0xe3); /* mov bl,ah: REGC is bl, 8 bits */
    expect(&in, &r, TRACE_REGA, 0x11);
    expect(&in, &r, TRACE_REGC, 0x11);
    DECODE(&in, 0x48, 0x6b, 0xc3, 0x07); /* imul rax,rbx,7 */
    expect(&in, &r, TRACE_REGA, 0x10000);
    expect(&in, &r, TRACE_REGB, 7);
    expect(&in, &r, TRACE_REGC, 0x70000);
    DECODE(&in, 0x48, 0xf7, 0xe3); /* mul rbx: rbx, then the hidden rax */
    expect(&in, &r, TRACE_REGA, 0x10000);
    expect(&in, &r, TRACE_REGB, 0x1111);
    expect(&in, &r, TRACE_REGC, 0x11110000);
    DECODE(&in, 0x48, 0x39, 0xd8); /* cmp rax,rbx: REGC is the new rflags (0x...f1111: CF SF PF) */
    expect(&in, &r, TRACE_REGC, 0x202 | DCPI_FLAG_CF | DCPI_FLAG_SF | DCPI_FLAG_PF);
    DECODE(&in, 0x48, 0x8d, 0x44, 0x8b, 0x08); /* lea rax,[rbx+rcx*4+8]: REGA is the address */
    expect(&in, &r, TRACE_REGA, 0x10014);
    expect(&in, &r, TRACE_REGC, 0x10014);
    expect_missing(&in, &r, TRACE_MEMVAL);
}
END_TEST

START_TEST(test_roles_memory)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x48, 0x8b, 0x03); /* load mov rax,[rbx] */
    expect_missing(&in, &r, TRACE_REGA);
    expect_missing(&in, &r, TRACE_REGB);
    expect_missing(&in, &r, TRACE_REGC);
    expect_missing(&in, &r, TRACE_MEMVAL);
    expect_missing(&in, &r, TRACE_LATENCY);
    expect(&in, &r, TRACE_EA, 0x10000);
    DECODE(&in, 0x48, 0x89, 0x03); /* store mov [rbx],rax: MEMVAL is what it stores */
    expect(&in, &r, TRACE_REGA, 0x1111);
    expect_missing(&in, &r, TRACE_REGB);
    expect_missing(&in, &r, TRACE_REGC);
    expect(&in, &r, TRACE_MEMVAL, 0x1111);
    expect(&in, &r, TRACE_EA, 0x10000);
    DECODE(&in, 0x48, 0x03, 0x43, 0x08); /* add rax,[rbx+8] */
    expect(&in, &r, TRACE_REGA, 0x1111);
    expect_missing(&in, &r, TRACE_REGB);
    expect_missing(&in, &r, TRACE_REGC);
    expect(&in, &r, TRACE_EA, 0x10008);
}
END_TEST

/* ---- branches ---------------------------------------------------------------------------- */

START_TEST(test_branches)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x74, 0x10); /* jz +0x10 */
    r.r[DCPI_REG_FLAGS] = 0x202 | DCPI_FLAG_ZF;
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect(&in, &r, TRACE_BR_TARGET, PC + 2 + 0x10);
    r.r[DCPI_REG_FLAGS] = 0x202;
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    expect(&in, &r, TRACE_BR_TARGET, PC + 2 + 0x10);
    DECODE(&in, 0x0f, 0x8c, 0x00, 0xff, 0xff, 0xff); /* jl rel32 -0x100 */
    r.r[DCPI_REG_FLAGS] = 0x202 | DCPI_FLAG_SF;
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect(&in, &r, TRACE_BR_TARGET, PC + 6 - 0x100);
    r.r[DCPI_REG_FLAGS] = 0x202 | DCPI_FLAG_SF | DCPI_FLAG_OF;
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    r.valid &= ~BIT(DCPI_REG_FLAGS); /* flags not captured: outcome unknown */
    expect_missing(&in, &r, TRACE_BR_TAKEN);
    expect(&in, &r, TRACE_BR_TARGET, PC + 6 - 0x100);
    r = base_regs();

    DECODE(&in, 0xe9, 0x00, 0x01, 0x00, 0x00); /* jmp rel32 */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect(&in, &r, TRACE_BR_TARGET, PC + 5 + 0x100);
    DECODE(&in, 0xe8, 0xfb, 0xff, 0xff, 0xff); /* call rel32 (to itself) */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect(&in, &r, TRACE_BR_TARGET, PC);
    DECODE(&in, 0xff, 0xe0); /* jmp rax */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect(&in, &r, TRACE_BR_TARGET, 0x1111);
    DECODE(&in, 0x41, 0xff, 0xd3); /* call r11 */
    expect(&in, &r, TRACE_BR_TARGET, 0x800 + DCPI_REG_R11);
    DECODE(&in, 0xff, 0x20); /* jmp [rax]: target in memory */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect_missing(&in, &r, TRACE_BR_TARGET);
    expect(&in, &r, TRACE_EA, 0x1111);
    DECODE(&in, 0xc3); /* ret */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    expect_missing(&in, &r, TRACE_BR_TARGET);
}
END_TEST

START_TEST(test_branches_counted)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0xe3, 0x05); /* jrcxz */
    r.r[DCPI_REG_CX] = 0;
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    r.r[DCPI_REG_CX] = 1ull << 40;
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    DECODE(&in, 0x67, 0xe3, 0x05); /* jecxz */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    DECODE(&in, 0xe2, 0xfe); /* loop (to itself) */
    r.r[DCPI_REG_CX] = 1;
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    expect(&in, &r, TRACE_BR_TARGET, PC);
    r.r[DCPI_REG_CX] = 0; /* wraps to ~0: taken */
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    DECODE(&in, 0xe1, 0xfe); /* loope */
    r.r[DCPI_REG_CX] = 5;
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    r.r[DCPI_REG_FLAGS] |= DCPI_FLAG_ZF;
    expect(&in, &r, TRACE_BR_TAKEN, 1);
    DECODE(&in, 0xe0, 0xfe); /* loopne */
    expect(&in, &r, TRACE_BR_TAKEN, 0);
    /* Not a branch: neither outcome nor target. */
    DECODE(&in, 0x48, 0x01, 0xd8);
    expect_missing(&in, &r, TRACE_BR_TAKEN);
    expect_missing(&in, &r, TRACE_BR_TARGET);
}
END_TEST

/* ---- values never invented ---------------------------------------------------------------- */

static const uint8_t samples[][8] = {
    {3, 0x48, 0x01, 0xd8},
    {3, 0x48, 0x8b, 0x03},
    {3, 0x48, 0x89, 0x03},
    {2, 0x74, 0x10},
    {1, 0xc3},
    {2, 0xff, 0x20},
    {4, 0x48, 0x6b, 0xc3, 0x07},
    {1, 0x53},
    {2, 0x0f, 0xa2},       /* cpuid */
    {3, 0x48, 0xf7, 0xf3}, /* div rbx */
};

/* Kinds that always need a captured register (or memory, or hardware). */
static int needs_registers(trace_value_t k)
{
    return (k >= TRACE_RAX && k <= TRACE_R15) || k == TRACE_RFLAGS || k == TRACE_REGC ||
           k == TRACE_LATENCY || k == TRACE_NONE;
}

START_TEST(test_never_invented)
{
    trace_value_t kinds[TRACE_VALUE_COUNT];
    int n = 0;
    for (int k = 0; k < TRACE_VALUE_COUNT; k++)
        kinds[n++] = (trace_value_t)k;
    for (size_t s = 0; s < sizeof(samples) / sizeof(samples[0]); s++) {
        dcpi_insn_t in;
        ck_assert_int_gt(dcpi_capture_decode(&samples[s][1], samples[s][0], PC, &in), 0);
        uint64_t full[TRACE_VALUE_COUNT], bare[TRACE_VALUE_COUNT];
        unsigned miss_full, miss_bare;
        dcpi_regs_t all = base_regs();
        dcpi_capture_values(&in, &all, kinds, n, full, &miss_full);
        dcpi_regs_t none = {.valid = 0};
        dcpi_capture_values(&in, &none, kinds, n, bare, &miss_bare);
        for (int i = 0; i < n; i++) {
            if (miss_full & (1u << i))
                ck_assert_uint_eq(full[i], 0);
            if (miss_bare & (1u << i)) {
                ck_assert_uint_eq(bare[i], 0);
                continue;
            }
            /* Present without any register: must not depend on them (immediates, direct
             * targets, rip-relative addresses, the pc, unconditional outcomes). */
            ck_assert_msg(!needs_registers(kinds[i]), "insn %zu: %s present without registers", s,
                          trace_value_name(kinds[i]));
            ck_assert_msg(!(miss_full & (1u << i)) && full[i] == bare[i],
                          "insn %zu: %s differs with registers", s, trace_value_name(kinds[i]));
        }
        /* memory is never read here (no mem_ok): only a plain store has a MEMVAL, its source */
        int store =
            in.zi.mnemonic == ZYDIS_MNEMONIC_MOV && in.ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY;
        ck_assert(store || (miss_full & (1u << TRACE_MEMVAL)));
        ck_assert(miss_full & (1u << TRACE_LATENCY));
        ck_assert(miss_full & (1u << TRACE_NONE));
        ck_assert_uint_eq(full[TRACE_RIP], PC);
        ck_assert_uint_eq(bare[TRACE_RIP], PC);
        ck_assert_uint_eq(full[TRACE_RBX], 0x10000);
        ck_assert_uint_eq(full[TRACE_RFLAGS], 0x202);
    }
}
END_TEST

START_TEST(test_registers_by_kind)
{
    dcpi_regs_t r = base_regs();
    dcpi_insn_t in;
    DECODE(&in, 0x90);
    static const struct {
        trace_value_t k;
        int idx;
    } map[] = {
        {TRACE_RAX, DCPI_REG_AX},  {TRACE_RBX, DCPI_REG_BX},  {TRACE_RCX, DCPI_REG_CX},
        {TRACE_RDX, DCPI_REG_DX},  {TRACE_RSI, DCPI_REG_SI},  {TRACE_RDI, DCPI_REG_DI},
        {TRACE_RBP, DCPI_REG_BP},  {TRACE_RSP, DCPI_REG_SP},  {TRACE_R8, DCPI_REG_R8},
        {TRACE_R12, DCPI_REG_R12}, {TRACE_R15, DCPI_REG_R15},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        expect(&in, &r, map[i].k, r.r[map[i].idx]);
        ck_assert_uint_eq(MASK(map[i].k), BIT(map[i].idx));
    }
    r.valid &= ~BIT(DCPI_REG_R12);
    expect_missing(&in, &r, TRACE_R12);
    expect(&in, &r, TRACE_RIP, PC);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_perf_mask);
    tcase_add_test(tc, test_decode);
    tcase_add_test(tc, test_ea);
    tcase_add_test(tc, test_ea_stack);
    tcase_add_test(tc, test_roles_alu);
    tcase_add_test(tc, test_roles_memory);
    tcase_add_test(tc, test_memory_read);
    tcase_add_test(tc, test_branches);
    tcase_add_test(tc, test_branches_counted);
    tcase_add_test(tc, test_never_invented);
    tcase_add_test(tc, test_registers_by_kind);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
