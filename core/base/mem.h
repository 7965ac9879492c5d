/*
 * mem.h - checked growth of malloc'd arrays: sizes that would overflow size_t fail like an
 * allocation failure instead of wrapping around to a short buffer.
 */
#ifndef DCPI_CORE_BASE_MEM_H
#define DCPI_CORE_BASE_MEM_H

#include <stddef.h>

/*
 * Make the array *p (*cap elements of elem bytes) hold at least need elements: when it is too
 * small the capacity doubles (from 16) until it fits and the array is reallocated with
 * reallocarray. Returns 0, or DCPI_ENOMEM (overflow or no memory) with *p and *cap untouched.
 */
int dcpi__grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
