/*
 * trace-test.c - the plugin unit-test kit (include/dcpi/trace-test.h): the trace encoder dcpid's
 * backends use, into a buffer of the test's, and the parser dcpid's worker hands to
 * vp_prof_process.
 */
#include <stdlib.h>
#include <string.h>

#include "dcpi/errno.h"
#include "dcpi/trace-test.h"
#include "trace/trace-int.h"

#define TRACE_TEST_BYTES (192 * 1024) /* as one dcpid trace buffer */

struct trace_test {
    unsigned pid;
    const char *backend;
    int burst;
    trace_encoder_t enc;
    trace_parser_t parser;
    uint8_t buf[TRACE_TEST_BYTES];
};

trace_test_t *trace_test_new(unsigned pid)
{
    trace_test_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->pid = pid;
    trace_test_reset(t);
    return t;
}

void trace_test_free(trace_test_t *t)
{
    free(t);
}

void trace_test_reset(trace_test_t *t)
{
    trace_encoder_init(&t->enc, t->buf, sizeof t->buf);
    t->burst = 0;
}

int trace_test_burst(trace_test_t *t, unsigned tid, uint64_t time_ns, int contexts)
{
    int rc = trace_encoder_burst(&t->enc, t->pid, tid, time_ns, contexts);
    if (rc == 0)
        t->burst = 1;
    return rc;
}

int trace_test_entry(trace_test_t *t, const void *code, int codelen, uint64_t pc, uint64_t c0,
                     uint64_t c1, int n, const trace_value_t *kinds, const uint64_t *values,
                     unsigned missing)
{
    trace_inst_t inst;
    if (!t || !code || codelen <= 0 || n < 0 || n > TRACE_VLIST_MAX || (n && (!kinds || !values)))
        return DCPI_EINVAL;
    if (trace_inst_decode(code, codelen, &inst) < 0)
        return DCPI_EFORMAT;
    if (trace_encoder_entries(&t->enc) >= VSAMPLE_BUFFER_SIZE)
        return DCPI_EFULL;
    if (!t->burst) {
        int rc = trace_test_burst(t, t->pid, 0, 0);
        if (rc < 0)
            return rc;
    }
    return trace_encoder_entry(&t->enc, &inst, pc, c0, c1, n, kinds, values, missing);
}

int trace_test_backend(trace_test_t *t, const char *backend)
{
    static const char *const known[] = {"bp", "regs", "step", "replay"};
    for (size_t i = 0; backend && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(backend, known[i]) == 0) {
            t->backend = known[i];
            return 0;
        }
    return DCPI_EINVAL;
}

unsigned trace_test_entries(const trace_test_t *t)
{
    return trace_encoder_entries(&t->enc);
}

trace_parser_t *trace_test_parser(trace_test_t *t)
{
    trace_parser_init(&t->parser, t->buf, trace_encoder_size(&t->enc));
    trace_parser_set_backend(&t->parser, t->backend);
    return &t->parser;
}

int trace_test_run(trace_test_t *t, const vp_dispatch_t *d, vsample_t **vsamples)
{
    vsample_t *out = NULL;
    if (!t || !d || !vsamples || !d->vp_prof_process)
        return DCPI_EPLUGIN;
    int n = d->vp_prof_process(t->pid, trace_test_parser(t), &out);
    if (n > VSAMPLE_BUFFER_SIZE || (n > 0 && !out))
        return DCPI_EPLUGIN;
    *vsamples = out;
    return n;
}
