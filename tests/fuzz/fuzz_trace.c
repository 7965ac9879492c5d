/*
 * tests/fuzz/fuzz_trace.c - libFuzzer harness for the value-trace parser (trace/parse.c:
 * trace_parser_init + trace_parser_next). The whole input is one trace. Checks: the parser
 * stops with END or ERROR (ERROR with a message, END without), every entry is well formed
 * (instruction length 1..15 with a known key, value count <= TRACE_VLIST_MAX, missing mask and
 * kinds consistent), the final state is sticky, and a second pass asking for no values returns
 * the same sequence of entries (pc, contexts, value counts) as the first one asking for all.
 */
#include <stdint.h>
#include <string.h>

#include "dcpi/insn.h"
#include "dcpi/trace-parse.h"
#include "fuzz_util.h"
#include "trace/trace.h"

/* Entries remembered from the first pass (more are only counted). */
#define FUZZ_MAX_ENTRIES 4096

typedef struct seen {
    uint64_t pc, c0, c1;
    int n;
} seen_t;

static trace_parser_t parser;
static seen_t first[FUZZ_MAX_ENTRIES];

static void check_entry(const trace_parser_t *p, const trace_inst_t *inst, int n, const uint64_t *v)
{
    FUZZ_CHECK(n >= 0 && n <= TRACE_VLIST_MAX);
    FUZZ_CHECK(inst->length >= 1 && inst->length <= 15);
    FUZZ_CHECK(trace_opc_info(inst->opc) != NULL);
    FUZZ_CHECK(inst->mnemonic != NULL);
    unsigned missing = trace_parser_missing(p);
    FUZZ_CHECK((missing >> n) == 0);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(!(missing & (1u << i)) || v[i] == 0);
    trace_value_t kinds[TRACE_VLIST_MAX];
    FUZZ_CHECK(trace_parser_kinds(p, kinds) == n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(kinds[i] != TRACE_NONE && kinds[i] < TRACE_VALUE_COUNT);
    FUZZ_CHECK(trace_parser_has_context(p) == 0 || trace_parser_has_context(p) == 1);
}

static void check_end(trace_parser_t *p, int rc)
{
    FUZZ_CHECK(rc == TRACE_PARSE_END || rc == TRACE_PARSE_ERROR);
    const char *msg = trace_parser_error(p);
    FUZZ_CHECK(msg != NULL);
    FUZZ_CHECK(rc == TRACE_PARSE_END ? msg[0] == '\0' : msg[0] != '\0');
    FUZZ_CHECK(strchr(msg, '\n') == NULL);
    FUZZ_CHECK(trace_parser_next(p, NULL, NULL, NULL, NULL, 0) == rc);
}

/* Pass 1: every pointer given, all values wanted. Returns the number of entries. */
static size_t pass_all(const uint8_t *data, size_t size, int *final)
{
    trace_parser_init(&parser, data, size);
    size_t count = 0;
    for (;;) {
        trace_inst_t inst;
        uint64_t pc, c0, c1, v[TRACE_VLIST_MAX];
        int n = trace_parser_next(&parser, &inst, &pc, &c0, &c1, TRACE_VLIST_MAX, &v[0], &v[1],
                                  &v[2], &v[3], &v[4], &v[5], &v[6]);
        if (n < 0) {
            check_end(&parser, n);
            *final = n;
            return count;
        }
        check_entry(&parser, &inst, n, v);
        if (!trace_parser_has_context(&parser))
            FUZZ_CHECK(c0 == 0 && c1 == 0);
        if (count < FUZZ_MAX_ENTRIES)
            first[count] = (seen_t){pc, c0, c1, n};
        count++;
    }
}

/* Pass 2: no inst, no values; the same entries must come out. */
static void pass_none(const uint8_t *data, size_t size, size_t count, int final)
{
    trace_parser_init(&parser, data, size);
    size_t i = 0;
    for (;;) {
        uint64_t pc, c0, c1;
        int n = trace_parser_next(&parser, NULL, &pc, &c0, &c1, 0);
        if (n < 0) {
            FUZZ_CHECK(n == final && i == count);
            return;
        }
        FUZZ_CHECK(i < count);
        if (i < FUZZ_MAX_ENTRIES) {
            const seen_t *s = &first[i];
            FUZZ_CHECK(s->pc == pc && s->c0 == c0 && s->c1 == c1 && s->n == n);
        }
        i++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int final = 0;
    size_t count = pass_all(data, size, &final);
    pass_none(data, size, count, final);
    return 0;
}
