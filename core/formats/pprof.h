/*
 * pprof.h - building pprof profiles (core/formats/proto/profile.proto, the
 * perftools.profiles.Profile message) and writing them gzip-compressed, encoded with protobuf-c;
 * also the reverse (gunzip and unpack) for checks. Ids of mappings, functions and locations are 1,
 * 2, ... in order of creation; strings are interned in the string table (index 0 is ""). Not
 * thread-safe.
 */
#ifndef DCPI_CORE_PPROF_H
#define DCPI_CORE_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

typedef struct dcpi_pprof dcpi_pprof_t;

typedef struct dcpi_pprof_label {
    const char *key;
    int64_t num; /* numeric label (str NULL) */
    const char *str;
} dcpi_pprof_label_t;

int dcpi_pprof_new(dcpi_pprof_t **out);
void dcpi_pprof_free(dcpi_pprof_t *p);

/* Index of s in the string table (added when new); negative DCPI_ENOMEM. */
int64_t dcpi_pprof_string(dcpi_pprof_t *p, const char *s);

/* Append a sample type; returns its value index. Only before the first sample (DCPI_EINVAL). */
int dcpi_pprof_sample_type(dcpi_pprof_t *p, const char *type, const char *unit);
/* Period type and period; the default sample type (by type name); profile start time. */
int dcpi_pprof_period(dcpi_pprof_t *p, const char *type, const char *unit, int64_t period);
int dcpi_pprof_default_type(dcpi_pprof_t *p, const char *type);
void dcpi_pprof_time(dcpi_pprof_t *p, int64_t time_nanos);
int dcpi_pprof_comment(dcpi_pprof_t *p, const char *text);

/* New mapping; returns its id (>= 1) or a negative DCPI_E*. build_id may be NULL. */
int64_t dcpi_pprof_mapping(dcpi_pprof_t *p, uint64_t start, uint64_t limit, uint64_t file_offset,
                           const char *filename, const char *build_id, int has_lines);
/* New function (filename NULL: none); returns its id. */
int64_t dcpi_pprof_function(dcpi_pprof_t *p, const char *name, const char *system_name,
                            const char *filename, int64_t start_line);
/* New location with at most one line (function_id 0: no line); returns its id. */
int64_t dcpi_pprof_location(dcpi_pprof_t *p, uint64_t mapping_id, uint64_t address,
                            uint64_t function_id, int64_t line);
/* Append a sample: nlocs location ids (leaf first), one value per sample type (values has
 * that many), labels. 0, DCPI_EINVAL (an unknown location id) or DCPI_ENOMEM. */
int dcpi_pprof_sample(dcpi_pprof_t *p, const uint64_t *locs, size_t nlocs, const int64_t *values,
                      const dcpi_pprof_label_t *labels, size_t nlabels);

/* Encode (protobuf-c), then gzip, into a malloc'd buffer. 0 or DCPI_ENOMEM. */
int dcpi_pprof_encode(const dcpi_pprof_t *p, void **buf, size_t *len);
/* Encode and write atomically ("-": standard output, dcpi__write_output); "PATH: reason" in
 * err. */
int dcpi_pprof_write(const char *path, const dcpi_pprof_t *p, char *err);

/* Gunzip and unpack a file image into a Profile message (read its fields through
 * (*out)->descriptor: the generated header stays private to libdcpi); free with
 * protobuf_c_message_free_unpacked(*out, NULL). DCPI_EFORMAT with "NAME: reason" in err. */
int dcpi_pprof_decode(const void *buf, size_t len, const char *name, ProtobufCMessage **out,
                      char *err);

#endif
