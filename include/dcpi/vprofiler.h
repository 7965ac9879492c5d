/*
 * dcpi/vprofiler.h - the value-profiler plugin ABI (vprofiler(5), docs/vprofiler.md).
 *
 * A plugin is a shared object exporting one table, `_dispatch`, of type vp_dispatch_t. Its
 * first two fields are the ABI version and the struct size; then the seed's entries in the
 * seed's order. New entries only ever go at the end, under a comment naming the ABI that added
 * them; the loader reads no field past the plugin's struct_size.
 *
 * dcpid calls: vp_name, vp_load (after dlopen), vp_prof_init (what to capture), then
 * vp_prof_process for every batch of trace entries of one process, vp_prof_done, vp_unload
 * (before dlclose). dcpilist calls vp_name, vp_load, then for each instruction with a hotlist
 * vp_preface once and vp_format once per value shown, then vp_unload.
 *
 * Everything in a plugin but `_dispatch` should be static.
 *
 * Processes: vp_name, vp_load and vp_prof_init run in dcpid; vp_prof_process runs in a worker
 * process of its own, forked from dcpid after vp_prof_init (so it sees the state vp_prof_init
 * built, but what it changes stays in the worker: keep per-trace state there, not results
 * dcpid should see); vp_prof_done and vp_unload run in dcpid. A worker that crashes, hangs
 * (watchdog, -vtimeout) or returns more than VSAMPLE_BUFFER_SIZE vsamples disables its plugin
 * only; dcpireplay runs vp_prof_process in workers the same way. dcpilist and `dcpid -vinproc`
 * call everything in their own process.
 *
 * Lifetimes: the string of vp_name is copied by the loader once; the strings of vp_preface and
 * vp_format must stay valid until the next call of the same entry (static buffers are fine).
 * The vsample buffer returned by vp_prof_process must stay valid until the next call; the
 * parser and the instructions it returns are valid during the call only.
 *
 * What ABI 1 freezes (a plugin built against it loads and behaves the same in every later
 * dcpi): the first ten fields of vp_dispatch_t and their signatures, vsample_t,
 * VSAMPLE_BUFFER_SIZE, the numbering of trace_value_t and of the keys' classes, the values of
 * TRACE_PARSE_END (-1) and TRACE_PARSE_ERROR (-2) - which equal DCPI_EPERM and DCPI_ENOENT
 * numerically; they are trace_parser_next's own codes, never dcpi_strerror's - and the
 * functions of trace-vlist.h, trace-parse.h and insn.h. Later ABIs only append, and only for a
 * plugin that asks for them with VP_WANT_ABI: ABI 2 adds vp_context_t, vp_preface2 and
 * vp_format2 to this header, and to libdcpi (symbol version DCPI_0.2) dcpi/trace-test.h,
 * dcpi/resolve.h, trace_parser_backend and trace_parser_burst_index, usable by any plugin.
 *
 * Errors: vp_prof_process returns a negative DCPI_E* code (dcpi/errno.h, e.g. DCPI_EFORMAT
 * for a trace it cannot read) to report a failure: counted, logged once, not fatal.
 */
#ifndef DCPI_VPROFILER_H
#define DCPI_VPROFILER_H

#include <stdint.h>
#include "api.h"
#include "errno.h"
#include "insn.h"
#include "trace-parse.h"
#include "trace-vlist.h"

/* The newest ABI this header describes; dcpi loads plugins of every ABI from 1 to it. */
#define VP_ABI_LATEST 2
/* The ABI a plugin is written against: 1 unless the plugin defines VP_WANT_ABI (e.g. 2, for
 * vp_preface2 / vp_format2) before including this header, so that a plugin written for ABI 1
 * compiles unchanged, without warnings, and declares ABI 1. */
#ifndef VP_WANT_ABI
#define VP_WANT_ABI 1
#endif
#if VP_WANT_ABI < 1 || VP_WANT_ABI > VP_ABI_LATEST
#error "VP_WANT_ABI: this dcpi knows plugin ABIs 1 to 2"
#endif
#define VP_ABI_VERSION VP_WANT_ABI

/* One reduced value: which instruction (pc: its run-time address), the value, two contexts. */
typedef struct vsample {
    uint64_t pc;
    uint64_t value;
    uint64_t context0;
    uint64_t context1;
} vsample_t;

/*
 * SDK 2: "missing" as a value. A vsample whose context0 is VP_CONTEXT_MISSING (an address no
 * code has) and whose value is 0 counts an execution whose value the backend could not capture:
 * it takes its share of the hotlist like any value, and dcpilist prints it as "missing" (the
 * plugin's vp_format is not asked). vp_missing(pc) makes one. Plugins built before SDK 2 never
 * produce it (their contexts are return addresses or 0).
 */
#define VP_CONTEXT_MISSING 1ull
static inline vsample_t vp_missing(uint64_t pc)
{
    vsample_t v = {pc, 0, VP_CONTEXT_MISSING, 0};
    return v;
}

/* vp_prof_process returns at most this many vsamples per call; the trace it is given never
 * holds more entries than this. */
#define VSAMPLE_BUFFER_SIZE 4096

/*
 * ABI 2: what dcpilist knows about the instruction whose hotlist it prints, for vp_preface2 and
 * vp_format2. Valid during the call only. size is sizeof(vp_context_t) as dcpi built it: fields
 * are only ever appended, so check size before reading a field a later ABI adds.
 */
typedef struct vp_context {
    uint32_t size;
    uint64_t pc;          /* the instruction's address in the listing (its image's ELF vaddr) */
    uint64_t offset;      /* bytes from the image's text start (tstart) */
    const char *image;    /* the image's path */
    const char *build_id; /* its id (lower-case hex) */
    const char *epoch;    /* the profile's epoch */
    const char *backend;  /* as trace_parser_backend; "" when the profile does not say */
    /* "symbol+0xoff" (or "symbol") of an ELF address vaddr of this image, e.g. a value stored
     * image-relative with dcpi_resolve (dcpi/resolve.h); NULL when no symbol holds it. The
     * string is valid until the next symbolize call. */
    const char *(*symbolize)(const struct vp_context *ctx, uint64_t vaddr);
    void *dcpi_private; /* dcpi's */
} vp_context_t;

typedef struct vp_dispatch {
    uint32_t abi_version; /* VP_ABI_VERSION the plugin was built against */
    uint32_t struct_size; /* sizeof(vp_dispatch_t) the plugin was built against */
    /* ABI 1 (the seed's entries, in the seed's order) */
    /* Required. The profile's name: stable, non-empty, no '/', not "values", "values.replay" or
     * "values.trace"; used to name value-profile files. */
    const char *(*vp_name)(void);
    /* Optional. Called after loading; non-zero = failure (the plugin is then unloaded). */
    int (*vp_load)(void);
    /* Optional. Called before unloading. */
    void (*vp_unload)(void);
    /* Required. What to capture: a specification built with dcpi/trace-vlist.h. */
    trace_vlist_table_t *(*vp_prof_init)(void);
    /* Optional. Profiling is over: free the specification and other state. */
    void (*vp_prof_done)(void);
    /* Required. Reduce one trace of process pid into at most VSAMPLE_BUFFER_SIZE vsamples in a
     * plugin-owned buffer; *vsamples points to it; returns the count (negative: error). */
    int (*vp_prof_process)(unsigned pid, trace_parser_t *parser, vsample_t **vsamples);
    /* Optional. Text printed before an instruction's hotlist (NULL: omit the hotlist). */
    const char *(*vp_preface)(const trace_inst_t *inst);
    /* Optional. One value formatted for printing (NULL entry: dcpilist prints hex). */
    const char *(*vp_format)(const trace_inst_t *inst, uint64_t value);
#if VP_WANT_ABI >= 2
    /* ABI 2 (#define VP_WANT_ABI 2) */
    /* Optional. vp_preface / vp_format with the instruction's context (pc, image, epoch,
     * backend, a symbolizer): dcpilist calls them instead of the ABI-1 pair when present. The
     * same string lifetimes. */
    const char *(*vp_preface2)(const vp_context_t *ctx, const trace_inst_t *inst);
    const char *(*vp_format2)(const vp_context_t *ctx, const trace_inst_t *inst, uint64_t value);
#endif
} vp_dispatch_t;

/* Initializer for the two header fields: vp_dispatch_t _dispatch = { VP_DISPATCH_HEADER, ... } */
#define VP_DISPATCH_HEADER VP_ABI_VERSION, (uint32_t)sizeof(vp_dispatch_t)

/* Export marker for the one symbol a plugin exports (plugins build with -fvisibility=hidden). */
#define VP_EXPORT __attribute__((visibility("default")))

#endif
