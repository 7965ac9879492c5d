/*
 * stackprof.h - stack profiles (docs/stackformat.md): one epoch's call chains of one event on
 * one platform, aggregated as (chain of frames, count), kept in DB/<epoch>/<platform>/stacks/
 * <event>.stk. A frame is (image index, offset from that image's tstart); frame 0 is the
 * sampled PC (the leaf), frames 1.. are the callers' return addresses, as perf gives them.
 *
 * Use in dcpid (-g):
 *
 *     dcpi_stackprof_t *sp;
 *     dcpi_stackprof_new(0, &sp);                            // default limit
 *     dcpi_stackprof_set(sp, "epoch", ...); ... "platform", "event", "period"
 *     int img = dcpi_stackprof_image(sp, id, imagedir, path, tstart, tsize);  // once per image
 *     dcpi_frame_t f[] = {{img, leaf_off}, {img, ret_off}, ...};
 *     dcpi_stackprof_add(sp, f, n, 1);                      // no allocation for a known chain
 *     if (dcpi_stackprof_needs_flush(sp)) {                 // 75% of the limit
 *         dcpi_stackprof_merge_write(path, sp, err);         // atomic merge into the file
 *         dcpi_stackprof_reset(sp);                          // chains gone, images and keys kept
 *     }
 *
 * Not thread-safe.
 */
#ifndef DCPI_CORE_STACKPROF_H
#define DCPI_CORE_STACKPROF_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_STACKPROF_VERSION "stk-0.01"
/* Frames kept per chain (perf's default kernel.perf_event_max_stack is 127); deeper chains are
 * cut to their innermost DCPI_STACK_MAXFRAMES frames and counted in "truncated". */
#define DCPI_STACK_MAXFRAMES 128
/* Default limit on distinct chains held in memory. */
#define DCPI_STACKPROF_DEFAULT_CHAINS 16384
/* Frames held in memory are limited to DCPI_STACKPROF_FRAMES_PER_CHAIN x the chain limit. */
#define DCPI_STACKPROF_FRAMES_PER_CHAIN 32
/* Image index of a frame outside every known image (its offset is then the raw address's low
 * 32 bits, informative only). */
#define DCPI_STACK_NOIMAGE 0xffffffffu

typedef struct dcpi_frame {
    uint32_t image;  /* index from dcpi_stackprof_image, or DCPI_STACK_NOIMAGE */
    uint32_t offset; /* bytes from the image's tstart */
} dcpi_frame_t;

typedef struct dcpi_stack_image {
    char *id;   /* image id (lowercase hex), as in the PC profiles' "image" key */
    char *dir;  /* image directory name in the database ("<basename>_<id>") */
    char *path; /* path when sampled ("" when unknown) */
    uint64_t tstart, tsize;
} dcpi_stack_image_t;

typedef struct dcpi_stackprof dcpi_stackprof_t;

/* A new empty stack profile holding at most max_chains distinct chains (0: the default).
 * 0, DCPI_EINVAL or DCPI_ENOMEM. */
int dcpi_stackprof_new(unsigned max_chains, dcpi_stackprof_t **out);
void dcpi_stackprof_free(dcpi_stackprof_t *sp);

/* Header lines (epoch, platform, event, period are required to encode; lost, truncated
 * optional; unknown keys kept). As dcpi_profile_set: 0, DCPI_EINVAL, DCPI_ENOMEM. */
int dcpi_stackprof_set(dcpi_stackprof_t *sp, const char *key, const char *value);
const char *dcpi_stackprof_get(const dcpi_stackprof_t *sp, const char *key);

/* Register an image; returns its index (>= 0; the same index when id and tstart were already
 * registered) or DCPI_EINVAL (id not hex, dir empty or with '/'), DCPI_ENOMEM. path may be
 * NULL. */
int dcpi_stackprof_image(dcpi_stackprof_t *sp, const char *id, const char *dir, const char *path,
                         uint64_t tstart, uint64_t tsize);
size_t dcpi_stackprof_nimages(const dcpi_stackprof_t *sp);
const dcpi_stack_image_t *dcpi_stackprof_image_get(const dcpi_stackprof_t *sp, size_t i);

/*
 * Add count samples of the chain f[0..n-1] (leaf first). O(n); allocates only for a chain not
 * seen yet. Returns 0; DCPI_EINVAL (n == 0, count == 0, unknown image index); DCPI_EFULL when
 * the chain is new and the chain or frame limit is reached (the samples are counted in "lost");
 * DCPI_ENOMEM (counted in "lost" too). Chains longer than DCPI_STACK_MAXFRAMES are cut (the
 * innermost frames kept) and counted in "truncated".
 */
int dcpi_stackprof_add(dcpi_stackprof_t *sp, const dcpi_frame_t *f, unsigned n, uint64_t count);
/* 1 when 75% of the chain or frame limit is in use: time to merge_write and reset. */
int dcpi_stackprof_needs_flush(const dcpi_stackprof_t *sp);
/* Drop every chain (and the lost/truncated tallies); images and header keys stay. */
void dcpi_stackprof_reset(dcpi_stackprof_t *sp);

size_t dcpi_stackprof_count(const dcpi_stackprof_t *sp);   /* distinct chains */
uint64_t dcpi_stackprof_total(const dcpi_stackprof_t *sp); /* sum of the chain counts */
/* Samples not kept (limit reached or no memory) since the last reset, plus the "lost" key. */
uint64_t dcpi_stackprof_lost(const dcpi_stackprof_t *sp);
/* Chain i (in order of first addition; sorted after a parse): frames, length and count. */
void dcpi_stackprof_chain(const dcpi_stackprof_t *sp, size_t i, const dcpi_frame_t **f, unsigned *n,
                          uint64_t *count);

/*
 * Parse a whole file; "NAME: reason" in err. DCPI_EFORMAT (header errors as for PC profiles,
 * an image with an empty or non-hex id or a bad directory name, a chain with no frames or more
 * than DCPI_STACK_MAXFRAMES, a count of 0, an image index out of range, chains unsorted or
 * repeated, a footer that does not match, trailing bytes), DCPI_ETRUNC (body cut short),
 * DCPI_EVERSION, DCPI_ENOMEM.
 */
int dcpi_stackprof_parse(const void *buf, size_t len, const char *name, dcpi_stackprof_t **out,
                         char *err);
int dcpi_stackprof_read(const char *path, dcpi_stackprof_t **out, char *err);
/* Encode (chains sorted) into a malloc'd buffer. DCPI_EINVAL when a required key is missing. */
int dcpi_stackprof_encode(const dcpi_stackprof_t *sp, void **buf, size_t *len, char *err);
int dcpi_stackprof_write(const char *path, const dcpi_stackprof_t *sp, char *err);
/* Merge src into dst in memory (images remapped by id and tstart, counts added, lost and
 * truncated summed). event and period must agree when both have them: DCPI_EINVAL. dst grows
 * its limit as needed. */
int dcpi_stackprof_merge(dcpi_stackprof_t *dst, const dcpi_stackprof_t *src);
/* Merge sp into the file at path (created, with its directory, when absent) and write it
 * atomically; a malformed file or one of another event or period is an error and left
 * untouched. sp is not modified. */
int dcpi_stackprof_merge_write(const char *path, const dcpi_stackprof_t *sp, char *err);

/* DB/<epoch>/<platform>/stacks/<event>.stk into out. */
void dcpi_stackprof_path(const char *db, const char *epoch, const char *platform, const char *event,
                         char *out, size_t len);
/* The stack profile of event in epoch, merged over every platform (platform NULL) or one.
 * *out is NULL (and 0 returned) when no platform has stacks for that event. A damaged file is
 * named in a warning and left out (core/base/damage.h; with -strict it is the error). */
int dcpi_stackprof_load(const char *db, const char *epoch, const char *platform, const char *event,
                        dcpi_stackprof_t **out, char *err);
/* dcpi_stackprof_load of several epochs (-epoch all, A..B) merged into one (chains of the same
 * frames added up, lost and truncated summed); epochs without stacks add nothing; *out is NULL
 * when none has any. */
int dcpi_stackprof_load_epochs(const char *db, const char *const *epochs, size_t nepochs,
                               const char *platform, const char *event, dcpi_stackprof_t **out,
                               char *err);

#endif
