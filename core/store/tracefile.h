/*
 * tracefile.h - recorded value traces (dcpid -vrecord, dcpireplay(1), docs/dcpireplay.md):
 * DB/<epoch>/<platform>/values.trace/ holds append-only segment files trace-<pid>-<n>.dtr.
 *
 * A segment is a text header in the profile header grammar (core/store/header.h, version
 * "dtr-0.01"; keys epoch, platform, event, period, cpuspeed, contexts required; cpucount,
 * hotsize, writer optional), then records, each written by one write(2):
 *   record header (12 bytes, little-endian): type u8, flags u8, zero u16, body length u32,
 *                                            CRC-32 (zlib) of the body u32
 *   MAP   (1): pid u32, zero u32, start u64, end u64, delta u64, tstart u64, tsize u64,
 *              then three strings (u16 length, bytes): image id (hex), imagedir, path.
 *              Run-time pcs in [start, end) of pid are at offset pc - start + delta from the
 *              image's tstart. A MAP replaces the earlier MAPs of pid it overlaps; it comes
 *              before the first TRACE that uses it.
 *   TRACE (2): pid u32, raw length u32, then the trace bytes exactly as handed to
 *              vp_prof_process (docs/trace-format.md), zlib-compressed when flags bit 0 is
 *              set (only when that saves at least 25%).
 *   SEEN  (3): pid u32, n u32, n x (pc u64, key u32, count u32): sampled instructions that
 *              were candidates but not admitted into a trace (rate limit), for "seen".
 *   END   (4): the trailer written on close: maps, traces, seen u64 (records written),
 *              refused u64 (records not recorded: bound reached), refused_bytes u64.
 *   CLUSTER (5): pid u32, n u32, n x cluster u64: the cluster numbers (values.h,
 *              dcpi_values_sample_t.cluster; 0: not clustered) of the n entries of the TRACE
 *              record that immediately follows it, in entry order; written only when one of
 *              them is not 0 (the inproc backend's arms), so the replayed hotlists get the live
 *              ones' cluster counters. Not counted in END (whose layout stays).
 * A reader before CLUSTER treats type 5 as a bad record (DCPI_EFORMAT: the records before it
 * were good) and reads recordings without clustered entries as before; the version stays.
 * A crash mid-write leaves a readable prefix: the reader stops at a torn tail (a record that
 * runs past the end of the file, or no trailer) and says so.
 *
 * Not thread-safe: one writer per thread.
 */
#ifndef DCPI_CORE_TRACEFILE_H
#define DCPI_CORE_TRACEFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/image/image.h"

#define DCPI_TRACEFILE_VERSION "dtr-0.01"
#define DCPI_TRACEFILE_DIR     "values.trace" /* reserved name inside <epoch>/<platform> */
#define DCPI_TRACEFILE_SUFFIX  ".dtr"
#define DCPI_TRACEFILE_RECHDR  12
#define DCPI_TRACEFILE_MAXREC  (64u << 20) /* largest record body accepted by the reader */

enum dcpi_tracefile_rec {
    DCPI_TRACEFILE_MAP = 1,
    DCPI_TRACEFILE_TRACE = 2,
    DCPI_TRACEFILE_SEEN = 3,
    DCPI_TRACEFILE_END = 4,
    DCPI_TRACEFILE_CLUSTER = 5,
};
#define DCPI_TRACEFILE_FLAG_ZLIB 0x01u

/* What the value-profile headers need: written into every segment's header. */
typedef struct dcpi_tracefile_meta {
    const char *epoch, *platform, *event;
    uint64_t period;
    unsigned cpuspeed;
    int cpucount; /* < 0: not written */
    int contexts; /* dcpid -vcontext */
    unsigned hotsize;
} dcpi_tracefile_meta_t;

/* Writer counters (also the trailer). */
typedef struct dcpi_tracefile_stats {
    uint64_t maps, traces, seen; /* records written */
    uint64_t compressed;         /* TRACE records stored compressed */
    uint64_t refused;            /* records not recorded (the bound was reached) */
    uint64_t refused_bytes;      /* their uncompressed bytes */
    uint64_t bytes;              /* bytes of all segments of the directory, this one included */
    uint64_t clusters;           /* CLUSTER records written or read (not in the trailer) */
} dcpi_tracefile_stats_t;

typedef struct dcpi_tracefile dcpi_tracefile_t;

/*
 * Create dir (DB/<epoch>/<platform>/values.trace) if needed and a new segment
 * trace-<getpid()>-<n>.dtr in it (first free n), and write its header. max_bytes bounds the
 * sum of the sizes of all segments in dir (existing ones included; 0: no bound): once a record
 * would pass it (room for the trailer kept), that record and every later one are refused and
 * counted. 0, DCPI_EINVAL (missing meta), or a negative DCPI_E* with "PATH: reason" in err.
 */
int dcpi_tracefile_open(const char *dir, const dcpi_tracefile_meta_t *meta, uint64_t max_bytes,
                        dcpi_tracefile_t **out, char *err);

/*
 * Record that pcs in [start, end) of pid are at offset pc - start + delta from the image's
 * tstart. Written only when this exact mapping is not the one remembered for pid already
 * (the writer forgets pid's remembered mappings that the new one overlaps), so calling it for
 * every entry is cheap. image_id: hex; imagedir: dcpi_image_dirname's answer. 0 (written or
 * already known), DCPI_EFULL (refused: bound), DCPI_EINVAL, or a failed write's
 * code (DCPI_EIO, DCPI_ENOSPC, ...).
 */
int dcpi_tracefile_map(dcpi_tracefile_t *w, unsigned pid, uint64_t start, uint64_t end,
                       uint64_t delta, const char *image_id, const char *imagedir, const char *path,
                       uint64_t tstart, uint64_t tsize);

/* Forget the mappings remembered for pid (after exec or exit; optional: MAP records that
 * overlap replace older ones anyway). */
void dcpi_tracefile_forget_pid(dcpi_tracefile_t *w, unsigned pid);

/* Record one whole trace of pid (the bytes handed to vp_prof_process). Pending SEEN pairs
 * are written first. 0, DCPI_EFULL (refused), DCPI_EINVAL, or a failed write's
 * code (DCPI_EIO, DCPI_ENOSPC, ...). */
int dcpi_tracefile_trace(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len);

/* The same with the cluster numbers of the trace's n entries (in entry order; clusters may be
 * NULL when n is 0): when one of them is not 0, a CLUSTER record is written right before the
 * TRACE record (pending SEEN pairs before both), and the bound takes or refuses the two
 * together (a refused pair counts two records). Otherwise dcpi_tracefile_trace. n is not
 * checked against the trace's entries (the reader of the TRACE counts them). */
int dcpi_tracefile_trace_clustered(dcpi_tracefile_t *w, unsigned pid, const void *buf, size_t len,
                                   const uint64_t *clusters, uint32_t n);

/* count candidate samples of (pid, pc, key) not admitted into a trace. Buffered; written as
 * SEEN records (when 512 are pending, before each TRACE and at close). */
int dcpi_tracefile_seen(dcpi_tracefile_t *w, unsigned pid, uint64_t pc, uint32_t key,
                        uint32_t count);

/* Counters so far. */
void dcpi_tracefile_stats(const dcpi_tracefile_t *w, dcpi_tracefile_stats_t *out);
/* The segment's path. */
const char *dcpi_tracefile_path(const dcpi_tracefile_t *w);

/* Write pending SEEN pairs and the trailer, close, free (NULL allowed). 0 or the first error
 * of the writer's life (also for refusals: DCPI_EFULL), with err. */
int dcpi_tracefile_close(dcpi_tracefile_t *w, char *err);

/*
 * The linear piece of a mapping holding ip, for dcpi_tracefile_map: the mapping starts at
 * start with file offset pgoff; the piece is the part of the mapping inside the ELF segment
 * holding ip's file offset (a non-ELF image is linear throughout). *lo, *hi: run-time
 * [lo, hi); *delta: offset from tstart = pc - lo + *delta. DCPI_ERANGE when ip is below tstart.
 */
int dcpi_tracefile_map_range(const dcpi_image_info_t *info, uint64_t ip, uint64_t start,
                             uint64_t pgoff, uint64_t *lo, uint64_t *hi, uint64_t *delta);

/* ---------------------------------------------------------------- reading */

typedef struct dcpi_tracefile_reader dcpi_tracefile_reader_t;

/* One record; pointers stay valid until the next dcpi_tracefile_next or close. */
typedef struct dcpi_tracefile_record {
    int type;        /* enum dcpi_tracefile_rec (never END: the trailer ends the iteration) */
    uint64_t offset; /* of the record in the file */
    unsigned pid;
    /* MAP */
    uint64_t start, end, delta, tstart, tsize;
    const char *image_id, *imagedir, *path;
    /* TRACE: the trace bytes (decompressed) */
    const uint8_t *data;
    size_t len;
    int was_compressed;
    /* SEEN: n triples (pc u64, key u32, count u32) little-endian, 16 bytes each */
    const uint8_t *pairs;
    uint32_t npairs;
    /* CLUSTER: n cluster numbers u64 little-endian (dcpi_tracefile_cluster_at) */
    const uint8_t *clusters;
    uint32_t nclusters;
} dcpi_tracefile_record_t;

/* Read a segment; its header is parsed (malformed: DCPI_EFORMAT/DCPI_EVERSION, one line). */
int dcpi_tracefile_reader_open(const char *path, dcpi_tracefile_reader_t **out, char *err);
void dcpi_tracefile_reader_close(dcpi_tracefile_reader_t *r);
/* A header value, NULL when absent. */
const char *dcpi_tracefile_reader_get(const dcpi_tracefile_reader_t *r, const char *key);
/*
 * The next record: 1 with *rec filled; 0 at the trailer (whose counts matched the records
 * read; *trailer, may be NULL, gets them); DCPI_ETRUNC at a torn tail (a record running past
 * the end, or the end of the file without a trailer): the records before it were good;
 * DCPI_EFORMAT for a bad record (checksum, unknown type, bad field, trailer mismatch, bytes
 * after the trailer). A CLUSTER record is handed out like the others (its pairing with the
 * next TRACE is the caller's: dcpireplay checks n against the TRACE's entries). Errors are sticky
 * and name the file and offset in err.
 */
int dcpi_tracefile_next(dcpi_tracefile_reader_t *r, dcpi_tracefile_record_t *rec,
                        dcpi_tracefile_stats_t *trailer, char *err);
/* SEEN triple i of rec. */
void dcpi_tracefile_seen_at(const dcpi_tracefile_record_t *rec, uint32_t i, uint64_t *pc,
                            uint32_t *key, uint32_t *count);
/* Cluster number i (< rec->nclusters) of a CLUSTER record: that of the i-th entry of the
 * TRACE record after it. */
uint64_t dcpi_tracefile_cluster_at(const dcpi_tracefile_record_t *rec, uint32_t i);

/* The segment files of dir (names ending in .dtr), sorted; caller frees with
 * dcpi_db_free_list. DCPI_ENOENT when dir does not exist. */
int dcpi_tracefile_list(const char *dir, char ***names, size_t *n, char *err);

#endif
