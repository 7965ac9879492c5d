/*
 * bytes.h - byte order of the binary file formats: unaligned little-endian loads and stores of
 * 16, 32 and 64-bit values (every dcpi file body is little-endian), and unaligned host-order
 * loads for data the kernel writes in the machine's own order (perf records, ELF notes).
 */
#ifndef DCPI_CORE_BASE_BYTES_H
#define DCPI_CORE_BASE_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t dcpi__get_le16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return le16toh(v);
}

static inline uint32_t dcpi__get_le32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static inline uint64_t dcpi__get_le64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

/* The stores return the byte after the value, for writing a record field after field. */
static inline unsigned char *dcpi__put_le16(void *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, sizeof v);
    return (unsigned char *)p + sizeof v;
}

static inline unsigned char *dcpi__put_le32(void *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
    return (unsigned char *)p + sizeof v;
}

static inline unsigned char *dcpi__put_le64(void *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
    return (unsigned char *)p + sizeof v;
}

static inline uint32_t dcpi__get_host32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t dcpi__get_host64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif
