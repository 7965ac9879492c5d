/*
 * check_cfg.c - core/calc/cfg, cfgfreq, cfgprint: basic blocks and edges of hand-written
 * machine code (a loop around an if/else; an indirect jump, ud2, a call that does not return and
 * a tail jump), the frequency estimate with flow conservation, and the printers' output.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/calc/cfg.h"
#include "dcpi/errno.h"

static const char *const ev[] = {"cpu-clock"};

/* for (ecx = 0; ecx < 16; ecx++) eax += (ecx & 3) ? 2 : 1; return */
static const uint8_t loop_code[] = {
    0x31, 0xc0,       /* 0x1000 xor eax, eax        B0 */
    0x31, 0xc9,       /* 0x1002 xor ecx, ecx */
    0xf6, 0xc1, 0x03, /* 0x1004 test cl, 3          B1 */
    0x75, 0x05,       /* 0x1007 jnz 0x100e */
    0x83, 0xc0, 0x01, /* 0x1009 add eax, 1          B2 */
    0xeb, 0x03,       /* 0x100c jmp 0x1011 */
    0x83, 0xc0, 0x02, /* 0x100e add eax, 2          B3 */
    0xff, 0xc1,       /* 0x1011 inc ecx             B4 */
    0x83, 0xf9, 0x10, /* 0x1013 cmp ecx, 16 */
    0x7c, 0xec,       /* 0x1016 jl 0x1004 */
    0xc3,             /* 0x1018 ret                 B5 */
};

static dcpi_listing_t *listing(const uint8_t *code, size_t len, uint64_t lo)
{
    dcpi_listing_t *ls = NULL;
    ck_assert_int_eq(dcpi_listing_new("f", lo, lo + len, ev, 1, 0, &ls), 0);
    ck_assert_int_eq(dcpi_listing_decode_bytes(ls, code, len), 0);
    return ls;
}

/* The edge from block a to end b of kind k exists exactly once. */
static void has_edge(const dcpi_cfg_t *g, int a, int b, enum dcpi_cfg_ekind k)
{
    int found = 0;
    for (size_t e = 0; e < g->nedges; e++)
        found += g->edges[e].from == a && g->edges[e].to == b && g->edges[e].kind == k;
    ck_assert_msg(found == 1, "edge %d -> %d kind %d found %d times", a, b, (int)k, found);
}

static void block_is(const dcpi_cfg_t *g, size_t k, uint64_t lo, uint64_t hi, size_t nsucc)
{
    ck_assert_uint_eq(g->blocks[k].lo, lo);
    ck_assert_uint_eq(g->blocks[k].hi, hi);
    ck_assert_uint_eq(g->blocks[k].nsucc, nsucc);
}

START_TEST(loop_if_else_blocks)
{
    dcpi_listing_t *ls = listing(loop_code, sizeof loop_code, 0x1000);
    dcpi_cfg_t *g = NULL;
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), 0);
    ck_assert_uint_eq(g->nblocks, 6);
    block_is(g, 0, 0x1000, 0x1004, 1);
    block_is(g, 1, 0x1004, 0x1009, 2);
    block_is(g, 2, 0x1009, 0x100e, 1);
    block_is(g, 3, 0x100e, 0x1011, 1);
    block_is(g, 4, 0x1011, 0x1018, 2);
    block_is(g, 5, 0x1018, 0x1019, 1);
    ck_assert_uint_eq(g->nedges, 9); /* 8 in the code, the calls into B0 */
    has_edge(g, DCPI_CFG_ENTRY, 0, DCPI_CFG_E_OUTSIDE);
    has_edge(g, 0, 1, DCPI_CFG_E_FALL);
    has_edge(g, 1, 3, DCPI_CFG_E_TAKEN);
    has_edge(g, 1, 2, DCPI_CFG_E_FALL);
    has_edge(g, 2, 4, DCPI_CFG_E_JUMP);
    has_edge(g, 3, 4, DCPI_CFG_E_FALL);
    has_edge(g, 4, 1, DCPI_CFG_E_TAKEN);
    has_edge(g, 4, 5, DCPI_CFG_E_FALL);
    has_edge(g, 5, DCPI_CFG_EXIT, DCPI_CFG_E_RET);
    ck_assert_int_eq(g->has_unknown, 0);
    ck_assert_int_eq(dcpi_cfg_block_at(g, 0x1010), 3);
    ck_assert_int_eq(dcpi_cfg_block_at(g, 0x1019), -1);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
}
END_TEST

static int noreturn_3000(void *arg, uint64_t target)
{
    (void)arg;
    return target == 0x3000;
}

START_TEST(indirect_stop_noreturn_tail)
{
    static const uint8_t code[] = {
        0x48, 0x85, 0xff,             /* 0x2000 test rdi, rdi       B0 */
        0x74, 0x05,                   /* 0x2003 jz 0x200a */
        0xff, 0xe0,                   /* 0x2005 jmp rax             B1 */
        0x90,                         /* 0x2007 nop                 B2 (nothing reaches it) */
        0x0f, 0x0b,                   /* 0x2008 ud2 */
        0xe8, 0xf1, 0x0f, 0x00, 0x00, /* 0x200a call 0x3000         B3 (does not return) */
        0xe9, 0xec, 0x1f, 0x00, 0x00, /* 0x200f jmp 0x4000          B4 (a tail jump) */
    };
    dcpi_listing_t *ls = listing(code, sizeof code, 0x2000);
    dcpi_cfg_t *g = NULL;
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, noreturn_3000, NULL, &g), 0);
    ck_assert_uint_eq(g->nblocks, 5);
    block_is(g, 0, 0x2000, 0x2005, 2);
    block_is(g, 1, 0x2005, 0x2007, 1);
    block_is(g, 2, 0x2007, 0x200a, 1);
    block_is(g, 3, 0x200a, 0x200f, 1);
    block_is(g, 4, 0x200f, 0x2014, 1);
    has_edge(g, 0, 3, DCPI_CFG_E_TAKEN);
    has_edge(g, 0, 1, DCPI_CFG_E_FALL);
    has_edge(g, 1, DCPI_CFG_UNKNOWN, DCPI_CFG_E_IND);
    has_edge(g, 2, DCPI_CFG_NORET, DCPI_CFG_E_STOP);
    has_edge(g, 3, DCPI_CFG_NORET, DCPI_CFG_E_STOP);
    has_edge(g, 4, DCPI_CFG_EXIT, DCPI_CFG_E_JUMP);
    has_edge(g, DCPI_CFG_ENTRY, 0, DCPI_CFG_E_OUTSIDE);
    has_edge(g, DCPI_CFG_ENTRY, 2, DCPI_CFG_E_OUTSIDE);
    has_edge(g, DCPI_CFG_ENTRY, 4, DCPI_CFG_E_OUTSIDE);
    ck_assert_uint_eq(g->nedges, 9);
    ck_assert_int_eq(g->has_unknown, 1);
    ck_assert_int_eq(g->n_noreturn, 1);
    dcpi_cfg_free(g);
    /* without the callback the call returns: B3 runs on into B4 */
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), 0);
    ck_assert_uint_eq(g->nblocks, 4);
    block_is(g, 3, 0x200a, 0x2014, 1);
    has_edge(g, 3, DCPI_CFG_EXIT, DCPI_CFG_E_JUMP);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
}
END_TEST

static void add(dcpi_listing_t *ls, uint64_t addr, uint64_t n)
{
    ck_assert_int_eq(dcpi_listing_add_samples(ls, 0, addr, n), 0);
}

START_TEST(frequencies_by_flow)
{
    dcpi_listing_t *ls = listing(loop_code, sizeof loop_code, 0x1000);
    add(ls, 0x1004, 10); /* B1: cost 2 (test, jnz) */
    add(ls, 0x1009, 60); /* B2: cost 2 (add, jmp): local 50 */
    add(ls, 0x100c, 40);
    add(ls, 0x100e, 150); /* B3: cost 1: local 150 */
    add(ls, 0x1013, 5);   /* B4 */
    dcpi_cfg_t *g = NULL;
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), 0);
    ck_assert_uint_eq(g->samples, 265);
    ck_assert_uint_eq(g->blocks[2].samples, 100);
    dcpi_cfg_estimate(g, DCPI_CFG_LATENCY);
    ck_assert_double_eq_tol(g->blocks[2].cost, 2, 1e-9);
    ck_assert_double_eq_tol(g->blocks[3].freq, 150, 1e-9);
    ck_assert_int_eq(g->blocks[3].src, DCPI_CFG_F_SAMPLES);
    ck_assert_double_eq_tol(g->blocks[2].freq, 50, 1e-9);
    /* the header and the latch from the flow: the sum of the two branches */
    ck_assert_int_eq(g->blocks[1].src, DCPI_CFG_F_FLOW);
    ck_assert_double_eq_tol(g->blocks[1].freq, 200, 1e-9);
    ck_assert_double_eq_tol(g->blocks[4].freq, 200, 1e-9);
    ck_assert_double_eq_tol(g->blocks[1].local, 5, 1e-9);
    ck_assert_int_eq(g->per_call, 0); /* B0 has no samples */
    for (size_t e = 0; e < g->nedges; e++)
        ck_assert(g->edges[e].freq >= 0);
    /* the instruction-count model: B2 still 2 instructions, B3 1 */
    dcpi_cfg_estimate(g, DCPI_CFG_INSNS);
    ck_assert_double_eq_tol(g->blocks[2].freq, 50, 1e-9);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
}
END_TEST

START_TEST(per_call_when_entry_sampled)
{
    dcpi_listing_t *ls = listing(loop_code, sizeof loop_code, 0x1000);
    add(ls, 0x1000, 40);  /* B0: cost 2: 20 per unit */
    add(ls, 0x100e, 300); /* B3: 300 */
    add(ls, 0x1009, 200); /* B2: 100 */
    dcpi_cfg_t *g = NULL;
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), 0);
    dcpi_cfg_estimate(g, DCPI_CFG_LATENCY);
    ck_assert_int_eq(g->per_call, 1);
    ck_assert_double_eq_tol(dcpi_cfg_calls(g), 20, 1e-9);
    ck_assert_double_eq_tol(g->blocks[1].freq / dcpi_cfg_calls(g), 20, 1e-9);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
}
END_TEST

static char *print(const dcpi_cfg_t *g, int dot, double cutoff)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    dcpi_cfg_popts_t o = {.cutoff = cutoff};
    if (dot)
        dcpi_cfg_print_dot(g, &o, f);
    else
        dcpi_cfg_print_text(g, &o, f);
    fclose(f);
    return buf;
}

START_TEST(printers)
{
    dcpi_listing_t *ls = listing(loop_code, sizeof loop_code, 0x1000);
    add(ls, 0x100e, 150);
    add(ls, 0x1009, 100);
    dcpi_cfg_t *g = NULL;
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), 0);
    dcpi_cfg_estimate(g, DCPI_CFG_LATENCY);
    char *t = print(g, 0, 0);
    if (getenv("CFG_SHOW"))
        fputs(t, stderr);
    ck_assert_ptr_nonnull(strstr(t, "6 blocks, 9 edges"));
    char *b3 = strstr(t, "\nB3 "), *b2 = strstr(t, "\nB2 ");
    ck_assert(b3 && b2 && b3 < b2); /* hottest first */
    ck_assert_ptr_nonnull(strstr(t, " B4:jump\n"));
    ck_assert_ptr_nonnull(strstr(t, "edge   B4        B1        taken       200\n"));
    ck_assert_ptr_nonnull(strstr(t, "0x100e       add eax, 0x2\n"));
    free(t);
    t = print(g, 0, 50); /* B3 has 60%, B2 40% */
    ck_assert_ptr_null(strstr(t, "\nB2 "));
    ck_assert_ptr_nonnull(strstr(t, "(5 blocks under 50% of the samples left out)"));
    free(t);
    t = print(g, 1, 0);
    ck_assert_ptr_nonnull(strstr(t, "digraph \"f\" {"));
    ck_assert_ptr_nonnull(strstr(t, "B3 [label=\"B3  0x100e..0x1011\\n150 samples (60.0%)\\nfreq "
                                    "150\", fillcolor=\"0.000 1.000 1.000\"];"));
    ck_assert_ptr_nonnull(strstr(t, "B1 -> B3 [label=\"taken 150\"];"));
    ck_assert_ptr_nonnull(strstr(t, "B5 -> exit [label=\"ret 0\"];"));
    ck_assert_ptr_nonnull(strstr(t, "entry [shape=ellipse"));
    free(t);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
}
END_TEST

START_TEST(noreturn_names)
{
    ck_assert_int_eq(dcpi_cfg_noreturn_name("abort@plt"), 1);
    ck_assert_int_eq(dcpi_cfg_noreturn_name("__stack_chk_fail@GLIBC_2.4"), 1);
    ck_assert_int_eq(dcpi_cfg_noreturn_name("std::__throw_length_error(char const*)"), 1);
    ck_assert_int_eq(dcpi_cfg_noreturn_name("exit"), 1);
    ck_assert_int_eq(dcpi_cfg_noreturn_name("exit_group_helper"), 0);
    ck_assert_int_eq(dcpi_cfg_noreturn_name("error@plt"), 0); /* returns when status is 0 */
    ck_assert_int_eq(dcpi_cfg_noreturn_name("printf"), 0);
}
END_TEST

START_TEST(bad_arguments)
{
    dcpi_listing_t *ls = NULL;
    dcpi_cfg_t *g = (dcpi_cfg_t *)1;
    ck_assert_int_eq(dcpi_listing_new("f", 0x1000, 0x1000, ev, 1, 0, &ls), 0);
    ck_assert_int_eq(dcpi_cfg_build(ls, 0, NULL, NULL, &g), DCPI_EINVAL);
    ck_assert_ptr_null(g);
    dcpi_listing_free(ls);
    ls = listing(loop_code, sizeof loop_code, 0x1000);
    ck_assert_int_eq(dcpi_cfg_build(ls, 1, NULL, NULL, &g), DCPI_EINVAL);
    dcpi_listing_free(ls);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cfg");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, loop_if_else_blocks);
    tcase_add_test(tc, indirect_stop_noreturn_tail);
    tcase_add_test(tc, frequencies_by_flow);
    tcase_add_test(tc, per_call_when_entry_sampled);
    tcase_add_test(tc, printers);
    tcase_add_test(tc, noreturn_names);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
