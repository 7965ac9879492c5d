/*
 * header.h - the ASCII header grammar shared by every database file (PC profiles .prof and
 * value profiles .vprof, docs/dcpiformat.md): "key<space>+value" lines ending with a
 * "samples<space>*\n" line, padded with spaces so the binary body starts at a multiple of 4.
 *
 * A spec names the file kind's version (e.g. "pdb-0.07", its prefix "pdb-"), optionally a second
 * version that is read too, and its known keys with their value kinds; required keys must appear
 * exactly once, unknown lines are kept in order. The version key is always known and required.
 */
#ifndef DCPI_CORE_HEADER_H
#define DCPI_CORE_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/base/err.h"
#include "dcpi/api.h"

enum dcpi_hdr_kind {
    DCPI_HDR_ANY,     /* any non-empty text */
    DCPI_HDR_HEX,     /* hex digits, no 0x */
    DCPI_HDR_DIGITS,  /* decimal, fits 64 bits */
    DCPI_HDR_ADDR,    /* hex, optional 0x, fits 64 bits */
    DCPI_HDR_EPOCH,   /* 10, 12 or 14 decimal digits */
    DCPI_HDR_VERSION, /* <prefix><digits>.<digits>, equal to the spec's version or also */
    DCPI_HDR_BIT,     /* "0" or "1" */
    DCPI_HDR_NAME,    /* non-empty, no '/', no blanks */
};

typedef struct dcpi_hdr_key {
    const char *key;
    enum dcpi_hdr_kind kind;
    bool required;
} dcpi_hdr_key_t;

typedef struct dcpi_hdr_spec {
    const char *version; /* the version written (and read), e.g. "pdb-0.07" */
    const char *prefix;  /* its family prefix, e.g. "pdb-" */
    const dcpi_hdr_key_t *keys;
    size_t nkeys;
    const char *also; /* another version read (and settable), or NULL */
} dcpi_hdr_spec_t;

typedef struct dcpi_hdr_line {
    char *key;
    char *value;
} dcpi_hdr_line_t;

/* Header lines in file order. Zero-initialize; release with dcpi__hdr_free. */
typedef struct dcpi_hdr {
    dcpi_hdr_line_t *lines;
    size_t n, cap;
} dcpi_hdr_t;

void dcpi__hdr_free(dcpi_hdr_t *h);

/* Known key entry of spec, or NULL. */
const dcpi_hdr_key_t *dcpi__hdr_known(const dcpi_hdr_spec_t *spec, const char *key);

/* Index of the first line with key, or -1. */
long dcpi__hdr_find(const dcpi_hdr_t *h, const char *key);
const char *dcpi__hdr_get(const dcpi_hdr_t *h, const char *key);
/* 0, DCPI_ENOENT (absent) or DCPI_EFORMAT (not a decimal / hex number). */
int dcpi__hdr_get_u64(const dcpi_hdr_t *h, const char *key, uint64_t *out);
int dcpi__hdr_get_hex(const dcpi_hdr_t *h, const char *key, uint64_t *out);

/* Append a line as it is (no checks). 0 or DCPI_ENOMEM. */
int dcpi__hdr_append(dcpi_hdr_t *h, const char *key, const char *value);
/* Replace the first line with key (keeping its place) or append; key and value are checked
 * (one word, one line, known keys' value kinds): DCPI_EINVAL, DCPI_ENOMEM or 0. */
int dcpi__hdr_set(dcpi_hdr_t *h, const dcpi_hdr_spec_t *spec, const char *key, const char *value);

/* Parse the header at buf into h (appending). *body gets the offset of the byte after the
 * "samples" line. Errors (DCPI_EFORMAT, DCPI_EVERSION, DCPI_ENOMEM) write "NAME: reason" into
 * err: missing terminator, NUL byte, line without key or value, text after "samples", bad
 * value of a known key, missing or repeated required key, unsupported version. */
int dcpi__hdr_parse(const dcpi_hdr_spec_t *spec, const char *buf, size_t len, const char *name,
                    dcpi_hdr_t *h, size_t *body, char *err);

/* DCPI_EINVAL with "WHAT: missing required key \"K\"" when a required key other than version
 * is absent, else 0. */
int dcpi__hdr_check_required(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, const char *what,
                             char *err);

/* Encoded size of the header, padding included (a multiple of 4). */
size_t dcpi__hdr_size(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h);
/* Write the header (version line first when h has none, then h's lines, then "samples"); the
 * version line, h's or the added one, always says spec->version (a file kind that reads two
 * versions writes the one it picks by passing a copy of its spec with that version),
 * padded with spaces at the end of the last line before "samples" (or after "samples" when
 * there is no line). out has room for dcpi__hdr_size() + 1 bytes. Returns bytes written. */
size_t dcpi__hdr_encode(const dcpi_hdr_spec_t *spec, const dcpi_hdr_t *h, char *out);

/* Fold new's header into old: sum numeric "lost", add known optional keys old lacks, append
 * new's unknown lines that old does not already hold. 0 or DCPI_ENOMEM. */
int dcpi__hdr_merge(const dcpi_hdr_spec_t *spec, dcpi_hdr_t *old, const dcpi_hdr_t *new_hdr);

#endif
