/*
 * check_interp.c - the x86-64 result interpreter (core/capture/interp.c) against the CPU itself:
 * each instruction is assembled once, inside a native stub that loads the 15 GPRs (all but rsp) and
 * rflags from g_in, runs it and stores them to g_out. The same bytes, copied from between two
 * labels around the instruction, are decoded and interpreted with the same inputs; result and the
 * flags the instruction defines must agree, for 200 random inputs per instruction. Where the CPU
 * faults (div/idiv #DE, caught as SIGFPE) or the result is architecturally undefined (bsf/bsr of
 * 0, a 16-bit shld/shrd count above 16), the interpreter must say DCPI_ERANGE (missing) instead;
 * those inputs do not count toward the 200.
 */
#include <check.h>
#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_skip.h"
#include "core/capture/capture.h"
#include "core/capture/interp.h"
#include "dcpi/errno.h"

/* Native state, perf register order (DCPI_REG_*). Read and written by the stubs. */
uint64_t g_in[DCPI_REG_COUNT], g_out[DCPI_REG_COUNT];

#define LOADS                                                                                      \
    "push rbx\n push rbp\n push r12\n push r13\n push r14\n push r15\n"                            \
    "push qword ptr [rip + g_in + 72]\n popfq\n"                                                   \
    "mov rax, [rip + g_in + 0]\n mov rbx, [rip + g_in + 8]\n mov rcx, [rip + g_in + 16]\n"         \
    "mov rdx, [rip + g_in + 24]\n mov rsi, [rip + g_in + 32]\n mov rdi, [rip + g_in + 40]\n"       \
    "mov rbp, [rip + g_in + 48]\n mov r8, [rip + g_in + 128]\n mov r9, [rip + g_in + 136]\n"       \
    "mov r10, [rip + g_in + 144]\n mov r11, [rip + g_in + 152]\n mov r12, [rip + g_in + 160]\n"    \
    "mov r13, [rip + g_in + 168]\n mov r14, [rip + g_in + 176]\n mov r15, [rip + g_in + 184]\n"

#define STORES                                                                                     \
    "mov [rip + g_out + 0], rax\n mov [rip + g_out + 8], rbx\n mov [rip + g_out + 16], rcx\n"      \
    "mov [rip + g_out + 24], rdx\n mov [rip + g_out + 32], rsi\n mov [rip + g_out + 40], rdi\n"    \
    "mov [rip + g_out + 48], rbp\n mov [rip + g_out + 128], r8\n mov [rip + g_out + 136], r9\n"    \
    "mov [rip + g_out + 144], r10\n mov [rip + g_out + 152], r11\n"                                \
    "mov [rip + g_out + 160], r12\n mov [rip + g_out + 168], r13\n"                                \
    "mov [rip + g_out + 176], r14\n mov [rip + g_out + 184], r15\n"                                \
    "pushfq\n pop qword ptr [rip + g_out + 72]\n"                                                  \
    "pop r15\n pop r14\n pop r13\n pop r12\n pop rbp\n pop rbx\n ret\n"

/* A native stub name_run() and the labels name_s / name_e around the instruction text. */
#define NATIVE(name, text)                                                                         \
    void name##_run(void);                                                                         \
    extern const char name##_s[], name##_e[];                                                      \
    __asm__(".pushsection .text\n .intel_syntax noprefix\n .globl " #name "_run\n"                 \
            ".type " #name "_run, @function\n" #name "_run:\n" LOADS ".globl " #name "_s\n" #name  \
            "_s:\n " text "\n.globl " #name "_e\n" #name "_e:\n" STORES                            \
            ".att_syntax prefix\n .popsection\n");

/* Input shaping. */
enum {
    GEN_ANY = 0,
    GEN_COUNT = 1, /* rcx holds interesting shift counts */
    GEN_DIV = 2,   /* the dividend's high half (ah / dx / edx / rdx) mostly avoids #DE */
};

/* Flags an instruction class may leave undefined (what the interpreter may report). */
#define U_NONE  0ull
#define U_LOGIC DCPI_FLAG_AF
#define U_SHIFT (DCPI_FLAG_AF | DCPI_FLAG_OF | DCPI_FLAG_CF)
#define U_ROT   DCPI_FLAG_OF
#define U_MUL   (DCPI_FLAG_SF | DCPI_FLAG_ZF | DCPI_FLAG_AF | DCPI_FLAG_PF)
#define U_DIV   DCPI_FLAGS_STATUS
#define U_BT    (DCPI_FLAG_OF | DCPI_FLAG_SF | DCPI_FLAG_AF | DCPI_FLAG_PF)
#define U_CNT   U_BT /* lzcnt / tzcnt */
#define U_SCAN  (U_BT | DCPI_FLAG_CF)
#define U_SHXD  (DCPI_FLAG_OF | DCPI_FLAG_AF)

#define FLAGS_DEST (-1)

typedef struct icase {
    const char *name;
    void (*run)(void);
    const char *start, *end;
    int dest;           /* perf index of the result register, or FLAGS_DEST (cmp/test) */
    int gen;            /* GEN_* */
    uint64_t may_undef; /* U_* */
} icase_t;

/* X(name, instruction, dest, gen, may_undef) */
#define CASES(X)                                                                                   \
    X(mov64, "mov rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(mov32, "mov eax, ebx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(mov16, "mov ax, r9w", DCPI_REG_AX, GEN_ANY, U_NONE)                                          \
    X(mov8, "mov al, bl", DCPI_REG_AX, GEN_ANY, U_NONE)                                            \
    X(mov8h, "mov ah, bh", DCPI_REG_AX, GEN_ANY, U_NONE)                                           \
    X(mov8r, "mov r10b, sil", DCPI_REG_R10, GEN_ANY, U_NONE)                                       \
    X(movimm32, "mov ecx, 0x89abcdef", DCPI_REG_CX, GEN_ANY, U_NONE)                               \
    X(movimms, "mov rdx, -5", DCPI_REG_DX, GEN_ANY, U_NONE)                                        \
    X(movimm8, "mov dh, 0x9c", DCPI_REG_DX, GEN_ANY, U_NONE)                                       \
    X(movabs, "movabs r11, 0x123456789abcdef0", DCPI_REG_R11, GEN_ANY, U_NONE)                     \
    X(lea, "lea rax, [rbx + rcx * 8 + 0x40]", DCPI_REG_AX, GEN_ANY, U_NONE)                        \
    X(lea32, "lea eax, [rbx + rcx * 4 - 8]", DCPI_REG_AX, GEN_ANY, U_NONE)                         \
    X(lea16, "lea si, [r8 + r9]", DCPI_REG_SI, GEN_ANY, U_NONE)                                    \
    X(leaa32, "lea rdi, [ebx + ecx * 2 + 5]", DCPI_REG_DI, GEN_ANY, U_NONE)                        \
    X(learip, "lea rax, [rip + 0x100]", DCPI_REG_AX, GEN_ANY, U_NONE)                              \
    X(add64, "add rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(add32, "add eax, ebx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(add16, "add ax, bx", DCPI_REG_AX, GEN_ANY, U_NONE)                                           \
    X(add8, "add al, bl", DCPI_REG_AX, GEN_ANY, U_NONE)                                            \
    X(add8h, "add ch, dl", DCPI_REG_CX, GEN_ANY, U_NONE)                                           \
    X(addi8, "add r12, -3", DCPI_REG_R12, GEN_ANY, U_NONE)                                         \
    X(addi32, "add ecx, 0x7fffffff", DCPI_REG_CX, GEN_ANY, U_NONE)                                 \
    X(adc64, "adc rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(adc32, "adc esi, edi", DCPI_REG_SI, GEN_ANY, U_NONE)                                         \
    X(adc8, "adc al, 0x7f", DCPI_REG_AX, GEN_ANY, U_NONE)                                          \
    X(sub64, "sub rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(sub32, "sub r13d, r14d", DCPI_REG_R13, GEN_ANY, U_NONE)                                      \
    X(sub8, "sub bl, ah", DCPI_REG_BX, GEN_ANY, U_NONE)                                            \
    X(sbb64, "sbb rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(sbb16, "sbb dx, cx", DCPI_REG_DX, GEN_ANY, U_NONE)                                           \
    X(sbbi, "sbb eax, 1", DCPI_REG_AX, GEN_ANY, U_NONE)                                            \
    X(imul2, "imul rax, rbx", DCPI_REG_AX, GEN_ANY, U_MUL)                                         \
    X(imul2d, "imul eax, ebx", DCPI_REG_AX, GEN_ANY, U_MUL)                                        \
    X(imul2w, "imul ax, bx", DCPI_REG_AX, GEN_ANY, U_MUL)                                          \
    X(imul3, "imul rax, rbx, 7", DCPI_REG_AX, GEN_ANY, U_MUL)                                      \
    X(imul3d, "imul ecx, edx, -100000", DCPI_REG_CX, GEN_ANY, U_MUL)                               \
    X(imul3w, "imul r8w, r9w, 300", DCPI_REG_R8, GEN_ANY, U_MUL)                                   \
    X(mul64, "mul rbx", DCPI_REG_AX, GEN_ANY, U_MUL)                                               \
    X(mul32, "mul ebx", DCPI_REG_AX, GEN_ANY, U_MUL)                                               \
    X(mul16, "mul bx", DCPI_REG_AX, GEN_ANY, U_MUL)                                                \
    X(mul8, "mul bl", DCPI_REG_AX, GEN_ANY, U_MUL)                                                 \
    X(imul1q, "imul rbx", DCPI_REG_AX, GEN_ANY, U_MUL)                                             \
    X(imul1d, "imul ecx", DCPI_REG_AX, GEN_ANY, U_MUL)                                             \
    X(imul1w, "imul bx", DCPI_REG_AX, GEN_ANY, U_MUL)                                              \
    X(imul1b, "imul dl", DCPI_REG_AX, GEN_ANY, U_MUL)                                              \
    X(and64, "and rax, rbx", DCPI_REG_AX, GEN_ANY, U_LOGIC)                                        \
    X(and32i, "and eax, 0xffff0f0f", DCPI_REG_AX, GEN_ANY, U_LOGIC)                                \
    X(or64, "or r15, rbx", DCPI_REG_R15, GEN_ANY, U_LOGIC)                                         \
    X(or16, "or ax, -2", DCPI_REG_AX, GEN_ANY, U_LOGIC)                                            \
    X(xor32, "xor eax, ebx", DCPI_REG_AX, GEN_ANY, U_LOGIC)                                        \
    X(xor8, "xor bh, cl", DCPI_REG_BX, GEN_ANY, U_LOGIC)                                           \
    X(shl64, "shl rax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                       \
    X(shl32, "shl eax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                       \
    X(shl16, "shl ax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                        \
    X(shl8, "shl al, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                         \
    X(shl1, "shl rax, 1", DCPI_REG_AX, GEN_ANY, U_SHIFT)                                           \
    X(shl0, "shl eax, 0", DCPI_REG_AX, GEN_ANY, U_SHIFT)                                           \
    X(shr64, "shr rax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                       \
    X(shr32, "shr edx, cl", DCPI_REG_DX, GEN_COUNT, U_SHIFT)                                       \
    X(shr8, "shr bl, cl", DCPI_REG_BX, GEN_COUNT, U_SHIFT)                                         \
    X(shr1, "shr eax, 1", DCPI_REG_AX, GEN_ANY, U_SHIFT)                                           \
    X(shri, "shr r9, 17", DCPI_REG_R9, GEN_ANY, U_SHIFT)                                           \
    X(sar64, "sar rax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                       \
    X(sar16, "sar ax, cl", DCPI_REG_AX, GEN_COUNT, U_SHIFT)                                        \
    X(sar8, "sar dl, cl", DCPI_REG_DX, GEN_COUNT, U_SHIFT)                                         \
    X(sar1, "sar rax, 1", DCPI_REG_AX, GEN_ANY, U_SHIFT)                                           \
    X(sari, "sar esi, 5", DCPI_REG_SI, GEN_ANY, U_SHIFT)                                           \
    X(rol64, "rol rax, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                         \
    X(rol8, "rol al, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                           \
    X(rol16, "rol dx, cl", DCPI_REG_DX, GEN_COUNT, U_ROT)                                          \
    X(rol1, "rol eax, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(roli, "rol eax, 13", DCPI_REG_AX, GEN_ANY, U_ROT)                                            \
    X(ror64, "ror rax, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                         \
    X(ror16, "ror bx, cl", DCPI_REG_BX, GEN_COUNT, U_ROT)                                          \
    X(ror32, "ror edi, cl", DCPI_REG_DI, GEN_COUNT, U_ROT)                                         \
    X(ror1, "ror rax, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(rori, "ror r8, 63", DCPI_REG_R8, GEN_ANY, U_ROT)                                             \
    X(inc64, "inc rax", DCPI_REG_AX, GEN_ANY, U_NONE)                                              \
    X(inc32, "inc ebx", DCPI_REG_BX, GEN_ANY, U_NONE)                                              \
    X(inc8h, "inc bh", DCPI_REG_BX, GEN_ANY, U_NONE)                                               \
    X(dec16, "dec ax", DCPI_REG_AX, GEN_ANY, U_NONE)                                               \
    X(dec8, "dec r8b", DCPI_REG_R8, GEN_ANY, U_NONE)                                               \
    X(neg64, "neg rax", DCPI_REG_AX, GEN_ANY, U_NONE)                                              \
    X(neg32, "neg eax", DCPI_REG_AX, GEN_ANY, U_NONE)                                              \
    X(neg8, "neg cl", DCPI_REG_CX, GEN_ANY, U_NONE)                                                \
    X(not64, "not rax", DCPI_REG_AX, GEN_ANY, U_NONE)                                              \
    X(not16, "not dx", DCPI_REG_DX, GEN_ANY, U_NONE)                                               \
    X(not32, "not r10d", DCPI_REG_R10, GEN_ANY, U_NONE)                                            \
    X(movzxb, "movzx eax, bl", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(movzxw, "movzx rax, bx", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(movzxbw, "movzx cx, ah", DCPI_REG_CX, GEN_ANY, U_NONE)                                       \
    X(movsxb, "movsx rax, bl", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(movsxw, "movsx eax, bx", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(movsxbh, "movsx dx, bh", DCPI_REG_DX, GEN_ANY, U_NONE)                                       \
    X(movsxd, "movsxd rax, ebx", DCPI_REG_AX, GEN_ANY, U_NONE)                                     \
    X(cmovz, "cmovz rax, rbx", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(cmovl, "cmovl eax, ebx", DCPI_REG_AX, GEN_ANY, U_NONE)                                       \
    X(cmovbe, "cmovbe rcx, rdx", DCPI_REG_CX, GEN_ANY, U_NONE)                                     \
    X(cmovo, "cmovo r8d, r9d", DCPI_REG_R8, GEN_ANY, U_NONE)                                       \
    X(cmovp, "cmovp ax, bx", DCPI_REG_AX, GEN_ANY, U_NONE)                                         \
    X(cmovg, "cmovg rsi, rdi", DCPI_REG_SI, GEN_ANY, U_NONE)                                       \
    X(cmovns, "cmovns edx, ecx", DCPI_REG_DX, GEN_ANY, U_NONE)                                     \
    X(cmovae, "cmovae rax, r15", DCPI_REG_AX, GEN_ANY, U_NONE)                                     \
    X(setz, "setz al", DCPI_REG_AX, GEN_ANY, U_NONE)                                               \
    X(setl, "setl bl", DCPI_REG_BX, GEN_ANY, U_NONE)                                               \
    X(seta, "seta ch", DCPI_REG_CX, GEN_ANY, U_NONE)                                               \
    X(setp, "setp dl", DCPI_REG_DX, GEN_ANY, U_NONE)                                               \
    X(setg, "setg r8b", DCPI_REG_R8, GEN_ANY, U_NONE)                                              \
    X(setle, "setle sil", DCPI_REG_SI, GEN_ANY, U_NONE)                                            \
    X(seto, "seto al", DCPI_REG_AX, GEN_ANY, U_NONE)                                               \
    X(setns, "setns al", DCPI_REG_AX, GEN_ANY, U_NONE)                                             \
    X(cmp64, "cmp rax, rbx", FLAGS_DEST, GEN_ANY, U_NONE)                                          \
    X(cmp32i, "cmp eax, 5", FLAGS_DEST, GEN_ANY, U_NONE)                                           \
    X(cmp8, "cmp al, bl", FLAGS_DEST, GEN_ANY, U_NONE)                                             \
    X(cmp16i, "cmp ax, -1", FLAGS_DEST, GEN_ANY, U_NONE)                                           \
    X(test64, "test rax, rbx", FLAGS_DEST, GEN_ANY, U_LOGIC)                                       \
    X(test32i, "test eax, 0x80000000", FLAGS_DEST, GEN_ANY, U_LOGIC)                               \
    X(test8, "test bl, bl", FLAGS_DEST, GEN_ANY, U_LOGIC)                                          \
    X(xchg64, "xchg rcx, rdx", DCPI_REG_CX, GEN_ANY, U_NONE)                                       \
    X(xchg32, "xchg ecx, edx", DCPI_REG_CX, GEN_ANY, U_NONE)                                       \
    X(xchg8, "xchg cl, dh", DCPI_REG_CX, GEN_ANY, U_NONE)                                          \
    X(bswap64, "bswap rax", DCPI_REG_AX, GEN_ANY, U_NONE)                                          \
    X(bswap32, "bswap r12d", DCPI_REG_R12, GEN_ANY, U_NONE)                                        \
    X(div64, "div rbx", DCPI_REG_AX, GEN_DIV, U_DIV)                                               \
    X(div32, "div ebx", DCPI_REG_AX, GEN_DIV, U_DIV)                                               \
    X(div16, "div bx", DCPI_REG_AX, GEN_DIV, U_DIV)                                                \
    X(div8, "div bl", DCPI_REG_AX, GEN_DIV, U_DIV)                                                 \
    X(div8h, "div ch", DCPI_REG_AX, GEN_DIV, U_DIV)                                                \
    X(divr9, "div r9", DCPI_REG_AX, GEN_DIV, U_DIV)                                                \
    X(idiv64, "idiv rbx", DCPI_REG_AX, GEN_DIV, U_DIV)                                             \
    X(idiv32, "idiv ecx", DCPI_REG_AX, GEN_DIV, U_DIV)                                             \
    X(idiv16, "idiv bx", DCPI_REG_AX, GEN_DIV, U_DIV)                                              \
    X(idiv8, "idiv bl", DCPI_REG_AX, GEN_DIV, U_DIV)                                               \
    X(idivr10d, "idiv r10d", DCPI_REG_AX, GEN_DIV, U_DIV)                                          \
    X(bt64, "bt rax, rbx", FLAGS_DEST, GEN_ANY, U_BT)                                              \
    X(bt32i, "bt eax, 17", FLAGS_DEST, GEN_ANY, U_BT)                                              \
    X(bt16, "bt cx, dx", FLAGS_DEST, GEN_ANY, U_BT)                                                \
    X(bt64i, "bt r11, 63", FLAGS_DEST, GEN_ANY, U_BT)                                              \
    X(bts64, "bts rax, rcx", DCPI_REG_AX, GEN_ANY, U_BT)                                           \
    X(bts32i, "bts ebx, 31", DCPI_REG_BX, GEN_ANY, U_BT)                                           \
    X(bts16, "bts si, di", DCPI_REG_SI, GEN_ANY, U_BT)                                             \
    X(btr64, "btr rdx, rbx", DCPI_REG_DX, GEN_ANY, U_BT)                                           \
    X(btr32i, "btr eax, 5", DCPI_REG_AX, GEN_ANY, U_BT)                                            \
    X(btr16i, "btr ax, 15", DCPI_REG_AX, GEN_ANY, U_BT)                                            \
    X(btc64i, "btc r8, 63", DCPI_REG_R8, GEN_ANY, U_BT)                                            \
    X(btc32, "btc ecx, edx", DCPI_REG_CX, GEN_ANY, U_BT)                                           \
    X(btc16i, "btc bx, 3", DCPI_REG_BX, GEN_ANY, U_BT)                                             \
    X(bsf64, "bsf rax, rbx", DCPI_REG_AX, GEN_ANY, U_SCAN)                                         \
    X(bsf32, "bsf ecx, edx", DCPI_REG_CX, GEN_ANY, U_SCAN)                                         \
    X(bsf16, "bsf ax, bx", DCPI_REG_AX, GEN_ANY, U_SCAN)                                           \
    X(bsr64, "bsr rax, rbx", DCPI_REG_AX, GEN_ANY, U_SCAN)                                         \
    X(bsr32, "bsr esi, edi", DCPI_REG_SI, GEN_ANY, U_SCAN)                                         \
    X(bsr16, "bsr dx, cx", DCPI_REG_DX, GEN_ANY, U_SCAN)                                           \
    X(rcl64, "rcl rax, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                         \
    X(rcl32, "rcl ebx, cl", DCPI_REG_BX, GEN_COUNT, U_ROT)                                         \
    X(rcl16, "rcl dx, cl", DCPI_REG_DX, GEN_COUNT, U_ROT)                                          \
    X(rcl8, "rcl al, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                           \
    X(rcl8h, "rcl ah, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                          \
    X(rcl1q, "rcl r9, 1", DCPI_REG_R9, GEN_ANY, U_ROT)                                             \
    X(rcl1d, "rcl eax, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                            \
    X(rcl1w, "rcl cx, 1", DCPI_REG_CX, GEN_ANY, U_ROT)                                             \
    X(rcl1b, "rcl al, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(rclib, "rcl al, 9", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(rcliw, "rcl si, 13", DCPI_REG_SI, GEN_ANY, U_ROT)                                            \
    X(rclid, "rcl eax, 7", DCPI_REG_AX, GEN_ANY, U_ROT)                                            \
    X(rcliq, "rcl rax, 40", DCPI_REG_AX, GEN_ANY, U_ROT)                                           \
    X(rcr64, "rcr rax, cl", DCPI_REG_AX, GEN_COUNT, U_ROT)                                         \
    X(rcr32, "rcr edi, cl", DCPI_REG_DI, GEN_COUNT, U_ROT)                                         \
    X(rcr16, "rcr bx, cl", DCPI_REG_BX, GEN_COUNT, U_ROT)                                          \
    X(rcr8, "rcr dl, cl", DCPI_REG_DX, GEN_COUNT, U_ROT)                                           \
    X(rcr1q, "rcr rax, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                            \
    X(rcr1d, "rcr r12d, 1", DCPI_REG_R12, GEN_ANY, U_ROT)                                          \
    X(rcr1w, "rcr ax, 1", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(rcr1b, "rcr bh, 1", DCPI_REG_BX, GEN_ANY, U_ROT)                                             \
    X(rcrib, "rcr al, 3", DCPI_REG_AX, GEN_ANY, U_ROT)                                             \
    X(rcriw, "rcr dx, 16", DCPI_REG_DX, GEN_ANY, U_ROT)                                            \
    X(rcrid, "rcr eax, 31", DCPI_REG_AX, GEN_ANY, U_ROT)                                           \
    X(rcriq, "rcr r8, 63", DCPI_REG_R8, GEN_ANY, U_ROT)                                            \
    X(shld64, "shld rax, rbx, cl", DCPI_REG_AX, GEN_COUNT, U_SHXD)                                 \
    X(shld32, "shld esi, edi, cl", DCPI_REG_SI, GEN_COUNT, U_SHXD)                                 \
    X(shld16, "shld ax, bx, cl", DCPI_REG_AX, GEN_COUNT, U_SHXD)                                   \
    X(shld1, "shld rax, rbx, 1", DCPI_REG_AX, GEN_ANY, U_SHXD)                                     \
    X(shldid, "shld edx, eax, 13", DCPI_REG_DX, GEN_ANY, U_SHXD)                                   \
    X(shldiw, "shld r8w, r9w, 16", DCPI_REG_R8, GEN_ANY, U_SHXD)                                   \
    X(shldiq, "shld rbx, rdx, 63", DCPI_REG_BX, GEN_ANY, U_SHXD)                                   \
    X(shld0, "shld eax, ebx, 0", DCPI_REG_AX, GEN_ANY, U_SHXD)                                     \
    X(shrd64, "shrd rax, rbx, cl", DCPI_REG_AX, GEN_COUNT, U_SHXD)                                 \
    X(shrd32, "shrd ebx, edx, cl", DCPI_REG_BX, GEN_COUNT, U_SHXD)                                 \
    X(shrd16, "shrd si, di, cl", DCPI_REG_SI, GEN_COUNT, U_SHXD)                                   \
    X(shrd1, "shrd eax, ebx, 1", DCPI_REG_AX, GEN_ANY, U_SHXD)                                     \
    X(shrdiw, "shrd ax, bx, 7", DCPI_REG_AX, GEN_ANY, U_SHXD)                                      \
    X(shrdiq, "shrd r10, r11, 40", DCPI_REG_R10, GEN_ANY, U_SHXD)                                  \
    X(shrd0, "shrd r8d, r9d, 0", DCPI_REG_R8, GEN_ANY, U_SHXD)

#define X_NATIVE(name, text, dest, gen, u) NATIVE(name, text)
CASES(X_NATIVE)

#define X_ENTRY(name, text, dest, gen, u) {text, name##_run, name##_s, name##_e, dest, gen, u},
static const icase_t cases[] = {CASES(X_ENTRY)};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* popcnt only where the CPU has it. */
NATIVE(popcnt64, "popcnt rax, rbx")
NATIVE(popcnt16, "popcnt cx, dx")
static const icase_t popcnt_cases[] = {
    {"popcnt rax, rbx", popcnt64_run, popcnt64_s, popcnt64_e, DCPI_REG_AX, GEN_ANY, U_NONE},
    {"popcnt cx, dx", popcnt16_run, popcnt16_s, popcnt16_e, DCPI_REG_CX, GEN_ANY, U_NONE},
};

/* lzcnt (cpuid ABM/LZCNT) and tzcnt (BMI1) likewise: without them the CPU runs bsr / bsf. */
NATIVE(lzcnt64, "lzcnt rax, rbx")
NATIVE(lzcnt32, "lzcnt ecx, edx")
NATIVE(lzcnt16, "lzcnt ax, bx")
static const icase_t lzcnt_cases[] = {
    {"lzcnt rax, rbx", lzcnt64_run, lzcnt64_s, lzcnt64_e, DCPI_REG_AX, GEN_ANY, U_CNT},
    {"lzcnt ecx, edx", lzcnt32_run, lzcnt32_s, lzcnt32_e, DCPI_REG_CX, GEN_ANY, U_CNT},
    {"lzcnt ax, bx", lzcnt16_run, lzcnt16_s, lzcnt16_e, DCPI_REG_AX, GEN_ANY, U_CNT},
};
NATIVE(tzcnt64, "tzcnt rax, rbx")
NATIVE(tzcnt32, "tzcnt esi, edi")
NATIVE(tzcnt16, "tzcnt dx, cx")
static const icase_t tzcnt_cases[] = {
    {"tzcnt rax, rbx", tzcnt64_run, tzcnt64_s, tzcnt64_e, DCPI_REG_AX, GEN_ANY, U_CNT},
    {"tzcnt esi, edi", tzcnt32_run, tzcnt32_s, tzcnt32_e, DCPI_REG_SI, GEN_ANY, U_CNT},
    {"tzcnt dx, cx", tzcnt16_run, tzcnt16_s, tzcnt16_e, DCPI_REG_DX, GEN_ANY, U_CNT},
};

/* ---- random inputs ----------------------------------------------------------------------------
 */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* A register value biased toward the edges where carries and overflows happen. */
static uint64_t pick(void)
{
    static const uint64_t edges[] = {
        0,
        1,
        0x7f,
        0x80,
        0xff,
        0x7fff,
        0x8000,
        0xffff,
        0x7fffffff,
        0x80000000,
        0xffffffff,
        0x7fffffffffffffffull,
        0x8000000000000000ull,
        ~0ull,
        0xfffffffffffffffeull,
    };
    uint64_t r = rng();
    switch (r % 8) {
    case 0:
        return edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))];
    case 1:
        return (r >> 8) % 16;
    case 2:
        return (uint64_t) - (int64_t)((r >> 8) % 16);
    case 3:
        return rng() & 0xffffffff;
    case 4:
        return rng() & 0xff;
    default:
        return rng();
    }
}

static uint64_t pick_count(void)
{
    static const uint64_t counts[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255};
    uint64_t r = rng();
    uint64_t low = r % 3 ? counts[(r >> 8) % 16] : (r >> 16) & 0xff;
    return (rng() & ~0xffull) | low;
}

/* The dividend's high half (ah for 8 bits, else the low w bits of rdx): mostly one for which the
 * quotient fits (0, the sign of the low half, high mod divisor), sometimes left random (#DE); and
 * the quotient's edges: min / -1 (#DE for idiv), min / -2, min / 1 (idiv's most negative). */
static void shape_div(const dcpi_insn_t *insn, dcpi_regs_t *regs)
{
    unsigned w = insn->ops[0].size;
    ZydisRegister dreg = insn->ops[0].reg.value;
    uint64_t m = w == 64 ? ~0ull : (1ull << w) - 1, v = 0;
    (void)dcpi_capture_read_reg(regs, dreg, &v);
    uint64_t *hip = w == 8 ? &regs->r[DCPI_REG_AX] : &regs->r[DCPI_REG_DX];
    unsigned sh = w == 8 ? 8 : 0;
    uint64_t lo = regs->r[DCPI_REG_AX] & m, hi = (*hip >> sh) & m, r = rng() % 8;
    switch (r) {
    case 0:
        return;
    case 1:
        hi = 0;
        break;
    case 2:
    case 3:
        hi = (lo >> (w - 1)) & 1 ? m : 0;
        break;
    case 4:
    case 5:
        hi = (v & m) ? hi % (v & m) : hi;
        break;
    default: { /* min / -1, min / -2, min / 1 */
        lo = 1ull << (w - 1);
        hi = m;
        regs->r[DCPI_REG_AX] = (regs->r[DCPI_REG_AX] & ~m) | lo;
        int idx = dcpi_capture_perf_index(dreg);
        ck_assert_int_ge(idx, 0);
        v = r == 6 ? m : (rng() & 1) ? m - 1 : 1;
        regs->r[idx] = dcpi_capture_merge_reg(dreg, regs->r[idx], v);
        break;
    }
    }
    *hip = (*hip & ~(m << sh)) | (hi << sh);
}

static void make_inputs(const icase_t *k, const dcpi_insn_t *insn, dcpi_regs_t *regs)
{
    memset(regs, 0, sizeof(*regs));
    for (int i = 0; i < DCPI_REG_COUNT; i++)
        regs->r[i] = pick();
    if (k->gen == GEN_COUNT)
        regs->r[DCPI_REG_CX] = pick_count();
    regs->r[DCPI_REG_FLAGS] = 0x202 | (rng() & DCPI_FLAGS_STATUS);
    regs->r[DCPI_REG_IP] = (uint64_t)(uintptr_t)k->start;
    regs->r[DCPI_REG_SP] = 0x7ffc00001000ull;
    for (int i = DCPI_REG_CS; i <= DCPI_REG_GS; i++)
        regs->r[i] = 0;
    regs->valid = DCPI_REGS_FULL_MASK;
    if (k->gen == GEN_DIV)
        shape_div(insn, regs);
}

static sigjmp_buf fpe_jmp;

static void on_fpe(int sig)
{
    (void)sig;
    siglongjmp(fpe_jmp, 1);
}

/* Runs the stub; 1 when the instruction raised #DE (SIGFPE; the stub is abandoned, sigsetjmp
 * restores the callee-saved registers it had pushed). */
static int run_native(const icase_t *k, const dcpi_regs_t *regs)
{
    memcpy(g_in, regs->r, sizeof(g_in));
    memset(g_out, 0, sizeof(g_out));
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fpe;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGFPE, &sa, &old), 0);
    int faulted = 1;
    if (sigsetjmp(fpe_jmp, 1) == 0) {
        k->run();
        faulted = 0;
    }
    sigaction(SIGFPE, &old, NULL);
    return faulted;
}

/* Whether these inputs must leave the result missing (DCPI_ERANGE): the CPU faulted, or the SDM
 * leaves the destination undefined (bsf/bsr of 0; shld/shrd of a 16-bit register by 17..31). */
static int must_be_missing(const dcpi_insn_t *insn, const dcpi_regs_t *regs, int faulted)
{
    uint64_t v = 0;
    switch (insn->zi.mnemonic) {
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
        return faulted;
    case ZYDIS_MNEMONIC_BSF:
    case ZYDIS_MNEMONIC_BSR:
        ck_assert_int_eq(dcpi_capture_read_reg(regs, insn->ops[1].reg.value, &v), 0);
        return v == 0;
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD:
        if (insn->ops[2].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
            v = insn->ops[2].imm.value.u;
        else
            v = regs->r[DCPI_REG_CX];
        return insn->ops[0].size == 16 && (v & 31) > 16;
    default:
        return 0;
    }
}

/* ---- the comparison ----------------------------------------------------------------------------
 */

static void check_case(const icase_t *k, int iterations, uint64_t seed)
{
    dcpi_insn_t insn;
    size_t len = (size_t)(k->end - k->start);
    uint64_t pc = (uint64_t)(uintptr_t)k->start;
    ck_assert_int_eq(dcpi_capture_decode(k->start, len, pc, &insn), (int)len);
    rng_state = seed;
    int compared = 0, missing = 0;
    for (int tries = 0; compared < iterations && tries < 20 * iterations; tries++) {
        dcpi_regs_t regs;
        make_inputs(k, &insn, &regs);
        int faulted = run_native(k, &regs);
        uint64_t result = 0, nf = 0, und = ~0ull;
        int rc = dcpi_interp(&insn, &regs, &result, &nf, &und);
        if (must_be_missing(&insn, &regs, faulted)) {
            ck_assert_msg(rc == DCPI_ERANGE,
                          "%s: interp returned %d for inputs it cannot evaluate"
                          " (rax %#llx rbx %#llx rcx %#llx rdx %#llx)",
                          k->name, rc, (unsigned long long)regs.r[DCPI_REG_AX],
                          (unsigned long long)regs.r[DCPI_REG_BX],
                          (unsigned long long)regs.r[DCPI_REG_CX],
                          (unsigned long long)regs.r[DCPI_REG_DX]);
            missing++;
            continue;
        }
        ck_assert_msg(!faulted, "%s: the CPU faulted", k->name);
        compared++;
        ck_assert_msg(rc == 0, "%s: interp returned %d", k->name, rc);
        ck_assert_msg((und & ~k->may_undef) == 0, "%s: undefined flags %#llx beyond %#llx", k->name,
                      (unsigned long long)und, (unsigned long long)k->may_undef);
        uint64_t want = k->dest == FLAGS_DEST ? g_out[DCPI_REG_FLAGS] : g_out[k->dest];
        uint64_t cmp_mask = k->dest == FLAGS_DEST ? DCPI_FLAGS_STATUS & ~und : ~0ull;
        ck_assert_msg(
            ((result ^ want) & cmp_mask) == 0,
            "%s: result %#llx, cpu %#llx (rax %#llx rbx %#llx rcx %#llx rdx %#llx "
            "flags %#llx)",
            k->name, (unsigned long long)result, (unsigned long long)want,
            (unsigned long long)regs.r[DCPI_REG_AX], (unsigned long long)regs.r[DCPI_REG_BX],
            (unsigned long long)regs.r[DCPI_REG_CX], (unsigned long long)regs.r[DCPI_REG_DX],
            (unsigned long long)regs.r[DCPI_REG_FLAGS]);
        uint64_t fdiff = (nf ^ g_out[DCPI_REG_FLAGS]) & DCPI_FLAGS_STATUS & ~und;
        ck_assert_msg(
            fdiff == 0,
            "%s: flags %#llx, cpu %#llx, differ in %#llx (in: rax %#llx rbx %#llx "
            "rcx %#llx rdx %#llx flags %#llx)",
            k->name, (unsigned long long)nf, (unsigned long long)g_out[DCPI_REG_FLAGS],
            (unsigned long long)fdiff, (unsigned long long)regs.r[DCPI_REG_AX],
            (unsigned long long)regs.r[DCPI_REG_BX], (unsigned long long)regs.r[DCPI_REG_CX],
            (unsigned long long)regs.r[DCPI_REG_DX], (unsigned long long)regs.r[DCPI_REG_FLAGS]);
    }
    ck_assert_msg(compared == iterations, "%s: only %d of %d inputs evaluable", k->name, compared,
                  iterations);
    if (k->gen == GEN_DIV) /* both sides of #DE were seen */
        ck_assert_msg(missing > 0, "%s: no input raised #DE", k->name);
}

/* The cases in chunks of CHUNK per forked test, not one fork each: a fork's exit costs ~30 ms of
 * CPU under ASan (LeakSanitizer's scan), 6 of the suite's 7 s for 193 forks. Every message names
 * its case; a failing case stops the rest of its chunk only. Same seeds as one case per test. */
#define CHUNK 24

START_TEST(test_native)
{
    for (int i = _i * CHUNK; i < NCASES && i < (_i + 1) * CHUNK; i++)
        check_case(&cases[i], 200, 0x9e3779b97f4a7c15ull + (uint64_t)i);
}
END_TEST

/* cpuid leaf 1, ecx bit 23: the popcnt cases run the instruction natively for the truth. */
static const char *popcnt_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_POPCNT))
        return "this CPU has no popcnt (cpuid 1:ecx bit 23): the popcnt cases compare the "
               "interpreter with the instruction run natively";
    return NULL;
}

/* cpuid 0x80000001:ecx bit 5 (lzcnt) and 7:ebx bit 3 (BMI1, tzcnt). */
static const char *lzcnt_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000001, &a, &b, &c, &d) || !(c & bit_LZCNT))
        return "this CPU has no lzcnt (cpuid 0x80000001:ecx bit 5; it would run bsr): the lzcnt "
               "cases compare the interpreter with the instruction run natively";
    return NULL;
}

static const char *tzcnt_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_BMI))
        return "this CPU has no BMI1 tzcnt (cpuid 7:ebx bit 3; it would run bsf): the tzcnt "
               "cases compare the interpreter with the instruction run natively";
    return NULL;
}

START_TEST(test_native_lzcnt)
{
    for (size_t i = 0; i < sizeof(lzcnt_cases) / sizeof(lzcnt_cases[0]); i++)
        check_case(&lzcnt_cases[i], 200, 0x4321 + i);
}
END_TEST

START_TEST(test_native_tzcnt)
{
    for (size_t i = 0; i < sizeof(tzcnt_cases) / sizeof(tzcnt_cases[0]); i++)
        check_case(&tzcnt_cases[i], 200, 0x5678 + i);
}
END_TEST

START_TEST(test_native_popcnt)
{
    for (size_t i = 0; i < sizeof(popcnt_cases) / sizeof(popcnt_cases[0]); i++)
        check_case(&popcnt_cases[i], 200, 0x1234 + i);
}
END_TEST

/* Every case decodes to exactly the instruction between its labels and names it (condition
 * aliases aside: cmovae is Zydis' cmovnb). */
START_TEST(test_case_decoding)
{
    for (int i = 0; i < NCASES; i++) {
        dcpi_insn_t insn;
        size_t len = (size_t)(cases[i].end - cases[i].start);
        ck_assert_int_eq(dcpi_capture_decode(cases[i].start, len, 0, &insn), (int)len);
        const char *m = insn.inst.mnemonic;
        int same =
            strncmp(cases[i].name, m, strlen(m)) == 0 || dcpi_interp_cond_of(insn.zi.mnemonic) >= 0;
        ck_assert_msg(same, "%s decoded as %s", cases[i].name, m);
    }
}
END_TEST

/* Count 0 leaves every flag alone and still zero-extends a 32-bit destination. */
START_TEST(test_shift_count_zero)
{
    static const uint8_t shl_eax_cl[] = {0xd3, 0xe0};
    dcpi_insn_t insn;
    ck_assert_int_eq(dcpi_capture_decode(shl_eax_cl, sizeof(shl_eax_cl), 0x1000, &insn), 2);
    dcpi_regs_t regs = {.valid = DCPI_REGS_FULL_MASK};
    regs.r[DCPI_REG_AX] = 0xdeadbeef12345678ull;
    regs.r[DCPI_REG_CX] = 0x40; /* masked to 0 */
    regs.r[DCPI_REG_FLAGS] = 0x202 | DCPI_FLAGS_STATUS;
    uint64_t r, f;
    ck_assert_int_eq(dcpi_interp(&insn, &regs, &r, &f, NULL), 0);
    ck_assert_uint_eq(r, 0x12345678);
    ck_assert_uint_eq(f, 0x202 | DCPI_FLAGS_STATUS);
}
END_TEST

static int interp_bytes(const uint8_t *b, size_t n, const dcpi_regs_t *regs)
{
    dcpi_insn_t insn;
    int len = dcpi_capture_decode(b, n, 0x401000, &insn);
    ck_assert_int_eq(len, (int)n);
    uint64_t r = 0x5555, f = 0x6666;
    int rc = dcpi_interp(&insn, regs, &r, &f, NULL);
    if (rc != 0) { /* outputs untouched */
        ck_assert_uint_eq(r, 0x5555);
        ck_assert_uint_eq(f, 0x6666);
    }
    return rc;
}

#define INTERP(regs, ...)                                                                          \
    interp_bytes((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}), regs)

START_TEST(test_not_interpretable)
{
    dcpi_regs_t regs = {.valid = DCPI_REGS_FULL_MASK};
    regs.r[DCPI_REG_FLAGS] = 0x202;
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x8b, 0x03), DCPI_ENOTSUP);       /* mov rax,[rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x03, 0x03), DCPI_ENOTSUP);       /* add rax,[rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x01, 0x03), DCPI_ENOTSUP);       /* add [rbx],rax */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x89, 0x03), DCPI_ENOTSUP);       /* mov [rbx],rax */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x0f, 0xb6, 0x03), DCPI_ENOTSUP); /* movzx rax,b[rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x3b, 0x05, 0, 0, 0, 0), DCPI_ENOTSUP); /* cmp [rip] */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x0f, 0x44, 0x03), DCPI_ENOTSUP); /* cmovz rax,[rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0x23), DCPI_ENOTSUP);       /* mul qword [rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x53), DCPI_ENOTSUP);                   /* push rbx */
    ck_assert_int_eq(INTERP(&regs, 0x5b), DCPI_ENOTSUP);                   /* pop rbx */
    ck_assert_int_eq(INTERP(&regs, 0xff, 0xe0), DCPI_ENOTSUP);             /* jmp rax */
    ck_assert_int_eq(INTERP(&regs, 0x74, 0x05), DCPI_ENOTSUP);             /* jz */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0x33), DCPI_ENOTSUP);       /* div qword [rbx] */
    ck_assert_int_eq(INTERP(&regs, 0x0f, 0xa3, 0x03), DCPI_ENOTSUP);       /* bt [rbx], eax */
    ck_assert_int_eq(INTERP(&regs, 0xa4), DCPI_ENOTSUP);                   /* movsb */
    ck_assert_int_eq(INTERP(&regs, 0x90), DCPI_ENOTSUP);                   /* nop */
    ck_assert_int_eq(INTERP(&regs, 0x66, 0x0f, 0xc8), DCPI_ENOTSUP);       /* bswap ax */
    ck_assert_int_eq(INTERP(&regs, 0x8c, 0xd8), DCPI_ENOTSUP);             /* mov eax,ds */
}
END_TEST

/* Inputs that fault or leave the result undefined: missing (DCPI_ERANGE), outputs untouched. */
START_TEST(test_undefined_inputs)
{
    dcpi_regs_t regs = {.valid = DCPI_REGS_FULL_MASK};
    regs.r[DCPI_REG_FLAGS] = 0x202;
    regs.r[DCPI_REG_AX] = 10;
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0xf3), DCPI_ERANGE);       /* div rbx (rbx 0) */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x0f, 0xbc, 0xc3), DCPI_ERANGE); /* bsf rax, rbx */
    regs.r[DCPI_REG_BX] = 3;
    regs.r[DCPI_REG_DX] = 3; /* quotient 2^64 * 3 / 3: past 64 bits */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0xf3), DCPI_ERANGE);
    regs.r[DCPI_REG_DX] = 2;
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0xf3), 0);
    regs.r[DCPI_REG_CX] = 17;
    ck_assert_int_eq(INTERP(&regs, 0x66, 0x0f, 0xa5, 0xd8), DCPI_ERANGE); /* shld ax, bx, cl */
    regs.r[DCPI_REG_CX] = 16;
    ck_assert_int_eq(INTERP(&regs, 0x66, 0x0f, 0xa5, 0xd8), 0);
    regs.valid &= ~(1ull << DCPI_REG_DX); /* div needs rdx, div bl does not */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0xf7, 0xf3), DCPI_ENOENT);
    ck_assert_int_eq(INTERP(&regs, 0xf6, 0xf3), 0);
}
END_TEST

START_TEST(test_missing_registers)
{
    dcpi_regs_t regs = {.valid = DCPI_REGS_FULL_MASK & ~(1ull << DCPI_REG_BX)};
    regs.r[DCPI_REG_FLAGS] = 0x202;
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x01, 0xd8), DCPI_ENOENT); /* add rax,rbx */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x01, 0xc8), 0);           /* add rax,rcx */
    regs.valid = DCPI_REGS_GPR_MASK;                                /* no rflags */
    ck_assert_int_eq(INTERP(&regs, 0x48, 0x89, 0xc8), DCPI_ENOENT); /* mov rax,rcx */
    ck_assert_int_eq(dcpi_interp(NULL, &regs, NULL, NULL, NULL), DCPI_EINVAL);
}
END_TEST

START_TEST(test_conditions)
{
    ck_assert_int_eq(dcpi_interp_cond_of(ZYDIS_MNEMONIC_JZ), 4);
    ck_assert_int_eq(dcpi_interp_cond_of(ZYDIS_MNEMONIC_CMOVNLE), 15);
    ck_assert_int_eq(dcpi_interp_cond_of(ZYDIS_MNEMONIC_SETB), 2);
    ck_assert_int_eq(dcpi_interp_cond_of(ZYDIS_MNEMONIC_ADD), -1);
    ck_assert_int_eq(dcpi_interp_cond_of(ZYDIS_MNEMONIC_SETSSBSY), -1);
    ck_assert_int_eq(dcpi_interp_cond(4, DCPI_FLAG_ZF), 1);
    ck_assert_int_eq(dcpi_interp_cond(5, DCPI_FLAG_ZF), 0);
    ck_assert_int_eq(dcpi_interp_cond(12, DCPI_FLAG_SF), 1); /* l: sf != of */
    ck_assert_int_eq(dcpi_interp_cond(12, DCPI_FLAG_SF | DCPI_FLAG_OF), 0);
    ck_assert_int_eq(dcpi_interp_cond(7, 0), 1); /* a: !cf && !zf */
    ck_assert_int_eq(dcpi_interp_cond(7, DCPI_FLAG_CF), 0);
    ck_assert_int_eq(dcpi_interp_cond(15, DCPI_FLAG_ZF), 0); /* g */
}
END_TEST

/* TRACE_REGC (core/capture/capture.h) is the destination at its width, not the whole register
 * the interpreter gives: setcc into al / bl / ah, 8- and 16-bit ALU results, eax's
 * zero-extension, one-operand mul's ax; cmp stays the new rflags. */
static uint64_t regc_of(const uint8_t *b, size_t n, const dcpi_regs_t *regs)
{
    dcpi_insn_t insn;
    ck_assert_int_eq(dcpi_capture_decode(b, n, 0x401000, &insn), (int)n);
    trace_value_t k = TRACE_REGC;
    uint64_t v = 0;
    unsigned missing = 1;
    dcpi_capture_values(&insn, regs, &k, 1, &v, &missing);
    ck_assert_msg(missing == 0, "%s: REGC missing", insn.inst.mnemonic);
    return v;
}
#define REGC(regs, ...)                                                                            \
    regc_of((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}), regs)

START_TEST(test_regc_destination_width)
{
    dcpi_regs_t r;
    memset(&r, 0, sizeof r);
    r.valid = DCPI_REGS_FULL_MASK;
    r.r[DCPI_REG_AX] = 0x7fcaac492000ull; /* al 0x00, ah 0x20 */
    r.r[DCPI_REG_BX] = 0xffffffffffff12ffull;
    r.r[DCPI_REG_CX] = 0x1234567890abcdefull;
    r.r[DCPI_REG_DX] = 0x0000000000000003ull;
    r.r[DCPI_REG_FLAGS] = 0x202 | DCPI_FLAG_CF;
    ck_assert_uint_eq(REGC(&r, 0x0f, 0x92, 0xc0), 1);       /* setb al: CF set: 1, not rax | 1 */
    ck_assert_uint_eq(REGC(&r, 0x0f, 0x94, 0xc3), 0);       /* sete bl: ZF clear: 0 */
    ck_assert_uint_eq(REGC(&r, 0x0f, 0x92, 0xc4), 1);       /* setb ah: bits 8..15, shifted down */
    ck_assert_uint_eq(REGC(&r, 0x40, 0x0f, 0x92, 0xc6), 1); /* setb sil (REX) */
    ck_assert_uint_eq(REGC(&r, 0x00, 0xd8), 0xff);          /* add al, bl: 0x00 + 0xff */
    ck_assert_uint_eq(REGC(&r, 0x00, 0xdc), 0x1f);          /* add ah, bl: 0x20 + 0xff = 0x1f */
    ck_assert_uint_eq(REGC(&r, 0x66, 0x01, 0xd8), 0x32ff);  /* add ax, bx: 0x2000 + 0x12ff */
    ck_assert_uint_eq(REGC(&r, 0x01, 0xd8), 0xac4832ffull); /* add eax, ebx: 32 bits, zero-ext */
    ck_assert_uint_eq(REGC(&r, 0x88, 0xc8), 0xef);          /* mov al, cl */
    ck_assert_uint_eq(REGC(&r, 0x66, 0x89, 0xc8), 0xcdef);  /* mov ax, cx */
    ck_assert_uint_eq(REGC(&r, 0x89, 0xc8), 0x90abcdefull); /* mov eax, ecx */
    ck_assert_uint_eq(REGC(&r, 0x48, 0x89, 0xc8), 0x1234567890abcdefull); /* mov rax, rcx */
    ck_assert_uint_eq(REGC(&r, 0x0f, 0xb6, 0xc1), 0xef);                  /* movzx eax, cl */
    r.r[DCPI_REG_AX] = 0x7fcaac492005ull;
    ck_assert_uint_eq(REGC(&r, 0xf6, 0xe2), 0x0f);     /* mul dl: ax = 5 x 3, 16 bits */
    uint64_t f = REGC(&r, 0x38, 0xd8);                 /* cmp al, bl: the new rflags */
    ck_assert_uint_eq(f & DCPI_FLAG_CF, DCPI_FLAG_CF); /* 0x05 < 0xff */
    ck_assert_uint_eq(f & 0x2, 0x2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("interp");
    TCase *tc = tcase_create("native");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_native, 0, (NCASES + CHUNK - 1) / CHUNK);
    suite_add_tcase(s, tc);
    TCase *tp = dcpi_check_tcase("popcnt");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_native_popcnt);
    suite_add_tcase(s, tp);
    TCase *tl = dcpi_check_tcase("lzcnt");
    tcase_set_timeout(tl, 60);
    tcase_add_test(tl, test_native_lzcnt);
    suite_add_tcase(s, tl);
    TCase *tz = dcpi_check_tcase("tzcnt");
    tcase_set_timeout(tz, 60);
    tcase_add_test(tz, test_native_tzcnt);
    suite_add_tcase(s, tz);
    TCase *tu = tcase_create("unit");
    tcase_add_test(tu, test_case_decoding);
    tcase_add_test(tu, test_shift_count_zero);
    tcase_add_test(tu, test_not_interpretable);
    tcase_add_test(tu, test_undefined_inputs);
    tcase_add_test(tu, test_regc_destination_width);
    tcase_add_test(tu, test_missing_registers);
    tcase_add_test(tu, test_conditions);
    suite_add_tcase(s, tu);
    static const struct dcpi_check_need needs[] = {
        {"popcnt", popcnt_missing}, {"lzcnt", lzcnt_missing}, {"tzcnt", tzcnt_missing}};
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
