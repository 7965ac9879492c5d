/*
 * hash.h - the 64-bit FNV-1a hash, used where a stable, portable hash of bytes names something
 * (image ids of files without a build-id, the kernel and vdso ids, image table buckets).
 */
#ifndef DCPI_CORE_BASE_HASH_H
#define DCPI_CORE_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_FNV64_OFFSET 0xcbf29ce484222325ULL /* the hash of no bytes: start here */
#define DCPI_FNV64_PRIME  0x100000001b3ULL

/* Continue hash h over len bytes of data (h = DCPI_FNV64_OFFSET for a fresh hash). */
static inline uint64_t dcpi__fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= DCPI_FNV64_PRIME;
    }
    return h;
}

#endif
