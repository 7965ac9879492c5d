/*
 * check_insn.c - the x86-64 instruction model: keys, memory forms, classes, lookup, decoding
 * and formatting (trace/insn.c).
 */
#include <check.h>
#include <string.h>

#include "dcpi/errno.h"
#include "dcpi/insn.h"
#include "trace/trace.h"

static trace_inst_t decode(const void *bytes, int len)
{
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(bytes, len, &inst), len);
    ck_assert_int_eq(inst.length, len);
    return inst;
}

static trace_iclass_t class_of(const trace_inst_t *inst)
{
    const trace_opc_info_t *info = trace_opc_info(inst->opc);
    ck_assert_ptr_nonnull(info);
    ck_assert_uint_eq(info->opc, inst->opc);
    ck_assert_str_eq(info->mnemonic, inst->mnemonic);
    return info->iclass;
}

/* The control flow of an instruction (trace_inst_flow: dcpicalc's blocks, the value backends'). */
START_TEST(test_flow)
{
    static const uint8_t call_rel[] = {0xe8, 0x10, 0x00, 0x00, 0x00}; /* call +0x10 */
    static const uint8_t call_mem[] = {0xff, 0x13};                   /* call qword [rbx] */
    static const uint8_t jbe[] = {0x76, 0x02};                        /* jbe +2 */
    static const uint8_t jmp[] = {0xeb, 0xfe};                        /* jmp -2 (itself) */
    static const uint8_t jmp_tab[] = {0xff, 0x24, 0xc5, 0, 0, 0, 0};  /* jmp [rax*8] */
    static const uint8_t ret[] = {0xc3}, ud2[] = {0x0f, 0x0b}, add[] = {0x01, 0xd8};
    uint64_t t = 1;
    trace_inst_t i = decode(call_rel, sizeof call_rel);
    ck_assert_int_eq(trace_inst_flow(&i, 0x1000, &t), TRACE_FLOW_CALL);
    ck_assert_uint_eq(t, 0x1015);
    i = decode(call_mem, sizeof call_mem);
    ck_assert_int_eq(trace_inst_flow(&i, 0x1000, &t), TRACE_FLOW_CALL);
    ck_assert_uint_eq(t, 0);
    i = decode(jbe, sizeof jbe);
    ck_assert_int_eq(trace_inst_flow(&i, 0x2000, &t), TRACE_FLOW_COND);
    ck_assert_uint_eq(t, 0x2004);
    i = decode(jmp, sizeof jmp);
    ck_assert_int_eq(trace_inst_flow(&i, 0x2000, &t), TRACE_FLOW_JUMP);
    ck_assert_uint_eq(t, 0x2000);
    i = decode(jmp_tab, sizeof jmp_tab);
    ck_assert_int_eq(trace_inst_flow(&i, 0x2000, NULL), TRACE_FLOW_IND);
    i = decode(ret, sizeof ret);
    ck_assert_int_eq(trace_inst_flow(&i, 0, &t), TRACE_FLOW_RET);
    i = decode(ud2, sizeof ud2);
    ck_assert_int_eq(trace_inst_flow(&i, 0, &t), TRACE_FLOW_STOP);
    i = decode(add, sizeof add);
    ck_assert_int_eq(trace_inst_flow(&i, 0, &t), TRACE_FLOW_NONE);
    ck_assert_int_eq(trace_inst_flow(NULL, 0, &t), TRACE_FLOW_NONE);
    static const uint8_t jmp_ptr[] = {0xff, 0x25, 0x10, 0, 0, 0}; /* jmp [rip+0x10] */
    static const uint8_t jmp_reg[] = {0xff, 0xe0};                /* jmp rax */
    ck_assert_int_eq(trace_inst_mem_indexed(&i), 0);
    i = decode(jmp_tab, sizeof jmp_tab);
    ck_assert_int_eq(trace_inst_mem_indexed(&i), 1);
    i = decode(jmp_ptr, sizeof jmp_ptr);
    ck_assert_int_eq(trace_inst_flow(&i, 0x2000, &t), TRACE_FLOW_IND);
    ck_assert_int_eq(trace_inst_mem_indexed(&i), 0);
    i = decode(jmp_reg, sizeof jmp_reg);
    ck_assert_int_eq(trace_inst_mem_indexed(&i), 0);
    i.length = 0;
    ck_assert_int_eq(trace_inst_mem_indexed(&i), DCPI_EFORMAT);
}
END_TEST

/* SDK 2: operands and conditional instructions, what instruction filters see. */
START_TEST(test_operands)
{
    static const uint8_t call_rel[] = {0xe8, 0x10, 0x00, 0x00, 0x00}; /* call rel32 */
    static const uint8_t call_rdx[] = {0xff, 0xd2};                   /* call rdx */
    static const uint8_t call_mem[] = {0xff, 0x13};                   /* call qword [rbx] */
    static const uint8_t add_eax[] = {0x01, 0xd8};                    /* add eax, ebx */
    static const uint8_t lea[] = {0x48, 0x8d, 0x43, 0x08};            /* lea rax, [rbx+8] */
    static const uint8_t jbe[] = {0x76, 0x02};                        /* jbe +2 */
    static const uint8_t cmovz[] = {0x48, 0x0f, 0x44, 0xc3};          /* cmovz rax, rbx */
    trace_operand_t o[4];
    trace_inst_t i = decode(call_rel, sizeof call_rel);
    ck_assert_int_eq(trace_inst_operands(&i, o, 4), 1);
    ck_assert_int_eq(o[0].kind, TRACE_OPERAND_IMM);
    i = decode(call_rdx, sizeof call_rdx);
    ck_assert_int_eq(trace_inst_operands(&i, o, 4), 1);
    ck_assert_int_eq(o[0].kind, TRACE_OPERAND_REG);
    ck_assert_str_eq(o[0].reg, "rdx");
    ck_assert_uint_eq(o[0].size, 64);
    ck_assert_int_eq(o[0].read, 1);
    i = decode(call_mem, sizeof call_mem);
    ck_assert_int_eq(trace_inst_operands(&i, o, 4), 1);
    ck_assert_int_eq(o[0].kind, TRACE_OPERAND_MEM);
    ck_assert_ptr_null(o[0].reg);
    i = decode(add_eax, sizeof add_eax);
    ck_assert_int_eq(trace_inst_operands(&i, o, 4), 2);
    ck_assert_str_eq(o[0].reg, "eax");
    ck_assert_uint_eq(o[0].size, 32);
    ck_assert_int_eq(o[0].write, 1);
    ck_assert_int_eq(o[1].write, 0);
    ck_assert_int_eq(trace_inst_operands(&i, o, 1), 2); /* the count, only max written */
    i = decode(lea, sizeof lea);
    ck_assert_int_eq(trace_inst_operands(&i, o, 4), 2);
    ck_assert_int_eq(o[1].kind, TRACE_OPERAND_ADDR);
    ck_assert_int_eq(trace_inst_is_conditional(&i), 0);
    i = decode(jbe, sizeof jbe);
    ck_assert_int_eq(trace_inst_is_conditional(&i), 1);
    i = decode(cmovz, sizeof cmovz);
    ck_assert_int_eq(trace_inst_is_conditional(&i), 1);
    i = decode(call_rdx, sizeof call_rdx);
    ck_assert_int_eq(trace_inst_is_conditional(&i), 0);
    ck_assert_int_eq(trace_inst_operands(NULL, o, 4), DCPI_EINVAL);
}
END_TEST

START_TEST(test_mov_forms)
{
    static const uint8_t load[] = {0x48, 0x8b, 0x43, 0x08};  /* mov rax, [rbx+8] */
    static const uint8_t store[] = {0x48, 0x89, 0x43, 0x08}; /* mov [rbx+8], rax */
    static const uint8_t reg[] = {0x48, 0x89, 0xd8};         /* mov rax, rbx */
    trace_inst_t l = decode(load, 4), s = decode(store, 4), r = decode(reg, 3);
    ck_assert_str_eq(l.mnemonic, "mov");
    ck_assert_uint_ne(l.opc, s.opc);
    ck_assert_uint_ne(l.opc, r.opc);
    ck_assert_uint_ne(s.opc, r.opc);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(l.opc), TRACE_MEM_READ);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(s.opc), TRACE_MEM_WRITE);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(r.opc), TRACE_MEM_NONE);
    ck_assert_int_eq(class_of(&l), TRACE_CLASS_LOAD);
    ck_assert_int_eq(class_of(&s), TRACE_CLASS_STORE);
    ck_assert_int_eq(class_of(&r), TRACE_CLASS_ALU);
    ck_assert_uint_eq(TRACE_OPC_MNEMONIC(l.opc), TRACE_OPC_MNEMONIC(r.opc));
    ck_assert_uint_lt(l.opc, trace_opc_count());
    ck_assert_int_eq(l.bytes[3], 0x08);
}
END_TEST

START_TEST(test_stack_and_control)
{
    static const uint8_t push[] = {0x50}, pop[] = {0x58}, ret[] = {0xc3};
    static const uint8_t call[] = {0xe8, 0, 0, 0, 0}, jne[] = {0x75, 0x02};
    trace_inst_t pu = decode(push, 1), po = decode(pop, 1), re = decode(ret, 1);
    trace_inst_t ca = decode(call, 5), jn = decode(jne, 2);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(pu.opc), TRACE_MEM_WRITE);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(po.opc), TRACE_MEM_READ);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(ca.opc), TRACE_MEM_WRITE);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(re.opc), TRACE_MEM_READ);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(jn.opc), TRACE_MEM_NONE);
    ck_assert_int_eq(class_of(&ca), TRACE_CLASS_CALL);
    ck_assert_int_eq(class_of(&re), TRACE_CLASS_RETURN);
    ck_assert_int_eq(class_of(&jn), TRACE_CLASS_BRANCH);
    ck_assert_int_eq(class_of(&pu), TRACE_CLASS_STORE);
    ck_assert_int_eq(class_of(&po), TRACE_CLASS_LOAD);
    ck_assert_str_eq(ca.mnemonic, "call");
    ck_assert_str_eq(trace_iclass_name(TRACE_CLASS_RETURN), "return");
    ck_assert_str_eq(trace_memform_name(TRACE_MEM_RW), "rw");
}
END_TEST

START_TEST(test_other_classes)
{
    static const uint8_t lea[] = {0x48, 0x8d, 0x43, 0x08};       /* lea rax, [rbx+8] */
    static const uint8_t addm[] = {0x48, 0x83, 0x00, 0x01};      /* add qword [rax], 1 */
    static const uint8_t imul[] = {0x48, 0x0f, 0xaf, 0xc3};      /* imul rax, rbx */
    static const uint8_t movsb[] = {0xf3, 0xa4};                 /* rep movsb */
    static const uint8_t addsd[] = {0xf2, 0x0f, 0x58, 0xc1};     /* addsd xmm0, xmm1 */
    static const uint8_t nop[] = {0x0f, 0x1f, 0x44, 0x00, 0x00}; /* nop dword [rax+rax] */
    trace_inst_t le = decode(lea, 4), ad = decode(addm, 4), im = decode(imul, 4);
    trace_inst_t mo = decode(movsb, 2), sd = decode(addsd, 4), no = decode(nop, 5);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(le.opc), TRACE_MEM_NONE);
    ck_assert_int_eq(class_of(&le), TRACE_CLASS_ALU);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(ad.opc), TRACE_MEM_RW);
    ck_assert_int_eq(class_of(&ad), TRACE_CLASS_ALU);
    ck_assert_int_eq(class_of(&im), TRACE_CLASS_MULDIV);
    ck_assert_str_eq(mo.mnemonic, "movsb");
    ck_assert_int_eq(TRACE_OPC_MEMFORM(mo.opc), TRACE_MEM_RW);
    ck_assert_int_eq(class_of(&mo), TRACE_CLASS_STRING);
    ck_assert_int_eq(class_of(&sd), TRACE_CLASS_FPSIMD);
    ck_assert_int_eq(TRACE_OPC_MEMFORM(no.opc), TRACE_MEM_NONE);
    ck_assert_int_eq(class_of(&no), TRACE_CLASS_OTHER);
}
END_TEST

START_TEST(test_lookup)
{
    trace_opc_t a = trace_opc_lookup("mov", TRACE_MEM_READ);
    ck_assert_uint_ne(a, TRACE_OPC_INVALID);
    ck_assert_uint_eq(trace_opc_lookup("MOV", TRACE_MEM_READ), a);
    ck_assert_uint_eq(trace_opc_lookup("Mov", TRACE_MEM_WRITE), a + 1);
    ck_assert_int_eq(trace_opc_info(a)->iclass, TRACE_CLASS_LOAD);
    ck_assert_int_eq(trace_opc_info(a + 1)->iclass, TRACE_CLASS_STORE);
    ck_assert_uint_eq(trace_opc_lookup("nosuchop", TRACE_MEM_NONE), TRACE_OPC_INVALID);
    ck_assert_uint_eq(trace_opc_lookup("mov", (trace_memform_t)4), TRACE_OPC_INVALID);
    ck_assert_uint_eq(trace_opc_lookup(NULL, TRACE_MEM_NONE), TRACE_OPC_INVALID);
    /* Key 0..3 (the invalid mnemonic) and keys past the end have no description. */
    ck_assert_ptr_null(trace_opc_info(0));
    ck_assert_ptr_null(trace_opc_info(3));
    ck_assert_ptr_null(trace_opc_info(trace_opc_count()));
    ck_assert_ptr_nonnull(trace_opc_info(trace_opc_count() - 1));
    ck_assert_int_eq(trace_opc_info(trace_opc_lookup("addsd", TRACE_MEM_READ))->iclass,
                     TRACE_CLASS_FPSIMD);
    ck_assert_int_eq(trace_opc_info(trace_opc_lookup("div", TRACE_MEM_NONE))->iclass,
                     TRACE_CLASS_MULDIV);
}
END_TEST

START_TEST(test_decode_errors)
{
    static const uint8_t bad[] = {0x06};       /* push es: invalid in 64-bit mode */
    static const uint8_t cut[] = {0x48, 0x8b}; /* truncated mov */
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(bad, 1, &inst), DCPI_EFORMAT);
    ck_assert_int_eq(trace_inst_decode(cut, 2, &inst), DCPI_EFORMAT);
    ck_assert_int_eq(trace_inst_decode(NULL, 4, &inst), DCPI_EINVAL);
    ck_assert_int_eq(trace_inst_decode(cut, 2, NULL), DCPI_EINVAL);
}
END_TEST

START_TEST(test_format)
{
    static const uint8_t load[] = {0x48, 0x8b, 0x43, 0x08, 0x90, 0x90}; /* + trailing bytes */
    static const uint8_t jmp[] = {0xeb, 0x10};
    char buf[96];
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(load, (int)sizeof(load), &inst), 4);
    int n = trace_inst_format(&inst, 0x401000, buf, sizeof(buf));
    ck_assert_str_eq(buf, "mov rax, qword ptr [rbx+0x8]");
    ck_assert_int_eq(n, (int)strlen(buf));
    ck_assert_int_eq(trace_inst_decode(jmp, 2, &inst), 2);
    ck_assert_int_gt(trace_inst_format(&inst, 0x401000, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "jmp 0x401012");
    ck_assert_int_lt(trace_inst_format(&inst, 0x401000, buf, 4), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("insn");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_mov_forms);
    tcase_add_test(tc, test_operands);
    tcase_add_test(tc, test_stack_and_control);
    tcase_add_test(tc, test_other_classes);
    tcase_add_test(tc, test_lookup);
    tcase_add_test(tc, test_decode_errors);
    tcase_add_test(tc, test_format);
    tcase_add_test(tc, test_flow);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
