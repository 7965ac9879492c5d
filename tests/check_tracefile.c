/*
 * check_tracefile.c - recorded value traces (core/store/tracefile.h): round trip of MAP, TRACE and
 * SEEN records, mapping dedup, torn tails, the -vrecord-max bound, compression only when it
 * pays, malformed segments as one-line errors, map_range; CLUSTER records: round trip (before
 * their TRACE, only when a cluster is not 0), malformed ones refused, the bound taking or
 * refusing a CLUSTER and its TRACE together.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/store/db.h"
#include "core/store/tracefile.h"
#include "dcpi/errno.h"

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_tracefile.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const dcpi_tracefile_meta_t meta = {
    "202401021530", "host1", "cpu-clock", 1000000, 2400, 2, 1, 16,
};

static dcpi_tracefile_t *open_w(uint64_t max)
{
    dcpi_tracefile_t *w = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_tracefile_open(tmpdir, &meta, max, &w, err) == 0, "%s", err);
    return w;
}

/* Pseudo-random bytes (incompressible) or a repeating pattern (compressible). */
static void fill(uint8_t *b, size_t n, int random)
{
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = random ? (uint8_t)x : (uint8_t)(i % 7);
    }
}

static dcpi_tracefile_reader_t *open_r(const char *path)
{
    dcpi_tracefile_reader_t *r = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_tracefile_reader_open(path, &r, err) == 0, "%s", err);
    return r;
}

START_TEST(test_round_trip)
{
    uint8_t a[1000], b[1000];
    fill(a, sizeof a, 1);
    fill(b, sizeof b, 0);
    dcpi_tracefile_t *w = open_w(0);
    char path[4096];
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    ck_assert_int_eq(dcpi_tracefile_map(w, 42, 0x400000, 0x401000, 0x10, "abcd", "prog_abcd",
                                        "/bin/prog", 0x1000, 0x2000),
                     0);
    /* the same mapping again is not written twice */
    ck_assert_int_eq(dcpi_tracefile_map(w, 42, 0x400000, 0x401000, 0x10, "abcd", "prog_abcd",
                                        "/bin/prog", 0x1000, 0x2000),
                     0);
    ck_assert_int_eq(dcpi_tracefile_seen(w, 42, 0x400010, 7, 3), 0);
    ck_assert_int_eq(dcpi_tracefile_trace(w, 42, a, sizeof a), 0);
    ck_assert_int_eq(dcpi_tracefile_trace(w, 42, b, sizeof b), 0);
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(w, &st);
    ck_assert_uint_eq(st.maps, 1);
    ck_assert_uint_eq(st.traces, 2);
    ck_assert_uint_eq(st.seen, 1);
    ck_assert_uint_eq(st.compressed, 1); /* only the pattern pays */
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), 0);

    dcpi_tracefile_reader_t *r = open_r(path);
    ck_assert_str_eq(dcpi_tracefile_reader_get(r, "event"), "cpu-clock");
    ck_assert_str_eq(dcpi_tracefile_reader_get(r, "contexts"), "1");
    ck_assert_str_eq(dcpi_tracefile_reader_get(r, "period"), "1000000");
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_MAP);
    ck_assert_uint_eq(rec.pid, 42);
    ck_assert_uint_eq(rec.start, 0x400000);
    ck_assert_uint_eq(rec.end, 0x401000);
    ck_assert_uint_eq(rec.delta, 0x10);
    ck_assert_uint_eq(rec.tstart, 0x1000);
    ck_assert_uint_eq(rec.tsize, 0x2000);
    ck_assert_str_eq(rec.image_id, "abcd");
    ck_assert_str_eq(rec.imagedir, "prog_abcd");
    ck_assert_str_eq(rec.path, "/bin/prog");
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_SEEN);
    ck_assert_uint_eq(rec.npairs, 1);
    uint64_t pc;
    uint32_t key, count;
    dcpi_tracefile_seen_at(&rec, 0, &pc, &key, &count);
    ck_assert_uint_eq(pc, 0x400010);
    ck_assert_uint_eq(key, 7);
    ck_assert_uint_eq(count, 3);
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_TRACE);
    ck_assert_int_eq(rec.was_compressed, 0);
    ck_assert_uint_eq(rec.len, sizeof a);
    ck_assert_mem_eq(rec.data, a, sizeof a);
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.was_compressed, 1);
    ck_assert_uint_eq(rec.len, sizeof b);
    ck_assert_mem_eq(rec.data, b, sizeof b);
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 0);
    ck_assert_uint_eq(tr.traces, 2);
    ck_assert_uint_eq(tr.refused, 0);
    dcpi_tracefile_reader_close(r);

    char **names;
    size_t n;
    ck_assert_int_eq(dcpi_tracefile_list(tmpdir, &names, &n, NULL), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_nonnull(strstr(path, names[0]));
    dcpi_db_free_list(names, n);
}
END_TEST

/* An overlapping mapping replaces the remembered one: going back writes it again. */
START_TEST(test_map_replace)
{
    dcpi_tracefile_t *w = open_w(0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 0x1000, 0x2000, 0, "aa", "a_aa", "/a", 0, 9), 0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 0x1800, 0x3000, 0, "bb", "b_bb", "/b", 0, 9), 0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 0x1000, 0x2000, 0, "aa", "a_aa", "/a", 0, 9), 0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 2, 0x1000, 0x2000, 0, "aa", "a_aa", "/a", 0, 9), 0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 0x1000, 0x2000, 0, "aa", "a_aa", "/a", 0, 9), 0);
    dcpi_tracefile_forget_pid(w, 2);
    ck_assert_int_eq(dcpi_tracefile_map(w, 2, 0x1000, 0x2000, 0, "aa", "a_aa", "/a", 0, 9), 0);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 0x2000, 0x1000, 0, "aa", "a_aa", "/a", 0, 9),
                     DCPI_EINVAL);
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(w, &st);
    ck_assert_uint_eq(st.maps, 5);
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), 0);
}
END_TEST

/* Write a segment with three traces and return its bytes. */
static uint8_t *three_traces(char *path, size_t *len)
{
    uint8_t t[300];
    fill(t, sizeof t, 1);
    dcpi_tracefile_t *w = open_w(0);
    snprintf(path, 4096, "%s", dcpi_tracefile_path(w));
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(dcpi_tracefile_trace(w, 5, t, sizeof t), 0);
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), 0);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t *buf = malloc(8192);
    *len = fread(buf, 1, 8192, f);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* Read all records; the final result and the number of TRACE records read. */
static int read_all(const char *path, int *ntraces, char *err)
{
    dcpi_tracefile_reader_t *r = NULL;
    dcpi_tracefile_record_t rec;
    int rc = dcpi_tracefile_reader_open(path, &r, err);
    *ntraces = 0;
    if (rc < 0)
        return rc;
    while ((rc = dcpi_tracefile_next(r, &rec, NULL, err)) > 0)
        *ntraces += rec.type == DCPI_TRACEFILE_TRACE;
    dcpi_tracefile_reader_close(r);
    return rc;
}

/* Every cut inside the record area leaves a readable prefix and a torn tail. */
START_TEST(test_torn_tail)
{
    char path[4096], err[DCPI_ERRLEN];
    size_t len;
    int n;
    uint8_t *buf = three_traces(path, &len);
    size_t rec = 12 + 8 + 300, hdr = len - 3 * rec - 52;
    for (size_t cut = hdr; cut < len; cut += 7) {
        write_file(path, buf, cut);
        err[0] = 0;
        ck_assert_int_eq(read_all(path, &n, err), DCPI_ETRUNC);
        ck_assert_int_eq(n, (int)((cut - hdr) / rec > 3 ? 3 : (cut - hdr) / rec));
        ck_assert_ptr_nonnull(strstr(err, "torn tail"));
        ck_assert_ptr_null(strchr(err, '\n'));
    }
    write_file(path, buf, len);
    ck_assert_int_eq(read_all(path, &n, err), 0);
    ck_assert_int_eq(n, 3);
    free(buf);
}
END_TEST

static void expect_bad(const char *path, const uint8_t *buf, size_t len, int want, const char *what)
{
    char err[DCPI_ERRLEN] = "";
    int n;
    write_file(path, buf, len);
    ck_assert_int_eq(read_all(path, &n, err), want);
    ck_assert_msg(strstr(err, what) != NULL, "'%s' lacks '%s'", err, what);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(test_malformed)
{
    char path[4096];
    size_t len;
    uint8_t *buf = three_traces(path, &len), *b = malloc(len + 16);
    size_t hdr = len - 3 * 320 - 52;
    memcpy(b, buf, len);
    b[hdr + 40] ^= 1; /* a body byte: checksum */
    expect_bad(path, b, len, DCPI_EFORMAT, "checksum");
    memcpy(b, buf, len);
    b[hdr] = 9; /* record type */
    expect_bad(path, b, len, DCPI_EFORMAT, "bad record header");
    memcpy(b, buf, len);
    memcpy(b + len, "junk", 4); /* bytes after the trailer */
    expect_bad(path, b, len + 4, DCPI_EFORMAT, "after the trailer");
    memcpy(b, buf, len);
    memcpy(memmem(b, len, "dtr-0.01", 8), "dtr-0.02", 8); /* version */
    expect_bad(path, b, len, DCPI_EVERSION, "");
    expect_bad(path, (const uint8_t *)"epoch 1\n", 8, DCPI_EFORMAT, "");
    free(b);
    free(buf);
}
END_TEST

/* The bound: records past it are refused and counted; the file stays within it. */
START_TEST(test_bound)
{
    uint8_t t[1000];
    fill(t, sizeof t, 1);
    dcpi_tracefile_t *w = open_w(4096);
    char path[4096], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    int ok = 0, refused = 0;
    for (int i = 0; i < 10; i++) {
        int rc = dcpi_tracefile_trace(w, 1, t, sizeof t);
        ok += rc == 0;
        refused += rc == DCPI_EFULL;
    }
    ck_assert_int_eq(ok + refused, 10);
    ck_assert_int_ge(ok, 2);
    ck_assert_int_ge(refused, 5);
    ck_assert_int_eq(dcpi_tracefile_map(w, 1, 1, 2, 0, "aa", "a_aa", "/a", 0, 1), DCPI_EFULL);
    ck_assert_int_eq(dcpi_tracefile_close(w, err), DCPI_EFULL);
    ck_assert_ptr_nonnull(strstr(err, "not recorded"));
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_le(sb.st_size, 4096);
    dcpi_tracefile_reader_t *r = open_r(path);
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    int n = 0, rc;
    while ((rc = dcpi_tracefile_next(r, &rec, &tr, NULL)) > 0)
        n++;
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(n, ok);
    ck_assert_uint_eq(tr.refused, (uint64_t)refused + 1);
    ck_assert_uint_eq(tr.refused_bytes, (uint64_t)refused * sizeof t + (48 + 6 + 2 + 4 + 2));
    dcpi_tracefile_reader_close(r);
    /* a second segment in the same directory counts the first one's bytes */
    dcpi_tracefile_t *w2 = open_w(4096);
    ck_assert_int_eq(dcpi_tracefile_trace(w2, 1, t, sizeof t), DCPI_EFULL);
    ck_assert_int_eq(dcpi_tracefile_close(w2, NULL), DCPI_EFULL);
}
END_TEST

/* A CLUSTER record: written before its TRACE (after the pending SEEN pairs) when one of the
 * entries' clusters is not 0, read back in entry order; all 0: no CLUSTER record. */
START_TEST(test_cluster_round_trip)
{
    uint8_t a[200], b[300];
    fill(a, sizeof a, 1);
    fill(b, sizeof b, 0);
    static const uint64_t cl[4] = {0, 5, 5, 0xfedcba9876543210ull}, zero[3] = {0, 0, 0};
    dcpi_tracefile_t *w = open_w(0);
    char path[4096], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 42, a, sizeof a, NULL, 1), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_tracefile_seen(w, 42, 0x400010, 7, 3), 0);
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 42, a, sizeof a, cl, 4), 0);
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 43, b, sizeof b, zero, 3), 0);
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 43, b, sizeof b, NULL, 0), 0);
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(w, &st);
    ck_assert_uint_eq(st.clusters, 1);
    ck_assert_uint_eq(st.traces, 3);
    ck_assert_uint_eq(st.seen, 1);
    ck_assert_int_eq(dcpi_tracefile_close(w, err), 0);

    dcpi_tracefile_reader_t *r = open_r(path);
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_SEEN); /* nothing between CLUSTER and TRACE */
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_CLUSTER);
    ck_assert_uint_eq(rec.pid, 42);
    ck_assert_uint_eq(rec.nclusters, 4);
    for (uint32_t i = 0; i < 4; i++)
        ck_assert_uint_eq(dcpi_tracefile_cluster_at(&rec, i), cl[i]);
    ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
    ck_assert_int_eq(rec.type, DCPI_TRACEFILE_TRACE);
    ck_assert_uint_eq(rec.pid, 42);
    ck_assert_uint_eq(rec.len, sizeof a);
    ck_assert_mem_eq(rec.data, a, sizeof a);
    for (int i = 0; i < 2; i++) { /* all 0, none: TRACE only */
        ck_assert_int_eq(dcpi_tracefile_next(r, &rec, &tr, err), 1);
        ck_assert_int_eq(rec.type, DCPI_TRACEFILE_TRACE);
        ck_assert_uint_eq(rec.pid, 43);
    }
    ck_assert_msg(dcpi_tracefile_next(r, &rec, &tr, err) == 0, "%s", err);
    ck_assert_uint_eq(tr.traces, 3);
    ck_assert_uint_eq(tr.clusters, 1);
    dcpi_tracefile_reader_close(r);
}
END_TEST

/* The record at off gets body length len (its bytes as they are) and a right CRC. */
static void set_record(uint8_t *b, size_t off, uint32_t len)
{
    memcpy(b + off + 4, &len, 4);
    uint32_t crc = (uint32_t)crc32(0L, b + off + 12, (uInt)len);
    memcpy(b + off + 8, &crc, 4);
}

/* A CLUSTER record whose length does not hold its n (with a right checksum) is malformed, as is
 * one with flags; the records before it are good. */
START_TEST(test_cluster_malformed)
{
    uint8_t t[300];
    static const uint64_t cl[4] = {1, 1, 2, 2};
    fill(t, sizeof t, 1);
    dcpi_tracefile_t *w = open_w(0);
    char path[4096];
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    ck_assert_int_eq(dcpi_tracefile_trace(w, 5, t, sizeof t), 0);
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 5, t, sizeof t, cl, 4), 0);
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), 0);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t buf[4096], b[4096];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t crec = len - 52 - (12 + 8 + sizeof t) - (12 + 8 + 4 * 8); /* the CLUSTER record */
    ck_assert_uint_eq(buf[crec], DCPI_TRACEFILE_CLUSTER);
    int n;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(read_all(path, &n, err) == 0, "%s", err);
    ck_assert_int_eq(n, 2);

    memcpy(b, buf, len);
    b[crec + 12 + 4] = 5; /* n 5, room for 4 */
    set_record(b, crec, 8 + 4 * 8);
    expect_bad(path, b, len, DCPI_EFORMAT, "CLUSTER: 40 bytes do not hold its count");
    ck_assert_int_eq(read_all(path, &n, err), DCPI_EFORMAT);
    ck_assert_int_eq(n, 1); /* the TRACE before it */
    memcpy(b, buf, len);
    set_record(b, crec, 8 + 4 * 8 - 3); /* not whole numbers */
    expect_bad(path, b, len, DCPI_EFORMAT, "CLUSTER: 37 bytes do not hold its count");
    memcpy(b, buf, len);
    set_record(b, crec, 4); /* shorter than pid and n */
    expect_bad(path, b, len, DCPI_EFORMAT, "CLUSTER: 4 bytes");
    memcpy(b, buf, len);
    b[crec + 1] = DCPI_TRACEFILE_FLAG_ZLIB; /* flags are TRACE's only */
    expect_bad(path, b, len, DCPI_EFORMAT, "bad record header (type 5, flags 0x1");
    memcpy(b, buf, len);
    b[crec] = 6; /* a type after CLUSTER: unknown */
    expect_bad(path, b, len, DCPI_EFORMAT, "bad record header (type 6");
}
END_TEST

/* The bound takes a CLUSTER and its TRACE together or refuses both (two records). */
START_TEST(test_cluster_bound)
{
    uint8_t t[1000];
    uint64_t cl[10];
    fill(t, sizeof t, 1);
    for (int i = 0; i < 10; i++)
        cl[i] = (uint64_t)i / 3 + 1;
    dcpi_tracefile_t *w = open_w(4096);
    char path[4096];
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    int ok = 0, refused = 0;
    for (int i = 0; i < 10; i++) {
        int rc = dcpi_tracefile_trace_clustered(w, 1, t, sizeof t, cl, 10);
        ok += rc == 0;
        refused += rc == DCPI_EFULL;
    }
    ck_assert_int_eq(ok + refused, 10);
    ck_assert_int_ge(ok, 2);
    ck_assert_int_ge(refused, 5);
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), DCPI_EFULL);
    dcpi_tracefile_reader_t *r = open_r(path);
    dcpi_tracefile_record_t rec;
    dcpi_tracefile_stats_t tr;
    int n = 0, rc, prev = 0;
    while ((rc = dcpi_tracefile_next(r, &rec, &tr, NULL)) > 0) {
        ck_assert_int_eq(rec.type, n % 2 ? DCPI_TRACEFILE_TRACE : DCPI_TRACEFILE_CLUSTER);
        prev = rec.type;
        n++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(prev, DCPI_TRACEFILE_TRACE);
    ck_assert_int_eq(n, 2 * ok);
    ck_assert_uint_eq(tr.clusters, (uint64_t)ok);
    ck_assert_uint_eq(tr.refused, 2 * (uint64_t)refused);
    ck_assert_uint_eq(tr.refused_bytes, (uint64_t)refused * (sizeof t + 8 + 10 * 8));
    dcpi_tracefile_reader_close(r);
    unlink(path);

    /* room for the TRACE alone, not with its CLUSTER: neither is written */
    dcpi_tracefile_t *probe = open_w(0); /* the header's bytes */
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(probe, &st);
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(probe));
    ck_assert_int_eq(dcpi_tracefile_close(probe, NULL), 0);
    unlink(path);
    uint64_t trace_room = st.bytes + (12 + 8 + sizeof t) + (12 + 40);
    w = open_w(trace_room + 12 + 8 + 10 * 8 - 1);
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    ck_assert_int_eq(dcpi_tracefile_trace_clustered(w, 1, t, sizeof t, cl, 10), DCPI_EFULL);
    ck_assert_int_eq(dcpi_tracefile_trace(w, 1, t, sizeof t), DCPI_EFULL); /* full: later too */
    dcpi_tracefile_stats(w, &st);
    ck_assert_uint_eq(st.refused, 3);
    ck_assert_uint_eq(st.traces + st.clusters, 0);
    ck_assert_int_eq(dcpi_tracefile_close(w, NULL), DCPI_EFULL);
    ck_assert_int_eq(read_all(path, &n, NULL), 0);
    ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(test_map_range)
{
    dcpi_image_info_t info = {0};
    uint64_t lo, hi, delta;
    /* ELF: text segment at file 0x1000, vaddr 0x401000 (tstart), 0x2000 bytes */
    info.is_elf = 1;
    info.tstart = 0x401000;
    info.tsize = 0x2000;
    info.nseg = 2;
    info.seg[0].offset = 0;
    info.seg[0].vaddr = 0x400000;
    info.seg[0].filesz = 0x1000;
    info.seg[1].offset = 0x1000;
    info.seg[1].vaddr = 0x401000;
    info.seg[1].filesz = 0x2000;
    /* mapped at 0x555000 from file offset 0x1000 */
    ck_assert_int_eq(dcpi_tracefile_map_range(&info, 0x555123, 0x555000, 0x1000, &lo, &hi, &delta),
                     0);
    ck_assert_uint_eq(lo, 0x555000);
    ck_assert_uint_eq(hi, 0x557000);
    ck_assert_uint_eq(0x555123 - lo + delta, 0x123);
    /* below tstart */
    ck_assert_int_eq(dcpi_tracefile_map_range(&info, 0x554100, 0x554000, 0, &lo, &hi, &delta),
                     DCPI_ERANGE);
    /* not ELF: linear from the mapping's start */
    info.is_elf = 0;
    info.tstart = 0;
    ck_assert_int_eq(dcpi_tracefile_map_range(&info, 0x9010, 0x9000, 0x3000, &lo, &hi, &delta), 0);
    ck_assert_uint_eq(0x9010 - lo + delta, 0x3010);
}
END_TEST

START_TEST(test_open_errors)
{
    dcpi_tracefile_t *w = NULL;
    char err[DCPI_ERRLEN] = "";
    dcpi_tracefile_meta_t m = meta;
    m.epoch = "1";
    ck_assert_int_lt(dcpi_tracefile_open(tmpdir, &m, 0, &w, err), 0);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(err, "header"));
    ck_assert_int_eq(dcpi_tracefile_open(tmpdir, NULL, 0, &w, err), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_tracefile_list("/nonexistent-dir", NULL, NULL, err), DCPI_ENOENT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracefile");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_map_replace);
    tcase_add_test(tc, test_torn_tail);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_bound);
    tcase_add_test(tc, test_cluster_round_trip);
    tcase_add_test(tc, test_cluster_malformed);
    tcase_add_test(tc, test_cluster_bound);
    tcase_add_test(tc, test_map_range);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
