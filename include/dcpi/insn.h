/*
 * dcpi/insn.h - the x86-64 instruction model seen by plugins.
 *
 * On Alpha a value profiler selected instructions by their 6-bit opcode and received the
 * 32-bit instruction word. On x86-64 dcpi uses:
 *   - a selection key ("opcode", trace_opc_t): the decoded mnemonic together with its memory
 *     form (no memory operand / reads memory / writes memory / both), so that a load
 *     `mov rax,[rbx]`, a store `mov [rbx],rax` and a register `mov rax,rbx` are three keys, as
 *     ldq, stq and bis were three opcodes;
 *   - an instruction descriptor (trace_inst_t: bytes, length, key, mnemonic) in place of the
 *     instruction word, passed by pointer.
 * Keys are small integers (mnemonic * 4 + memory form). Mnemonic numbers come from the decoder
 * (Zydis 4) and may change between dcpi builds, so plugins look keys up by name
 * (trace_opc_lookup) instead of hard-coding numbers.
 */
#ifndef DCPI_INSN_H
#define DCPI_INSN_H

#include <stdint.h>
#include "api.h"

/* Memory form of an instruction: which way its (explicit or implicit) memory operands go.
 * Stack pushes/pops and calls/returns count: push writes memory, pop and ret read it. */
typedef enum trace_memform {
    TRACE_MEM_NONE = 0,
    TRACE_MEM_READ = 1,
    TRACE_MEM_WRITE = 2,
    TRACE_MEM_RW = 3
} trace_memform_t;

/* Coarse instruction classes handed to selectors. A key has exactly one class:
 * LOAD / STORE are data moves (mov, movzx, movsx, movs*x, lea excluded) with a memory
 * source / destination; an ALU op with a memory operand keeps its ALU class. */
typedef enum trace_iclass {
    TRACE_CLASS_ALU = 0, /* integer arithmetic, logic, shifts, moves between registers, lea */
    TRACE_CLASS_MULDIV,  /* mul, imul, div, idiv */
    TRACE_CLASS_LOAD,    /* data move from memory to a register */
    TRACE_CLASS_STORE,   /* data move from a register/immediate to memory */
    TRACE_CLASS_BRANCH,  /* jmp, jcc, loop, jrcxz */
    TRACE_CLASS_CALL,
    TRACE_CLASS_RETURN,
    TRACE_CLASS_FPSIMD, /* x87, SSE, AVX */
    TRACE_CLASS_STRING, /* movs, stos, lods, cmps, scas (any rep form) */
    TRACE_CLASS_OTHER
} trace_iclass_t;

typedef uint32_t trace_opc_t;
#define TRACE_OPC(mnemonic, memform) ((trace_opc_t)(((mnemonic) << 2) | (memform)))
#define TRACE_OPC_MNEMONIC(opc)      ((opc) >> 2)
#define TRACE_OPC_MEMFORM(opc)       ((trace_memform_t)((opc)&3u))
/* Returned by trace_opc_lookup for an unknown name. */
#define TRACE_OPC_INVALID ((trace_opc_t)0xffffffffu)

/* What selectors and pick-value functions are told about one key. */
typedef struct trace_opc_info {
    trace_opc_t opc;
    const char *mnemonic; /* lower case, e.g. "mov", "imul", "rep movsb" is "movsb" */
    trace_memform_t memform;
    trace_iclass_t iclass;
} trace_opc_info_t;

/* The instruction descriptor (x86-64 counterpart of Alpha's instruction word). */
typedef struct trace_inst {
    uint8_t bytes[15];
    uint8_t length;       /* 1..15 */
    trace_opc_t opc;      /* selection key */
    const char *mnemonic; /* static string, lower case */
} trace_inst_t;

/* Number of key slots: every valid key is < trace_opc_count(). */
DCPI_API trace_opc_t trace_opc_count(void);
/* Key of a mnemonic name ("mov", case-insensitive) in a memory form, or TRACE_OPC_INVALID. */
DCPI_API trace_opc_t trace_opc_lookup(const char *mnemonic, trace_memform_t memform);
/* Description of a key (NULL for an invalid key). Static storage. */
DCPI_API const trace_opc_info_t *trace_opc_info(trace_opc_t opc);
/* Name of a memory form / class ("none", "read", "write", "rw"; "alu", "load", ...). */
DCPI_API const char *trace_memform_name(trace_memform_t m);
DCPI_API const char *trace_iclass_name(trace_iclass_t c);

/* Decode one instruction at bytes[0..len) into *inst (64-bit mode). Returns its length, or
 * a negative DCPI_E* (DCPI_EFORMAT: not a valid instruction). */
DCPI_API int trace_inst_decode(const void *bytes, int len, trace_inst_t *inst);
/* Disassemble into buf (Intel syntax, lower-case hex, runtime address pc for relative targets).
 * Returns the formatted length or a negative DCPI_E*. */
DCPI_API int trace_inst_format(const trace_inst_t *inst, uint64_t pc, char *buf, int buflen);

/* ---- SDK 2 (libdcpi DCPI_0.2): operands, for instruction filters (dcpi/trace-vlist.h) ---- */

/* Operand kinds of trace_operand_t. */
typedef enum trace_operand_kind {
    TRACE_OPERAND_REG = 1,
    TRACE_OPERAND_MEM = 2, /* a memory access (not lea's address computation) */
    TRACE_OPERAND_IMM = 3, /* an immediate, a relative branch target included */
    TRACE_OPERAND_ADDR = 4 /* lea's address computation, a far pointer */
} trace_operand_kind_t;

typedef struct trace_operand {
    uint8_t kind;        /* trace_operand_kind_t */
    uint8_t read, write; /* 1 when the instruction reads / writes it */
    uint16_t size;       /* bits */
    const char *reg;     /* TRACE_OPERAND_REG: the register's name ("rdx", "ecx"), else NULL */
} trace_operand_t;

/* The visible operands of inst, in Intel order (destination first), into ops[0..max): returns
 * their count (which may exceed max), or DCPI_EFORMAT when inst does not decode. */
DCPI_API int trace_inst_operands(const trace_inst_t *inst, trace_operand_t *ops, int max);
/* 1 when inst's effect depends on the flags or rcx (jcc, jrcxz, loop*, cmovcc, setcc), else 0. */
DCPI_API int trace_inst_is_conditional(const trace_inst_t *inst);
/* SDK 3: 1 when inst's memory operand is indexed (`jmp [table + rax*8]`: a jump table), 0 when
 * it has none or no index register (`jmp [rip + pointer]`: a tail call through a pointer),
 * DCPI_EFORMAT when inst does not decode. */
DCPI_API int trace_inst_mem_indexed(const trace_inst_t *inst);

#endif
