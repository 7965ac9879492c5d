/*
 * dcpi/profile.h - one PC profile file (dcpiformat(4), binary version 0.07).
 *
 * A profile holds the samples of one image for one event: an ASCII header of "key value" lines
 * terminated by "samples\n" (padded so the binary part starts at a multiple of 4), then chunks
 * <offset u32><number u32><count u32 x number> sorted and non-overlapping, then the footer
 * <total_offsets u32><total_samples u32>, all little-endian. Offsets are bytes from "tstart".
 * docs/dcpiformat.md documents every key.
 *
 * Ownership: dcpi_profile_t objects come from dcpi_profile_new / dcpi_profile_read and are freed
 * with dcpi_profile_free (NULL allowed). Strings returned by getters belong to the profile.
 * Not thread-safe; one thread per profile object.
 */
#ifndef DCPI_PROFILE_H
#define DCPI_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "api.h"

/* The version line written into every header. */
#define DCPI_PROFILE_VERSION "pdb-0.07"

typedef struct dcpi_profile dcpi_profile_t;

/* One (offset, count) pair, as returned by dcpi_profile_entries. */
typedef struct dcpi_profile_entry {
    uint32_t offset;
    uint32_t count;
} dcpi_profile_entry_t;

/* A new, empty profile: no header lines, no samples. Returns 0 or DCPI_ENOMEM. */
DCPI_API int dcpi_profile_new(dcpi_profile_t **out);
DCPI_API void dcpi_profile_free(dcpi_profile_t *p);

/*
 * Set header key to value: replaces the first line with that key (keeping its position) or
 * appends a new line. Keys are one word; values one line without '\n'.
 * Values may not start or end with a blank; the key "samples" is reserved; values of the keys
 * docs/dcpiformat.md lists (version, image, epoch, period, tstart, ...) must have their syntax.
 * Returns 0, DCPI_EINVAL (bad key/value) or DCPI_ENOMEM.
 */
DCPI_API int dcpi_profile_set(dcpi_profile_t *p, const char *key, const char *value);
/* Printf form of dcpi_profile_set. */
DCPI_API int dcpi_profile_setf(dcpi_profile_t *p, const char *key, const char *fmt, ...)
    DCPI_PRINTF(3, 4);
/* Value of the first line with key, or NULL. */
DCPI_API const char *dcpi_profile_get(const dcpi_profile_t *p, const char *key);
/* Numeric getters: 0 on success, DCPI_ENOENT if absent, DCPI_EFORMAT if not a number.
 * get_u64 reads decimal; get_hex reads hex (with or without 0x). */
DCPI_API int dcpi_profile_get_u64(const dcpi_profile_t *p, const char *key, uint64_t *out);
DCPI_API int dcpi_profile_get_hex(const dcpi_profile_t *p, const char *key, uint64_t *out);
/* Header lines in file order (all of them, known and unknown). */
DCPI_API size_t dcpi_profile_nlines(const dcpi_profile_t *p);
DCPI_API void dcpi_profile_line(const dcpi_profile_t *p, size_t i, const char **key,
                                const char **value);

/*
 * Add count samples at offset (bytes from tstart). Counts saturate at UINT32_MAX; saturation is
 * reported by returning DCPI_ERANGE (the count is then clamped, never wrapped).
 */
DCPI_API int dcpi_profile_add(dcpi_profile_t *p, uint32_t offset, uint32_t count);
/* Add every sample of src into dst (header of dst unchanged). */
DCPI_API int dcpi_profile_add_all(dcpi_profile_t *dst, const dcpi_profile_t *src);
/* Entries sorted by offset, counts > 0. The array belongs to p and is valid until the next
 * modification of p. */
DCPI_API const dcpi_profile_entry_t *dcpi_profile_entries(const dcpi_profile_t *p, size_t *n);
/* Sum of all counts (64-bit, no saturation). */
DCPI_API uint64_t dcpi_profile_total(const dcpi_profile_t *p);
/* Count at one offset (0 if none). */
DCPI_API uint32_t dcpi_profile_count_at(const dcpi_profile_t *p, uint32_t offset);

/*
 * Parse a whole file image. name is used in error messages. On failure returns DCPI_EFORMAT,
 * DCPI_ETRUNC or DCPI_EVERSION and writes one line "NAME: reason" into err (DCPI_ERRLEN bytes,
 * may be NULL). Rejected: missing terminator, missing or repeated required key (version, image,
 * epoch, platform, event, period, tstart, tsize, cpuspeed), malformed key values, truncated
 * chunk, overlapping or unsorted chunks, footer that does not match the chunks, trailing bytes.
 */
DCPI_API int dcpi_profile_parse(const void *buf, size_t len, const char *name, dcpi_profile_t **out,
                                char *err);
/* Read and parse a file (as dcpi_profile_parse; I/O errors also give "PATH: strerror"). */
DCPI_API int dcpi_profile_read(const char *path, dcpi_profile_t **out, char *err);

/*
 * Encode into a malloc'd buffer (caller frees). Fails with DCPI_EINVAL and a message if a
 * required key is missing ("version pdb-0.07" is written first when p has no version line).
 * The header is padded with spaces at the end of its last line
 * before "samples" so the binary part starts at a multiple of 4.
 */
DCPI_API int dcpi_profile_encode(const dcpi_profile_t *p, void **buf, size_t *len, char *err);

/*
 * Write p to path atomically: a temporary file in the same directory created with O_EXCL,
 * written, fsync'd, renamed over path, directory fsync'd. Never follows a symlink at path.
 */
DCPI_API int dcpi_profile_write(const char *path, const dcpi_profile_t *p, char *err);

/*
 * Merge p into the profile at path and write the result atomically: when path exists it is
 * read (a malformed existing file is an error, and is left untouched), its counts are added to
 * p's, its unknown header lines are preserved, numeric "lost" values are summed, and the
 * required keys must agree (image, event, period, tstart): a mismatch is DCPI_EFORMAT.
 * When path does not exist this is dcpi_profile_write. p itself is not modified.
 */
DCPI_API int dcpi_profile_merge_write(const char *path, const dcpi_profile_t *p, char *err);

#endif
