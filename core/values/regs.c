/*
 * regs.c - the regs backend (backend.h; dcpid -vregs, or where execute breakpoints do not work):
 * every user-mode PC sample of the first event that carries user registers goes into the sink
 * as it is (entry.c: decode, capture, admission at -vrate per CPU). Its state is why the bp
 * backend is not used, for status. The values are those of the sampled instruction's slow
 * executions (interrupt skid; docs/vprofiler.md "WHERE VALUES COME FROM").
 */
#include "core/values/backend.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

typedef struct vregs {
    dcpi_vbackend_t b;
    char why[DCPI_ERRLEN]; /* why not bp */
} vregs_t;

static void regs_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x)
{
    /* at least one register: a sample without REGS_USER never reaches the value pipeline,
     * so vlists that need no register (TRACE_RIP, TRACE_NONE) would get no entries */
    x->regs_user = dcpi_values_regs_mask(b->vt) | 1ull << DCPI_REG_IP;
    x->callchain = dcpi_values_contexts(b->vt);
    x->max_stack = 4;
}

static void regs_pc(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    (void)ring;
    if (s->regs_abi == 0)
        return; /* no user registers (a kernel thread) */
    dcpi_values_sample_t v;
    dcpi_vbackend_sample_of(s, &v);
    dcpi_values_sample(b->vt, &v);
}

static void regs_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    snprintf(buf, len, "vbp off: %s\n", ((const vregs_t *)b)->why);
}

static void regs_free(dcpi_vbackend_t *b)
{
    free(b);
}

static const dcpi_vbackend_ops_t regs_ops = {.desc = &dcpi_vdesc_regs,
                                             .sampler_opts = regs_sampler_opts,
                                             .pc = regs_pc,
                                             .status = regs_status,
                                             .free = regs_free};

int dcpi_vbackend_regs_new(dcpi_values_t *vt, const char *why_not_bp, dcpi_vbackend_t **out)
{
    vregs_t *r = calloc(1, sizeof *r);
    if (!r)
        return DCPI_ENOMEM;
    r->b = (dcpi_vbackend_t){.ops = &regs_ops, .vt = vt};
    snprintf(r->why, sizeof r->why, "%s", why_not_bp ? why_not_bp : "");
    *out = &r->b;
    return 0;
}
