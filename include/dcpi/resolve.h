/*
 * dcpi/resolve.h - code addresses of a running process as image, ELF address and symbol, for
 * value-profiler plugins (SDK 2, libdcpi symbol version DCPI_0.2): from vp_prof_process (in its
 * worker process), map a run-time address a trace carries (a call target, a return address, a
 * code pointer) to the image that holds it, its address in that image's ELF file (stable across
 * runs: no ASLR) and the function containing it. A value stored image-relative can then be
 * printed as symbol+offset by dcpilist through vp_context_t.symbolize (dcpi/vprofiler.h).
 *
 *     dcpi_resolved_t r;
 *     if (dcpi_resolve(pid, target, &r) == 0 && r.symbol)
 *         ... r.path, r.vaddr, r.symbol, r.symoff ...
 *
 * Executable mappings only (from /proc/PID/maps, read again when an address is not found, so
 * code mapped later is seen); symbols from the file's .symtab / .dynsym (or its debug file).
 * Cached for the life of the process (dcpi_resolve_reset frees it). Not thread-safe.
 */
#ifndef DCPI_RESOLVE_H
#define DCPI_RESOLVE_H

#include <stdint.h>
#include "api.h"

typedef struct dcpi_resolved {
    const char *path;     /* the mapped file (or "[vdso]"), as in /proc/PID/maps */
    const char *build_id; /* its id (ELF build-id, else a hash), lower-case hex */
    uint64_t vaddr;       /* the address in the file's ELF address space */
    const char *symbol;   /* the function holding it, NULL when no symbol does */
    uint64_t symoff;      /* vaddr - the function's start (0 without symbol) */
} dcpi_resolved_t;

/* Resolve addr in process pid: 0, DCPI_ESRCH (no such process, e.g. replayed traces of a
 * process long gone), DCPI_ENOENT (no executable mapping holds addr), DCPI_ENOMEM. The strings
 * stay valid until dcpi_resolve_reset. */
DCPI_API int dcpi_resolve(unsigned pid, uint64_t addr, dcpi_resolved_t *out);
/* Forget every cached mapping and symbol table. */
DCPI_API void dcpi_resolve_reset(void);

#endif
