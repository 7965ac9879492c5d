/*
 * tests/fuzz/fuzz_tracefile.c - libFuzzer harness for the recorded value-trace reader
 * (dcpi_tracefile_reader_open / dcpi_tracefile_next, core/store/tracefile-read.c, dtr-0.01 with
 * MAP, TRACE, SEEN and CLUSTER records), and
 * the trace parser behind it on every TRACE record read. The input is one segment file. Records
 * carry a CRC-32 that random mutation almost never gets right, so each input is read twice:
 * as it is, and with every record's CRC recomputed (so the fuzzer reaches the record bodies).
 * Checks: the iteration ends with 0, DCPI_ETRUNC or DCPI_EFORMAT (sticky, with a one-line
 * message naming the file), records have a known type and in-bounds data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/store/tracefile.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"
#include "trace/trace.h"

static trace_parser_t parser;

static void parse_trace(const uint8_t *data, size_t len)
{
    trace_parser_init(&parser, data, len);
    while (trace_parser_next(&parser, NULL, NULL, NULL, NULL, 0) >= 0)
        ;
}

static void check_record(const dcpi_tracefile_record_t *rec)
{
    FUZZ_CHECK(rec->type == DCPI_TRACEFILE_MAP || rec->type == DCPI_TRACEFILE_TRACE ||
               rec->type == DCPI_TRACEFILE_SEEN || rec->type == DCPI_TRACEFILE_CLUSTER);
    if (rec->type == DCPI_TRACEFILE_MAP)
        FUZZ_CHECK(rec->image_id && rec->imagedir && rec->path);
    if (rec->type == DCPI_TRACEFILE_TRACE) {
        FUZZ_CHECK(rec->data || rec->len == 0);
        parse_trace(rec->data, rec->len);
    }
    if (rec->type == DCPI_TRACEFILE_SEEN) {
        uint64_t sum = 0;
        for (uint32_t i = 0; i < rec->npairs; i++) {
            uint64_t pc;
            uint32_t key, count;
            dcpi_tracefile_seen_at(rec, i, &pc, &key, &count);
            sum += count;
        }
        (void)sum;
    }
    if (rec->type == DCPI_TRACEFILE_CLUSTER) {
        uint64_t x = 0;
        FUZZ_CHECK(rec->clusters || rec->nclusters == 0);
        for (uint32_t i = 0; i < rec->nclusters; i++)
            x ^= dcpi_tracefile_cluster_at(rec, i);
        (void)x;
    }
}

static void read_segment(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input(data, size);
    if (!path)
        return;
    char err[DCPI_ERRLEN] = "";
    dcpi_tracefile_reader_t *r = NULL;
    int rc = dcpi_tracefile_reader_open(path, &r, err);
    if (rc < 0) {
        FUZZ_CHECK(r == NULL);
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
        return;
    }
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t trailer;
    while ((rc = dcpi_tracefile_next(r, &rec, &trailer, err)) == 1)
        check_record(&rec);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ETRUNC || rc == DCPI_EFORMAT || rc == DCPI_ENOMEM);
    if (rc < 0) {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
        FUZZ_CHECK(dcpi_tracefile_next(r, &rec, NULL, NULL) == rc); /* sticky */
    }
    dcpi_tracefile_reader_close(r);
}

/* Offset of the body: after the first line "samples" (blanks allowed before its '\n'). */
static size_t body_offset(const uint8_t *d, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i++) {
        if ((i == 0 || d[i - 1] == '\n') && memcmp(d + i, "samples", 7) == 0) {
            size_t j = i + 7;
            while (j < n && d[j] == ' ')
                j++;
            if (j < n && d[j] == '\n')
                return j + 1;
        }
    }
    return n;
}

/* A copy of the input with every complete record's CRC-32 made right, or NULL. */
static uint8_t *fix_crcs(const uint8_t *data, size_t size)
{
    uint8_t *c = malloc(size ? size : 1);
    if (!c)
        return NULL;
    memcpy(c, data, size);
    size_t pos = body_offset(c, size);
    while (size - pos >= DCPI_TRACEFILE_RECHDR) {
        uint32_t len;
        memcpy(&len, c + pos + 4, 4);
        if (len > size - pos - DCPI_TRACEFILE_RECHDR)
            break;
        uint32_t crc = (uint32_t)crc32(0L, c + pos + DCPI_TRACEFILE_RECHDR, (uInt)len);
        memcpy(c + pos + 8, &crc, 4);
        pos += DCPI_TRACEFILE_RECHDR + len;
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_segment(data, size);
    uint8_t *fixed = fix_crcs(data, size);
    if (fixed) {
        if (memcmp(fixed, data, size) != 0)
            read_segment(fixed, size);
        free(fixed);
    }
    return 0;
}
