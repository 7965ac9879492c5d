/*
 * dcpi/trace-test.h - a unit-test kit for value-profiler plugins (ABI 2 of the SDK): build a value
 * trace in a test the way dcpid's backends do, and run a plugin's vp_prof_process on it, without
 * dcpid, perf or a workload. docs/vprofiler.md (TESTING A PLUGIN) and samples/vp-divisor/ show a
 * plugin with its test, built out of tree.
 *
 *     trace_test_t *t = trace_test_new(1234);
 *     static const uint8_t div_rcx[] = {0x48, 0xf7, 0xf1};
 *     trace_value_t k = TRACE_RCX;
 *     uint64_t v = 10;
 *     trace_test_entry(t, div_rcx, sizeof div_rcx, 0x401000, 0, 0, 1, &k, &v, 0);
 *     vsample_t *out;
 *     int n = trace_test_run(t, &_dispatch, &out);   // the plugin's own table
 *     trace_test_free(t);
 *
 * A trace holds one process (the pid given to trace_test_new) and at most VSAMPLE_BUFFER_SIZE
 * entries, as in dcpid. Entries carry exactly the values given: the kit does not apply the
 * plugin's specification (a test decides what a backend would capture). Not thread-safe.
 */
#ifndef DCPI_TRACE_TEST_H
#define DCPI_TRACE_TEST_H

#include <stdint.h>
#include "api.h"
#include "trace-parse.h"
#include "vprofiler.h"

typedef struct trace_test trace_test_t;

/* An empty trace of process pid; NULL when out of memory. */
DCPI_API trace_test_t *trace_test_new(unsigned pid);
DCPI_API void trace_test_free(trace_test_t *t);
/* Empty the trace (same pid). */
DCPI_API void trace_test_reset(trace_test_t *t);
/* Start a burst of thread tid at time_ns; contexts 1: its entries carry two callers. Without
 * one, the first entry starts a burst (tid = pid, time 0, no contexts). 0, DCPI_EFULL, or
 * DCPI_EINVAL (contexts not 0/1). */
DCPI_API int trace_test_burst(trace_test_t *t, unsigned tid, uint64_t time_ns, int contexts);
/* Append the entry of the instruction whose bytes are code[0..codelen) (decoded here), run at
 * pc, with callers c0/c1 (kept only in a burst with contexts) and n values (0..TRACE_VLIST_MAX)
 * of the given kinds; bit i of missing marks value i as not captured. 0, DCPI_EFORMAT (code does
 * not decode), DCPI_EFULL (VSAMPLE_BUFFER_SIZE entries, or the buffer, full), DCPI_EINVAL. */
DCPI_API int trace_test_entry(trace_test_t *t, const void *code, int codelen, uint64_t pc,
                              uint64_t c0, uint64_t c1, int n, const trace_value_t *kinds,
                              const uint64_t *values, unsigned missing);
/* The backend the plugin's parser reports (trace_parser_backend): "bp", "regs", "step" or
 * "replay"; "" until set. 0, or DCPI_EINVAL for another name. */
DCPI_API int trace_test_backend(trace_test_t *t, const char *backend);
/* Entries appended so far. */
DCPI_API unsigned trace_test_entries(const trace_test_t *t);
/* A parser at the start of the trace (valid until the next call with t). */
DCPI_API trace_parser_t *trace_test_parser(trace_test_t *t);
/*
 * Run d's vp_prof_process on the trace, as dcpid's worker would: returns its count with
 * *vsamples set, its negative return as is, or DCPI_EPLUGIN when it broke a rule dcpid enforces
 * (no vp_prof_process, more than VSAMPLE_BUFFER_SIZE vsamples, a positive count with a NULL
 * buffer).
 */
DCPI_API int trace_test_run(trace_test_t *t, const vp_dispatch_t *d, vsample_t **vsamples);

#endif
