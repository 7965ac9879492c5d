/*
 * check_trace.c - the value-trace encoder and parser (trace/encode.c, trace/parse.c,
 * docs/trace-format.md): round trips on generated traces, partial value reads, the golden
 * bytes of tests/data/golden-trace.bin, corrupt traces (every truncation, random byte flips,
 * read behind a guard page) and the size of a loop trace.
 *
 * DCPI_REGEN_GOLDEN=1 rewrites the golden file instead of comparing (then check it by hand).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dcpi/errno.h"
#include "trace/trace.h"

/* One reference entry; burst != 0 starts a new burst before it. */
typedef struct ref {
    int burst, ctx;
    unsigned tid;
    uint64_t time;
    trace_inst_t inst;
    uint64_t pc, c0, c1;
    int n;
    trace_value_t kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX];
    unsigned missing;
} ref_t;

#define PID 4242u

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static trace_inst_t make_inst(const char *hex_bytes)
{
    uint8_t b[16];
    int n = 0;
    unsigned v;
    while (sscanf(hex_bytes, "%2x", &v) == 1) {
        b[n++] = (uint8_t)v;
        hex_bytes += 2;
        if (*hex_bytes == ' ') {
            hex_bytes++;
        }
    }
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(b, n, &inst), n);
    return inst;
}

static const char *const inst_hex[] = {
    "90",       "4889d8",
    "488b4308", "48894308",
    "4883c001", "480fafc3",
    "75f0",     "e800000000",
    "c3",       "48b80102030405060708",
    "f20f58c1", "660f1f840000000000",
    "53",       "5b",
    "4801d8",
};
#define NINST (sizeof(inst_hex) / sizeof(inst_hex[0]))
static trace_inst_t insts[NINST + 1];

static void setup_insts(void)
{
    for (unsigned i = 0; i < NINST; i++) {
        insts[i] = make_inst(inst_hex[i]);
    }
    /* A 15-byte descriptor (the encoder does not decode: bytes are opaque). */
    trace_inst_t *big = &insts[NINST];
    memset(big, 0, sizeof(*big));
    for (int i = 0; i < 15; i++) {
        big->bytes[i] = (uint8_t)(0xf0 + i);
    }
    big->length = 15;
    big->opc = trace_opc_lookup("mov", TRACE_MEM_READ);
    big->mnemonic = "mov";
}

static uint64_t rnd_value(uint64_t last)
{
    switch (rnd() % 7) {
    case 0:
        return 0;
    case 1:
        return UINT64_MAX;
    case 2:
        return rnd() % 100;
    case 3:
        return last - rnd() % 1000; /* negative delta */
    case 4:
        return last + rnd() % 50;
    case 5:
        return (uint64_t)1 << (rnd() % 64);
    default:
        return rnd();
    }
}

static void rnd_values(ref_t *r, int n, uint64_t *last)
{
    r->n = n;
    r->missing = (rnd() % 4 == 0) ? (unsigned)(rnd() & ((1u << n) - 1)) : 0;
    for (int i = 0; i < n; i++) {
        r->kinds[i] = (trace_value_t)(1 + rnd() % (TRACE_VALUE_COUNT - 1));
        r->values[i] = (r->missing & (1u << i)) ? 0 : rnd_value(last[i]);
        last[i] = r->values[i] ? r->values[i] : last[i];
    }
}

/* Per-pc descriptor for loops and pools: stable instruction and kinds, as in a real trace. */
typedef struct site {
    uint64_t pc;
    const trace_inst_t *inst;
    int n;
    trace_value_t kinds[TRACE_VLIST_MAX];
} site_t;

static void fill_from_site(ref_t *r, const site_t *s, uint64_t *last)
{
    r->pc = s->pc;
    r->inst = *s->inst;
    rnd_values(r, s->n, last);
    memcpy(r->kinds, s->kinds, sizeof(r->kinds));
}

/* Generate n entries: bursts, random pcs, straight-line runs and loops, with or without values
 * and contexts. */
static void gen_trace(ref_t *refs, int n, int with_values)
{
    uint64_t last[TRACE_VLIST_MAX] = {0}, c0 = 0, c1 = 0;
    site_t loop[24];
    int nloop = 5 + (int)(rnd() % 20), mode = 0, left = 0, li = 0, ctx = 0;
    uint64_t base = 0x400000 + (rnd() % 0x100000), pc = base;
    for (int i = 0; i < nloop; i++) {
        loop[i].pc = pc;
        loop[i].inst = &insts[rnd() % (NINST + 1)];
        loop[i].n = with_values ? (int)(rnd() % (TRACE_VLIST_MAX + 1)) : 0;
        for (int k = 0; k < TRACE_VLIST_MAX; k++) {
            loop[i].kinds[k] = (trace_value_t)(1 + rnd() % (TRACE_VALUE_COUNT - 1));
        }
        pc += loop[i].inst->length;
    }
    pc = base;
    for (int i = 0; i < n; i++) {
        ref_t *r = &refs[i];
        memset(r, 0, sizeof(*r));
        if (i == 0 || rnd() % 97 == 0) {
            r->burst = 1;
            r->ctx = ctx = (int)(rnd() & 1);
            r->tid = PID + (unsigned)(rnd() % 4);
            r->time = rnd() >> (rnd() % 64);
        }
        if (left-- <= 0) {
            mode = (int)(rnd() % 3);
            left = 1 + (int)(rnd() % 60);
        }
        if (mode == 0) { /* random pc anywhere, including near 0 and 2^64 */
            r->pc =
                (rnd() % 3 == 0) ? rnd() : (rnd() % 3 == 0 ? UINT64_MAX - rnd() % 64 : rnd() % 64);
            r->inst = insts[rnd() % (NINST + 1)];
            rnd_values(r, with_values ? (int)(rnd() % (TRACE_VLIST_MAX + 1)) : 0, last);
        } else if (mode == 1) { /* straight line */
            r->pc = pc;
            r->inst = insts[rnd() % (NINST + 1)];
            rnd_values(r, with_values ? (int)(rnd() % 3) : 0, last);
        } else { /* loop */
            fill_from_site(r, &loop[li], last);
            li = (li + 1) % nloop;
        }
        pc = r->pc + r->inst.length;
        if (ctx) {
            c0 = rnd() % 2 ? c0 + rnd() % 16 : rnd_value(c0);
            c1 = rnd() % 2 ? c1 - rnd() % 16 : rnd_value(c1);
            r->c0 = c0;
            r->c1 = c1;
        }
    }
}

static size_t encode(const ref_t *refs, int n, uint8_t *buf, size_t cap)
{
    trace_encoder_t *e = malloc(sizeof(*e));
    int ctx = 0;
    trace_encoder_init(e, buf, cap);
    for (int i = 0; i < n; i++) {
        const ref_t *r = &refs[i];
        if (r->burst) {
            ck_assert_int_eq(trace_encoder_burst(e, PID, r->tid, r->time, r->ctx), 0);
            ctx = r->ctx;
        }
        ck_assert_int_eq(trace_encoder_entry(e, &r->inst, r->pc, ctx ? r->c0 : 0xdead,
                                             ctx ? r->c1 : 0xbeef, r->n, r->kinds, r->values,
                                             r->missing),
                         0);
    }
    ck_assert_uint_eq(trace_encoder_entries(e), (unsigned)n);
    size_t len = trace_encoder_size(e);
    free(e);
    return len;
}

/* Parse one entry with all 7 value pointers. */
static int next7(trace_parser_t *p, trace_inst_t *inst, uint64_t *pc, uint64_t *c0, uint64_t *c1,
                 uint64_t *v)
{
    return trace_parser_next(p, inst, pc, c0, c1, 7, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                             &v[6]);
}

static int same_entry(trace_parser_t *p, int rc, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                      uint64_t c1, const uint64_t *v, const ref_t *r)
{
    trace_value_t kinds[TRACE_VLIST_MAX];
    if (rc != r->n || pc != r->pc || inst->length != r->inst.length || inst->opc != r->inst.opc ||
        strcmp(inst->mnemonic, r->inst.mnemonic) != 0 ||
        memcmp(inst->bytes, r->inst.bytes, inst->length) != 0) {
        return 0;
    }
    int ctx = trace_parser_has_context(p);
    if (c0 != (ctx ? r->c0 : 0) || c1 != (ctx ? r->c1 : 0) ||
        trace_parser_missing(p) != r->missing || trace_parser_kinds(p, kinds) != r->n) {
        return 0;
    }
    for (int i = 0; i < r->n; i++) {
        if (v[i] != r->values[i] || kinds[i] != r->kinds[i]) {
            return 0;
        }
    }
    return 1;
}

/* Parse buf fully: returns the final result (END/ERROR); *count entries matched refs.
 * (Check records every assertion through its fork-mode pipe: hot loops count, then assert.) */
static int parse_compare(const uint8_t *buf, size_t len, const ref_t *refs, int nrefs, int *count)
{
    trace_parser_t *p = malloc(sizeof(*p));
    trace_inst_t inst;
    uint64_t pc, c0, c1, v[TRACE_VLIST_MAX];
    int rc, i = 0, bad = -1;
    trace_parser_init(p, buf, len);
    while ((rc = next7(p, &inst, &pc, &c0, &c1, v)) >= 0) {
        if (i >= nrefs || !same_entry(p, rc, &inst, pc, c0, c1, v, &refs[i]) ||
            trace_parser_get_pid(p) != PID) {
            bad = i;
            break;
        }
        i++;
    }
    ck_assert_msg(bad < 0, "entry %d differs", bad);
    ck_assert_int_eq(trace_parser_next(p, NULL, NULL, NULL, NULL, 0), rc); /* sticky */
    if (rc == TRACE_PARSE_ERROR) {
        ck_assert_str_ne(trace_parser_error(p), "");
    }
    *count = i;
    free(p);
    return rc;
}

static void round_trip(int n, int with_values, uint64_t seed)
{
    ref_t *refs = malloc(sizeof(ref_t) * (size_t)n);
    size_t cap = (size_t)n * TRACE_ENTRY_MAX + 64 * TRACE_BURST_MAX;
    uint8_t *buf = malloc(cap);
    int count;
    rng_state = seed;
    setup_insts();
    gen_trace(refs, n, with_values);
    size_t len = encode(refs, n, buf, cap);
    ck_assert_int_eq(parse_compare(buf, len, refs, n, &count), TRACE_PARSE_END);
    ck_assert_int_eq(count, n);
    free(buf);
    free(refs);
}

START_TEST(test_round_trip)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        round_trip(3000, (int)(seed & 1) || seed > 20, seed * 0x9e3779b97f4a7c15ull);
    }
}
END_TEST

START_TEST(test_burst_state)
{
    uint8_t buf[256];
    trace_encoder_t e;
    trace_parser_t p;
    uint64_t pc, c0 = 7, c1 = 7;
    trace_inst_t nop = make_inst("90");
    trace_encoder_init(&e, buf, sizeof(buf));
    ck_assert_int_eq(trace_encoder_entry(&e, &nop, 1, 0, 0, 0, NULL, NULL, 0), DCPI_EINVAL);
    ck_assert_int_eq(trace_encoder_burst(&e, 10, 11, 12345, 1), 0);
    ck_assert_int_eq(trace_encoder_burst(&e, 99, 11, 12345, 0), DCPI_EINVAL); /* other pid */
    ck_assert_int_eq(trace_encoder_entry(&e, &nop, 0x1000, 5, 6, 0, NULL, NULL, 0), 0);
    ck_assert_int_eq(trace_encoder_burst(&e, 10, 12, 99999, 0), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &nop, 0x1000, 5, 6, 0, NULL, NULL, 0), 0);
    trace_parser_init(&p, buf, trace_encoder_size(&e));
    /* The first burst header is read by init. */
    ck_assert_uint_eq(trace_parser_get_pid(&p), 10);
    ck_assert_int_eq(trace_parser_has_context(&p), 1);
    ck_assert_int_eq(trace_parser_next(&p, NULL, &pc, &c0, &c1, 0), 0);
    ck_assert_uint_eq(pc, 0x1000);
    ck_assert_uint_eq(c0, 5);
    ck_assert_uint_eq(c1, 6);
    ck_assert_uint_eq(trace_parser_get_tid(&p), 11);
    ck_assert_int_eq(trace_parser_next(&p, NULL, &pc, &c0, &c1, 0), 0);
    ck_assert_uint_eq(c0, 0);
    ck_assert_uint_eq(trace_parser_get_tid(&p), 12);
    ck_assert_uint_eq(trace_parser_get_time(&p), 99999);
    ck_assert_int_eq(trace_parser_has_context(&p), 0);
    ck_assert_int_eq(trace_parser_next(&p, NULL, &pc, NULL, NULL, 0), TRACE_PARSE_END);
    ck_assert_str_eq(trace_parser_error(&p), "");
    /* An empty trace ends at once. */
    trace_parser_init(&p, buf, 0);
    ck_assert_int_eq(trace_parser_next(&p, NULL, NULL, NULL, NULL, 0), TRACE_PARSE_END);
}
END_TEST

START_TEST(test_encoder_full_and_invalid)
{
    uint8_t buf[64];
    trace_encoder_t e;
    trace_inst_t ld = make_inst("488b4308");
    trace_value_t kinds[8] = {TRACE_EA,  TRACE_RAX, TRACE_RBX, TRACE_RCX,
                              TRACE_RDX, TRACE_RSI, TRACE_RDI, TRACE_R8};
    uint64_t vals[8] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                        UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    trace_encoder_init(&e, buf, sizeof(buf));
    ck_assert_int_eq(trace_encoder_burst(&e, 1, 1, 0, 0), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 8, kinds, vals, 0), DCPI_EINVAL);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 2, kinds, vals, 4), DCPI_EINVAL);
    trace_value_t badk[1] = {TRACE_NONE};
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 1, badk, vals, 0), DCPI_EINVAL);
    trace_inst_t bad = ld;
    bad.length = 0;
    ck_assert_int_eq(trace_encoder_entry(&e, &bad, 0x1000, 0, 0, 0, NULL, NULL, 0), DCPI_EINVAL);
    bad = ld;
    bad.opc = 1; /* invalid mnemonic */
    ck_assert_int_eq(trace_encoder_entry(&e, &bad, 0x1000, 0, 0, 0, NULL, NULL, 0), DCPI_EINVAL);
    /* Fill until full: the refused entry leaves size and count unchanged. */
    int ok = 0, rc;
    while ((rc = trace_encoder_entry(&e, &ld, 0x1000 + 0x10000 * (uint64_t)ok, 0, 0, 7, kinds, vals,
                                     0)) == 0) {
        ok++;
    }
    ck_assert_int_eq(rc, DCPI_EFULL);
    size_t size = trace_encoder_size(&e);
    ck_assert_uint_le(size, sizeof(buf));
    ck_assert_uint_eq(trace_encoder_entries(&e), (unsigned)ok);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 7, kinds, vals, 0), DCPI_EFULL);
    ck_assert_uint_eq(trace_encoder_size(&e), size);
    /* What was written parses to exactly ok entries. */
    trace_parser_t p;
    int n = 0;
    trace_parser_init(&p, buf, size);
    while (trace_parser_next(&p, NULL, NULL, NULL, NULL, 0) == 7) {
        n++;
    }
    ck_assert_int_eq(n, ok);
    ck_assert_int_eq(trace_parser_next(&p, NULL, NULL, NULL, NULL, 0), TRACE_PARSE_END);
}
END_TEST

START_TEST(test_nwanted)
{
    uint8_t buf[128];
    trace_encoder_t e;
    trace_parser_t p;
    trace_inst_t ld = make_inst("488b4308");
    trace_value_t kinds[3] = {TRACE_EA, TRACE_MEMVAL, TRACE_RBX};
    uint64_t vals[3] = {0x1111, 0x2222, 0x3333}, a = 1, b = 2, c = 3, d = 4, x = 5;
    trace_encoder_init(&e, buf, sizeof(buf));
    trace_encoder_burst(&e, 1, 1, 0, 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 3, kinds, vals, 2), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x1000, 0, 0, 3, kinds, vals, 0), 0);
    trace_parser_init(&p, buf, trace_encoder_size(&e));
    ck_assert_int_eq(trace_parser_next(&p, NULL, NULL, NULL, NULL, 1, &a), 3);
    ck_assert_uint_eq(a, 0x1111);
    ck_assert_uint_eq(trace_parser_missing(&p), 2);
    ck_assert_int_eq(trace_parser_next(&p, NULL, NULL, NULL, NULL, 5, &a, &b, &c, &d, &x), 3);
    ck_assert_uint_eq(a, 0x1111);
    ck_assert_uint_eq(b, 0x2222);
    ck_assert_uint_eq(c, 0x3333);
    ck_assert_uint_eq(d, 4); /* not written */
    ck_assert_uint_eq(x, 5);
    ck_assert_uint_eq(trace_parser_missing(&p), 0);
    trace_value_t k[TRACE_VLIST_MAX];
    ck_assert_int_eq(trace_parser_kinds(&p, k), 3);
    ck_assert_int_eq(k[1], TRACE_MEMVAL);
    ck_assert_int_eq(k[3], TRACE_NONE);
}
END_TEST

/* The golden trace: the worked example of docs/trace-format.md. */
static size_t golden_encode(uint8_t *buf, size_t cap)
{
    trace_encoder_t e;
    trace_inst_t ld = make_inst("488b4308"), add = make_inst("4883c001");
    trace_inst_t jne = make_inst("75f6"), push = make_inst("53");
    trace_value_t ea = TRACE_EA, taken = TRACE_BR_TAKEN;
    trace_value_t k4[4] = {TRACE_RSP, TRACE_EA, TRACE_RBX, TRACE_MEMVAL};
    uint64_t v, v4[4] = {0x7ffd0ff8, 0x7ffd0ff0, 0x1122334455667788ull, 0x1122334455667788ull};
    trace_encoder_init(&e, buf, cap);
    ck_assert_int_eq(trace_encoder_burst(&e, 1234, 1235, 1000000000, 0), 0);
    v = 0x7ffd1000;
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x401000, 0, 0, 1, &ea, &v, 0), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &add, 0x401004, 0, 0, 0, NULL, NULL, 0), 0);
    v = 1;
    ck_assert_int_eq(trace_encoder_entry(&e, &jne, 0x401008, 0, 0, 1, &taken, &v, 0), 0);
    v = 0x7ffd1008;
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x401000, 0, 0, 1, &ea, &v, 0), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &add, 0x401004, 0, 0, 0, NULL, NULL, 0), 0);
    v = 0;
    ck_assert_int_eq(trace_encoder_entry(&e, &jne, 0x401008, 0, 0, 1, &taken, &v, 0), 0);
    ck_assert_int_eq(trace_encoder_burst(&e, 1234, 1236, 1000500000, 1), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &ld, 0x401000, 0x10, 0x20, 1, &ea, NULL, 1), 0);
    ck_assert_int_eq(trace_encoder_entry(&e, &push, 0x402000, 0x10, 0x1f, 4, k4, v4, 0), 0);
    return trace_encoder_size(&e);
}

START_TEST(test_golden)
{
    uint8_t buf[256], file[256];
    size_t len = golden_encode(buf, sizeof(buf));
    const char *path = DCPI_TEST_DATA "/golden-trace.bin";
    if (getenv("DCPI_REGEN_GOLDEN") != NULL) {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
        fclose(f);
    }
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: missing", path);
    size_t n = fread(file, 1, sizeof(file), f);
    fclose(f);
    ck_assert_uint_eq(n, len);
    ck_assert_mem_eq(file, buf, len);
    /* And it parses back to what the doc says. */
    trace_parser_t p;
    trace_inst_t inst;
    uint64_t pc, c0, c1, a = 0, b = 0, c = 0, d = 0;
    trace_parser_init(&p, file, n);
    ck_assert_int_eq(trace_parser_next(&p, &inst, &pc, &c0, &c1, 1, &a), 1);
    ck_assert_str_eq(inst.mnemonic, "mov");
    ck_assert_uint_eq(a, 0x7ffd1000);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_ge(trace_parser_next(&p, &inst, &pc, &c0, &c1, 1, &a), 0);
    }
    ck_assert_uint_eq(pc, 0x401008);
    ck_assert_uint_eq(a, 0);
    ck_assert_int_eq(trace_parser_next(&p, &inst, &pc, &c0, &c1, 1, &a), 1);
    ck_assert_uint_eq(trace_parser_missing(&p), 1);
    ck_assert_uint_eq(c1, 0x20);
    ck_assert_int_eq(trace_parser_next(&p, &inst, &pc, &c0, &c1, 4, &a, &b, &c, &d), 4);
    ck_assert_str_eq(inst.mnemonic, "push");
    ck_assert_uint_eq(pc, 0x402000);
    ck_assert_uint_eq(c1, 0x1f);
    ck_assert_uint_eq(b, 0x7ffd0ff0);
    ck_assert_uint_eq(d, 0x1122334455667788ull);
    ck_assert_int_eq(trace_parser_next(&p, NULL, NULL, NULL, NULL, 0), TRACE_PARSE_END);
}
END_TEST

/* A copy of data that ends exactly at a PROT_NONE page: any read past len faults. */
typedef struct guarded {
    uint8_t *map, *data;
    size_t maplen;
} guarded_t;

static guarded_t guard_alloc(size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    guarded_t g;
    g.maplen = (len + page - 1) / page * page + page;
    g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(g.map, MAP_FAILED);
    ck_assert_int_eq(mprotect(g.map + g.maplen - page, page, PROT_NONE), 0);
    g.data = g.map + g.maplen - page - len;
    return g;
}

static void guard_free(guarded_t *g)
{
    munmap(g->map, g->maplen);
}

static ref_t corrupt_refs[400];

static size_t corrupt_source(uint8_t *buf, size_t cap)
{
    rng_state = 0x1234567887654321ull;
    setup_insts();
    gen_trace(corrupt_refs, 400, 1);
    return encode(corrupt_refs, 400, buf, cap);
}

START_TEST(test_truncation)
{
    static uint8_t buf[400 * TRACE_ENTRY_MAX];
    size_t len = corrupt_source(buf, sizeof(buf));
    int full, count;
    ck_assert_int_eq(parse_compare(buf, len, corrupt_refs, 400, &full), TRACE_PARSE_END);
    for (size_t cut = 0; cut < len; cut++) {
        guarded_t g = guard_alloc(cut);
        memcpy(g.data, buf, cut);
        int rc = parse_compare(g.data, cut, corrupt_refs, 400, &count);
        if (!(rc == TRACE_PARSE_END || rc == TRACE_PARSE_ERROR) || count >= full) {
            ck_abort_msg("cut at %zu: rc %d after %d entries", cut, rc, count);
        }
        guard_free(&g);
    }
}
END_TEST

START_TEST(test_byte_flips)
{
    static uint8_t buf[400 * TRACE_ENTRY_MAX];
    size_t len = corrupt_source(buf, sizeof(buf));
    guarded_t g = guard_alloc(len);
    trace_parser_t *p = malloc(sizeof(*p));
    int errors = 0;
    rng_state = 42;
    for (int iter = 0; iter < 10000; iter++) {
        memcpy(g.data, buf, len);
        int flips = 1 + (int)(rnd() % 4);
        for (int f = 0; f < flips; f++) {
            g.data[rnd() % len] ^= (uint8_t)(1 + rnd() % 255);
        }
        trace_inst_t inst;
        uint64_t pc, c0, c1, v[TRACE_VLIST_MAX];
        int rc, n = 0;
        trace_parser_init(p, g.data, len);
        while ((rc = next7(p, &inst, &pc, &c0, &c1, v)) >= 0) {
            if (rc > TRACE_VLIST_MAX || inst.length < 1 || inst.length > 15 ||
                trace_opc_info(inst.opc) == NULL) {
                break;
            }
            n++;
        }
        if (!(rc == TRACE_PARSE_END || rc == TRACE_PARSE_ERROR) || n > (int)len) {
            ck_abort_msg("iteration %d: rc %d after %d entries", iter, rc, n);
        }
        errors += rc == TRACE_PARSE_ERROR;
    }
    ck_assert_int_gt(errors, 1000); /* the checks do catch corruption */
    free(p);
    guard_free(&g);
}
END_TEST

START_TEST(test_corrupt_fields)
{
    /* Hand-made bad traces, each with the message it must produce. */
    static const struct {
        const char *name;
        uint8_t bytes[24];
        size_t len;
        const char *msg;
    } cases[] = {
        {"entry first", {0x02}, 1, "entry before any burst header"},
        {"bad control byte", {0xd1, 0, 1, 1, 0, 0x80 | 0x13}, 6, "bad byte 0x93"},
        {"bad flags", {0xd1, 0x02, 1, 1, 0}, 5, "unknown flags"},
        {"pid overlong",
         {0xd1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
         12,
         "overlong"},
        {"pid 33 bits", {0xd1, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 0}, 9, "over 32 bits"},
        {"length 0", {0xd1, 0, 1, 1, 0, 0x02, 0}, 7, "length 0 not in 1..15"},
        {"length 16", {0xd1, 0, 1, 1, 0, 0x02, 16}, 7, "length 16"},
        {"key 0", {0xd1, 0, 1, 1, 0, 0x02, 1, 0x90, 0, 0}, 10, "invalid key 0"},
        {"8 values", {0xd1, 0, 1, 1, 0, 0x02, 1, 0x90, 0x80, 0x01, 8}, 11, "8 values"},
        {"kind 0", {0xd1, 0, 1, 1, 0, 0x02, 1, 0x90, 0x80, 0x01, 1, 0}, 12, "value kind 0"},
        {"empty slot", {0xd1, 0, 1, 1, 0, 0x00}, 6, "no cached instruction"},
        {"reserved bit", {0xd1, 0, 1, 1, 0, 0x40}, 6, "reserved tag bit"},
        {"mask beyond n",
         {0xd1, 0, 1, 1, 0, 0x06, 1, 0x90, 0x80, 0x01, 1, 22, 0x02},
         13,
         "missing mask 0x02"},
        {"mode beyond n", {0xd1, 0, 1, 1, 0, 0x0a, 1, 0x90, 0x80, 0x01, 0}, 11, "mode bits"},
        {"other pid", {0xd1, 0, 1, 1, 0, 0xd1, 0, 2, 1, 0}, 10, "burst of pid 2"},
        {"value cut",
         {0xd1, 0, 1, 1, 0, 0x02, 1, 0x90, 0x80, 0x01, 1, 22, 0x80},
         13,
         "truncated varint"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        guarded_t g = guard_alloc(cases[i].len);
        trace_parser_t p;
        memcpy(g.data, cases[i].bytes, cases[i].len);
        trace_parser_init(&p, g.data, cases[i].len);
        int rc = trace_parser_next(&p, NULL, NULL, NULL, NULL, 0);
        ck_assert_msg(rc == TRACE_PARSE_ERROR, "%s: rc %d", cases[i].name, rc);
        ck_assert_msg(strstr(trace_parser_error(&p), cases[i].msg) != NULL, "%s: '%s'",
                      cases[i].name, trace_parser_error(&p));
        guard_free(&g);
    }
}
END_TEST

START_TEST(test_loop_size)
{
    /* A 20-instruction loop body (the last a backward branch), contexts off, no values. */
    enum { BODY = 20, ITER = 5000 };
    static const char *const body_hex[BODY] = {
        "488b4308", "4883c001", "4889d8",   "48894308", "480fafc3", "4801d8", "90",
        "488b4308", "4889d8",   "4883c001", "f20f58c1", "48894308", "4801d8", "4889d8",
        "488b4308", "4883c001", "480fafc3", "4801d8",   "48894308", "75f0"};
    trace_inst_t body[BODY];
    static uint8_t buf[BODY * ITER * 4];
    trace_encoder_t e;
    for (int i = 0; i < BODY; i++) {
        body[i] = make_inst(body_hex[i]);
    }
    trace_encoder_init(&e, buf, sizeof(buf));
    ck_assert_int_eq(trace_encoder_burst(&e, 77, 77, 123456789, 0), 0);
    for (int it = 0; it < ITER; it++) {
        uint64_t pc = 0x401130;
        for (int i = 0; i < BODY; i++) {
            ck_assert_int_eq(trace_encoder_entry(&e, &body[i], pc, 0, 0, 0, NULL, NULL, 0), 0);
            pc += body[i].length;
        }
    }
    double per = (double)trace_encoder_size(&e) / (BODY * ITER);
    printf("loop trace: %zu bytes for %d entries, %.3f bytes/entry\n", trace_encoder_size(&e),
           BODY * ITER, per);
    ck_assert(per <= 8.0);
    ck_assert(per < 1.2); /* 1 byte per straight-line entry, 3 after the back branch */
    trace_parser_t *p = malloc(sizeof(*p));
    int n = 0;
    trace_parser_init(p, buf, trace_encoder_size(&e));
    while (trace_parser_next(p, NULL, NULL, NULL, NULL, 0) == 0) {
        n++;
    }
    ck_assert_int_eq(n, BODY * ITER);
    free(p);
}
END_TEST

static void add_case(Suite *s, const char *name, const TTest *test)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

int main(void)
{
    Suite *s = suite_create("trace");
    add_case(s, "round_trip", test_round_trip);
    add_case(s, "burst_state", test_burst_state);
    add_case(s, "encoder_full", test_encoder_full_and_invalid);
    add_case(s, "nwanted", test_nwanted);
    add_case(s, "golden", test_golden);
    add_case(s, "truncation", test_truncation);
    add_case(s, "byte_flips", test_byte_flips);
    add_case(s, "corrupt_fields", test_corrupt_fields);
    add_case(s, "loop_size", test_loop_size);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
