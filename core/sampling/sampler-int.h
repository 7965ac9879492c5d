/*
 * sampler-int.h - private to core/sampling/: the sampler's state and its one sample_type layout,
 * shared by its events (sampevent.c: names, attributes), its opening and rings (samprings.c) and
 * the decoding of its records (samprecord.c). Layout of the records follows linux/perf_event.h
 * for the sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD with sample_id_all=1, optionally followed
 * (value profiling) by CALLCHAIN (nr, nr entries) and then REGS_USER (abi, one u64 per bit of the
 * mask), in that order.
 */
#ifndef DCPI_SAMPLING_SAMPLER_INT_H
#define DCPI_SAMPLING_SAMPLER_INT_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sampling/sampler.h"

#define SAMPLE_TYPE                                                                                \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |                \
     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define MAXCPU        1024
#define MAXREC        65536 /* header.size is 16 bits */
#define TRIGGER_PAGES 8     /* a trigger ring's data pages (dcpi_sampler_opts_t.trigger_rings) */

typedef struct ring {
    int fd, cpu;
    void *base;
    size_t map_len;
    unsigned char *data;
    uint64_t size;       /* data bytes, power of two */
    uint64_t head, tail; /* a merged drain's cursor */
    uint64_t next_time;  /* the time of the record at tail, when have_time */
    int have_time;
} ring_t;

typedef struct id_map {
    uint64_t id;
    int event;
} id_map_t;

struct dcpi_sampler {
    int nev;
    dcpi_sampler_opts_t x;
    int *fds;
    size_t nfds;
    id_map_t *ids; /* sorted by id */
    ring_t *rings;
    int nrings;
    ring_t *trings; /* the arm triggers' rings by ring index (trigger_rings; fd -1: none) */
    dcpi_sampler_stats_t stats;
    _Alignas(8) unsigned char copy[MAXREC]; /* a record that wraps the ring end */
    /* the same for dcpi_sampler_drain_ring, which a handler of a merged drain may call while
     * copy holds the record it was given */
    _Alignas(8) unsigned char copy_other[MAXREC];
};

/* The attributes of event ev (tracking: MMAP2/COMM/TASK records too; inherit: children;
 * on_exec: enabled at exec; no_kernel: user mode only). */
void dcpi__sampler_fill_attr(struct perf_event_attr *a, const dcpi_event_spec_t *ev, int tracking,
                             int inherit, int on_exec, int no_kernel);
/* The extra sample fields of x (registers, call chains) in a. */
void dcpi__sampler_fill_extra(struct perf_event_attr *a, const dcpi_sampler_opts_t *x);
/* qsort/bsearch order of id_map_t by id. */
int dcpi__sampler_id_cmp(const void *x, const void *y);

#endif
