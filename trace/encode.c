/*
 * trace/encode.c - the value-trace encoder (docs/trace-format.md), used by the capture backends
 * and the tests. Writes into a caller buffer, never allocates; an entry or burst that does not
 * fit is refused whole with DCPI_EFULL and leaves the encoder as it was.
 */
#include <string.h>

#include "dcpi/errno.h"
#include "trace/trace-int.h"

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static unsigned varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void trace_encoder_init(trace_encoder_t *e, void *buf, size_t cap)
{
    memset(e, 0, sizeof(*e));
    e->buf = buf;
    e->cap = buf != NULL ? cap : 0;
}

size_t trace_encoder_size(const trace_encoder_t *e)
{
    return e->len;
}

unsigned trace_encoder_entries(const trace_encoder_t *e)
{
    return e->entries;
}

static int commit(trace_encoder_t *e, const uint8_t *tmp, size_t n)
{
    if (n > e->cap - e->len) {
        return DCPI_EFULL;
    }
    memcpy(e->buf + e->len, tmp, n);
    e->len += n;
    return 0;
}

int trace_encoder_burst(trace_encoder_t *e, unsigned pid, unsigned tid, uint64_t time_ns,
                        int has_context)
{
    uint8_t tmp[TRACE_BURST_MAX];
    size_t n = 0;
    if (e == NULL || (has_context != 0 && has_context != 1) || (e->have_pid && pid != e->pid)) {
        return DCPI_EINVAL;
    }
    tmp[n++] = TRACE_MAGIC_BURST;
    tmp[n++] = has_context ? TRACE_FLAG_CONTEXT : 0;
    n += put_varint(tmp + n, pid);
    n += put_varint(tmp + n, tid);
    n += put_varint(tmp + n, time_ns);
    int rc = commit(e, tmp, n);
    if (rc < 0) {
        return rc;
    }
    e->pid = pid;
    e->have_pid = 1;
    e->in_burst = 1;
    e->has_context = has_context;
    e->prev_end = e->c0 = e->c1 = 0;
    return 0;
}

static int check_entry(const trace_encoder_t *e, const trace_inst_t *inst, int nvalues,
                       const trace_value_t *kinds, const uint64_t *values, unsigned missing)
{
    if (e == NULL || !e->in_burst || inst == NULL || inst->length < 1 || inst->length > 15 ||
        trace_opc_info(inst->opc) == NULL || nvalues < 0 || nvalues > TRACE_VLIST_MAX ||
        (missing >> nvalues) != 0) {
        return DCPI_EINVAL;
    }
    if (nvalues > 0 && (kinds == NULL || (values == NULL && missing != (1u << nvalues) - 1))) {
        return DCPI_EINVAL;
    }
    for (int i = 0; i < nvalues; i++) {
        if (kinds[i] <= TRACE_NONE || kinds[i] >= TRACE_VALUE_COUNT) {
            return DCPI_EINVAL;
        }
    }
    return 0;
}

static int slot_matches(const trace_icache_slot_t *s, uint64_t pc, const trace_inst_t *inst,
                        int nvalues, const trace_value_t *kinds)
{
    if (s->inst.length != inst->length || s->pc != pc || s->inst.opc != inst->opc ||
        s->nvalues != nvalues || memcmp(s->inst.bytes, inst->bytes, inst->length) != 0) {
        return 0;
    }
    for (int i = 0; i < nvalues; i++) {
        if (s->kinds[i] != (uint8_t)kinds[i]) {
            return 0;
        }
    }
    return 1;
}

/* Encode an icache fill into tmp and make *s the new slot content. */
static size_t put_fill(uint8_t *tmp, trace_icache_slot_t *s, uint64_t pc, const trace_inst_t *inst,
                       int nvalues, const trace_value_t *kinds)
{
    size_t n = 0;
    memset(s, 0, sizeof(*s));
    s->pc = pc;
    s->inst.length = inst->length;
    memcpy(s->inst.bytes, inst->bytes, inst->length);
    s->inst.opc = inst->opc;
    s->inst.mnemonic = trace_opc_info(inst->opc)->mnemonic;
    s->nvalues = (uint8_t)nvalues;
    tmp[n++] = inst->length;
    memcpy(tmp + n, inst->bytes, inst->length);
    n += inst->length;
    n += put_varint(tmp + n, inst->opc);
    tmp[n++] = (uint8_t)nvalues;
    for (int i = 0; i < nvalues; i++) {
        s->kinds[i] = (uint8_t)kinds[i];
        tmp[n++] = (uint8_t)kinds[i];
    }
    return n;
}

/* Encode the present values, each as a delta from the slot's previous value or absolute,
 * whichever is shorter (ties: absolute); returns the bytes written and the absolute-mode bits. */
static size_t put_values(uint8_t *tmp, trace_icache_slot_t *s, const uint64_t *values,
                         unsigned missing, unsigned *modes)
{
    size_t n = 0;
    *modes = 0;
    for (unsigned i = 0; i < s->nvalues; i++) {
        if (missing & (1u << i)) {
            continue;
        }
        uint64_t v = values[i];
        uint64_t d = trace_zigzag(v - s->prev[i]);
        if (varint_len(v) <= varint_len(d)) {
            *modes |= 1u << i;
            n += put_varint(tmp + n, v);
        } else {
            n += put_varint(tmp + n, d);
        }
        s->prev[i] = v;
    }
    return n;
}

int trace_encoder_entry(trace_encoder_t *e, const trace_inst_t *inst, uint64_t pc, uint64_t c0,
                        uint64_t c1, int nvalues, const trace_value_t *kinds,
                        const uint64_t *values, unsigned missing_mask)
{
    int rc = check_entry(e, inst, nvalues, kinds, values, missing_mask);
    if (rc < 0) {
        return rc;
    }
    uint8_t tmp[TRACE_ENTRY_MAX], vbuf[7 * 10];
    unsigned idx = trace_icache_index(pc), tag = 0, modes = 0;
    trace_icache_slot_t slot = e->icache[idx];
    size_t n = 1;
    if (pc != e->prev_end) {
        tag |= TRACE_TAG_PC;
        n += put_varint(tmp + n, trace_zigzag(pc - e->prev_end));
    }
    if (!slot_matches(&slot, pc, inst, nvalues, kinds)) {
        tag |= TRACE_TAG_INST;
        n += put_fill(tmp + n, &slot, pc, inst, nvalues, kinds);
    }
    if (e->has_context) {
        n += put_varint(tmp + n, trace_zigzag(c0 - e->c0));
        n += put_varint(tmp + n, trace_zigzag(c1 - e->c1));
    }
    if (missing_mask != 0) {
        tag |= TRACE_TAG_MISSING;
        tmp[n++] = (uint8_t)missing_mask;
    }
    size_t nv = put_values(vbuf, &slot, values, missing_mask, &modes);
    tag |= (modes & 7u) * TRACE_TAG_ABS0;
    if (nvalues > 3) {
        tmp[n++] = (uint8_t)(modes >> 3);
    }
    memcpy(tmp + n, vbuf, nv);
    n += nv;
    tmp[0] = (uint8_t)tag;
    rc = commit(e, tmp, n);
    if (rc < 0) {
        return rc;
    }
    e->icache[idx] = slot;
    e->prev_end = pc + inst->length;
    if (e->has_context) {
        e->c0 = c0;
        e->c1 = c1;
    }
    e->entries++;
    return 0;
}
