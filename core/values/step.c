/*
 * step.c - the step backend's entry into the value pipeline (dcpi_values_step, see values.h):
 * dcpid -vstep (vstep.c) hands over step records (core/capture/stepring.h); each goes into every
 * enabled plugin's trace with dcpi_step_encode (core/capture/stepdrain.h), then the traces take
 * the regs backend's path through pipeline.c.
 */
#include "core/values/values-int.h"

#include "core/capture/stepdrain.h"
#include "dcpi/errno.h"

/* Whether p's filter and symbol (select.c) admit the record's instruction (always without). */
static int admitted(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned pid,
                    const step_record_t *rec)
{
    dcpi_image_t *img;
    uint32_t off;
    trace_inst_t inst;
    if (!p->sel)
        return 1;
    if (rec->insn_len == 0 || trace_inst_decode(rec->insn, rec->insn_len, &inst) < 0 ||
        dcpi_loadmap_resolve(vt->lm, (pid_t)pid, rec->before[DCPI_REG_IP], &img, &off) < 0)
        return 0;
    return dcpi__values_admits(vt, p, img, off, &inst);
}

typedef struct step_arg {
    dcpi_values_plugin_t *p;
    dcpi_step_encoder_t *se;
    unsigned pid;
    const step_record_t *rec;
} step_arg_t;

/* The record into the plugin's trace: entries written (0 or 1), or DCPI_EFULL / DCPI_E*. */
static int step_write(void *arg, int retry)
{
    const step_arg_t *a = arg;
    dcpi_values_plugin_t *p = a->p;
    dcpi_step_encoder_t *se = a->se;
    (void)retry;
    /* a trace handed over (here, at end_drain, flush, ...) starts a new burst */
    if (trace_encoder_size(&p->enc) == 0 || se->enc != &p->enc || se->pid != a->pid)
        dcpi_step_encoder_init(se, &p->enc, a->pid);
    uint64_t missing = se->missing;
    int rc = dcpi_step_encode(se, p->spec, a->rec);
    p->st.missing += se->missing - missing;
    return rc;
}

/* One step record into plugin p's trace: 1 entry written, 0 none (no vlist for its key, or
 * its specification does not admit the instruction). */
static int step_one(dcpi_values_t *vt, dcpi_values_plugin_t *p, dcpi_step_encoder_t *se,
                    unsigned pid, const step_record_t *rec)
{
    if (!admitted(vt, p, pid, rec))
        return 0;
    step_arg_t a = {.p = p, .se = se, .pid = pid, .rec = rec};
    dcpi__values_writer_t w = {.enc = &p->enc,
                               .pid = pid,
                               .hand_over = dcpi__values_plugin_hand_over,
                               .owner = p,
                               .write = step_write,
                               .arg = &a};
    int rc = dcpi__values_write(vt, &w);
    if (rc >= 0)
        return rc;
    p->st.lost++;
    return 0;
}

int dcpi_values_step(dcpi_values_t *vt, struct dcpi_step_encoder *se, unsigned pid,
                     const struct step_record *rec)
{
    int n = 0;
    for (unsigned i = 0; i < vt->npl; i++) {
        dcpi_values_plugin_t *p = &vt->pl[i];
        if (p->st.disabled)
            continue;
        int w = step_one(vt, p, &se[i], pid, rec);
        p->st.seen += (uint64_t)w;
        n += w;
    }
    return n;
}
