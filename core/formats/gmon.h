/*
 * gmon.h - GNU gprof's gmon.out (seeds/gprof-gmon-format.txt, binutils gmon_out.h): the header
 * "gmon", version 1 and 12 spare bytes, then tagged records: 0 histogram (low_pc, high_pc,
 * number of 16-bit bins, profiling rate, 15-char dimension and its 1-char abbreviation, bins),
 * 1 call-graph arc (from_pc, self_pc, u32 count), 2 basic-block counts (u32 n, then n pairs of
 * address and count). Addresses are 8 bytes (x86-64), little-endian.
 */
#ifndef DCPI_CORE_GMON_H
#define DCPI_CORE_GMON_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_GMON_VERSION 1

typedef struct dcpi_gmon_hist {
    uint64_t low, high; /* text range [low, high) */
    uint32_t nbins;     /* bin i covers low + i*(high-low)/nbins up to the next bin */
    uint32_t rate;      /* bin counts per dimension unit (samples per second) */
    char dimen[16];     /* "seconds" (NUL-terminated; 15 characters in the file) */
    char abbrev;        /* 's' */
    uint16_t *bins;
} dcpi_gmon_hist_t;

typedef struct dcpi_gmon_arc {
    uint64_t from, self; /* a PC in the caller, a PC in the callee */
    uint32_t count;
} dcpi_gmon_arc_t;

typedef struct dcpi_gmon {
    dcpi_gmon_hist_t *hists;
    size_t nhists, cap_hists;
    dcpi_gmon_arc_t *arcs;
    size_t narcs, cap_arcs;
    size_t nbb; /* basic-block count pairs seen (read and skipped) */
} dcpi_gmon_t;

int dcpi_gmon_new(dcpi_gmon_t **out);
void dcpi_gmon_free(dcpi_gmon_t *g);

/* Append a histogram of nbins zero bins over [low, high); *out points to it (valid until the
 * next add). DCPI_EINVAL when high <= low or nbins is 0. */
int dcpi_gmon_add_hist(dcpi_gmon_t *g, uint64_t low, uint64_t high, uint32_t nbins, uint32_t rate,
                       dcpi_gmon_hist_t **out);
int dcpi_gmon_add_arc(dcpi_gmon_t *g, uint64_t from, uint64_t self, uint32_t count);

/* The address where bin i starts. */
uint64_t dcpi_gmon_bin_addr(const dcpi_gmon_hist_t *h, uint32_t i);

/*
 * Parse a whole file. Errors, one line "NAME: reason" in err: DCPI_EFORMAT (wrong magic,
 * unknown record tag, histogram with high_pc <= low_pc or no bins, histograms that disagree on
 * rate or dimension), DCPI_EVERSION (version other than 1), DCPI_ETRUNC (a record cut short).
 */
int dcpi_gmon_parse(const void *buf, size_t len, const char *name, dcpi_gmon_t **out, char *err);
int dcpi_gmon_read(const char *path, dcpi_gmon_t **out, char *err);
int dcpi_gmon_encode(const dcpi_gmon_t *g, void **buf, size_t *len);
/* Encode and write atomically ("-": standard output, dcpi__write_output). */
int dcpi_gmon_write(const char *path, const dcpi_gmon_t *g, char *err);

#endif
