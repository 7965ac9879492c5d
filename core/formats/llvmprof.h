/*
 * llvmprof.h - LLVM's sample profile (the text form `llvm-profdata merge -sample` reads and
 * clang's -fprofile-sample-use takes once merged; docs/dcpiexport.md "-format llvm"): per
 * function its total and head samples, its body samples per source position (line offset from
 * the function's DW_AT_decl_line, LLVM's base discriminator), the targets of the calls at a
 * position with their counts, and the functions inlined at a position as nested sections.
 *
 *     dcpi_llvmprof_t *p;
 *     dcpi_llvmprof_new(&p);
 *     dcpi_llvmfn_t *f = dcpi_llvmprof_func(p, "run");
 *     dcpi_llvmfn_t *g = dcpi_llvmfn_inlined(f, 5, 1, "mix");   // "mix" inlined at 5.1
 *     dcpi_llvmfn_body(g, 1, 0, 1000);
 *     dcpi_llvmfn_target(f, 5, 0, "f_add", 700);
 *     dcpi_llvmprof_write(p, out);
 *     dcpi_llvmprof_free(p);
 *
 * Totals are computed when written. Names are copied. Not thread-safe.
 */
#ifndef DCPI_CORE_FORMATS_LLVMPROF_H
#define DCPI_CORE_FORMATS_LLVMPROF_H

#include <stdint.h>
#include <stdio.h>

typedef struct dcpi_llvmprof dcpi_llvmprof_t;
typedef struct dcpi_llvmfn dcpi_llvmfn_t;

int dcpi_llvmprof_new(dcpi_llvmprof_t **out);
void dcpi_llvmprof_free(dcpi_llvmprof_t *p);

/* The top-level function of that name (created when absent); NULL on ENOMEM. With create 0,
 * NULL when absent. */
dcpi_llvmfn_t *dcpi_llvmprof_func(dcpi_llvmprof_t *p, const char *name, int create);
/* Number of top-level functions. */
size_t dcpi_llvmprof_count(const dcpi_llvmprof_t *p);

/* The section of callee inlined at (off, disc) of fn (created when absent); NULL on ENOMEM. */
dcpi_llvmfn_t *dcpi_llvmfn_inlined(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc,
                                   const char *callee);
/* count more body samples at (off, disc). 0 or DCPI_ENOMEM. */
int dcpi_llvmfn_body(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc, uint64_t count);
/* count more calls to callee at (off, disc). 0 or DCPI_ENOMEM. */
int dcpi_llvmfn_target(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc, const char *callee,
                       uint64_t count);
/* The body samples at (off, disc) so far. */
uint64_t dcpi_llvmfn_body_at(const dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc);
/* count more samples at the function's entry (top-level functions). A function's head
 * samples, when written, are the larger of the calls into it (the targets naming it, over the
 * whole profile) and its entry samples. */
void dcpi_llvmfn_add_entry(dcpi_llvmfn_t *fn, uint64_t count);
uint64_t dcpi_llvmfn_entry(const dcpi_llvmfn_t *fn);

/* The text form: functions by decreasing total, positions in increasing order. 0 or -errno. */
int dcpi_llvmprof_write(dcpi_llvmprof_t *p, FILE *out);

/* GCC's AutoFDO profile of the same content (the gcov form AutoFDO's create_gcov writes,
 * AUTO_PROFILE_VERSION 2, as GCC 12's -fauto-profile reads it): a name table, the functions
 * with their head counts, positions (line offset << 16 | discriminator; GCC 12 uses the line
 * only), call targets and inlined instances, and the working set. 0 or a negative DCPI_E*. */
int dcpi_llvmprof_write_afdo(dcpi_llvmprof_t *p, FILE *out);

/* LLVM's base discriminator of a discriminator as DWARF stores it with
 * -fdebug-info-for-profiling (llvm/Support/Discriminator.h, getUnsignedFromPrefixEncoding:
 * 6 -> 3; an odd value -> 0). */
unsigned dcpi_llvm_base_discriminator(unsigned d);
/* A line's offset from its function's declaration line, as LLVM keys it (16 bits). */
uint32_t dcpi_llvm_line_offset(int line, int decl_line);

#endif
