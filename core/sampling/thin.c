/*
 * thin.c - the arm trigger's thinning program (see thin.h): a few raw BPF instructions loaded
 * with libbpf's bpf_prog_load (no BPF object to build), a per-CPU array of bpf-output events it
 * writes the kept ticks to, and two counters (ticks seen, ticks kept) for status.
 */
#include "core/sampling/thin.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

void dcpi_thin_output_attr(struct perf_event_attr *a)
{
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_BPF_OUTPUT;
}

#if DCPI_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>

struct dcpi_thin {
    int prog, outputs, counters; /* fds */
    int ncpu;                    /* entries of outputs */
};

#define INSN(c, d, s, o, i)                                                                        \
    ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define LDX_DW(d, s, o) INSN(BPF_LDX | BPF_MEM | BPF_DW, d, s, o, 0)
#define ADD_ONE(p, o)   INSN(BPF_STX | BPF_ATOMIC | BPF_DW, p, 1, o, BPF_ADD) /* *(p+o) += r1 */
#define CALL(f)         INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define LD_MAP(d, fd)                                                                              \
    INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define LD_IMM64(d, v)                                                                             \
    INSN(BPF_LD | BPF_DW | BPF_IMM, d, 0, 0, (int32_t)(uint32_t)(v)),                              \
        INSN(0, 0, 0, 0, (int32_t)(uint32_t)((uint64_t)(v) >> 32))
#define CTX_CS    ((short)offsetof(struct bpf_perf_event_data, regs.cs))
#define OUT_LABEL 30 /* the index of "r0 = 1" below */

/*
 * r6 = ctx; a kernel-mode tick (cs & 3 != 3) is let through untouched;
 * counters[0] += 1 (ticks);
 * keep when prandom_u32 < threshold (q x 2^32);
 * counters[1] += 1 (kept); perf_event_output(ctx, outputs, BPF_F_CURRENT_CPU, 8 zero bytes);
 * return 1 (the PC sample is written as without the program).
 */
static int load(dcpi_thin_t *t, uint64_t threshold, char *log, size_t loglen)
{
    struct bpf_insn p[] = {
        /* 0 */ MOV64_REG(6, 1),
        /* 1 */ LDX_DW(2, 6, CTX_CS),
        /* 2 */ INSN(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 3),
        /* 3 */ INSN(BPF_JMP | BPF_JNE | BPF_K, 2, 0, OUT_LABEL - 4, 3),
        /* 4 */ INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0),
        /* 5 */ MOV64_REG(2, 10),
        /* 6 */ INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),
        /* 7 */ LD_MAP(1, t->counters),
        /* 9 */ CALL(BPF_FUNC_map_lookup_elem),
        /* 10 */ MOV64_REG(7, 0),
        /* 11 */ JEQ_IMM(7, 0, 2),
        /* 12 */ MOV64_IMM(1, 1),
        /* 13 */ ADD_ONE(7, 0),
        /* 14 */ CALL(BPF_FUNC_get_prandom_u32),
        /* 15 */ LD_IMM64(8, threshold),
        /* 17 */ INSN(BPF_JMP | BPF_JGE | BPF_X, 0, 8, OUT_LABEL - 18, 0),
        /* 18 */ JEQ_IMM(7, 0, 2),
        /* 19 */ MOV64_IMM(1, 1),
        /* 20 */ ADD_ONE(7, 8),
        /* 21 */ INSN(BPF_ST | BPF_MEM | BPF_DW, 10, 0, -16, 0),
        /* 22 */ MOV64_REG(4, 10),
        /* 23 */ INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, -16),
        /* 24 */ MOV64_REG(1, 6),
        /* 25 */ LD_MAP(2, t->outputs),
        /* 27 */ INSN(BPF_ALU | BPF_MOV | BPF_K, 3, 0, 0, -1), /* BPF_F_CURRENT_CPU */
        /* 28 */ MOV64_IMM(5, 8),
        /* 29 */ CALL(BPF_FUNC_perf_event_output),
        /* 30 */ MOV64_IMM(0, 1),
        /* 31 */ INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log, .log_size = (unsigned)loglen);
    return bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "dcpi_thin", "GPL", p, sizeof p / sizeof p[0],
                         &o);
}

int dcpi_thin_open(double q, dcpi_thin_t **out, char *err)
{
    *out = NULL;
    if (!(q >= 0)) /* NaN too */
        return dcpi__errf(err, DCPI_EINVAL, "trigger thinning: bad probability %g", q);
    dcpi_thin_t *t = calloc(1, sizeof *t);
    if (!t)
        return dcpi__errf(err, DCPI_ENOMEM, "trigger thinning: out of memory");
    *t = (dcpi_thin_t){.prog = -1, .outputs = -1, .counters = -1};
    t->ncpu = libbpf_num_possible_cpus();
    int rc;
    if (t->ncpu <= 0) {
        rc = dcpi__errf(err, DCPI_EINVAL, "trigger thinning: possible CPUs unknown");
        goto fail;
    }
    t->counters = bpf_map_create(BPF_MAP_TYPE_ARRAY, "dcpi_thin_n", 4, 16, 1, NULL);
    t->outputs = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "dcpi_thin_out", 4, 4,
                                (unsigned)t->ncpu, NULL);
    if (t->counters < 0 || t->outputs < 0) {
        rc = t->counters < 0 ? t->counters : t->outputs;
        rc = dcpi__errf(err, dcpi__errno_code(-rc), "trigger thinning: BPF map: %s", strerror(-rc));
        goto fail;
    }
    char log[512] = "";
    uint64_t threshold = q >= 1 ? 1ull << 32 : (uint64_t)(q * 4294967296.0);
    t->prog = load(t, threshold, log, sizeof log);
    if (t->prog < 0) {
        rc = dcpi__errf(err, dcpi__errno_code(-t->prog), "trigger thinning: BPF load: %s%s%.200s",
                        strerror(-t->prog), *log ? ": " : "", log);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    dcpi_thin_close(t);
    return rc;
}

int dcpi_thin_prog_fd(const dcpi_thin_t *t)
{
    return t ? t->prog : -1;
}

int dcpi_thin_set_output(dcpi_thin_t *t, int cpu, int fd)
{
    uint32_t k = (uint32_t)cpu, v = (uint32_t)fd;
    if (cpu < 0 || cpu >= t->ncpu)
        return -EINVAL;
    int rc = bpf_map_update_elem(t->outputs, &k, &v, BPF_ANY);
    return rc < 0 ? -errno : 0;
}

void dcpi_thin_counts(const dcpi_thin_t *t, uint64_t *ticks, uint64_t *kept)
{
    uint64_t v[2] = {0, 0};
    uint32_t k = 0;
    if (t)
        bpf_map_lookup_elem(t->counters, &k, v);
    *ticks = v[0];
    *kept = v[1];
}

void dcpi_thin_close(dcpi_thin_t *t)
{
    if (!t)
        return;
    if (t->prog >= 0)
        close(t->prog);
    if (t->outputs >= 0)
        close(t->outputs);
    if (t->counters >= 0)
        close(t->counters);
    free(t);
}

#else /* no libbpf at build time */

int dcpi_thin_open(double q, dcpi_thin_t **out, char *err)
{
    (void)q;
    *out = NULL;
    return dcpi__errf(err, DCPI_ENOTSUP, "trigger thinning: dcpi was built without libbpf");
}

int dcpi_thin_prog_fd(const dcpi_thin_t *t)
{
    (void)t;
    return -1;
}

int dcpi_thin_set_output(dcpi_thin_t *t, int cpu, int fd)
{
    (void)t, (void)cpu, (void)fd;
    return -ENOTSUP;
}

void dcpi_thin_counts(const dcpi_thin_t *t, uint64_t *ticks, uint64_t *kept)
{
    (void)t;
    *ticks = *kept = 0;
}

void dcpi_thin_close(dcpi_thin_t *t)
{
    (void)t;
}

#endif
