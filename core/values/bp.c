/*
 * bp.c - the bp backend's chooser (backend.h; dcpid -vtrace where execute breakpoints work;
 * docs/vprofiler.md "WHERE VALUES COME FROM"): which instruction an arm takes. Its tables are
 * the backend's (bparm.c, which arms the breakpoints: core/sampling/bpslots.h).
 *
 * A timer interrupt lands after slow instructions and around mispredicts, so the registers of a
 * PC sample over-represent the slow executions of the sampled instruction, and an instruction
 * that always retires in another's shadow (a memory-operand div, a call through memory) is never
 * the sampled pc. Here a PC sample only says where the thread is; the value sample is taken by
 * a breakpoint on an instruction of the same function, at its next executions:
 *   - dcpi__vbp_choose: the sampled function (ELF symbol; without one, the 128 bytes from
 *     the sampled pc) is decoded once; its candidates are the instructions some plugin (or
 *     -vrecord) has a vlist for that asks for a value a breakpoint can capture there
 *     (dcpi_capture_can: no arm on a register mov for an address). Of each eight arms in a
 *     function, six go to the candidate at or before the sampled pc (four to the sampled
 *     instruction, or the one whose execution the sample landed after, e.g. a memory-operand
 *     div; two to the candidate before that one, the slow load whose sample landed on the next
 *     instruction), so hot instructions get most value samples; one goes to the function's
 *     major instructions in turn (those holding
 *     DCPI_VBP_MAJOR_PCT% of its PC samples: the budget is spent where it buys the most,
 *     a major instruction with few PC samples gets more than its share); one goes to the
 *     candidate with the fewest value samples so far (arms that gave none count 16, so a cold
 *     path is retried rarely), so that instructions no sample lands near (a call through
 *     memory, whose samples land in the callee) are covered too. Which instruction is armed
 *     does not depend on the values it will see, nor on how many it has had (a choice that did
 *     would weigh the executions of some moments more than others), so each instruction's
 *     hotlist stays unbiased;
 *   - the first sample of each arm is the execution right after the interrupt that armed it,
 *     the same skid-biased one (measured: call targets 53/35/11 for a 60/30/10 truth): the
 *     daemon drops it and passes the next one, which is unbiased (core/daemon/bparm.c says
 *     when an arm is set and why it takes one value sample);
 *   - such a sample goes into the plugins' traces always admitted (bparm.c; the arm rate is
 *     the value-sample rate).
 * Tables are bounded (functions and candidates); when full they start over.
 */
#include "core/values/vbp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/capture/capture.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "trace/trace.h"
#include "dcpi/errno.h"

#define FN_SLOTS     8192       /* functions decoded (open addressing) */
#define MAX_CANDS    (1u << 20) /* candidates over all functions */
#define FN_MAX_BYTES 65536      /* bytes decoded per function */
#define NOSYM_BYTES  128        /* decoded from the pc when no symbol covers it */
#define MISS_WEIGHT  16         /* an arm that gave no sample counts as this many */
#define TURNS        8          /* arms in a function's cycle of choices (see choose) */

typedef struct bp_fn {
    uint32_t image_plus1; /* 0: empty */
    uint32_t ncand;
    uint64_t lo;    /* ELF vaddr of the decoded range's start */
    uint32_t first; /* index of its first candidate */
    uint32_t turn;  /* rotates ties */
    uint32_t trig;  /* PC samples that landed in it (dcpi__vbp_pc) */
    uint32_t rr;    /* the major candidate chosen last (next_major) */
    uint32_t len;   /* bytes of the decoded range */
} bp_fn_t;

typedef struct bp_cand {
    uint32_t delta;        /* from lo */
    uint32_t bstart, bend; /* its basic block [bstart, bend) (deltas) */
    uint8_t len;           /* its bytes */
    uint32_t samples, misses;
    uint32_t at;          /* PC samples it holds (holder) */
    uint32_t arms, fails; /* arms chosen here; of them, failed to arm (last errno: err) */
    uint32_t plugins;     /* bit i: plugin i selects it (bit 31: plugin 31 and later) */
    int err;
} bp_cand_t;

struct dcpi__vbp_choice {
    bp_fn_t fn[FN_SLOTS];
    unsigned nfn;
    bp_cand_t *cand;
    size_t ncand, cap;
    uint8_t *code;  /* FN_MAX_BYTES */
    uint32_t *lead; /* the decoded function's block leaders (deltas; decode_fn's scratch) */
    size_t nlead, leadcap;
};

static void bp_reset(dcpi__vbp_choice_t *b)
{
    memset(b->fn, 0, sizeof b->fn);
    b->nfn = 0;
    b->ncand = 0;
}

static dcpi__vbp_choice_t *bp_get(dcpi__vbp_choice_t **c)
{
    if (!*c) {
        *c = calloc(1, sizeof **c);
        if (*c && !((*c)->code = malloc(FN_MAX_BYTES))) {
            free(*c);
            *c = NULL;
        }
    }
    return *c;
}

void dcpi__vbp_choice_free(dcpi__vbp_choice_t *b)
{
    if (!b)
        return;
    free(b->cand);
    free(b->code);
    free(b->lead);
    free(b);
}

/* Whether plugin i's vlist for key k asks for a value a breakpoint's capture can give there
 * (dcpi_capture_can: an address-only vlist on a register mov asks for none, its every arm would
 * capture "missing"). */
static int yields(const dcpi_values_t *vt, unsigned i, trace_opc_t k)
{
    trace_value_t kinds[TRACE_VLIST_MAX];
    int n = dcpi_values_vlist(vt, i, k, kinds);
    if (n == 0)
        return 1; /* basic information only: the pc itself */
    for (int j = 0; j < n; j++)
        if (dcpi_capture_can(kinds[j], trace_opc_info(k)))
            return 1;
    return 0;
}

/* Whether some plugin (or the recorder) wants the instruction at (img, off): a vlist for its
 * key that asks for a value the instruction can have, and its specification's filter and
 * symbol admit it; *plugins: which plugins (bit i). */
static int wanted(dcpi_values_t *vt, const dcpi_image_t *img, uint32_t off,
                  const trace_inst_t *inst, uint32_t *plugins)
{
    trace_opc_t k = inst->opc;
    *plugins = 0;
    if (k >= dcpi_values_nkeys(vt))
        return 0;
    /* admits before yields: admits counts what the specification selected (select.c warns of
     * a selection that matched no sampled instruction) */
    for (unsigned i = 0, n = dcpi_values_nplugins(vt); i < n; i++)
        if (dcpi_values_takes(vt, i, k) && dcpi_values_admits(vt, i, img, off, inst) &&
            yields(vt, i, k))
            *plugins |= 1u << (i < 31 ? i : 31);
    return *plugins || dcpi_values_records(vt, k);
}

/* A block of f starts at delta (the entry, a branch's target, after a branch). */
static void lead(dcpi__vbp_choice_t *b, uint32_t delta)
{
    if (dcpi__grow((void **)&b->lead, &b->leadcap, b->nlead + 1, sizeof *b->lead) == 0)
        b->lead[b->nlead++] = delta;
}

/* The leaders an instruction at delta (len bytes, running at ELF vaddr lo + delta) makes: its
 * direct branch's target inside [lo, lo + size), and the instruction after a branch. */
static void lead_of(dcpi__vbp_choice_t *b, const dcpi_insn_t *insn, uint64_t lo, size_t size,
                    uint32_t delta, int len)
{
    uint64_t t;
    trace_flow_t fl = trace_inst_flow(&insn->inst, lo + delta, &t);
    if ((fl == TRACE_FLOW_COND || fl == TRACE_FLOW_JUMP) && t >= lo && t - lo < size)
        lead(b, (uint32_t)(t - lo));
    if (fl != TRACE_FLOW_NONE && fl != TRACE_FLOW_CALL)
        lead(b, delta + (uint32_t)len);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Each candidate of f gets its basic block, from the leaders decode_fn found (size: the bytes
 * decoded). A leader the decoding never reached (inside an instruction) cuts nothing wrong: the
 * blocks only bound which PC samples a candidate holds. */
static void blocks_of(dcpi__vbp_choice_t *b, const bp_fn_t *f, uint32_t size)
{
    qsort(b->lead, b->nlead, sizeof *b->lead, cmp_u32);
    size_t k = 0;
    for (uint32_t j = 0; j < f->ncand; j++) {
        bp_cand_t *c = &b->cand[f->first + j];
        while (k < b->nlead && b->lead[k] <= c->delta)
            k++;
        c->bstart = k ? b->lead[k - 1] : 0;
        c->bend = k < b->nlead ? b->lead[k] : size;
    }
}

/* Decode [lo, hi) of img (ELF vaddrs) into f's candidates and their blocks. */
static void decode_fn(dcpi_values_t *vt, dcpi__vbp_choice_t *b, const dcpi_image_t *img, bp_fn_t *f,
                      uint64_t hi)
{
    uint64_t foff;
    f->first = (uint32_t)b->ncand;
    f->ncand = 0;
    b->nlead = 0;
    int fd = dcpi_values_image_fd(vt, img);
    if (fd < 0 || dcpi_image_vaddr_to_file(&img->info, f->lo, &foff) < 0)
        return;
    size_t want = hi - f->lo > FN_MAX_BYTES ? FN_MAX_BYTES : (size_t)(hi - f->lo);
    ssize_t got = pread(fd, b->code, want, (off_t)foff);
    size_t pos = 0;
    for (lead(b, 0); got > 0 && pos < (size_t)got;) {
        dcpi_insn_t insn;
        int len = dcpi_capture_decode(b->code + pos, (size_t)got - pos, f->lo + pos, &insn);
        if (len <= 0)
            break;
        uint32_t off = (uint32_t)(f->lo + pos - img->info.tstart), plugins;
        lead_of(b, &insn, f->lo, (size_t)got, (uint32_t)pos, len);
        if (wanted(vt, img, off, &insn.inst, &plugins) && b->ncand < MAX_CANDS &&
            dcpi__grow((void **)&b->cand, &b->cap, b->ncand + 1, sizeof *b->cand) == 0) {
            b->cand[b->ncand++] =
                (bp_cand_t){.delta = (uint32_t)pos, .len = (uint8_t)len, .plugins = plugins};
            f->ncand++;
        }
        pos += (size_t)len;
    }
    blocks_of(b, f, (uint32_t)pos);
}

/* The decoded range holding vaddr (decoded now if new), or NULL. */
static bp_fn_t *fn_at(dcpi_values_t *vt, dcpi__vbp_choice_t *b, const dcpi_image_t *img,
                      uint64_t vaddr)
{
    uint64_t lo = vaddr, hi = vaddr + NOSYM_BYTES;
    const dcpi_symtab_t *st = dcpi_values_symtab(vt, img);
    const dcpi_symbol_t *sym = st ? dcpi_symtab_lookup(st, vaddr) : NULL;
    if (sym && sym->size && vaddr - sym->addr < FN_MAX_BYTES) {
        lo = sym->addr;
        hi = sym->addr + sym->size;
    }
    uint32_t h = (uint32_t)((lo * 0x9e3779b97f4a7c15ull) >> 40) ^ img->index * 0x85ebu;
    for (unsigned probe = 0; probe < FN_SLOTS; probe++) {
        bp_fn_t *f = &b->fn[(h + probe) % FN_SLOTS];
        if (f->image_plus1 == img->index + 1 && f->lo == lo)
            return f;
        if (f->image_plus1)
            continue;
        if (b->nfn * 4 >= FN_SLOTS * 3 || b->ncand >= MAX_CANDS) {
            bp_reset(b); /* full: start over */
            return fn_at(vt, b, img, vaddr);
        }
        *f = (bp_fn_t){.image_plus1 = img->index + 1, .lo = lo, .len = (uint32_t)(hi - lo)};
        b->nfn++;
        decode_fn(vt, b, img, f, hi);
        return f;
    }
    return NULL;
}

/* Decode the instruction at ELF vaddr of img, which runs at addr. */
static int decode_at(dcpi_values_t *vt, const dcpi_image_t *img, uint64_t vaddr, uint64_t addr,
                     dcpi_insn_t *insn)
{
    uint8_t code[15];
    uint64_t foff;
    int fd = dcpi_values_image_fd(vt, img);
    if (fd < 0 || dcpi_image_vaddr_to_file(&img->info, vaddr, &foff) < 0)
        return DCPI_ENOENT;
    ssize_t n = pread(fd, code, sizeof code, (off_t)foff);
    return n > 0 && dcpi_capture_decode(code, (size_t)n, addr, insn) > 0 ? 0 : DCPI_EFORMAT;
}

/* The candidate at or before delta (the sampled instruction, or the one whose execution the
 * sample landed after), UINT32_MAX when none. */
static uint32_t nearest_before(const dcpi__vbp_choice_t *b, const bp_fn_t *f, uint32_t delta)
{
    uint32_t lo = 0, hi = f->ncand; /* first candidate with a larger delta: hi */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->cand[f->first + mid].delta <= delta)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? f->first + lo - 1 : UINT32_MAX;
}

/* The candidate of f that a PC sample at delta counts for (which ones are major), UINT32_MAX
 * when none: in its basic block, the candidate at or before it (a slow instruction's samples
 * land on the instructions after it: a div's on the next one), or for the block's instructions
 * before its first candidate, that one (they run as often as it does: a call's samples land in
 * the callee, its block's are the evidence that it runs). Samples of a block without
 * candidates count for none, so a candidate followed by other code (a rare call in one arm of
 * a switch) does not hold the samples of that code. */
static uint32_t holder(const dcpi__vbp_choice_t *b, const bp_fn_t *f, uint32_t delta)
{
    uint32_t near = nearest_before(b, f, delta);
    if (near != UINT32_MAX && delta < b->cand[near].bend)
        return near;
    uint32_t next = near == UINT32_MAX ? f->first : near + 1;
    if (next < f->first + f->ncand && b->cand[next].bstart <= delta)
        return next;
    return UINT32_MAX;
}

/* Whether candidate c of f holds >= DCPI_VBP_MAJOR_PCT% of f's PC samples. */
static int major(const bp_fn_t *f, const bp_cand_t *c)
{
    return f->trig >= DCPI_VBP_MIN_TRIG &&
           (uint64_t)c->at * 100 >= (uint64_t)f->trig * DCPI_VBP_MAJOR_PCT;
}

/* The major candidate after the last one this returned (round robin), UINT32_MAX when f has
 * none. Not the neediest: a choice that changed once an instruction had enough samples would
 * weigh the executions before that moment more than those after (a phased program's hotlist
 * would lean to its first phases; measured on the two-thread workload of values_procs.sh). */
static uint32_t next_major(dcpi__vbp_choice_t *b, bp_fn_t *f)
{
    for (uint32_t j = 1; j <= f->ncand; j++) {
        uint32_t k = (f->rr + j) % f->ncand;
        if (major(f, &b->cand[f->first + k])) {
            f->rr = k;
            return f->first + k;
        }
    }
    return UINT32_MAX;
}

/* The candidate with the fewest value samples, arms that gave none counting MISS_WEIGHT; ties
 * rotate. */
static uint32_t least_sampled(const dcpi__vbp_choice_t *b, const bp_fn_t *f)
{
    uint32_t best = f->first;
    uint64_t best_score = UINT64_MAX;
    for (uint32_t j = 0; j < f->ncand; j++) {
        uint32_t i = f->first + (j + f->turn) % f->ncand;
        uint64_t score = b->cand[i].samples + (uint64_t)b->cand[i].misses * MISS_WEIGHT;
        if (score < best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

void dcpi__vbp_pc(dcpi_values_t *vt, dcpi__vbp_choice_t **c, uint32_t pid, uint64_t ip)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    dcpi__vbp_choice_t *b = bp_get(c);
    if (!b ||
        dcpi_loadmap_lookup(dcpi_values_loadmap(vt), (pid_t)pid, ip, &img, &start, &pgoff) < 0)
        return;
    uint64_t vaddr = dcpi_image_file_to_vaddr(&img->info, ip - start + pgoff);
    bp_fn_t *f = fn_at(vt, b, img, vaddr);
    if (!f || f->ncand == 0)
        return;
    f->trig++;
    uint32_t h = holder(b, f, (uint32_t)(vaddr - f->lo));
    if (h != UINT32_MAX)
        b->cand[h].at++;
}

int dcpi__vbp_choose(dcpi_values_t *vt, dcpi__vbp_choice_t **c, uint32_t pid, uint64_t ip,
                     uint64_t *addr, uint32_t *cookie, dcpi_insn_t *insn)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    dcpi__vbp_choice_t *b = bp_get(c);
    if (!b ||
        dcpi_loadmap_lookup(dcpi_values_loadmap(vt), (pid_t)pid, ip, &img, &start, &pgoff) < 0)
        return 0;
    uint64_t vaddr = dcpi_image_file_to_vaddr(&img->info, ip - start + pgoff);
    bp_fn_t *f = fn_at(vt, b, img, vaddr);
    if (!f || f->ncand == 0)
        return 0;
    unsigned turn = ++f->turn % TURNS;
    uint32_t near = nearest_before(b, f, (uint32_t)(vaddr - f->lo));
    uint32_t best = turn % 4 ? near : UINT32_MAX;
    if (turn % 4 == 2 && best != UINT32_MAX && best > f->first)
        best--;    /* the one before: the slow instruction a sample lands after (a load) */
    if (turn == 4) /* the next major instruction in turn */
        best = next_major(b, f);
    if (best == UINT32_MAX)
        best = least_sampled(b, f);
    *addr = ip - (vaddr - f->lo) + b->cand[best].delta;
    *cookie = best;
    b->cand[best].arms++;
    if (insn && decode_at(vt, img, f->lo + b->cand[best].delta, *addr, insn) < 0)
        return 0;
    return 1;
}

void dcpi__vbp_done(dcpi__vbp_choice_t *b, uint32_t cookie, unsigned got)
{
    if (!b || cookie >= b->ncand)
        return; /* the tables started over since the arm */
    if (got)
        b->cand[cookie].samples += got;
    else
        b->cand[cookie].misses++;
}

/* The candidate at run-time address ip of pid, UINT32_MAX when ip is none. */
static uint32_t cand_at(dcpi_values_t *vt, dcpi__vbp_choice_t *b, uint32_t pid, uint64_t ip)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    if (!b ||
        dcpi_loadmap_lookup(dcpi_values_loadmap(vt), (pid_t)pid, ip, &img, &start, &pgoff) < 0)
        return UINT32_MAX;
    uint64_t vaddr = dcpi_image_file_to_vaddr(&img->info, ip - start + pgoff);
    bp_fn_t *f = fn_at(vt, b, img, vaddr);
    uint32_t c = f ? nearest_before(b, f, (uint32_t)(vaddr - f->lo)) : UINT32_MAX;
    return c != UINT32_MAX && f->lo + b->cand[c].delta == vaddr ? c : UINT32_MAX;
}

void dcpi__vbp_hit(dcpi_values_t *vt, dcpi__vbp_choice_t *b, uint32_t pid, uint64_t ip)
{
    uint32_t c = cand_at(vt, b, pid, ip);
    if (c != UINT32_MAX)
        b->cand[c].samples++;
}

double dcpi__vbp_hits_per_arm(const dcpi__vbp_choice_t *b, uint32_t cookie)
{
    if (!b || cookie >= b->ncand || b->cand[cookie].arms < 4)
        return 0.0;
    return (double)b->cand[cookie].samples / (double)b->cand[cookie].arms;
}

void dcpi__vbp_armed_at(dcpi_values_t *vt, dcpi__vbp_choice_t *b, uint32_t pid, uint64_t ip,
                        unsigned n)
{
    uint32_t c = cand_at(vt, b, pid, ip);
    if (c != UINT32_MAX)
        b->cand[c].arms += n;
}

/* Insert (key, addr, cookie) into the top list of at most max entries, sorted by key. */
static void top_insert(dcpi__vbp_target_t *t, unsigned *n, unsigned max, dcpi__vbp_target_t x)
{
    unsigned i = *n < max ? (*n)++ : max;
    while (i > 0 && t[i - 1].at < x.at) {
        if (i < max)
            t[i] = t[i - 1];
        i--;
    }
    if (i < max)
        t[i] = x;
}

/* Whether candidate a ends where c starts (its PC samples may land on c). */
static int adjacent(const bp_cand_t *a, const bp_cand_t *c)
{
    return a->delta + a->len == c->delta;
}

/* Whether cookie is among out's n targets. */
static int listed(const dcpi__vbp_target_t *out, unsigned n, uint32_t cookie)
{
    for (unsigned i = 0; i < n; i++)
        if (out[i].cookie == cookie)
            return 1;
    return 0;
}

/* A selected instruction of the procedure of target t that is not listed, drawn at random (its
 * arms then come at random moments, whatever its values or the program's phases) with weight
 * the PC samples it holds, into out[*n]; nothing when every one is listed or holds none. The
 * weight keeps arms off instructions that rarely run: such an arm waits for its whole window
 * and yields nothing, and a waiting execute breakpoint slows all the code of its 64-byte line
 * (the agent's arm window, agent.c arm_close_tick). */
static void cover(const dcpi__vbp_choice_t *b, const dcpi__vbp_target_t *t, dcpi__vbp_target_t *out,
                  unsigned *n, uint64_t *rng)
{
    const bp_fn_t *f = &b->fn[t->fn];
    uint64_t free = 0;
    for (uint32_t j = 0; j < f->ncand; j++)
        if (!listed(out, *n, f->first + j))
            free += b->cand[f->first + j].at;
    if (!free)
        return;
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    uint64_t k = *rng % free;
    for (uint32_t j = 0; j < f->ncand; j++) {
        uint64_t w = b->cand[f->first + j].at;
        if (!w || listed(out, *n, f->first + j))
            continue;
        if (k < w) {
            out[*n] = *t;
            out[*n].addr = t->lo + b->cand[f->first + j].delta;
            out[*n].cookie = f->first + j;
            out[*n].major = 0;
            out[(*n)++].at = 0;
            return;
        }
        k -= w;
    }
}

/* The most sampled function of pid with selected instructions (DCPI_VBP_MIN_TRIG PC samples or
 * more) that none of out[0..n) is in, as a target of that function (its range in pid) in *t;
 * 0 when there is none. */
static int hottest_unlisted(dcpi_values_t *vt, const dcpi__vbp_choice_t *b, pid_t pid,
                            const dcpi__vbp_target_t *out, unsigned n, dcpi__vbp_target_t *t)
{
    uint32_t best_trig = 0;
    for (unsigned s = 0; s < FN_SLOTS; s++) {
        const bp_fn_t *f = &b->fn[s];
        if (!f->image_plus1 || !f->ncand || f->trig < DCPI_VBP_MIN_TRIG || f->trig <= best_trig)
            continue; /* the cheap tests first: this runs over every slot at each table */
        int listed_fn = 0;
        for (unsigned i = 0; i < n; i++)
            listed_fn |= out[i].fn == s;
        const dcpi_image_t *img = dcpi_loadmap_image(dcpi_values_loadmap(vt), f->image_plus1 - 1);
        uint64_t base;
        if (listed_fn || !img ||
            dcpi_loadmap_addr_of(dcpi_values_loadmap(vt), pid, img, f->lo, &base) < 0)
            continue;
        best_trig = f->trig;
        *t = (dcpi__vbp_target_t){.lo = base, .hi = base + f->len, .fn = s, .trig = f->trig};
    }
    return best_trig > 0;
}

unsigned dcpi__vbp_targets(dcpi_values_t *vt, const dcpi__vbp_choice_t *b, pid_t pid,
                           dcpi__vbp_target_t *out, unsigned max, uint64_t *rng)
{
    unsigned n = 0, ncover = rng && max > DCPI_VBP_COVER ? DCPI_VBP_COVER : 0;
    for (unsigned s = 0; b && s < FN_SLOTS; s++) {
        const bp_fn_t *f = &b->fn[s];
        const dcpi_image_t *img =
            f->image_plus1 ? dcpi_loadmap_image(dcpi_values_loadmap(vt), f->image_plus1 - 1) : NULL;
        uint64_t base;
        if (!img || f->trig < DCPI_VBP_MIN_TRIG ||
            dcpi_loadmap_addr_of(dcpi_values_loadmap(vt), pid, img, f->lo, &base) < 0)
            continue; /* not in pid's mappings */
        for (uint32_t j = 0; j < f->ncand; j++) {
            const bp_cand_t *c = &b->cand[f->first + j];
            if (!major(f, c))
                continue;
            /* and the one right before it, unless major itself: the slow instruction (a
             * load, a multiply) whose PC samples land on the next one */
            for (uint32_t i = j ? j - 1 : j; i <= j; i++)
                if (i == j ||
                    (adjacent(&b->cand[f->first + i], c) && !major(f, &b->cand[f->first + i])))
                    top_insert(out, &n, max - ncover,
                               (dcpi__vbp_target_t){.addr = base + b->cand[f->first + i].delta,
                                                    .lo = base,
                                                    .hi = base + f->len,
                                                    .cookie = f->first + i,
                                                    .fn = s,
                                                    .trig = f->trig,
                                                    .at = c->at - (i != j),
                                                    .major = i == j});
        }
    }
    /* the procedures of the most sampled targets: one more selected instruction of each */
    unsigned ntop = n;
    for (unsigned i = 0; i < ntop && ncover; i++) {
        int seen = 0;
        for (unsigned j = 0; j < i; j++)
            seen |= out[j].fn == out[i].fn;
        if (!seen) {
            cover(b, &out[i], out, &n, rng);
            ncover--;
        }
    }
    /* places left (fewer hot procedures with major instructions: a call's own samples land in
     * its callee): the hottest procedures without one, one drawn instruction each */
    dcpi__vbp_target_t t;
    for (; b && ncover && hottest_unlisted(vt, b, pid, out, n, &t); ncover--) {
        unsigned before = n;
        cover(b, &t, out, &n, rng);
        if (n == before)
            break;
    }
    return n;
}

void dcpi__vbp_failed(dcpi__vbp_choice_t *b, uint32_t cookie, int err)
{
    if (!b || cookie >= b->ncand)
        return;
    b->cand[cookie].fails++;
    b->cand[cookie].err = err;
}

/* ---- what became of the selected instructions: the budget report and the missing marks */

/* fn for every selected instruction of the decoded function f. */
static void each_of(dcpi_values_t *vt, const dcpi__vbp_choice_t *b, const bp_fn_t *f,
                    dcpi__vbp_fn *fn, void *ctx)
{
    const dcpi_image_t *img =
        f->image_plus1 ? dcpi_loadmap_image(dcpi_values_loadmap(vt), f->image_plus1 - 1) : NULL;
    if (!img)
        return;
    const dcpi_symtab_t *st = dcpi_values_symtab(vt, img);
    const dcpi_symbol_t *sym = st ? dcpi_symtab_lookup(st, f->lo) : NULL;
    for (uint32_t j = 0; j < f->ncand; j++) {
        const bp_cand_t *c = &b->cand[f->first + j];
        dcpi__vbp_insn_t in = {.img = img,
                               .vaddr = f->lo + c->delta,
                               .offset = (uint32_t)(f->lo + c->delta - img->info.tstart),
                               .sym = sym ? sym->name : NULL,
                               .symoff = sym ? f->lo + c->delta - sym->addr : 0,
                               .fn_trig = f->trig,
                               .at = c->at,
                               .arms = c->arms,
                               .fails = c->fails,
                               .samples = c->samples,
                               .misses = c->misses,
                               .plugins = c->plugins,
                               .err = c->err,
                               .major = major(f, c)};
        fn(ctx, &in);
    }
}

void dcpi__vbp_each(dcpi_values_t *vt, const dcpi__vbp_choice_t *b, dcpi__vbp_fn *fn, void *ctx)
{
    for (unsigned s = 0; b && s < FN_SLOTS; s++)
        each_of(vt, b, &b->fn[s], fn, ctx);
}

const char *dcpi__vbp_why_missing(const dcpi__vbp_insn_t *in, char *buf, size_t len)
{
    if (in->samples)
        return NULL;
    if (in->arms == 0)
        snprintf(buf, len,
                 "no arm afforded (%u PC samples in its procedure, the budget's arms "
                 "went to others)",
                 in->fn_trig);
    else if (in->fails == in->arms)
        snprintf(buf, len, "breakpoint not armed (%u tries: %s)", in->fails,
                 in->err == ENOSPC ? "debug registers busy" : strerror(in->err));
    else
        snprintf(buf, len, "not executed while armed (%u arms)", in->arms - in->fails);
    return buf;
}

/* ---- what the budget could not afford: major instructions (DCPI_VBP_MAJOR_PCT% of their
 * procedure's PC samples) whose value samples come at less than DCPI_VBP_NEED per
 * DCPI_VBP_NEED_S s of the profiled threads' CPU time. */
typedef struct short_ctx {
    dcpi__vbp_short_t n;
    double cpu_s;
    FILE *out; /* NULL: count only */
    dcpi__vbp_advice_fn *advice;
    void *arg;
} short_ctx_t;

static void short_line(void *arg, const dcpi__vbp_insn_t *in)
{
    short_ctx_t *c = arg;
    if (!in->major)
        return;
    c->n.majors++;
    double per = c->cpu_s > 0 ? in->samples * DCPI_VBP_NEED_S / c->cpu_s : 0;
    if (per >= DCPI_VBP_NEED)
        return;
    if (c->n.shortn++ >= 10 || !c->out)
        return;
    char need[160];
    if (per <= 0)
        dcpi__vbp_why_missing(in, need, sizeof need);
    else
        c->advice(c->arg, per, need, sizeof need);
    const char *slash = strrchr(in->img->path, '/');
    fprintf(c->out,
            "dcpid:   %s+0x%" PRIx64 " (%s, %.0f%% of its PC samples): %u value samples, %.0f per "
            "%d s; %s\n",
            in->sym ? in->sym : "?", in->sym ? in->symoff : in->vaddr,
            slash ? slash + 1 : in->img->path, 100.0 * in->at / (in->fn_trig ? in->fn_trig : 1),
            in->samples, per, DCPI_VBP_NEED_S, need);
}

dcpi__vbp_short_t dcpi__vbp_shortfall(dcpi_values_t *vt, const dcpi__vbp_choice_t *b, double cpu_s,
                                      FILE *out, dcpi__vbp_advice_fn *advice, void *arg)
{
    short_ctx_t c = {.cpu_s = cpu_s, .out = out, .advice = advice, .arg = arg};
    if (b)
        dcpi__vbp_each(vt, b, short_line, &c);
    return c.n;
}

/* ---- DB/<epoch>/<platform>/<imagedir>/<plugin>.vmiss: one line per selected instruction of
 * the decoded functions without value samples, "0xOFFSET reason" (docs/dcpiformat.md). */

typedef struct miss_ctx {
    const dcpi_image_t *img;
    unsigned plugin;
    char *buf;
    size_t len, cap;
    int oom;
} miss_ctx_t;

static void miss_line(void *arg, const dcpi__vbp_insn_t *in)
{
    miss_ctx_t *m = arg;
    char why[160], line[200];
    uint32_t bit = 1u << (m->plugin < 31 ? m->plugin : 31);
    if (in->img != m->img || !(in->plugins & bit) || !dcpi__vbp_why_missing(in, why, sizeof why))
        return;
    int n = snprintf(line, sizeof line, "0x%x %s\n", in->offset, why);
    if (n <= 0 || dcpi__grow((void **)&m->buf, &m->cap, m->len + (size_t)n + 1, 1) < 0) {
        m->oom = 1;
        return;
    }
    memcpy(m->buf + m->len, line, (size_t)n + 1);
    m->len += (size_t)n;
}

/* The directory part of path, in place of a static copy. */
static const char *dirname_of(const char *path)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    return dir;
}

int dcpi__vbp_write_missing(dcpi_values_t *vt, const dcpi__vbp_choice_t *b,
                            const dcpi_values_flush_info_t *fi, char *err)
{
    unsigned nimg = dcpi_loadmap_nimages(dcpi_values_loadmap(vt));
    uint8_t *done = b ? calloc(nimg + 1, 1) : NULL;
    int last = b && !done ? DCPI_ENOMEM : 0;
    for (unsigned s = 0; done && s < FN_SLOTS; s++) {
        const bp_fn_t *f = &b->fn[s];
        const dcpi_image_t *img =
            f->image_plus1 && f->image_plus1 <= nimg && !done[f->image_plus1]
                ? dcpi_loadmap_image(dcpi_values_loadmap(vt), f->image_plus1 - 1)
                : NULL;
        if (img) /* each image once */
            done[f->image_plus1] = 1;
        for (unsigned i = 0; img && i < dcpi_values_nplugins(vt); i++) {
            miss_ctx_t m = {.img = img, .plugin = i};
            for (unsigned t = s; t < FN_SLOTS; t++) /* the image's functions (none before s) */
                if (b->fn[t].image_plus1 == f->image_plus1)
                    each_of(vt, b, &b->fn[t], miss_line, &m);
            char dirname[512], path[4096];
            dcpi_image_dirname(img->path, img->info.id, dirname, sizeof dirname);
            int rc = m.oom
                         ? DCPI_ENOMEM
                         : dcpi__pathf(path, sizeof path, "%s/%s/%s/%s/%s.vmiss", fi->db, fi->epoch,
                                       fi->platform, dirname, dcpi_values_plugin_name(vt, i));
            if (rc == 0 && m.len && (rc = dcpi__mkdirs(dirname_of(path), 0755)) == 0)
                rc = dcpi__write_atomic(path, m.buf, m.len, err);
            else if (rc == 0)
                unlink(path); /* nothing missing (any more) */
            free(m.buf);
            if (rc < 0)
                last = rc;
        }
    }
    free(done);
    return last;
}
