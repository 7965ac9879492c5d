/*
 * vprof.h - value-profile files: DB/<epoch>/<platform>/<imagedir>/<vpname>.vprof, one per image
 * and value-profiler plugin (docs/dcpiformat.md, "Value profiles (.vprof)").
 *
 * The header uses the PC-profile header grammar (core/store/header.h) with version "vpdb-0.01" or
 * "vpdb-0.02" and, besides the PC-profile keys, the required keys "vprof <plugin name>",
 * "hotsize <K>" and "contexts 0|1"; "lost" counts value traces lost (ring full). The body holds,
 * for every instruction offset (bytes from tstart) with value samples, its hotlist summary
 * (core/store/vsummary.h), sorted by offset, then a footer. All little-endian:
 *   record: offset u32, nv u32, vtot u64, seen u64, err u64,
 *           [0.02 only: clusters u64, chits u64, csq u64, cagree u64]
 *           nv x (value u64, context0 u64, context1 u64, count u64)   (count desc, key asc)
 *   footer: nrecords u32, pad u32 (0), total_vtot u64, total_seen u64
 * A 0.01 record's cluster counters read as 0. The writer writes 0.02 when a written record has
 * cluster information (chits > 0), else 0.01.
 *
 * Ownership: dcpi_vprof_t objects come from dcpi_vprof_new / _parse / _read and are freed with
 * dcpi_vprof_free (NULL allowed); summaries and strings belong to the object. Not thread-safe.
 */
#ifndef DCPI_CORE_VPROF_H
#define DCPI_CORE_VPROF_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/vsummary.h"

#define DCPI_VPROF_VERSION "vpdb-0.01"
/* Records carry the cluster counters (dcpi_vsummary_t clusters, chits, csq, cagree). */
#define DCPI_VPROF_VERSION_CLUSTERS "vpdb-0.02"

typedef struct dcpi_vprof dcpi_vprof_t;

/* A new empty value profile whose summaries hold hotsize entries (0: the default 16). The
 * header gets "hotsize"; the caller sets the other required keys. 0, DCPI_EINVAL, DCPI_ENOMEM */
int dcpi_vprof_new(unsigned hotsize, dcpi_vprof_t **out);
void dcpi_vprof_free(dcpi_vprof_t *vp);

/* Header lines, as dcpi_profile_set/get. Setting "hotsize" to another value than the object's
 * is DCPI_EINVAL. */
int dcpi_vprof_set(dcpi_vprof_t *vp, const char *key, const char *value);
const char *dcpi_vprof_get(const dcpi_vprof_t *vp, const char *key);
size_t dcpi_vprof_nlines(const dcpi_vprof_t *vp);
void dcpi_vprof_line(const dcpi_vprof_t *vp, size_t i, const char **key, const char **value);
unsigned dcpi_vprof_hotsize(const dcpi_vprof_t *vp);

/* The missing-value marks that go with the profile in memory (the lines of <vpname>.vmiss files,
 * "0xOFFSET REASON\n" each, docs/dcpiformat.md; the fleet's, core/fleet/queryvals.c): the len
 * bytes of text appended (a newline added when they lack one); never encoded or written with the
 * profile. dcpi_vprof_marks: all of them, NULL when none. 0, DCPI_EINVAL or DCPI_ENOMEM. */
int dcpi_vprof_add_marks(dcpi_vprof_t *vp, const char *text, size_t len);
const char *dcpi_vprof_marks(const dcpi_vprof_t *vp);

/* The summary at offset; with create, a new empty one is added when absent. NULL if absent and
 * !create, or on ENOMEM. The pointer stays valid until the object is freed. */
dcpi_vsummary_t *dcpi_vprof_at(dcpi_vprof_t *vp, uint32_t offset, int create);
/* Number of offsets, and the i-th by increasing offset. */
size_t dcpi_vprof_count(const dcpi_vprof_t *vp);
void dcpi_vprof_entry(const dcpi_vprof_t *vp, size_t i, uint32_t *offset,
                      const dcpi_vsummary_t **s);

/*
 * Parse a whole file image; name is used in messages ("NAME: reason" in err). Returns
 * DCPI_EFORMAT, DCPI_ETRUNC or DCPI_EVERSION on: missing terminator, missing or repeated
 * required key, bad key value, wrong version, truncated record or footer, nv > hotsize,
 * unsorted or duplicate offsets, entries out of order or repeated, seen < vtot, entry counts
 * that cannot fit vtot (sum of count - err > vtot), cluster counters (0.02) that break
 * 1 <= clusters <= chits <= vtot, chits <= cagree <= csq when chits > 0 or are not all 0 when
 * chits == 0, footer mismatch, trailing bytes.
 */
int dcpi_vprof_parse(const void *buf, size_t len, const char *name, dcpi_vprof_t **out, char *err);
int dcpi_vprof_read(const char *path, dcpi_vprof_t **out, char *err);

/* Encode into a malloc'd buffer (caller frees); offsets whose summary is empty (no value and
 * no candidate sample) are not written. Version 0.02 when a written summary has chits > 0,
 * else 0.01 (the header's version line is written so). DCPI_EINVAL if a required key is
 * missing or a written summary's cluster counters break the rules the reader checks. */
int dcpi_vprof_encode(const dcpi_vprof_t *vp, void **buf, size_t *len, char *err);
/* Write atomically (core/base/fsutil.h). */
int dcpi_vprof_write(const char *path, const dcpi_vprof_t *vp, char *err);

/*
 * Merge vp into the file at path and write the result atomically. When path exists it is read
 * (malformed: error, file untouched); image, vprof, tstart and contexts must agree
 * (DCPI_EFORMAT, file untouched); summaries are merged per offset with the existing file's
 * hotsize (dcpi_vsummary_merge, cluster counters included: the result is 0.02 when it has
 * any), "lost" is summed, unknown lines of both are kept. vp is not
 * modified. When path does not exist this is dcpi_vprof_write.
 */
int dcpi_vprof_merge_write(const char *path, const dcpi_vprof_t *vp, char *err);

/* Merge src into dst in memory (dst's hotsize and header; "lost" summed, src's unknown lines
 * and missing-value marks appended). vprof, image and tstart must agree when both have them: else
 * DCPI_EINVAL. 0, DCPI_EINVAL or DCPI_ENOMEM. */
int dcpi_vprof_merge(dcpi_vprof_t *dst, const dcpi_vprof_t *src);

#endif
