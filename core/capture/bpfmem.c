/*
 * bpfmem.c - loading the bp backend's BPF program, writing the operands it reads (by process and
 * breakpoint address) and reading its per-CPU log (see bpfmem.h).
 * The object is core/capture/bpfmem.bpf.c compiled at build time and embedded as
 * dcpi__bpfmem_obj (CMakeLists.txt); without libbpf or clang at build time (DCPI_HAVE_BPF 0)
 * dcpi_bpfmem_open says so.
 */
#include "core/capture/bpfmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/capture/bpfmem-abi.h"
#include "dcpi/errno.h"

/* The registers dcpi_bpfmem_key hashes: the 16 GPRs and rip. */
#define DCPI_KEY_MASK (DCPI_REGS_GPR_MASK | (1ull << DCPI_REG_IP))

#if DCPI_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

extern const unsigned char dcpi__bpfmem_obj[];
extern const unsigned long dcpi__bpfmem_obj_len;

struct dcpi_bpfmem {
    struct bpf_object *obj;
    int prog_fd, ops_fd;
    struct dcpi_bpfmem_log *logs;
    size_t logs_len;
    int ncpu;                        /* entries of the log map: the possible CPUs */
    uint64_t rd[DCPI_BPFMEM_MAXCPU]; /* log entries paired so far, per CPU */
};

static int silent(enum libbpf_print_level l, const char *fmt, va_list ap)
{
    (void)l, (void)fmt, (void)ap;
    return 0;
}

static void *map_table(struct bpf_object *obj, const char *name, size_t elem, int ncpu, size_t *len)
{
    struct bpf_map *map = bpf_object__find_map_by_name(obj, name);
    if (!map)
        return NULL;
    long page = sysconf(_SC_PAGESIZE);
    *len = ((elem * (size_t)ncpu + (size_t)page - 1) / (size_t)page) * (size_t)page;
    void *p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
    return p == MAP_FAILED ? NULL : p;
}

int dcpi_bpfmem_open(dcpi_bpfmem_t **out, char *err)
{
    libbpf_set_print(silent);
    dcpi_bpfmem_t *m = calloc(1, sizeof *m);
    if (!m)
        return dcpi__errf(err, DCPI_ENOMEM, "BPF: out of memory");
    int rc;
    m->obj = bpf_object__open_mem(dcpi__bpfmem_obj, dcpi__bpfmem_obj_len, NULL);
    if (!m->obj) {
        rc = dcpi__errf(err, dcpi__errno_code(errno), "BPF object: %s", strerror(errno));
        goto fail;
    }
    /* a log is 64 KB: one per possible CPU, not DCPI_BPFMEM_MAXCPU */
    m->ncpu = libbpf_num_possible_cpus();
    if (m->ncpu <= 0 || m->ncpu > DCPI_BPFMEM_MAXCPU)
        m->ncpu = DCPI_BPFMEM_MAXCPU;
    struct bpf_map *logs = bpf_object__find_map_by_name(m->obj, "dcpi_logs");
    if (logs && bpf_map__set_max_entries(logs, (__u32)m->ncpu) < 0)
        m->ncpu = DCPI_BPFMEM_MAXCPU;
    if ((rc = bpf_object__load(m->obj)) < 0) {
        rc = dcpi__errf(err, dcpi__errno_code(-rc), "BPF load: %s", strerror(-rc));
        goto fail;
    }
    struct bpf_program *prog = bpf_object__find_program_by_name(m->obj, "dcpi_bpfmem");
    m->prog_fd = prog ? bpf_program__fd(prog) : -1;
    struct bpf_map *ops = bpf_object__find_map_by_name(m->obj, "dcpi_ops");
    m->ops_fd = ops ? bpf_map__fd(ops) : -1;
    m->logs = map_table(m->obj, "dcpi_logs", sizeof *m->logs, m->ncpu, &m->logs_len);
    if (m->prog_fd < 0 || m->ops_fd < 0 || !m->logs) {
        rc = dcpi__errf(err, DCPI_EFORMAT, "BPF: program or maps missing or not mappable");
        goto fail;
    }
    *out = m;
    return 0;
fail:
    dcpi_bpfmem_close(m);
    return rc;
}

void dcpi_bpfmem_close(dcpi_bpfmem_t *m)
{
    if (!m)
        return;
    if (m->logs)
        munmap(m->logs, m->logs_len);
    bpf_object__close(m->obj);
    free(m);
}

int dcpi_bpfmem_prog_fd(const dcpi_bpfmem_t *m)
{
    return m->prog_fd;
}

/* The recipe of insn's first MEM operand: 0, or DCPI_ENOTSUP when there is none to read. */
static int recipe(const dcpi_insn_t *insn, struct dcpi_bpfmem_op *op)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *o = &insn->ops[i];
        if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.type != ZYDIS_MEMOP_TYPE_MEM)
            continue;
        if (o->mem.segment == ZYDIS_REGISTER_FS || o->mem.segment == ZYDIS_REGISTER_GS)
            return DCPI_ENOTSUP; /* the segment base is not in the registers */
        *op = (struct dcpi_bpfmem_op){.disp = o->mem.disp.value,
                                      .base = DCPI_BPFMEM_NOREG,
                                      .index = DCPI_BPFMEM_NOREG,
                                      .size = (unsigned char)(o->size / 8),
                                      .on = 1};
        if (o->mem.base == ZYDIS_REGISTER_RIP) {
            op->disp += (long long)(insn->pc + insn->zi.length);
        } else if (o->mem.base != ZYDIS_REGISTER_NONE) {
            int b = dcpi_capture_perf_index(o->mem.base);
            if (b < 0)
                return DCPI_ENOTSUP;
            op->base = (unsigned char)b;
        }
        if (o->mem.index != ZYDIS_REGISTER_NONE) {
            int x = dcpi_capture_perf_index(o->mem.index);
            if (x < 0 || o->mem.scale == 0)
                return DCPI_ENOTSUP;
            op->index = (unsigned char)x;
            op->shift = (unsigned char)__builtin_ctz(o->mem.scale);
        }
        if (op->size == 0 || op->size > 8)
            op->size = 8; /* wider operands: their first 8 bytes */
        return 0;
    }
    return DCPI_ENOTSUP;
}

int dcpi_bpfmem_set(dcpi_bpfmem_t *m, pid_t pid, uint64_t addr, const dcpi_insn_t *insn)
{
    struct dcpi_bpfmem_op op = {0};
    if (!insn || recipe(insn, &op) < 0)
        op.on = 0;
    struct dcpi_bpfmem_opkey k = {.tgid = (unsigned)pid, .addr = addr};
    return bpf_map_update_elem(m->ops_fd, &k, &op, BPF_ANY) < 0 ? -errno : 0;
}

/* The log entry of the sample whose registers hash to key on cpu, or NULL: the newest entry
 * with that key written at most SLACK_NS after time t (the sample's time and the program's
 * bpf_ktime_get_ns are read within a microsecond of each other, in an order that depends on the
 * kernel: measured on 6.18, the sample's ~0.5 us before). Entries of a CPU are in time order
 * (the program runs with preemption off), so the search stops at the first one older than t by
 * more than LOOKBACK_NS. */
#define SLACK_NS    100000ull
#define LOOKBACK_NS 1000000000ull
static const struct dcpi_bpfmem_entry *entry_at(dcpi_bpfmem_t *m, int cpu, unsigned long long key,
                                                uint64_t t)
{
    struct dcpi_bpfmem_log *l = &m->logs[cpu];
    uint64_t n = __atomic_load_n(&l->n, __ATOMIC_ACQUIRE);
    uint64_t lo = n > DCPI_BPFMEM_ENTRIES ? n - DCPI_BPFMEM_ENTRIES : 0;
    for (uint64_t i = n; i > lo; i--) {
        const struct dcpi_bpfmem_entry *e = &l->e[(i - 1) % DCPI_BPFMEM_ENTRIES];
        if (e->time > t + SLACK_NS)
            continue; /* a later sample's */
        if (e->time + LOOKBACK_NS < t)
            break;
        if (e->key == key)
            return e;
    }
    return NULL;
}

static unsigned long long regs_key(const dcpi_regs_t *regs)
{
    unsigned long long g[32] = {0};
    for (int i = 0; i < DCPI_REG_COUNT; i++)
        g[i] = regs->r[i];
    return dcpi_bpfmem_key(g);
}

int dcpi_bpfmem_find(dcpi_bpfmem_t *m, int cpu, uint64_t time, dcpi_regs_t *regs)
{
    regs->mem_ok = 0;
    if (cpu < 0 || cpu >= m->ncpu || (regs->valid & DCPI_KEY_MASK) != DCPI_KEY_MASK)
        return 0;
    const struct dcpi_bpfmem_entry *e = entry_at(m, cpu, regs_key(regs), time);
    if (!e)
        return 0;
    regs->mem_ea = e->ea;
    regs->mem_val = e->val;
    regs->mem_ok = (int)e->ok;
    return 1;
}

int dcpi_bpfmem_next(dcpi_bpfmem_t *m, int cpu, dcpi_regs_t *regs)
{
    regs->mem_ok = 0;
    if (cpu < 0 || cpu >= m->ncpu || (regs->valid & DCPI_KEY_MASK) != DCPI_KEY_MASK)
        return 0;
    unsigned long long key = regs_key(regs);
    struct dcpi_bpfmem_log *l = &m->logs[cpu];
    uint64_t n = __atomic_load_n(&l->n, __ATOMIC_ACQUIRE);
    uint64_t i = m->rd[cpu];
    if (n - i > DCPI_BPFMEM_ENTRIES)
        i = n - DCPI_BPFMEM_ENTRIES; /* overwritten: their samples were lost */
    for (; i < n; i++) { /* the first entry with our key: those before it lost their samples */
        const struct dcpi_bpfmem_entry *e = &l->e[i % DCPI_BPFMEM_ENTRIES];
        if (e->key != key)
            continue;
        regs->mem_ea = e->ea;
        regs->mem_val = e->val;
        regs->mem_ok = (int)e->ok;
        m->rd[cpu] = i + 1;
        return 1;
    }
    return 0;
}

#else /* built without libbpf or clang */

int dcpi_bpfmem_open(dcpi_bpfmem_t **out, char *err)
{
    (void)out;
    return dcpi__errf(err, DCPI_ENOTSUP, "built without BPF (libbpf-dev and clang)");
}
void dcpi_bpfmem_close(dcpi_bpfmem_t *m)
{
    (void)m;
}
int dcpi_bpfmem_prog_fd(const dcpi_bpfmem_t *m)
{
    (void)m;
    return -1;
}
int dcpi_bpfmem_set(dcpi_bpfmem_t *m, pid_t pid, uint64_t addr, const dcpi_insn_t *insn)
{
    (void)m, (void)pid, (void)addr, (void)insn;
    return DCPI_ENOTSUP;
}
int dcpi_bpfmem_find(dcpi_bpfmem_t *m, int cpu, uint64_t time, dcpi_regs_t *regs)
{
    (void)m, (void)cpu, (void)time;
    regs->mem_ok = 0;
    return 0;
}
int dcpi_bpfmem_next(dcpi_bpfmem_t *m, int cpu, dcpi_regs_t *regs)
{
    (void)m, (void)cpu;
    regs->mem_ok = 0;
    return 0;
}

#endif
