/*
 * work-accuracy.c - workloads with exact value truth for bench/hotlist_accuracy.sh: one
 * instruction form per mode, written in inline asm so that the form exists exactly as named.
 *   work-accuracy MODE [MS [WAIT_MS]]   run MODE for MS milliseconds of this process's CPU time
 *                             (default 2000), so a competing load does not shorten the sampled
 *                             work; WAIT_MS: sleep that long first (a profiler arms itself
 *                             before the first execution: dcpid -voracle, whose count is exact)
 * Modes (procedure, measured instruction, its values per execution):
 *   branch     acc_branch     `jbe`: taken in 80% of executions, not taken in 20%
 *   icall-reg  acc_icall_reg  `call rdx`: targets acc_t0 / acc_t1 / acc_t2 in 60 / 30 / 10%
 *   icall-mem  acc_icall_mem  `call qword ptr [rbx]`: the same targets and mix, through memory
 *   size-arg   acc_size_arg   `call acc_sized` with a size in rsi: 16 / 64 / 256 / 1024 in
 *                             50 / 30 / 15 / 5% (acc_sized loops size / 16 times: the work after
 *                             the call depends on the value, as a memcpy's would)
 *   div-reg    acc_div_reg    `div rcx`: divisor 10 / 7 / 3 in 70 / 20 / 10%
 *   div-mem    acc_div_mem    `div qword ptr [rdi+rcx*8]`: the same divisors, from memory
 *   div-reg-b  acc_div_reg    div-reg's instruction, divisors 10 / 7 / 3 in 40 / 20 / 40% (a
 *                             second mix of one instruction: tests/e2e/diff_vprof.sh compares
 *                             it with div-reg's)
 *   div-mem-b  acc_div_mem    div-mem's instruction with div-reg-b's mix
 *   chase      acc_chase      `mov rX, qword ptr [rP+0x8]`, the payload load of a pointer chase
 *                             over a linked list: 0x1111 / 0x2222 / 0x3333 in 50 / 30 / 20%
 *   stride     acc_stride     `mov rX, qword ptr [rB+rI*8]`: 5 addresses base, base+64, ...,
 *                             base+256 (64-byte aligned array), 20% each
 * Before it starts, a mode prints its truth on stdout as one line
 *   truth LABEL=VALUE:PERCENT ...
 * VALUE in lower-case hex as 0x..., the way the benchmark's plugin formats it (branch outcomes
 * 0x1 taken / 0x0 not taken, call targets and addresses as this run's addresses, sizes, divisors
 * and loaded values as numbers). At the end it prints "rounds N cpu_ms T" on stderr, so that a
 * profiler's cost can be read as CPU time per round.
 *
 * The truth is per execution and exact: each round runs the measured instruction once for each
 * of the NSEQ entries of the mode's value array (or list), which holds the values in exactly the
 * shares above (NSEQ is a multiple of 20), so over whole rounds every value runs its share of the
 * executions. The values are data fixed before the run: the order is a uniformly random
 * permutation that changes every round (shuffle(): Fisher-Yates once, then NSEQ / 16 random
 * transpositions per round, which keep it uniform; the chase's list is relinked in the new order
 * every round), so no predictor can learn it and every value is preceded by the same mix of code
 * and data. No timing effect (cache, predictor, skid, a slow divisor or a long callee) can change
 * which values execute or how often; it can only change which executions a profiler samples,
 * and that bias is what the benchmark measures. Per unit of CPU time the shares may differ
 * (size-arg's callee, div's latency): only the per-execution truth is printed.
 *
 * Each measured instruction follows `mov rP, qword ptr [rP]` on a pointer that points to itself
 * (a loop-carried load: a few cycles of latency, no flags or other registers touched; the chase:
 * its own next-pointer load), so that timer samples, which land after a slow instruction, can
 * land on the measured instruction (a slower measured instruction, div, still takes them). The
 * calls move rsp down 128 bytes first (the red zone of the calling C function is not to be
 * clobbered).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSEQ 2000

/* call targets: only rax is written (rdi is the argument) */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl acc_t0\n.hidden acc_t0\n.type acc_t0, @function\n"
        "acc_t0: lea 1(%rdi), %rax\n\tret\n.size acc_t0, .-acc_t0\n"
        ".p2align 4\n"
        ".globl acc_t1\n.hidden acc_t1\n.type acc_t1, @function\n"
        "acc_t1: lea 2(%rdi), %rax\n\tret\n.size acc_t1, .-acc_t1\n"
        ".p2align 4\n"
        ".globl acc_t2\n.hidden acc_t2\n.type acc_t2, @function\n"
        "acc_t2: lea 3(%rdi), %rax\n\tret\n.size acc_t2, .-acc_t2\n"
        /* acc_sized(rdi, rsi): rsi / 16 iterations; writes rax and rcx */
        ".p2align 4\n"
        ".globl acc_sized\n.hidden acc_sized\n.type acc_sized, @function\n"
        "acc_sized: mov %rsi, %rcx\n\tshr $4, %rcx\n\tmov %rdi, %rax\n"
        "1: add %rcx, %rax\n\tdec %rcx\n\tjnz 1b\n\tret\n.size acc_sized, .-acc_sized\n");
void acc_t0(void) __attribute__((visibility("hidden")));
void acc_t1(void) __attribute__((visibility("hidden")));
void acc_t2(void) __attribute__((visibility("hidden")));
void acc_sized(void) __attribute__((visibility("hidden")));

static volatile uint64_t sink;
static void *selfp = &selfp; /* the loop-carried load before each measured instruction */
static uint64_t seq[NSEQ];   /* this mode's values, in the current order */
static uint64_t array[40] __attribute__((aligned(64)));
static struct node {
    struct node *next;
    uint64_t val;
} nodes[NSEQ];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A uniform index below n (multiply-high: no division). */
static int below(int n)
{
    return (int)(((xorshift() >> 32) * (uint64_t)n) >> 32);
}

static void swap(int i, int j)
{
    uint64_t t = seq[i];
    seq[i] = seq[j];
    seq[j] = t;
}

__attribute__((noinline)) static void shuffle(int full)
{
    if (!full) {
        for (int i = 0; i < NSEQ / 16; i++)
            swap(below(NSEQ), below(NSEQ));
        return;
    }
    for (int i = NSEQ - 1; i > 0; i--)
        swap(i, below(i + 1));
}

__attribute__((noinline)) static uint64_t acc_branch(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++)
        __asm__ volatile("cmp $1, %2\n\t"
                         "mov (%1), %1\n\t"
                         "jbe 1f\n\t"
                         "add $3, %0\n"
                         "1:"
                         : "+r"(acc), "+r"(p)
                         : "r"(seq[k])
                         : "cc", "memory");
    return acc;
}

__attribute__((noinline)) static uint64_t acc_icall_reg(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t r;
        __asm__ volatile("sub $128, %%rsp\n\t"
                         "mov (%1), %1\n\t"
                         "call *%%rdx\n\t"
                         "add $128, %%rsp"
                         : "=a"(r), "+r"(p)
                         : "d"(seq[k]), "D"(acc)
                         : "cc", "memory");
        acc = r;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t acc_icall_mem(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t r;
        __asm__ volatile("sub $128, %%rsp\n\t"
                         "mov (%1), %1\n\t"
                         "call *(%%rbx)\n\t"
                         "add $128, %%rsp"
                         : "=a"(r), "+r"(p)
                         : "b"(&seq[k]), "D"(acc)
                         : "cc", "memory");
        acc = r;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t acc_size_arg(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t r;
        __asm__ volatile("sub $128, %%rsp\n\t"
                         "mov (%1), %1\n\t"
                         "call acc_sized\n\t"
                         "add $128, %%rsp"
                         : "=a"(r), "+r"(p)
                         : "S"(seq[k]), "D"(acc)
                         : "rcx", "cc", "memory");
        acc = r;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t acc_div_reg(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t q = (acc & 0xffff) + 1000;
        __asm__ volatile("xor %%edx, %%edx\n\t"
                         "mov (%1), %1\n\t"
                         "div %%rcx"
                         : "+a"(q), "+r"(p)
                         : "c"(seq[k])
                         : "rdx", "cc", "memory");
        acc += q;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t acc_div_mem(uint64_t acc)
{
    void *p = selfp;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t q = (acc & 0xffff) + 1000;
        __asm__ volatile("xor %%edx, %%edx\n\t"
                         "mov (%1), %1\n\t"
                         "divq (%%rdi,%%rcx,8)"
                         : "+a"(q), "+r"(p)
                         : "D"(seq), "c"((uint64_t)k)
                         : "rdx", "cc", "memory");
        acc += q;
    }
    return acc;
}

/* seq holds node indices: the list runs through them in the current order, a cycle, so that one
 * round (NSEQ steps from seq[0]) loads every node's payload once */
__attribute__((noinline)) static uint64_t acc_chase(uint64_t acc)
{
    for (int k = 0; k < NSEQ; k++)
        nodes[seq[k]].next = &nodes[seq[(k + 1) % NSEQ]];
    struct node *n = &nodes[seq[0]];
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t v;
        __asm__ volatile("mov (%1), %1\n\t"
                         "mov 8(%1), %0"
                         : "=&r"(v), "+r"(n)
                         :
                         : "memory");
        acc += v;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t acc_stride(uint64_t acc)
{
    void *p = selfp;
    const uint64_t *base = array;
#pragma GCC unroll 1
    for (int k = 0; k < NSEQ; k++) {
        uint64_t v;
        __asm__ volatile("mov (%1), %1\n\t"
                         "mov (%2,%3,8), %0"
                         : "=r"(v), "+r"(p)
                         : "r"(base), "r"(seq[k])
                         : "memory");
        acc += v;
    }
    return acc;
}

struct share {
    const char *label;
    uint64_t value; /* in seq (the chase: the node's payload) */
    int per20;
};

static const struct mode {
    const char *name;
    uint64_t (*loop)(uint64_t);
    struct share shares[6]; /* up to 5, then a zero entry */
} modes[] = {
    {"branch", acc_branch, {{"taken", 0, 16}, {"not-taken", 2, 4}}},
    {"icall-reg", acc_icall_reg, {{"acc_t0", 0, 12}, {"acc_t1", 1, 6}, {"acc_t2", 2, 2}}},
    {"icall-mem", acc_icall_mem, {{"acc_t0", 0, 12}, {"acc_t1", 1, 6}, {"acc_t2", 2, 2}}},
    {"size-arg", acc_size_arg, {{"16", 16, 10}, {"64", 64, 6}, {"256", 256, 3}, {"1024", 1024, 1}}},
    {"div-reg", acc_div_reg, {{"10", 10, 14}, {"7", 7, 4}, {"3", 3, 2}}},
    {"div-mem", acc_div_mem, {{"10", 10, 14}, {"7", 7, 4}, {"3", 3, 2}}},
    {"div-reg-b", acc_div_reg, {{"10", 10, 8}, {"7", 7, 4}, {"3", 3, 8}}},
    {"div-mem-b", acc_div_mem, {{"10", 10, 8}, {"7", 7, 4}, {"3", 3, 8}}},
    {"chase", acc_chase, {{"0x1111", 0x1111, 10}, {"0x2222", 0x2222, 6}, {"0x3333", 0x3333, 4}}},
    {"stride",
     acc_stride,
     {{"base+0", 0, 4},
      {"base+64", 8, 4},
      {"base+128", 16, 4},
      {"base+192", 24, 4},
      {"base+256", 32, 4}}},
};

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The value the profiler sees for one share (what the truth line prints). */
static uint64_t seen(const struct mode *m, const struct share *s)
{
    uint64_t targets[3] = {(uintptr_t)acc_t0, (uintptr_t)acc_t1, (uintptr_t)acc_t2};
    if (strcmp(m->name, "branch") == 0)
        return s->value == 0; /* 0 <= 1: jbe taken */
    if (strncmp(m->name, "icall", 5) == 0)
        return targets[s->value];
    if (strcmp(m->name, "stride") == 0)
        return (uintptr_t)&array[s->value];
    return s->value;
}

int main(int argc, char **argv)
{
    const struct mode *m = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            m = &modes[i];
    if (!m) {
        fprintf(stderr, "usage: work-accuracy branch|icall-reg|icall-mem|size-arg|div-reg|div-mem|"
                        "div-reg-b|div-mem-b|chase|stride [MS [WAIT_MS]]\n");
        return 2;
    }
    double ms = argc > 2 ? atof(argv[2]) : 2000.0;
    double wait_ms = argc > 3 ? atof(argv[3]) : 0.0; /* before the first round (dcpid -voracle) */
    uint64_t targets[3] = {(uintptr_t)acc_t0, (uintptr_t)acc_t1, (uintptr_t)acc_t2};
    int k = 0;
    printf("truth");
    for (int i = 0; i < NSEQ / 20; i++)
        for (const struct share *s = m->shares; s->label; s++)
            for (int c = 0; c < s->per20; c++, k++) {
                seq[k] = s->value;
                if (strncmp(m->name, "icall", 5) == 0)
                    seq[k] = targets[s->value];
                if (strcmp(m->name, "chase") == 0) {
                    nodes[k].val = s->value;
                    seq[k] = (uint64_t)k;
                }
            }
    for (const struct share *s = m->shares; s->label; s++)
        printf(" %s=0x%llx:%d", s->label, (unsigned long long)seen(m, s), s->per20 * 5);
    printf("\n");
    fflush(stdout);
    for (int i = 0; i < 40; i++)
        array[i] = (uint64_t)i;
    shuffle(1);
    if (wait_ms > 0) {
        long wms = (long)wait_ms;
        struct timespec w = {(time_t)(wms / 1000), (wms % 1000) * 1000000L};
        nanosleep(&w, NULL);
    }
    uint64_t acc = 0;
    long rounds = 0;
    double start = cpu_ms(), now = start;
    while (now < start + ms) {
        shuffle(0);
        acc = m->loop(acc);
        rounds++;
        now = cpu_ms();
    }
    sink = acc;
    fprintf(stderr, "rounds %ld cpu_ms %.1f\n", rounds, cpu_ms());
    return 0;
}
