/*
 * samprecord.c - the decoding of the sampler's ring records (samples, MMAP2, COMM, FORK, EXIT,
 * LOST, THROTTLE) into the handler's callbacks, one ring at a time or every ring merged in time
 * order.
 */
#include "core/sampling/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/sampling/sampler-int.h"
#include "core/sampling/thin.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

/* Event index of a kernel event id; ids of inherited child events (possible in LOST records)
 * are not ours and count for event 0. */
static int event_of(const dcpi_sampler_t *s, uint64_t id)
{
    id_map_t key = {.id = id};
    const id_map_t *m = bsearch(&key, s->ids, s->nfds, sizeof *s->ids, dcpi__sampler_id_cmp);
    return m && m->event != DCPI_SAMPLER_EV_TRIGGER ? m->event : 0; /* a trigger's: event 0's */
}

/* The user entries of a callchain (nr u64, then nr entries) at r[*pos]. */
static int parse_chain(const unsigned char *r, size_t size, size_t *pos, dcpi_sample_t *smp)
{
    if (*pos + 8 > size)
        return -1;
    uint64_t nr = dcpi__get_host64(r + *pos);
    *pos += 8;
    if (nr > (size - *pos) / 8)
        return -1;
    int user = 0;
    smp->callchain = (const uint64_t *)(const void *)(r + *pos); /* records are 8-aligned */
    smp->ncallchain = (uint32_t)nr;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t v = dcpi__get_host64(r + *pos + 8 * i);
        if (v >= PERF_CONTEXT_MAX) { /* a context marker */
            user = v == PERF_CONTEXT_USER;
            continue;
        }
        if (user && smp->nchain < DCPI_SAMPLER_MAXCHAIN)
            smp->chain[smp->nchain++] = v;
    }
    *pos += 8 * nr;
    return 0;
}

/* REGS_USER: abi u64, then (abi != 0) one u64 per bit of the mask. */
static int parse_regs(const unsigned char *r, size_t size, size_t pos, uint64_t mask,
                      dcpi_sample_t *smp)
{
    if (pos + 8 > size)
        return -1;
    smp->regs_abi = dcpi__get_host64(r + pos);
    pos += 8;
    if (smp->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
        return 0;
    if ((size_t)__builtin_popcountll(mask) > (size - pos) / 8)
        return -1;
    smp->regs_mask = mask;
    for (int b = 0; b < DCPI_SAMPLER_MAXREGS; b++)
        if (mask & (1ull << b)) {
            smp->regs[b] = dcpi__get_host64(r + pos);
            pos += 8;
        }
    return 0;
}

static int parse_extra(const dcpi_sampler_t *s, const unsigned char *r, size_t size,
                       dcpi_sample_t *smp)
{
    size_t pos = 8 + 6 * 8;
    if (s->x.callchain && parse_chain(r, size, &pos, smp) < 0)
        return -1;
    if (s->x.regs_user && parse_regs(r, size, pos, s->x.regs_user, smp) < 0)
        return -1;
    return 0;
}

static int on_sample(dcpi_sampler_t *s, const unsigned char *r, size_t size,
                     const dcpi_sampler_handler_t *h)
{
    if (size < 8 + 6 * 8)
        return -1;
    uint64_t id = dcpi__get_host64(r + 8);
    id_map_t key = {.id = id};
    const id_map_t *m = bsearch(&key, s->ids, s->nfds, sizeof *s->ids, dcpi__sampler_id_cmp);
    uint64_t period = dcpi__get_host64(r + 48);
    dcpi_sample_t smp = {
        .event = m ? (uint16_t)m->event
                 : s->x.trigger_ns && !s->x.thin && period == s->x.trigger_ns
                     ? DCPI_SAMPLER_EV_TRIGGER
                     : DCPI_SAMPLER_EV_OTHER,
        .id = id,
        .ip = dcpi__get_host64(r + 16),
        .pid = dcpi__get_host32(r + 24),
        .tid = dcpi__get_host32(r + 28),
        .time = dcpi__get_host64(r + 32),
        .cpu = dcpi__get_host32(r + 40),
        .period = period,
        .misc = ((const struct perf_event_header *)(const void *)r)->misc,
    };
    if ((s->x.callchain || s->x.regs_user) && parse_extra(s, r, size, &smp) < 0)
        return -1;
    s->stats.samples++;
    if (h->sample)
        h->sample(h->arg, &smp);
    return 0;
}

static int on_mmap2(const unsigned char *r, size_t size, const dcpi_sampler_handler_t *h)
{
    /* header, pid tid, addr, len, pgoff, maj min, ino, ino_generation, prot flags, name */
    size_t name_off = 8 + 8 + 3 * 8 + 8 + 8 + 8 + 8;
    if (size <= name_off || !memchr(r + name_off, 0, size - name_off))
        return -1;
    if (h->mmap2)
        h->mmap2(h->arg, dcpi__get_host32(r + 8), dcpi__get_host64(r + 16),
                 dcpi__get_host64(r + 24), dcpi__get_host64(r + 32), dcpi__get_host32(r + 40),
                 dcpi__get_host32(r + 44), dcpi__get_host64(r + 48), dcpi__get_host32(r + 64),
                 (const char *)r + name_off);
    return 0;
}

static int on_task(uint32_t type, const unsigned char *r, size_t size,
                   const dcpi_sampler_handler_t *h)
{
    if (size < 8 + 16)
        return -1;
    uint32_t pid = dcpi__get_host32(r + 8), ppid = dcpi__get_host32(r + 12),
             tid = dcpi__get_host32(r + 16);
    if (type == PERF_RECORD_FORK && pid != ppid && h->fork)
        h->fork(h->arg, ppid, pid);
    if (type == PERF_RECORD_EXIT && pid == tid && h->exit)
        h->exit(h->arg, pid);
    return 0;
}

static int on_misc_record(dcpi_sampler_t *s, uint32_t type, uint16_t misc, const unsigned char *r,
                          size_t size, const dcpi_sampler_handler_t *h)
{
    switch (type) {
    case PERF_RECORD_COMM:
        if (size < 16)
            return -1;
        if ((misc & PERF_RECORD_MISC_COMM_EXEC) && h->exec)
            h->exec(h->arg, dcpi__get_host32(r + 8));
        if (h->comm && memchr(r + 16, 0, size - 16))
            h->comm(h->arg, dcpi__get_host32(r + 8), dcpi__get_host32(r + 12), (const char *)r + 16,
                    (misc & PERF_RECORD_MISC_COMM_EXEC) != 0);
        return 0;
    case PERF_RECORD_LOST:
        if (size < 24)
            return -1;
        if (h->lost)
            h->lost(h->arg, event_of(s, dcpi__get_host64(r + 8)), dcpi__get_host64(r + 16));
        return 0;
    case PERF_RECORD_LOST_SAMPLES:
        if (size < 24)
            return -1; /* the identifier is the last u64 (sample_id_all) */
        if (h->lost)
            h->lost(h->arg, event_of(s, dcpi__get_host64(r + size - 8)), dcpi__get_host64(r + 8));
        return 0;
    case PERF_RECORD_THROTTLE:
        if (size < 24)
            return -1;
        if (h->throttle)
            h->throttle(h->arg, event_of(s, dcpi__get_host64(r + 16)));
        return 0;
    case PERF_RECORD_UNTHROTTLE:
        return 0;
    }
    s->stats.other_records++;
    return 0;
}

static void dispatch(dcpi_sampler_t *s, const unsigned char *r, size_t size,
                     const dcpi_sampler_handler_t *h)
{
    const struct perf_event_header *hdr = (const void *)r;
    int rc;
    s->stats.records++;
    switch (hdr->type) {
    case PERF_RECORD_SAMPLE:
        rc = on_sample(s, r, size, h);
        break;
    case PERF_RECORD_MMAP2:
        rc = on_mmap2(r, size, h);
        break;
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT:
        rc = on_task(hdr->type, r, size, h);
        break;
    default:
        rc = on_misc_record(s, hdr->type, hdr->misc, r, size, h);
    }
    if (rc < 0)
        s->stats.bad_records++;
}

/* The record at rg->tail (copied into buf, MAXREC bytes, when it wraps the ring's end), or NULL
 * when the ring holds a corrupt header there. */
static const unsigned char *record_at(dcpi_sampler_t *s, const ring_t *rg, unsigned char *buf,
                                      size_t *size)
{
    uint64_t tail = rg->tail, head = rg->head;
    uint64_t off = tail & (rg->size - 1);
    struct perf_event_header hdr; /* records are 8-aligned: a header never wraps */
    memcpy(&hdr, rg->data + off, sizeof hdr);
    if (hdr.size < sizeof hdr || hdr.size > head - tail) {
        s->stats.bad_records++;
        return NULL;
    }
    *size = hdr.size;
    if (off + hdr.size <= rg->size)
        return rg->data + off;
    size_t first = (size_t)(rg->size - off);
    memcpy(buf, rg->data + off, first);
    memcpy(buf + first, rg->data, hdr.size - first);
    return buf;
}

static const unsigned char *ring_record(dcpi_sampler_t *s, const ring_t *rg, size_t *size)
{
    return record_at(s, rg, s->copy, size);
}

/* A record's time: a sample's TIME field, else sample_id_all's (time, cpu, identifier last);
 * 0 (first) when the record is too short to hold one. */
static uint64_t record_time(const unsigned char *r, size_t size)
{
    const struct perf_event_header *hdr = (const void *)r;
    if (hdr->type == PERF_RECORD_SAMPLE)
        return size >= 40 ? dcpi__get_host64(r + 32) : 0;
    return size >= 8 + 24 ? dcpi__get_host64(r + size - 24) : 0;
}

/* The ring whose next record is the oldest (-1: all drained); its record in *rec, *size. */
static int oldest_ring(dcpi_sampler_t *s, const unsigned char **rec, size_t *size)
{
    int best = -1;
    uint64_t best_time = 0;
    for (int i = 0; i < s->nrings; i++) {
        ring_t *rg = &s->rings[i];
        if (rg->tail >= rg->head)
            continue;
        if (!rg->have_time) {
            size_t sz;
            const unsigned char *r = ring_record(s, rg, &sz);
            if (!r) {
                rg->tail = rg->head; /* corrupt: skip what is there */
                continue;
            }
            rg->next_time = record_time(r, sz);
            rg->have_time = 1;
        }
        if (best < 0 || rg->next_time < best_time) {
            best = i;
            best_time = rg->next_time;
        }
    }
    if (best >= 0) /* read again: s->copy may hold another ring's record */
        *rec = ring_record(s, &s->rings[best], size);
    return best;
}

long dcpi_sampler_drain_ring(dcpi_sampler_t *s, void *base, const dcpi_sampler_handler_t *h)
{
    struct perf_event_mmap_page *m = base;
    long page = sysconf(_SC_PAGESIZE);
    ring_t rg = {.base = base, .fd = -1};
    rg.data = (unsigned char *)base + (m->data_offset ? m->data_offset : (uint64_t)page);
    rg.size = m->data_size ? m->data_size : (uint64_t)page;
    rg.head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    rg.tail = m->data_tail;
    long n = 0;
    while (rg.tail < rg.head) {
        size_t size;
        const unsigned char *r = record_at(s, &rg, s->copy_other, &size);
        if (!r)
            break; /* corrupt: what is there is skipped */
        dispatch(s, r, size, h);
        rg.tail += size;
        n++;
    }
    __atomic_store_n(&m->data_tail, rg.head, __ATOMIC_RELEASE);
    return n;
}

long dcpi_sampler_drain_merged(dcpi_sampler_t *s, const dcpi_sampler_handler_t *h)
{
    for (int i = 0; i < s->nrings; i++) {
        ring_t *rg = &s->rings[i];
        struct perf_event_mmap_page *m = rg->base;
        rg->head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
        rg->tail = m->data_tail;
        rg->have_time = 0;
    }
    long n = 0;
    int cur = -1, i;
    const unsigned char *rec;
    size_t size;
    while ((i = oldest_ring(s, &rec, &size)) >= 0) {
        if (i != cur && h->ring)
            h->ring(h->arg, i);
        cur = i;
        dispatch(s, rec, size, h);
        s->rings[i].tail += size;
        s->rings[i].have_time = 0;
        n++;
    }
    for (i = 0; i < s->nrings; i++) {
        struct perf_event_mmap_page *m = s->rings[i].base;
        __atomic_store_n(&m->data_tail, s->rings[i].tail, __ATOMIC_RELEASE);
    }
    return n;
}
