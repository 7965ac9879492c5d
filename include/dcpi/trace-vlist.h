/*
 * dcpi/trace-vlist.h - trace specifications: what the capture backend records, per key.
 *
 * The seed's builders with the seed's names. A vlist is an ordered list of up to
 * TRACE_VLIST_MAX values to capture for one instruction. A trace specification
 * (trace_vlist_table_t) holds one vlist per selection key (see dcpi/insn.h); keys without a
 * vlist are ignored: the trace carries nothing for them. An empty vlist (no values) still
 * records the basic entry: pc, instruction, and the two contexts when dcpid runs with
 * -vcontext.
 *
 * Values are captured as the backend allows: the regs backend sees registers before the
 * sampled instruction runs and computes results only where an interpreter can; the step
 * backend sees every value after the instruction ran. A value a backend cannot give is marked
 * missing in the trace (trace_parser_missing), never invented.
 *
 * Ownership: tables and vlists are allocated by the builders and freed with
 * trace_vlist_table_free / trace_vlist_free. A table returned from vp_prof_init stays owned by
 * the plugin until vp_prof_done. Adding a vlist to a table copies its values.
 */
#ifndef DCPI_TRACE_VLIST_H
#define DCPI_TRACE_VLIST_H

#include "api.h"
#include "insn.h"

#define TRACE_VLIST_MAX 7

/* A value to capture. The general-purpose registers are numbered as in the x86-64 ABI's
 * register order below; operand roles follow the seed's Ra, Rb, Rc. */
typedef enum trace_value {
    TRACE_NONE = 0,
    TRACE_RAX,
    TRACE_RBX,
    TRACE_RCX,
    TRACE_RDX,
    TRACE_RSI,
    TRACE_RDI,
    TRACE_RBP,
    TRACE_RSP,
    TRACE_R8,
    TRACE_R9,
    TRACE_R10,
    TRACE_R11,
    TRACE_R12,
    TRACE_R13,
    TRACE_R14,
    TRACE_R15,
    TRACE_RIP,       /* the instruction's address */
    TRACE_RFLAGS,    /* before the instruction (regs) / after it (step) */
    TRACE_REGA,      /* first source operand's value (seed's Ra) */
    TRACE_REGB,      /* second source operand's value (seed's Rb) */
    TRACE_REGC,      /* the destination's value after the instruction: the result (seed's Rc) */
    TRACE_EA,        /* effective address of the memory operand */
    TRACE_MEMVAL,    /* the value loaded or stored by the memory operand */
    TRACE_LATENCY,   /* load latency in cycles (hardware backend only; else missing) */
    TRACE_BR_TAKEN,  /* 1 if the branch was taken, 0 if not */
    TRACE_BR_TARGET, /* the branch/call/return target address */
    TRACE_VALUE_COUNT
} trace_value_t;

typedef struct trace_vlist trace_vlist_t;
typedef struct trace_vlist_table trace_vlist_table_t;

/* A new empty specification (records nothing). NULL when out of memory. */
DCPI_API trace_vlist_table_t *trace_vlist_table_alloc(void);
DCPI_API void trace_vlist_table_free(trace_vlist_table_t *spec);
/* A new empty vlist (basic information only). NULL when out of memory. */
DCPI_API trace_vlist_t *trace_vlist_alloc(void);
DCPI_API void trace_vlist_free(trace_vlist_t *vlist);

/* Add value to vlist. 0, DCPI_EINVAL (unknown value), DCPI_EFULL (already TRACE_VLIST_MAX
 * values: the value is refused, the vlist unchanged). */
DCPI_API int trace_add_value_to_vlist(trace_vlist_t *vlist, trace_value_t value);
/* Add the values of vlist to the key's vlist in spec (creating it, empty, if the key was
 * ignored). Values already present are not added twice. DCPI_EFULL if the result would exceed
 * TRACE_VLIST_MAX (spec unchanged for that key), DCPI_EINVAL for an invalid key. */
DCPI_API int trace_add_vlist_by_opc(trace_vlist_table_t *spec, trace_opc_t opc,
                                    const trace_vlist_t *vlist);
/* For every valid key call func; the value it returns becomes the only value captured for that
 * key (TRACE_NONE: the key records the basic entry only; a negative return: the key is
 * ignored). Returns 0 or DCPI_EINVAL. */
typedef int (*trace_pick_value_fn)(const trace_opc_info_t *info);
DCPI_API int trace_set_vlist_by_pick_value(trace_vlist_table_t *spec, trace_pick_value_fn func);
/* For every valid key call selector; where it returns non-zero, add vlist's values to that
 * key's vlist (as trace_add_vlist_by_opc). Returns 0, or DCPI_EFULL if some key would exceed
 * the limit (those keys are left unchanged; the others are updated). */
typedef int (*trace_selector_fn)(const trace_opc_info_t *info);
DCPI_API int trace_add_vlist_by_select(trace_vlist_table_t *spec, trace_selector_fn selector,
                                       const trace_vlist_t *vlist);

/* ---- SDK 2 (libdcpi symbol version DCPI_0.2): instruction-level selection ----
 * A key is a mnemonic and a memory form: `call rel32` and `call rdx` share one. A filter sees
 * each instruction (its bytes, through trace_inst_operands / trace_inst_is_conditional) and a
 * symbol restriction its function (operands: trace_inst_operands in dcpi/insn.h); every backend
 * honours both: an instruction they exclude gets
 * no entries (the bp backend does not arm it; the step backend still steps through it). */

/* Keep only instructions for which fn returns non-zero (NULL: no filter). dcpid calls fn in its
 * own process, once per instruction address it meets (the answer is cached): keep it to
 * decisions on the instruction. 0 or DCPI_EINVAL. */
typedef int (*trace_inst_filter_fn)(const trace_inst_t *inst);
DCPI_API int trace_vlist_table_set_filter(trace_vlist_table_t *spec, trace_inst_filter_fn fn);
/* Keep only instructions inside functions of this name (ELF symbol of their image, e.g.
 * "copy_driver"; NULL or "": anywhere). 0, or DCPI_EINVAL for a name over 127 bytes. */
DCPI_API int trace_vlist_table_set_symbol(trace_vlist_table_t *spec, const char *symbol);
/* Keep only instructions at ELF addresses [lo, hi) of their image (the addresses dcpilist and
 * objdump show; lo == hi: anywhere). With a symbol too, both must hold. 0 or DCPI_EINVAL
 * (lo > hi). */
DCPI_API int trace_vlist_table_set_range(trace_vlist_table_t *spec, uint64_t lo, uint64_t hi);

/* SDK 2: the specification of most plugins in one call: value captured for every key selector
 * picks. NULL when out of memory or value is not a value. Free with trace_vlist_table_free. */
DCPI_API trace_vlist_table_t *trace_vlist_table_select1(trace_selector_fn selector,
                                                        trace_value_t value);

/* Reading a specification (used by dcpid and by tests). */
/* Number of values of the key's vlist, or -1 when the key is ignored. If values is not NULL it
 * receives them (TRACE_VLIST_MAX entries). */
DCPI_API int trace_vlist_table_get(const trace_vlist_table_t *spec, trace_opc_t opc,
                                   trace_value_t *values);
/* Number of values in a vlist and the i-th one. */
DCPI_API int trace_vlist_count(const trace_vlist_t *vlist);
DCPI_API trace_value_t trace_vlist_value(const trace_vlist_t *vlist, int i);
/* Name of a value ("rax", "rip", "rflags", "ra", "rb", "rc", "ea", "memval", "latency",
 * "taken", "target"), and the reverse (DCPI_EINVAL when unknown). */
DCPI_API const char *trace_value_name(trace_value_t v);
DCPI_API int trace_value_from_name(const char *name, trace_value_t *out);

#endif
