/*
 * stepdrain.c - dcpid's side of the step backend: map the agent's ring files, drain records,
 * compute exact values from registers before/after and encode trace entries (stepdrain.h).
 */
#include "core/capture/stepdrain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/base/err.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

typedef struct ring {
    char *path;
    step_ring_header_t *hdr;
    size_t size;
    unsigned pid, gen;
    int released;
} ring_t;

struct dcpi_stepdrain {
    char dir[256];
    char base[128];
    ring_t *rings;
    int nrings, cap;
    uint64_t drained, first_dropped;
    int keep_first;
    dcpi_step_stats_t gone; /* totals of released rings */
};

int dcpi_stepdrain_open(const char *prefix, dcpi_stepdrain_t **out, char *err)
{
    const char *slash = prefix ? strrchr(prefix, '/') : NULL;
    if (!out || !slash || slash[1] == '\0' || (size_t)(slash - prefix) >= 256 ||
        strlen(slash + 1) >= 120)
        return dcpi__errf(err, DCPI_EINVAL, "stepdrain: bad ring prefix: %s",
                          prefix ? prefix : "(null)");
    dcpi_stepdrain_t *d = calloc(1, sizeof(*d));
    if (!d)
        return dcpi__errf(err, DCPI_ENOMEM, "stepdrain: out of memory");
    memcpy(d->dir, prefix, (size_t)(slash - prefix));
    if (slash == prefix)
        strcpy(d->dir, "/");
    snprintf(d->base, sizeof(d->base), "%s.", slash + 1);
    *out = d;
    return 0;
}

void dcpi_stepdrain_add_ring(dcpi_step_stats_t *st, const step_ring_header_t *h)
{
    st->lost_threads += atomic_load(&((step_ring_header_t *)h)->lost_threads);
    st->no_decoder += atomic_load(&((step_ring_header_t *)h)->no_decoder);
    for (uint32_t i = 0; i < h->nslots; i++) {
        step_slot_t *s = step_ring_slot((step_ring_header_t *)h, i);
        st->bursts += atomic_load(&s->bursts);
        st->steps += atomic_load(&s->steps);
        st->lost_bursts += atomic_load(&s->lost_bursts);
        for (int k = 0; k < STEP_END_COUNT; k++)
            st->end_count[k] += atomic_load(&s->end_count[k]);
        st->ticks += atomic_load(&s->ticks);
        st->arms += atomic_load(&s->arms);
        st->hits += atomic_load(&s->hits);
        st->expired += atomic_load(&s->expired);
        st->dropped += atomic_load(&s->dropped);
        st->handler_ns += atomic_load(&s->handler_ns);
        st->handler_n += atomic_load(&s->handler_n);
        st->closes += atomic_load(&s->closes);
        st->gap_ns += atomic_load(&s->gap_ns);
        st->gap_n += atomic_load(&s->gap_n);
    }
    step_ring_header_t *w = (step_ring_header_t *)h;
    if (!atomic_load(&w->arm_mode))
        return;
    unsigned bps = atomic_load(&w->arm_bps);
    if (st->arm_rings++ == 0 || bps < st->arm_bps)
        st->arm_bps = bps;
    if (!st->arm_errno)
        st->arm_errno = (int)atomic_load(&w->arm_errno);
}

static void ring_release(dcpi_stepdrain_t *d, ring_t *r, int remove_file)
{
    if (r->released)
        return;
    dcpi_stepdrain_add_ring(&d->gone, r->hdr);
    munmap(r->hdr, r->size);
    if (remove_file)
        unlink(r->path);
    r->released = 1;
}

void dcpi_stepdrain_close(dcpi_stepdrain_t *d, int remove_files)
{
    if (!d)
        return;
    for (int i = 0; i < d->nrings; i++) {
        ring_release(d, &d->rings[i], remove_files);
        free(d->rings[i].path);
    }
    free(d->rings);
    free(d);
}

static int known(const dcpi_stepdrain_t *d, unsigned pid, unsigned gen)
{
    for (int i = 0; i < d->nrings; i++)
        if (d->rings[i].pid == pid && d->rings[i].gen == gen)
            return 1;
    return 0;
}

/* Map one file; 1 mapped, 0 not ready yet, -1 invalid. */
static int map_file(const char *path, ring_t *r)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(step_ring_header_t))
        m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    step_ring_header_t *h = m;
    if (!atomic_load(&h->ready)) {
        munmap(m, (size_t)st.st_size);
        return 0;
    }
    if (!step_ring_valid(h, (uint64_t)st.st_size)) {
        munmap(m, (size_t)st.st_size);
        return -1;
    }
    r->hdr = h;
    r->size = (size_t)st.st_size;
    return 1;
}

static int add_ring(dcpi_stepdrain_t *d, const char *name, unsigned pid, unsigned gen)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", d->dir, name);
    ring_t r = {.pid = pid, .gen = gen};
    int rc = map_file(path, &r);
    if (rc <= 0)
        return 0; /* not ready yet, or invalid: skipped, looked at again by the next scan */
    if (d->nrings == d->cap) {
        int cap = d->cap > INT_MAX / 2 ? 0 : d->cap ? d->cap * 2 : 8;
        ring_t *n = cap ? reallocarray(d->rings, (size_t)cap, sizeof(*n)) : NULL;
        if (!n) {
            munmap(r.hdr, r.size);
            return DCPI_ENOMEM;
        }
        d->rings = n;
        d->cap = cap;
    }
    r.path = strdup(path);
    if (!r.path) {
        munmap(r.hdr, r.size);
        return DCPI_ENOMEM;
    }
    d->rings[d->nrings++] = r;
    return 1;
}

int dcpi_stepdrain_scan(dcpi_stepdrain_t *d, char *err)
{
    if (!d)
        return DCPI_EINVAL;
    DIR *dir = opendir(d->dir);
    if (!dir)
        return dcpi__errf(err, DCPI_EIO, "stepdrain: cannot read directory %s", d->dir);
    size_t blen = strlen(d->base);
    int added = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        unsigned pid, gen;
        char extra;
        if (strncmp(e->d_name, d->base, blen) != 0 ||
            sscanf(e->d_name + blen, "%u.%u%c", &pid, &gen, &extra) != 2 || known(d, pid, gen))
            continue;
        int rc = add_ring(d, e->d_name, pid, gen);
        if (rc < 0) {
            closedir(dir);
            return dcpi__errf(err, rc, "stepdrain: out of memory");
        }
        added += rc;
    }
    closedir(dir);
    return added;
}

void dcpi_stepdrain_keep_first(dcpi_stepdrain_t *d, int keep)
{
    if (d)
        d->keep_first = keep != 0;
}

static long drain_ring(dcpi_stepdrain_t *d, ring_t *r, dcpi_step_record_fn fn, void *arg, int *stop)
{
    long n = 0;
    for (uint32_t i = 0; i < r->hdr->nslots && !*stop; i++) {
        step_slot_t *s = step_ring_slot(r->hdr, i);
        if (atomic_load(&s->state) == STEP_SLOT_FREE)
            continue;
        const step_record_t *rec;
        while ((rec = step_ring_peek(r->hdr, i)) != NULL) {
            if ((rec->flags & STEP_REC_FIRST) && !d->keep_first) {
                step_ring_consume(s); /* the interrupted instruction: biased, see stepdrain.h */
                d->first_dropped++;
                continue;
            }
            step_record_t copy = *rec; /* the slot is reused once consumed */
            if (fn && fn(r->pid, &copy, arg) != 0) {
                *stop = 1;
                break;
            }
            step_ring_consume(s);
            n++;
        }
    }
    return n;
}

long dcpi_stepdrain_poll(dcpi_stepdrain_t *d, dcpi_step_record_fn fn, void *arg)
{
    if (!d)
        return DCPI_EINVAL;
    long n = 0;
    int stop = 0;
    for (int i = 0; i < d->nrings && !stop; i++)
        if (!d->rings[i].released)
            n += drain_ring(d, &d->rings[i], fn, arg, &stop);
    d->drained += (uint64_t)n;
    return n;
}

static int ring_drained(ring_t *r)
{
    for (uint32_t i = 0; i < r->hdr->nslots; i++)
        if (step_ring_peek(r->hdr, i))
            return 0;
    return 1;
}

static int ring_finished(const dcpi_stepdrain_t *d, const ring_t *r)
{
    if (kill((pid_t)r->pid, 0) != 0 && errno == ESRCH)
        return 1;
    for (int i = 0; i < d->nrings; i++)
        if (d->rings[i].pid == r->pid && d->rings[i].gen > r->gen)
            return 1; /* the process exec'd a new image */
    return 0;
}

/* Slots of exited threads become free once drained (counters move to the totals). */
static void free_done_slots(dcpi_stepdrain_t *d, ring_t *r)
{
    for (uint32_t i = 0; i < r->hdr->nslots; i++) {
        step_slot_t *s = step_ring_slot(r->hdr, i);
        if (atomic_load(&s->state) != STEP_SLOT_DONE || step_ring_peek(r->hdr, i))
            continue;
        d->gone.bursts += atomic_exchange(&s->bursts, 0);
        d->gone.steps += atomic_exchange(&s->steps, 0);
        d->gone.lost_bursts += atomic_exchange(&s->lost_bursts, 0);
        d->gone.ticks += atomic_exchange(&s->ticks, 0);
        d->gone.arms += atomic_exchange(&s->arms, 0);
        d->gone.hits += atomic_exchange(&s->hits, 0);
        d->gone.expired += atomic_exchange(&s->expired, 0);
        d->gone.dropped += atomic_exchange(&s->dropped, 0);
        d->gone.handler_ns += atomic_exchange(&s->handler_ns, 0);
        d->gone.handler_n += atomic_exchange(&s->handler_n, 0);
        d->gone.closes += atomic_exchange(&s->closes, 0);
        d->gone.gap_ns += atomic_exchange(&s->gap_ns, 0);
        d->gone.gap_n += atomic_exchange(&s->gap_n, 0);
        for (int k = 0; k < STEP_END_COUNT; k++)
            d->gone.end_count[k] += atomic_exchange(&s->end_count[k], 0);
        atomic_store(&s->state, STEP_SLOT_FREE);
    }
}

int dcpi_stepdrain_reap(dcpi_stepdrain_t *d)
{
    if (!d)
        return DCPI_EINVAL;
    int n = 0;
    for (int i = 0; i < d->nrings; i++) {
        ring_t *r = &d->rings[i];
        if (r->released)
            continue;
        free_done_slots(d, r);
        if (ring_drained(r) && ring_finished(d, r)) {
            ring_release(d, r, 1);
            n++;
        }
    }
    return n;
}

void dcpi_stepdrain_each(dcpi_stepdrain_t *d, dcpi_step_ring_fn fn, void *arg)
{
    for (int i = 0; d && i < d->nrings; i++)
        if (!d->rings[i].released)
            fn(d->rings[i].pid, d->rings[i].hdr, arg);
}

void dcpi_stepdrain_stats(const dcpi_stepdrain_t *d, dcpi_step_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    if (!d)
        return;
    *st = d->gone;
    st->rings = 0;
    for (int i = 0; i < d->nrings; i++) {
        if (d->rings[i].released)
            continue;
        st->rings++;
        dcpi_stepdrain_add_ring(st, d->rings[i].hdr);
    }
    st->drained = d->drained;
    st->first_dropped = d->first_dropped;
}

/* ---- values ------------------------------------------------------------------------------- */

static void regs_of(const uint64_t *r, dcpi_regs_t *out)
{
    memcpy(out->r, r, sizeof(out->r));
    out->valid = DCPI_REGS_FULL_MASK;
}

void dcpi_step_regs_before(const step_record_t *rec, dcpi_regs_t *out)
{
    memset(out, 0, sizeof *out);
    regs_of(rec->before, out);
    if (rec->flags & STEP_REC_MEMRD) {
        out->mem_ok = 1;
        out->mem_ea = rec->ea;
        out->mem_val = rec->mem_before;
    }
}

static int is_branch(const dcpi_insn_t *insn)
{
    ZydisInstructionCategory c = insn->zi.meta.category;
    return c == ZYDIS_CATEGORY_COND_BR || c == ZYDIS_CATEGORY_UNCOND_BR ||
           c == ZYDIS_CATEGORY_CALL || c == ZYDIS_CATEGORY_RET;
}

static int is_flags_or_ip(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_RFLAGS || r == ZYDIS_REGISTER_EFLAGS || r == ZYDIS_REGISTER_FLAGS ||
           r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP || r == ZYDIS_REGISTER_IP;
}

static int is_mem(const ZydisDecodedOperand *op)
{
    return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.type == ZYDIS_MEMOP_TYPE_MEM;
}

/* The destination after the instruction: pass 0 visible operands, pass 1 hidden ones. */
static int regc(const step_record_t *rec, const dcpi_insn_t *insn, uint64_t *v)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < insn->zi.operand_count; i++) {
            const ZydisDecodedOperand *op = &insn->ops[i];
            int hidden = op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN;
            if (hidden != pass || !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
                continue;
            if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && !is_flags_or_ip(op->reg.value)) {
                int idx = dcpi_capture_perf_index(op->reg.value);
                if (idx < 0)
                    return DCPI_ENOTSUP; /* vector or other register */
                *v = dcpi_capture_reg_part(op->reg.value, rec->after[idx]); /* al: 8 bits */
                return 0;
            }
            if (is_mem(op) && !pass) {
                if (!(rec->flags & STEP_REC_MEMWR))
                    return DCPI_ENOENT;
                *v = rec->mem_after;
                return 0;
            }
        }
    }
    if (insn->zi.cpu_flags && insn->zi.cpu_flags->modified) {
        *v = rec->after[DCPI_REG_FLAGS]; /* cmp, test, ... */
        return 0;
    }
    return DCPI_ENOTSUP;
}

/* Source number k (REGA 0, REGB 1) when it is the memory operand: the value read. */
static int mem_source(const step_record_t *rec, const dcpi_insn_t *insn, int k, uint64_t *v)
{
    for (int i = 0; i < insn->zi.operand_count; i++) {
        const ZydisDecodedOperand *op = &insn->ops[i];
        int src;
        if (op->type == ZYDIS_OPERAND_TYPE_REGISTER)
            src = (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && !is_flags_or_ip(op->reg.value);
        else if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
            src = op->mem.type == ZYDIS_MEMOP_TYPE_AGEN ||
                  (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ);
        else
            src = op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
        if (!src || k-- > 0)
            continue;
        if (!is_mem(op))
            return 1; /* not a memory source: the regs rule applies */
        if (!(rec->flags & STEP_REC_MEMRD))
            return DCPI_ENOENT;
        *v = rec->mem_before;
        return 0;
    }
    return 1;
}

static int memval(const step_record_t *rec, uint64_t *v)
{
    if (rec->flags & STEP_REC_MEMWR)
        *v = rec->mem_after;
    else if (rec->flags & STEP_REC_MEMRD)
        *v = rec->mem_before;
    else
        return DCPI_ENOENT;
    return 0;
}

static int one_value(const step_record_t *rec, const dcpi_insn_t *insn, trace_value_t k,
                     uint64_t *v)
{
    uint64_t next = rec->after[DCPI_REG_IP], fall = insn->pc + insn->zi.length;
    switch (k) {
    case TRACE_RFLAGS:
        *v = rec->after[DCPI_REG_FLAGS];
        return 0;
    case TRACE_REGA:
    case TRACE_REGB:
        return mem_source(rec, insn, k == TRACE_REGB, v);
    case TRACE_REGC:
        return regc(rec, insn, v);
    case TRACE_EA:
        if (!(rec->flags & STEP_REC_EA))
            return 1;
        *v = rec->ea;
        return 0;
    case TRACE_MEMVAL:
        return memval(rec, v);
    case TRACE_BR_TAKEN:
        if (!is_branch(insn))
            return DCPI_ENOTSUP;
        *v = next != fall;
        return 0;
    case TRACE_BR_TARGET:
        if (!is_branch(insn) || next == fall)
            return 1;
        *v = next;
        return 0;
    default:
        return 1; /* the regs rule (registers: after) */
    }
}

void dcpi_step_values(const step_record_t *rec, const dcpi_insn_t *insn, const trace_value_t *kinds,
                      int n, uint64_t *values, unsigned *missing)
{
    dcpi_regs_t before, after;
    regs_of(rec->before, &before);
    regs_of(rec->after, &after);
    unsigned miss = 0;
    for (int i = 0; i < n && i < 32; i++) {
        uint64_t v = 0;
        int rc = one_value(rec, insn, kinds[i], &v);
        if (rc == 1) { /* computed as the regs backend does, from before or after */
            int gpr = kinds[i] >= TRACE_RAX && kinds[i] <= TRACE_R15;
            unsigned m;
            dcpi_capture_values(insn, gpr ? &after : &before, &kinds[i], 1, &v, &m);
            rc = m ? DCPI_ENOENT : 0;
        }
        if (rc != 0) {
            v = 0;
            miss |= 1u << i;
        }
        values[i] = v;
    }
    if (missing)
        *missing = miss;
}

/* ---- encoding ----------------------------------------------------------------------------- */

void dcpi_step_encoder_init(dcpi_step_encoder_t *se, trace_encoder_t *enc, unsigned pid)
{
    memset(se, 0, sizeof(*se));
    se->enc = enc;
    se->pid = pid;
}

static int need_burst(dcpi_step_encoder_t *se, const step_record_t *rec)
{
    if (se->open && se->tid == rec->tid && se->burst == rec->burst)
        return 0;
    int rc = trace_encoder_burst(se->enc, se->pid, rec->tid, rec->time_ns, 0);
    if (rc != 0)
        return rc;
    se->open = 1;
    se->tid = rec->tid;
    se->burst = rec->burst;
    return 0;
}

int dcpi_step_encode(dcpi_step_encoder_t *se, const trace_vlist_table_t *spec,
                     const step_record_t *rec)
{
    if (!se || !se->enc || !spec || !rec)
        return DCPI_EINVAL;
    dcpi_insn_t insn;
    uint64_t pc = rec->before[DCPI_REG_IP];
    if (dcpi_capture_decode(rec->insn, rec->insn_len, pc, &insn) < 0) {
        se->undecoded++;
        return 0;
    }
    trace_value_t kinds[TRACE_VLIST_MAX];
    int n = trace_vlist_table_get(spec, insn.inst.opc, kinds);
    if (n < 0) {
        se->skipped++;
        return 0;
    }
    uint64_t values[TRACE_VLIST_MAX];
    unsigned missing;
    dcpi_step_values(rec, &insn, kinds, n, values, &missing);
    int rc = need_burst(se, rec);
    if (rc == 0)
        rc = trace_encoder_entry(se->enc, &insn.inst, pc, 0, 0, n, kinds, values, missing);
    if (rc != 0) {
        se->open = 0; /* after a flush the retry starts its burst again */
        return rc;
    }
    se->entries++;
    se->missing += missing != 0;
    return 1;
}
