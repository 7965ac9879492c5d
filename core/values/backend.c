/*
 * backend.c - the calls of backend.h: each goes to the backend's entry point when it has one,
 * else does what every backend without one would (the sink's traces handed over at a drain and
 * before a pid's mappings change); and a perf sample as the sink's sample.
 */
#include "core/values/backend.h"

#include <string.h>

const char *dcpi_vbackend_name(const dcpi_vbackend_t *b)
{
    return b ? b->ops->name : "";
}

void dcpi_vbackend_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x)
{
    if (b && b->ops->sampler_opts)
        b->ops->sampler_opts(b, x);
}

int dcpi_vbackend_start(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err)
{
    return b && b->ops->start ? b->ops->start(b, smp, err) : 0;
}

int dcpi_vbackend_child_env(const dcpi_vbackend_t *b)
{
    return b && b->ops->child_env ? b->ops->child_env(b) : 0;
}

void dcpi_vbackend_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    if (b && b->ops->pc)
        b->ops->pc(b, s, ring);
}

int dcpi_vbackend_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    return b && b->ops->record ? b->ops->record(b, s, ring) : 0;
}

void dcpi_vbackend_pid_event(dcpi_vbackend_t *b, pid_t pid, int exec)
{
    if (!b)
        return;
    if (b->ops->pid_event)
        b->ops->pid_event(b, pid, exec);
    dcpi_vtrace_pid_event(b->vt, pid); /* pending traces of pid resolve with the old mappings */
}

int dcpi_vbackend_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    if (!b)
        return 0;
    if (b->ops->drain)
        return b->ops->drain(b, now_ns);
    dcpi_vtrace_end_drain(b->vt);
    return 0;
}

int dcpi_vbackend_timeout_ms(const dcpi_vbackend_t *b)
{
    return b && b->ops->timeout_ms ? b->ops->timeout_ms(b) : -1;
}

int dcpi_vbackend_polls(const dcpi_vbackend_t *b)
{
    return b && b->ops->timeout_ms;
}

void dcpi_vbackend_stop(dcpi_vbackend_t *b)
{
    if (b && b->ops->stop)
        b->ops->stop(b);
}

void dcpi_vbackend_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    if (len)
        buf[0] = 0;
    if (b && b->ops->status)
        b->ops->status(b, buf, len);
}

void dcpi_vbackend_report(const dcpi_vbackend_t *b, int user)
{
    if (b && b->ops->report)
        b->ops->report(b, user);
}

void dcpi_vbackend_free(dcpi_vbackend_t *b)
{
    if (b)
        b->ops->free(b);
}

void dcpi_vbackend_sample_of(const dcpi_sample_t *s, dcpi_vtrace_sample_t *v)
{
    *v = (dcpi_vtrace_sample_t){
        .pid = s->pid, .tid = s->tid, .cpu = s->cpu, .time = s->time, .ip = s->ip};
    if (s->nchain > 1) /* chain[0] is the ip itself */
        v->context0 = s->chain[1];
    if (s->nchain > 2)
        v->context1 = s->chain[2];
    v->regs.valid = s->regs_mask & ((1ull << DCPI_REG_COUNT) - 1);
    memcpy(v->regs.r, s->regs, sizeof v->regs.r);
}
