/*
 * debuginfod.h - separate debug files fetched by build-id from the debuginfod servers named in
 * DEBUGINFOD_URLS, through elfutils' libdebuginfod.so.1. The library is loaded with dlopen the
 * first time it is needed and only when DEBUGINFOD_URLS is set and non-empty: dcpi neither
 * links against it nor needs it. One client per process; the library keeps fetched files (and
 * its misses) in its cache ($DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client).
 */
#ifndef DCPI_CORE_DEBUGINFOD_H
#define DCPI_CORE_DEBUGINFOD_H

#include <stddef.h>

/*
 * The debug file of build-id id (n bytes) from debuginfod, for the ELF file at path (only named
 * in the log): 0 with *out the malloc'd path of the cached copy (the caller checks that it fits),
 * or DCPI_ENOENT when there is none: DEBUGINFOD_URLS unset or empty, debuginfod turned off in
 * this process, libdebuginfod.so.1 missing, or no server has it (or none answers). None of these
 * is an error; the first failure of the process is said once in the log (core/base/log.h).
 */
int dcpi__debuginfod_find(const unsigned char *id, size_t n, const char *path, char **out);

/* Never ask debuginfod in this process (dcpid: a fetch would stall its sampling loop). */
void dcpi_debuginfod_off(void);

/* Whether this process has loaded libdebuginfod.so.1 (for tests). */
int dcpi_debuginfod_loaded(void);

#endif
