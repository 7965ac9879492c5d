/*
 * procprof.h - per-process counts of one image and event: "<event>.procs" next to the
 * "<event>.prof" it splits, in the same image directory (core/store/db.h). dcpiprof -pid/-comm
 * and -procs read them; the unknown@<platform> directory has one too (offset 0 only), so
 * samples no image could take are still counted per process.
 *
 * File: the line "dcpiprocs 1\n", then one group per (pid, command name): varint pid, one
 * byte n (1..15) and n name bytes (no NUL, no '\n'), varint count of entries, then per entry
 * varint offset (the first from 0, the others from the previous offset, increasing) and
 * varint count (>= 1). Groups are sorted by (pid, name) and unique. Varints are LEB128 (7 bits
 * a byte, low first, at most 10 bytes). The sum of a file's counts per offset equals the
 * .prof's (the daemon writes both from the same table; a .prof from before per-process counts
 * has no .procs).
 *
 * Version 2 ("dcpiprocs 2\n", what dcpid writes) is appended to instead of rewritten: after
 * the line, chunks of u32 length, u32 crc32 (zlib's, of the payload), payload (little-endian);
 * a payload is a version 1 body (groups sorted and unique within the chunk; the same group may
 * come again in a later chunk: readers add them up). A flush appends one chunk; the file is
 * rewritten as one chunk (atomically) when it has DCPI_PROCPROF_MAX_CHUNKS. A last chunk that
 * runs past the end of the file is a writer killed while it appended: readers leave it out
 * (dcpi_procprof_t.torn counts its bytes), the next append cuts it off first. A whole chunk
 * with a wrong checksum is damage.
 */
#ifndef DCPI_CORE_STORE_PROCPROF_H
#define DCPI_CORE_STORE_PROCPROF_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_PROCPROF_COMMLEN 16
#define DCPI_PROCPROF_SUFFIX  ".procs"

typedef struct dcpi_procprof_entry {
    uint32_t pid;
    char comm[DCPI_PROCPROF_COMMLEN];
    uint32_t offset;
    uint64_t count;
} dcpi_procprof_entry_t;

typedef struct dcpi_procprof {
    dcpi_procprof_entry_t *e;
    size_t n, cap;
    size_t torn;   /* bytes of unfinished appends left out by the parses (version 2) */
} dcpi_procprof_t; /* zero-initialize */

/* Chunks a version 2 file holds at most before an append rewrites it as one. */
#define DCPI_PROCPROF_MAX_CHUNKS 32

/* Append one count (comm cut to 15 bytes; a '\n' becomes '?'). 0 or DCPI_ENOMEM. */
int dcpi_procprof_add(dcpi_procprof_t *p, uint32_t pid, const char *comm, uint32_t offset,
                      uint64_t count);
/* Sort by (pid, comm, offset) and add up equal keys. */
void dcpi_procprof_normalize(dcpi_procprof_t *p);
void dcpi_procprof_free(dcpi_procprof_t *p);

/* Parse a file's bytes (name for messages) into *out (appended). 0, DCPI_EFORMAT with
 * "NAME: reason" in err, DCPI_ENOMEM. */
int dcpi_procprof_parse(const void *buf, size_t len, const char *name, dcpi_procprof_t *out,
                        char *err);
/* Read path into *out (appended). DCPI_ENOENT when there is none. */
int dcpi_procprof_read(const char *path, dcpi_procprof_t *out, char *err);
/* The encoded bytes of p (normalized first) in a malloc'd buffer. */
int dcpi_procprof_encode(dcpi_procprof_t *p, unsigned char **buf, size_t *len);
/* Add p to the file at path (created when absent), atomically. */
int dcpi_procprof_merge_write(const char *path, dcpi_procprof_t *p, char *err);
/* Add p to the file at path as one more version 2 chunk, written in place after the file's last
 * whole chunk (fdatasync'd unless dcpi__sync_defer is on): O(p), not O(file). A file that is
 * absent, of version 1, or holds DCPI_PROCPROF_MAX_CHUNKS chunks is rewritten atomically as one
 * chunk with p added. *torn gets the bytes of an unfinished append cut off first (0: none). A
 * crash leaves the old chunks whole and at most a prefix of the new one. 0 or DCPI_E* with
 * "PATH: reason" in err. */
int dcpi_procprof_append(const char *path, dcpi_procprof_t *p, uint64_t *torn, char *err);

#endif
