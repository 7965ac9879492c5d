/*
 * trace/insn.c - the x86-64 instruction model (dcpi/insn.h): selection keys (mnemonic * 4 +
 * memory form), their static description and class, and decoding/formatting through Zydis 4.
 *
 * The class of a key is defined by its mnemonic name and memory form only (selectors see a key,
 * never an instruction), by the rules of docs/trace-format.md, "Keys and classes". The per-key
 * table is built once, lazily, under pthread_once.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <Zydis/Zydis.h>

#include "dcpi/errno.h"
#include "dcpi/insn.h"
#include "trace/trace.h"

#define MNEMONIC_COUNT ((unsigned)ZYDIS_MNEMONIC_MAX_VALUE + 1u)
#define OPC_COUNT      (MNEMONIC_COUNT * 4u)

static trace_opc_info_t opc_table[OPC_COUNT];
static pthread_once_t opc_once = PTHREAD_ONCE_INIT;
static ZydisDecoder decoder;
static ZydisFormatter formatter;
static pthread_once_t zydis_once = PTHREAD_ONCE_INIT;
static int zydis_ok;

static const char *const branch_names[] = {"jmp", "loop", "loope", "loopne", NULL};
static const char *const return_names[] = {"ret", "iret", "iretd", "iretq", NULL};
static const char *const muldiv_names[] = {"mul", "imul", "div", "idiv", "mulx", NULL};
static const char *const string_names[] = {
    "movsb", "movsw", "movsq", "stosb", "stosw", "stosd", "stosq", "lodsb", "lodsw",
    "lodsd", "lodsq", "scasb", "scasw", "scasd", "scasq", "cmpsb", "cmpsw", "cmpsq",
    "insb",  "insw",  "insd",  "outsb", "outsw", "outsd", NULL};
/* Integer data moves: LOAD with a memory source, STORE with a memory destination. */
static const char *const int_move_names[] = {"mov",    "movzx", "movsx", "movsxd", "movbe",
                                             "movnti", "push",  "pop",   NULL};
/* Vector data moves: LOAD / STORE with memory, FPSIMD between registers. */
static const char *const vec_move_names[] = {
    "movaps",    "movapd",    "movups",    "movupd",    "movdqa",    "movdqu",    "movss",
    "movsd",     "movlps",    "movlpd",    "movhps",    "movhpd",    "movntps",   "movntpd",
    "movntdq",   "movntdqa",  "movq",      "movd",      "lddqu",     "vmovaps",   "vmovapd",
    "vmovups",   "vmovupd",   "vmovdqa",   "vmovdqa32", "vmovdqa64", "vmovdqu",   "vmovdqu8",
    "vmovdqu16", "vmovdqu32", "vmovdqu64", "vmovss",    "vmovsd",    "vmovsh",    "vmovq",
    "vmovd",     "vmovntps",  "vmovntpd",  "vmovntdq",  "vmovntdqa", "vlddqu",    "vmovlps",
    "vmovlpd",   "vmovhps",   "vmovhpd",   "vmovddup",  "movddup",   "vmovshdup", "movshdup",
    "vmovsldup", "movsldup",  NULL};
static const char *const other_names[] = {
    "syscall",   "sysenter",   "sysexit", "sysret",   "int",      "int1",       "int3",
    "into",      "hlt",        "cpuid",   "rdtsc",    "rdtscp",   "rdpmc",      "rdmsr",
    "wrmsr",     "rdrand",     "rdseed",  "rdpid",    "rdfsbase", "rdgsbase",   "wrfsbase",
    "wrgsbase",  "xgetbv",     "xsetbv",  "xsave",    "xsave64",  "xsavec",     "xsavec64",
    "xsaveopt",  "xsaveopt64", "xsaves",  "xsaves64", "xrstor",   "xrstor64",   "xrstors",
    "xrstors64", "lfence",     "mfence",  "sfence",   "clflush",  "clflushopt", "clwb",
    "clzero",    "ud0",        "ud1",     "ud2",      "nop",      "pause",      "endbr32",
    "endbr64",   "in",         "out",     "cli",      "sti",      "invlpg",     "invpcid",
    "lgdt",      "lidt",       "lldt",    "ltr",      "sgdt",     "sidt",       "sldt",
    "str",       "swapgs",     "wbinvd",  "invd",     "monitor",  "mwait",      "umonitor",
    "umwait",    "tpause",     "ptwrite", "pconfig",  "xbegin",   "xend",       "xabort",
    "xtest",     "verr",       "verw",    "vmcall",   "vmclear",  "vmfunc",     "vmgexit",
    "vmlaunch",  "vmload",     "vmmcall", "vmptrld",  "vmptrst",  "vmread",     "vmresume",
    "vmrun",     "vmsave",     "vmwrite", "vmxoff",   "vmxon",    "rsm",        "getsec",
    "encls",     "enclu",      "enclv",   "clac",     "stac",     "pvalidate",  "psmash",
    NULL};
/* Mnemonics starting with 'p' that are not MMX/SSE integer operations. */
static const char *const p_integer_names[] = {
    "pop",   "popa",   "popad", "popf",   "popfd",  "popfq", "popcnt", "push",
    "pusha", "pushad", "pushf", "pushfd", "pushfq", "pdep",  "pext",   NULL};
static const char *const fpsimd_names[] = {"emms",       "ldmxcsr", "stmxcsr", "maskmovq",
                                           "maskmovdqu", "extrq",   "insertq", NULL};

static int in_list(const char *name, const char *const *list)
{
    for (; *list; list++) {
        if (strcmp(name, *list) == 0) {
            return 1;
        }
    }
    return 0;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_fpsimd_name(const char *m)
{
    if (m[0] == 'f' || m[0] == 'v' || m[0] == 'k') {
        return 1; /* x87, AVX/AVX-512 (virtualization and verr/verw are OTHER, checked before) */
    }
    if (m[0] == 'p') {
        return !in_list(m, p_integer_names) && !starts_with(m, "prefetch");
    }
    if (starts_with(m, "cvt") || starts_with(m, "aes") || starts_with(m, "sha")) {
        return 1;
    }
    if (ends_with(m, "ps") || ends_with(m, "pd") || ends_with(m, "ss") || ends_with(m, "sd")) {
        return 1; /* SSE packed/scalar single/double (string forms were matched before) */
    }
    return in_list(m, fpsimd_names);
}

static trace_iclass_t move_class(trace_memform_t mf, trace_iclass_t regclass)
{
    if (mf == TRACE_MEM_READ) {
        return TRACE_CLASS_LOAD;
    }
    if (mf == TRACE_MEM_WRITE) {
        return TRACE_CLASS_STORE;
    }
    return mf == TRACE_MEM_NONE ? regclass : TRACE_CLASS_ALU;
}

static trace_iclass_t class_of(const char *m, trace_memform_t mf)
{
    if (m[0] == 'j' || in_list(m, branch_names)) {
        return TRACE_CLASS_BRANCH; /* jmp, jcc, jrcxz, loop* */
    }
    if (strcmp(m, "call") == 0) {
        return TRACE_CLASS_CALL;
    }
    if (in_list(m, return_names)) {
        return TRACE_CLASS_RETURN;
    }
    if (in_list(m, muldiv_names)) {
        return TRACE_CLASS_MULDIV;
    }
    if (in_list(m, string_names) || (strcmp(m, "movsd") == 0 && mf == TRACE_MEM_RW)) {
        return TRACE_CLASS_STRING;
    }
    if (in_list(m, int_move_names)) {
        return move_class(mf, TRACE_CLASS_ALU);
    }
    if (in_list(m, vec_move_names)) {
        return move_class(mf, TRACE_CLASS_FPSIMD);
    }
    if (in_list(m, other_names) || starts_with(m, "prefetch")) {
        return TRACE_CLASS_OTHER;
    }
    return is_fpsimd_name(m) ? TRACE_CLASS_FPSIMD : TRACE_CLASS_ALU;
}

static void build_opc_table(void)
{
    for (unsigned mn = 1; mn < MNEMONIC_COUNT; mn++) {
        const char *name = ZydisMnemonicGetString((ZydisMnemonic)mn);
        if (name == NULL) {
            continue;
        }
        for (unsigned mf = 0; mf < 4; mf++) {
            trace_opc_info_t *info = &opc_table[mn * 4 + mf];
            info->opc = TRACE_OPC(mn, mf);
            info->mnemonic = name;
            info->memform = (trace_memform_t)mf;
            info->iclass = class_of(name, (trace_memform_t)mf);
        }
    }
}

static void init_zydis(void)
{
    if (ZYAN_FAILED(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
        return;
    }
    /* objdump-like Intel text in lower-case hex: "mov rax, qword ptr [rbx+0x8]", "jmp 0x401012". */
    if (ZYAN_FAILED(ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_INTEL)) ||
        ZYAN_FAILED(ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_FORCE_SIZE, 1)) ||
        ZYAN_FAILED(ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, 0)) ||
        ZYAN_FAILED(ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_DISP_PADDING,
                                              ZYDIS_PADDING_DISABLED)) ||
        ZYAN_FAILED(ZydisFormatterSetProperty(&formatter, ZYDIS_FORMATTER_PROP_IMM_PADDING,
                                              ZYDIS_PADDING_DISABLED)) ||
        ZYAN_FAILED(ZydisFormatterSetProperty(
            &formatter, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED))) {
        return;
    }
    zydis_ok = 1;
}

trace_opc_t trace_opc_count(void)
{
    return OPC_COUNT;
}

const trace_opc_info_t *trace_opc_info(trace_opc_t opc)
{
    if (opc >= OPC_COUNT || TRACE_OPC_MNEMONIC(opc) == ZYDIS_MNEMONIC_INVALID) {
        return NULL;
    }
    pthread_once(&opc_once, build_opc_table);
    const trace_opc_info_t *info = &opc_table[opc];
    return info->mnemonic != NULL ? info : NULL;
}

trace_opc_t trace_opc_lookup(const char *mnemonic, trace_memform_t memform)
{
    if (mnemonic == NULL || (unsigned)memform > TRACE_MEM_RW) {
        return TRACE_OPC_INVALID;
    }
    for (unsigned mn = 1; mn < MNEMONIC_COUNT; mn++) {
        const char *name = ZydisMnemonicGetString((ZydisMnemonic)mn);
        if (name != NULL && strcasecmp(name, mnemonic) == 0) {
            return TRACE_OPC(mn, (unsigned)memform);
        }
    }
    return TRACE_OPC_INVALID;
}

const char *trace_memform_name(trace_memform_t m)
{
    static const char *const names[] = {"none", "read", "write", "rw"};
    return (unsigned)m <= TRACE_MEM_RW ? names[m] : "?";
}

const char *trace_iclass_name(trace_iclass_t c)
{
    static const char *const names[] = {"alu",  "muldiv", "load",   "store",  "branch",
                                        "call", "return", "fpsimd", "string", "other"};
    return (unsigned)c <= TRACE_CLASS_OTHER ? names[c] : "?";
}

/* Which way the instruction's memory operands go. Address generation (lea, MIB forms) and the
 * hinting nop's operand access nothing. */
static trace_memform_t memform_of(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    unsigned mf = 0;
    if (in->mnemonic == ZYDIS_MNEMONIC_NOP) {
        return TRACE_MEM_NONE;
    }
    for (unsigned i = 0; i < in->operand_count; i++) {
        const ZydisDecodedOperand *op = &ops[i];
        if (op->type != ZYDIS_OPERAND_TYPE_MEMORY ||
            (op->mem.type != ZYDIS_MEMOP_TYPE_MEM && op->mem.type != ZYDIS_MEMOP_TYPE_VSIB)) {
            continue;
        }
        if (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ) {
            mf |= TRACE_MEM_READ;
        }
        if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) {
            mf |= TRACE_MEM_WRITE;
        }
    }
    return (trace_memform_t)mf;
}

static int decode_full(const void *bytes, int len, ZydisDecodedInstruction *in,
                       ZydisDecodedOperand *ops)
{
    if (bytes == NULL || len <= 0) {
        return DCPI_EINVAL;
    }
    pthread_once(&zydis_once, init_zydis);
    if (!zydis_ok) {
        return DCPI_ENOTSUP;
    }
    if (ZYAN_FAILED(ZydisDecoderDecodeFull(&decoder, bytes, (ZyanUSize)len, in, ops))) {
        return DCPI_EFORMAT;
    }
    return 0;
}

int trace_inst_decode(const void *bytes, int len, trace_inst_t *inst)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (inst == NULL) {
        return DCPI_EINVAL;
    }
    int rc = decode_full(bytes, len, &in, ops);
    if (rc < 0) {
        return rc;
    }
    memset(inst, 0, sizeof(*inst));
    memcpy(inst->bytes, bytes, in.length);
    inst->length = in.length;
    inst->opc = TRACE_OPC((unsigned)in.mnemonic, (unsigned)memform_of(&in, ops));
    const trace_opc_info_t *info = trace_opc_info(inst->opc);
    inst->mnemonic = info != NULL ? info->mnemonic : "?";
    return in.length;
}

int trace_inst_operands(const trace_inst_t *inst, trace_operand_t *ops, int max)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand zo[ZYDIS_MAX_OPERAND_COUNT];
    if (inst == NULL || inst->length == 0 || inst->length > 15 || (max > 0 && ops == NULL)) {
        return DCPI_EINVAL;
    }
    if (decode_full(inst->bytes, inst->length, &in, zo) < 0) {
        return DCPI_EFORMAT;
    }
    int n = 0;
    for (int i = 0; i < in.operand_count_visible; i++, n++) {
        if (n >= max) {
            continue;
        }
        const ZydisDecodedOperand *o = &zo[i];
        trace_operand_t t = {.size = o->size,
                             .read = (o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0,
                             .write = (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0};
        switch (o->type) {
        case ZYDIS_OPERAND_TYPE_REGISTER:
            t.kind = TRACE_OPERAND_REG;
            t.reg = ZydisRegisterGetString(o->reg.value);
            break;
        case ZYDIS_OPERAND_TYPE_MEMORY:
            t.kind = o->mem.type == ZYDIS_MEMOP_TYPE_MEM ? TRACE_OPERAND_MEM : TRACE_OPERAND_ADDR;
            break;
        case ZYDIS_OPERAND_TYPE_IMMEDIATE:
            t.kind = TRACE_OPERAND_IMM;
            break;
        default:
            t.kind = TRACE_OPERAND_ADDR; /* far pointer */
            break;
        }
        ops[n] = t;
    }
    return n;
}

int trace_inst_is_conditional(const trace_inst_t *inst)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand zo[ZYDIS_MAX_OPERAND_COUNT];
    if (inst == NULL || inst->length == 0 || inst->length > 15 ||
        decode_full(inst->bytes, inst->length, &in, zo) < 0) {
        return 0;
    }
    if (in.meta.category == ZYDIS_CATEGORY_COND_BR || in.meta.category == ZYDIS_CATEGORY_CMOV) {
        return 1;
    }
    ZydisMnemonic m = in.mnemonic;
    return (m >= ZYDIS_MNEMONIC_SETB && m <= ZYDIS_MNEMONIC_SETZ) || m == ZYDIS_MNEMONIC_LOOP ||
           m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE || m == ZYDIS_MNEMONIC_JRCXZ ||
           m == ZYDIS_MNEMONIC_JECXZ || m == ZYDIS_MNEMONIC_JCXZ;
}

int trace_inst_mem_indexed(const trace_inst_t *inst)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (inst == NULL || inst->length == 0 || inst->length > 15 ||
        decode_full(inst->bytes, inst->length, &in, ops) < 0)
        return DCPI_EFORMAT;
    for (unsigned i = 0; i < in.operand_count_visible; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.index != ZYDIS_REGISTER_NONE)
            return 1;
    return 0;
}

/* A relative branch or call's target when it runs at pc, else 0. */
static uint64_t rel_target(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                           uint64_t pc)
{
    ZyanU64 t = 0;
    for (unsigned i = 0; i < in->operand_count_visible; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative &&
            ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, &ops[i], pc, &t)))
            return t;
    return 0;
}

trace_flow_t trace_inst_flow(const trace_inst_t *inst, uint64_t pc, uint64_t *target)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    uint64_t t = 0;
    trace_flow_t f = TRACE_FLOW_NONE;
    if (inst && inst->length && inst->length <= 15 &&
        decode_full(inst->bytes, inst->length, &in, ops) >= 0) {
        ZydisMnemonic m = in.mnemonic;
        switch (in.meta.category) {
        case ZYDIS_CATEGORY_COND_BR:
            f = TRACE_FLOW_COND;
            t = rel_target(&in, ops, pc);
            break;
        case ZYDIS_CATEGORY_UNCOND_BR:
            t = rel_target(&in, ops, pc);
            f = t ? TRACE_FLOW_JUMP : TRACE_FLOW_IND;
            break;
        case ZYDIS_CATEGORY_RET:
            f = TRACE_FLOW_RET;
            break;
        case ZYDIS_CATEGORY_CALL:
            f = TRACE_FLOW_CALL;
            t = rel_target(&in, ops, pc);
            break;
        default:
            if (m == ZYDIS_MNEMONIC_UD2 || m == ZYDIS_MNEMONIC_HLT || m == ZYDIS_MNEMONIC_INT3 ||
                m == ZYDIS_MNEMONIC_UD0 || m == ZYDIS_MNEMONIC_UD1)
                f = TRACE_FLOW_STOP;
            break;
        }
    }
    if (target)
        *target = t;
    return f;
}

int trace_inst_format(const trace_inst_t *inst, uint64_t pc, char *buf, int buflen)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (inst == NULL || buf == NULL || buflen <= 0 || inst->length == 0 || inst->length > 15) {
        return DCPI_EINVAL;
    }
    int rc = decode_full(inst->bytes, inst->length, &in, ops);
    if (rc < 0) {
        return rc;
    }
    if (ZYAN_FAILED(ZydisFormatterFormatInstruction(&formatter, &in, ops, in.operand_count_visible,
                                                    buf, (ZyanUSize)buflen, pc, NULL))) {
        return DCPI_ERANGE;
    }
    return (int)strlen(buf);
}
