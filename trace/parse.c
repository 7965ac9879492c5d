/*
 * trace/parse.c - the value-trace parser (dcpi/trace-parse.h, docs/trace-format.md).
 *
 * Every byte is bounds-checked against the end of the buffer and every field validated; a
 * corrupt trace ends in TRACE_PARSE_ERROR with a one-line message, sticky. The hot path (an
 * icache hit without values) reads one tag byte, one slot and writes the outputs: no Zydis call
 * and no allocation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dcpi/errno.h"
#include "dcpi/vprofiler.h"
#include "trace/trace-int.h"

#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static int parse_burst(trace_parser_t *p, const uint8_t **qp);

void trace_parser_init(trace_parser_t *p, const void *buf, size_t len)
{
    memset(p, 0, sizeof(*p));
    p->backend = "";
    p->start = p->pos = buf;
    p->end = buf != NULL ? p->start + len : p->start;
    /* Read the first burst header now, so that pid and contexts are known before the first
     * entry (the seed's plugins ask trace_parser_has_context before looping). */
    if (p->pos < p->end && *p->pos >= 0x80) {
        const uint8_t *q = p->pos;
        if (parse_burst(p, &q) == 0) {
            p->pos = q;
        }
    }
}

__attribute__((format(printf, 3, 4))) static int fail(trace_parser_t *p, const uint8_t *at,
                                                      const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(p->error, sizeof(p->error), "trace: offset %zu: ", (size_t)(at - p->start));
    va_start(ap, fmt);
    vsnprintf(p->error + n, sizeof(p->error) - (size_t)n, fmt, ap);
    va_end(ap);
    p->state = TRACE_PARSE_ERROR;
    return TRACE_PARSE_ERROR;
}

/* LEB128, at most 10 bytes, the 10th at most 1. 0, or -1 truncated, -2 overlong. */
static int get_varint_slow(const uint8_t **qp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *qp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (q >= end) {
            return -1;
        }
        unsigned b = *q++;
        if (shift == 63 && b > 1) {
            return -2;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *qp = q;
            return 0;
        }
    }
    return -2;
}

static inline int get_varint(const uint8_t **qp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *qp;
    if (LIKELY(q < end && *q < 0x80)) {
        *out = *q;
        *qp = q + 1;
        return 0;
    }
    return get_varint_slow(qp, end, out);
}

static int varint_fail(trace_parser_t *p, const uint8_t *at, int rc, const char *what)
{
    return fail(p, at, "%s: %s varint", what, rc == -1 ? "truncated" : "overlong");
}

/* Read a varint field or fail naming it; evaluates to the parser's error code on failure. */
#define GET_VARINT(p, q, end, out, what)                                                           \
    do {                                                                                           \
        const uint8_t *at_ = (q);                                                                  \
        int rc_ = get_varint(&(q), (end), (out));                                                  \
        if (UNLIKELY(rc_ < 0)) {                                                                   \
            return varint_fail((p), at_, rc_, (what));                                             \
        }                                                                                          \
    } while (0)

static int parse_burst(trace_parser_t *p, const uint8_t **qp)
{
    const uint8_t *q = *qp, *end = p->end;
    uint64_t pid, tid, time;
    if (*q != TRACE_MAGIC_BURST) {
        return fail(p, q, "bad byte 0x%02x where an entry or a burst header belongs", *q);
    }
    q++;
    if (q >= end) {
        return fail(p, q, "burst header: truncated flags");
    }
    unsigned flags = *q++;
    if (flags & ~TRACE_FLAG_CONTEXT) {
        return fail(p, q - 1, "burst header: unknown flags 0x%02x", flags);
    }
    GET_VARINT(p, q, end, &pid, "burst pid");
    GET_VARINT(p, q, end, &tid, "burst tid");
    GET_VARINT(p, q, end, &time, "burst time");
    if (pid > UINT32_MAX || tid > UINT32_MAX) {
        return fail(p, *qp, "burst header: pid or tid over 32 bits");
    }
    if (p->have_pid && pid != p->pid) {
        return fail(p, *qp, "burst of pid %llu in a trace of pid %u", (unsigned long long)pid,
                    p->pid);
    }
    p->pid = (unsigned)pid;
    p->tid = (unsigned)tid;
    p->time = time;
    p->have_pid = p->in_burst = 1;
    p->in_burst_entries = 0;
    p->has_context = (flags & TRACE_FLAG_CONTEXT) != 0;
    p->prev_end = p->c0 = p->c1 = 0;
    *qp = q;
    return 0;
}

/* An icache fill: length, bytes, key, value count, kinds. */
static int parse_fill(trace_parser_t *p, trace_icache_slot_t *s, uint64_t pc, const uint8_t **qp)
{
    const uint8_t *q = *qp, *end = p->end;
    uint64_t key;
    if (q >= end) {
        return fail(p, q, "fill: truncated length");
    }
    unsigned len = *q++;
    if (len < 1 || len > 15) {
        return fail(p, q - 1, "fill: instruction length %u not in 1..15", len);
    }
    if ((size_t)(end - q) < len) {
        return fail(p, q, "fill: truncated instruction bytes");
    }
    memset(s, 0, sizeof(*s));
    memcpy(s->inst.bytes, q, len);
    q += len;
    GET_VARINT(p, q, end, &key, "fill key");
    const trace_opc_info_t *info = key < trace_opc_count() ? trace_opc_info((trace_opc_t)key) : 0;
    if (info == NULL) {
        return fail(p, *qp, "fill: invalid key %llu", (unsigned long long)key);
    }
    if (q >= end) {
        return fail(p, q, "fill: truncated value count");
    }
    unsigned n = *q++;
    if (n > TRACE_VLIST_MAX) {
        return fail(p, q - 1, "fill: %u values, more than %d", n, TRACE_VLIST_MAX);
    }
    if ((size_t)(end - q) < n) {
        return fail(p, q, "fill: truncated value kinds");
    }
    for (unsigned i = 0; i < n; i++, q++) {
        if (*q == TRACE_NONE || *q >= TRACE_VALUE_COUNT) {
            return fail(p, q, "fill: unknown value kind %u", *q);
        }
        s->kinds[i] = *q;
    }
    s->pc = pc;
    s->inst.length = (uint8_t)len;
    s->inst.opc = (trace_opc_t)key;
    s->inst.mnemonic = info->mnemonic;
    s->nvalues = (uint8_t)n;
    *qp = q;
    return 0;
}

/* Missing mask and absolute-mode bits (tag bits 3..5, a mode byte for values 3..6). */
static int parse_masks(trace_parser_t *p, unsigned tag, unsigned n, const uint8_t **qp,
                       unsigned *missing, unsigned *modes)
{
    const uint8_t *q = *qp, *end = p->end;
    *missing = 0;
    *modes = (tag / TRACE_TAG_ABS0) & 7u;
    if (tag & TRACE_TAG_MISSING) {
        if (q >= end) {
            return fail(p, q, "entry: truncated missing mask");
        }
        *missing = *q++;
        if (*missing == 0 || (*missing >> n) != 0) {
            return fail(p, q - 1, "entry: missing mask 0x%02x for %u values", *missing, n);
        }
    }
    if (n > 3) {
        if (q >= end) {
            return fail(p, q, "entry: truncated mode byte");
        }
        *modes |= (unsigned)*q++ << 3;
    }
    if ((*modes >> n) != 0 || (*modes & *missing) != 0) {
        return fail(p, *qp, "entry: mode bits 0x%02x for %u values, mask 0x%02x", *modes, n,
                    *missing);
    }
    *qp = q;
    return 0;
}

static int parse_values(trace_parser_t *p, trace_icache_slot_t *s, unsigned tag, const uint8_t **qp)
{
    unsigned missing, modes, n = s->nvalues;
    int rc = parse_masks(p, tag, n, qp, &missing, &modes);
    if (rc < 0) {
        return rc;
    }
    const uint8_t *q = *qp, *end = p->end;
    for (unsigned i = 0; i < n; i++) {
        uint64_t v;
        if (missing & (1u << i)) {
            p->values[i] = 0;
            continue;
        }
        GET_VARINT(p, q, end, &v, "value");
        v = (modes & (1u << i)) ? v : s->prev[i] + trace_unzigzag(v);
        s->prev[i] = v;
        p->values[i] = v;
    }
    p->missing = missing;
    *qp = q;
    return 0;
}

static int parse_contexts(trace_parser_t *p, const uint8_t **qp)
{
    const uint8_t *q = *qp, *end = p->end;
    uint64_t d0, d1;
    GET_VARINT(p, q, end, &d0, "context0");
    GET_VARINT(p, q, end, &d1, "context1");
    p->c0 += trace_unzigzag(d0);
    p->c1 += trace_unzigzag(d1);
    *qp = q;
    return 0;
}

/* Skip burst headers; 1 when an entry tag is next, END or ERROR otherwise. */
static int next_tag(trace_parser_t *p, const uint8_t **qp)
{
    while (*qp < p->end) {
        if (LIKELY(**qp < 0x80)) {
            return p->in_burst ? 1 : fail(p, *qp, "entry before any burst header");
        }
        if (parse_burst(p, qp) < 0) {
            return TRACE_PARSE_ERROR;
        }
    }
    p->state = TRACE_PARSE_END;
    return TRACE_PARSE_END;
}

static void copy_values(const trace_parser_t *p, unsigned n, int nwanted, va_list ap)
{
    unsigned k = (unsigned)nwanted < n ? (unsigned)nwanted : n;
    for (unsigned i = 0; i < k; i++) {
        uint64_t *out = va_arg(ap, uint64_t *);
        if (out != NULL) {
            *out = p->values[i];
        }
    }
}

/* An entry's instruction, pc and contexts into the caller's outputs (each may be NULL). */
static inline void give_entry(const trace_parser_t *p, const trace_icache_slot_t *s, uint64_t epc,
                              trace_inst_t *inst, uint64_t *pc, uint64_t *context0,
                              uint64_t *context1)
{
    if (inst != NULL) {
        *inst = s->inst;
    }
    if (pc != NULL) {
        *pc = epc;
    }
    if (context0 != NULL) {
        *context0 = p->c0;
    }
    if (context1 != NULL) {
        *context1 = p->c1;
    }
}

int trace_parser_next(trace_parser_t *p, trace_inst_t *inst, uint64_t *pc, uint64_t *context0,
                      uint64_t *context1, int nwanted, ...)
{
    if (UNLIKELY(p->state != 0)) {
        return p->state;
    }
    const uint8_t *q = p->pos, *end = p->end;
    if (UNLIKELY(q >= end || *q >= 0x80 || !p->in_burst)) {
        int rc = next_tag(p, &q);
        if (rc < 0) {
            p->pos = q;
            return rc;
        }
    }
    unsigned tag = *q++;
    uint64_t epc = p->prev_end;
    if (UNLIKELY(tag & TRACE_TAG_RESERVED)) {
        return fail(p, q - 1, "entry: reserved tag bit set (0x%02x)", tag);
    }
    if (tag & TRACE_TAG_PC) {
        uint64_t d;
        GET_VARINT(p, q, end, &d, "pc delta");
        epc += trace_unzigzag(d);
    }
    trace_icache_slot_t *s = &p->icache[trace_icache_index(epc)];
    if (UNLIKELY(tag & TRACE_TAG_INST)) {
        if (parse_fill(p, s, epc, &q) < 0) {
            return TRACE_PARSE_ERROR;
        }
    } else if (UNLIKELY(s->inst.length == 0 || s->pc != epc)) {
        return fail(p, q - 1, "entry: no cached instruction for pc 0x%llx",
                    (unsigned long long)epc);
    }
    if (p->has_context && parse_contexts(p, &q) < 0) {
        return TRACE_PARSE_ERROR;
    }
    unsigned n = s->nvalues;
    if (n > 0 || (tag & (TRACE_TAG_MISSING | 7u * TRACE_TAG_ABS0))) {
        if (parse_values(p, s, tag, &q) < 0) {
            return TRACE_PARSE_ERROR;
        }
    } else {
        p->missing = 0;
    }
    p->pos = q;
    p->prev_end = epc + s->inst.length;
    p->last = s;
    p->burst_index = p->in_burst_entries++;
    give_entry(p, s, epc, inst, pc, context0, context1);
    if (n > 0 && nwanted > 0) {
        va_list ap;
        va_start(ap, nwanted);
        copy_values(p, n, nwanted, ap);
        va_end(ap);
    }
    return (int)n;
}

unsigned trace_parser_missing(const trace_parser_t *parser)
{
    return parser->missing;
}

int trace_parser_kinds(const trace_parser_t *parser, trace_value_t *kinds)
{
    const trace_icache_slot_t *s = parser->last;
    int n = s != NULL ? s->nvalues : 0;
    if (kinds != NULL) {
        for (int i = 0; i < TRACE_VLIST_MAX; i++) {
            kinds[i] = i < n ? (trace_value_t)s->kinds[i] : TRACE_NONE;
        }
    }
    return n;
}

int trace_parser_has_context(const trace_parser_t *parser)
{
    return parser->has_context;
}

unsigned trace_parser_get_pid(const trace_parser_t *parser)
{
    return parser->pid;
}

unsigned trace_parser_get_tid(const trace_parser_t *parser)
{
    return parser->tid;
}

uint64_t trace_parser_get_time(const trace_parser_t *parser)
{
    return parser->time;
}

const char *trace_parser_error(const trace_parser_t *parser)
{
    return parser->error;
}

void trace_parser_set_backend(trace_parser_t *p, const char *backend)
{
    p->backend = backend ? backend : "";
}

const char *trace_parser_backend(const trace_parser_t *parser)
{
    return parser->backend ? parser->backend : "";
}

unsigned trace_parser_burst_index(const trace_parser_t *parser)
{
    return parser->burst_index;
}

int trace_parser_collect(trace_parser_t *parser, struct vsample *out, int max, unsigned flags)
{
    int n = 0, k = 0;
    uint64_t pc, c0, c1, v;
    while (n < max && (k = trace_parser_next(parser, NULL, &pc, &c0, &c1, 1, &v)) >= 0) {
        if (k >= 1 && !(parser->missing & 1u))
            out[n++] = (vsample_t){.pc = pc, .value = v, .context0 = c0, .context1 = c1};
        else if (flags & TRACE_COLLECT_MISSING)
            out[n++] = vp_missing(pc);
    }
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}
