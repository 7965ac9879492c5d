/*
 * backend.c - the calls of backend.h: each goes along the chain to every backend's entry point
 * (a record to the first that takes it), and does once what the sink needs whichever backends
 * there are (its traces handed over at a drain and before a pid's mappings change); and a perf
 * sample as the sink's sample.
 */
#include "core/values/backend.h"

#include <string.h>

#define EACH(x, b) for (dcpi_vbackend_t *x = (dcpi_vbackend_t *)(b); x; x = x->next)

void dcpi_vbackend_chain(dcpi_vbackend_t **chain, dcpi_vbackend_t *b)
{
    while (*chain)
        chain = &(*chain)->next;
    *chain = b;
}

/* The main backend: the chain's last (the ones before it run beside it). */
static const dcpi_vbackend_t *main_of(const dcpi_vbackend_t *b)
{
    while (b && b->next)
        b = b->next;
    return b;
}

const char *dcpi_vbackend_name(const dcpi_vbackend_t *b)
{
    return b ? main_of(b)->ops->desc->name : "";
}

void dcpi_vbackend_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x)
{
    EACH(e, b)
    if (e->ops->sampler_opts)
        e->ops->sampler_opts(e, x);
}

int dcpi_vbackend_start(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err)
{
    EACH(e, b)
    {
        int rc = e->ops->start ? e->ops->start(e, smp, err) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

int dcpi_vbackend_child_env(const dcpi_vbackend_t *b)
{
    EACH(e, b)
    if (e->ops->child_env && e->ops->child_env(e) < 0)
        return -1;
    return 0;
}

void dcpi_vbackend_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    EACH(e, b)
    if (e->ops->pc)
        e->ops->pc(e, s, ring);
}

int dcpi_vbackend_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    EACH(e, b)
    if (e->ops->record && e->ops->record(e, s, ring))
        return 1;
    return 0;
}

void dcpi_vbackend_pid_event(dcpi_vbackend_t *b, pid_t pid, int what)
{
    if (!b)
        return;
    EACH(e, b)
    if (e->ops->pid_event)
        e->ops->pid_event(e, pid, what);
    dcpi_values_pid_event(b->vt, pid); /* pending traces of pid resolve with the old mappings */
}

void dcpi_vbackend_mmap(dcpi_vbackend_t *b, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path)
{
    EACH(e, b)
    if (e->ops->mmap)
        e->ops->mmap(e, pid, start, len, pgoff, maj, min, ino, prot, path);
}

void dcpi_vbackend_loss(dcpi_vbackend_t *b, uint64_t throttled, uint64_t lost)
{
    EACH(e, b)
    if (e->ops->loss)
        e->ops->loss(e, throttled, lost);
}

/* The main backend's drain (or the sink's hand-over when it has none), then the others'. */
int dcpi_vbackend_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    dcpi_vbackend_t *m = (dcpi_vbackend_t *)main_of(b);
    if (!m)
        return 0;
    int gone = m->ops->drain ? m->ops->drain(m, now_ns) : (dcpi_values_end_drain(m->vt), 0);
    EACH(e, b)
    if (e != m && e->ops->drain)
        gone |= e->ops->drain(e, now_ns);
    return gone;
}

int dcpi_vbackend_timeout_ms(const dcpi_vbackend_t *b)
{
    int t = -1;
    EACH(e, b)
    {
        int x = e->ops->timeout_ms ? e->ops->timeout_ms(e) : -1;
        if (x >= 0 && (t < 0 || x < t))
            t = x;
    }
    return t;
}

int dcpi_vbackend_wake_fd(const dcpi_vbackend_t *b)
{
    EACH(e, b)
    {
        int fd = e->ops->wake_fd ? e->ops->wake_fd(e) : -1;
        if (fd >= 0)
            return fd;
    }
    return -1;
}

int dcpi_vbackend_polls(const dcpi_vbackend_t *b)
{
    EACH(e, b)
    if (e->ops->timeout_ms)
        return 1;
    return 0;
}

void dcpi_vbackend_stop(dcpi_vbackend_t *b)
{
    EACH(e, b)
    if (e->ops->stop)
        e->ops->stop(e);
}

void dcpi_vbackend_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    size_t n = 0;
    if (len)
        buf[0] = 0;
    EACH(e, b)
    if (e->ops->status && n < len) {
        e->ops->status(e, buf + n, len - n);
        n += strlen(buf + n);
    }
}

/* The main backend's report first, then the others'. */
void dcpi_vbackend_report(const dcpi_vbackend_t *b, int user)
{
    const dcpi_vbackend_t *m = main_of(b);
    if (m && m->ops->report)
        m->ops->report(m, user);
    EACH(e, b)
    if (e != m && e->ops->report)
        e->ops->report(e, user);
}

/* Every backend's files (the first failure is returned, the others still written). */
int dcpi_vbackend_flush(dcpi_vbackend_t *b, const dcpi_values_flush_info_t *fi, char *err)
{
    int rc = 0;
    char later[DCPI_ERRLEN]; /* a later failure's line (err keeps the first) */
    EACH(e, b)
    {
        int x = e->ops->flush ? e->ops->flush(e, fi, rc < 0 ? later : err) : 0;
        if (x < 0 && rc == 0)
            rc = x;
    }
    return rc;
}

void dcpi_vbackend_free(dcpi_vbackend_t *b)
{
    while (b) {
        dcpi_vbackend_t *next = b->next;
        b->ops->free(b);
        b = next;
    }
}

void dcpi_vbackend_sample_of(const dcpi_sample_t *s, dcpi_values_sample_t *v)
{
    *v = (dcpi_values_sample_t){
        .pid = s->pid, .tid = s->tid, .cpu = s->cpu, .time = s->time, .ip = s->ip};
    if (s->nchain > 1) /* chain[0] is the ip itself */
        v->context0 = s->chain[1];
    if (s->nchain > 2)
        v->context1 = s->chain[2];
    v->regs.valid = s->regs_mask & ((1ull << DCPI_REG_COUNT) - 1);
    memcpy(v->regs.r, s->regs, sizeof v->regs.r);
    /* RF (resume flag, bit 16) is the kernel's, never the program's (pushf clears it): the
     * breakpoint handler sets it in the saved flags after an execute breakpoint's event, so a
     * second breakpoint on the same execution (-voracle beside a bp arm) would see it */
    v->regs.r[DCPI_REG_FLAGS] &= ~(1ull << 16);
}
