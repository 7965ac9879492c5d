/*
 * check_pprof.c - pprof export: a database with a PC profile, a stack profile and a value
 * profile of this test program is exported by dcpiexport -format pprof; the file is gunzipped
 * and unpacked by protobuf-c and checked field by field (string indices, mapping build id,
 * location and function ids, sample values equal to the profile totals, chains, value labels).
 * Also the builder API alone (core/formats/pprof.c) and a file that is not a profile.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/store/db.h"
#include "core/base/fsutil.h"
#include "core/image/image.h"
#include "core/formats/pprof.h"
#include "core/store/stackprof.h"
#include "core/image/symbols.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

#define EPOCH  "202601020304"
#define PLAT   "p1"
#define PERIOD 1000000

/* ---- reading a message through its descriptor ---- */

static const ProtobufCFieldDescriptor *field(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    ck_assert_msg(f != NULL, "no field %s", name);
    return f;
}

static size_t count(const ProtobufCMessage *m, const char *name)
{
    return *(const size_t *)((const char *)m + field(m, name)->quantifier_offset);
}

static const void *rep(const ProtobufCMessage *m, const char *name)
{
    return *(const void *const *)((const char *)m + field(m, name)->offset);
}

static const ProtobufCMessage *msg_at(const ProtobufCMessage *m, const char *name, size_t i)
{
    ck_assert_uint_lt(i, count(m, name));
    return ((const ProtobufCMessage *const *)rep(m, name))[i];
}

static const ProtobufCMessage *msg(const ProtobufCMessage *m, const char *name)
{
    return *(const ProtobufCMessage *const *)((const char *)m + field(m, name)->offset);
}

static int64_t num(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = field(m, name);
    const char *p = (const char *)m + f->offset;
    if (f->type == PROTOBUF_C_TYPE_BOOL)
        return *(const protobuf_c_boolean *)p;
    return *(const int64_t *)p; /* int64 and uint64 */
}

static int64_t rep_num(const ProtobufCMessage *m, const char *name, size_t i)
{
    ck_assert_uint_lt(i, count(m, name));
    return ((const int64_t *)rep(m, name))[i];
}

static const char *str(const ProtobufCMessage *prof, int64_t idx)
{
    ck_assert_int_ge(idx, 0);
    ck_assert_uint_lt((size_t)idx, count(prof, "string_table"));
    return ((char *const *)rep(prof, "string_table"))[idx];
}

/* The message in list name whose id is id, or NULL. */
static const ProtobufCMessage *by_id(const ProtobufCMessage *prof, const char *name, uint64_t id)
{
    for (size_t i = 0; i < count(prof, name); i++)
        if ((uint64_t)num(msg_at(prof, name, i), "id") == id)
            return msg_at(prof, name, i);
    return NULL;
}

/* ---- building the database ---- */

typedef struct fx {
    char dir[64], db[128], out[160];
    dcpi_image_info_t info;
    char path[4096], imagedir[DCPI_NAMELEN];
    uint64_t main_addr, f2_addr;
} fx_t;

__attribute__((noinline)) int pprof_fixture_leaf(int x)
{
    return x * 3 + 1;
}

static void write_prof(fx_t *x, const char *file)
{
    dcpi_profile_t *p = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "image", x->info.id), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "epoch", EPOCH), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "platform", PLAT), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "period", "%d", PERIOD), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "tstart", "0x%" PRIx64, x->info.tstart), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "tsize", "%" PRIu64, x->info.tsize), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "cpuspeed", "0"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "path", x->path), 0);
    ck_assert_int_eq(dcpi_profile_add(p, (uint32_t)(x->main_addr - x->info.tstart), 5), 0);
    ck_assert_int_eq(dcpi_profile_add(p, (uint32_t)(x->f2_addr + 1 - x->info.tstart), 7), 0);
    ck_assert_int_eq(dcpi_profile_write(file, p, err), 0);
    dcpi_profile_free(p);
}

static void write_stacks(fx_t *x)
{
    dcpi_stackprof_t *sp = NULL;
    char path[4400], err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_stackprof_new(0, &sp), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "epoch", EPOCH), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "platform", PLAT), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "period", "1000000"), 0);
    int img =
        dcpi_stackprof_image(sp, x->info.id, x->imagedir, x->path, x->info.tstart, x->info.tsize);
    ck_assert_int_eq(img, 0);
    dcpi_frame_t f[] = {{0, (uint32_t)(x->f2_addr + 1 - x->info.tstart)},
                        {0, (uint32_t)(x->main_addr + 9 - x->info.tstart)}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, f, 2, 4), 0);
    dcpi_stackprof_path(x->db, EPOCH, PLAT, "cpu-clock", path, sizeof(path));
    ck_assert_int_eq(dcpi_stackprof_merge_write(path, sp, err), 0);
    dcpi_stackprof_free(sp);
}

static void write_vprof(fx_t *x, const char *file)
{
    dcpi_vprof_t *vp = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vprof_new(0, &vp), 0);
    const char *kv[][2] = {{"image", x->info.id},   {"epoch", EPOCH},      {"platform", PLAT},
                           {"event", "cpu-clock"},  {"period", "1000000"}, {"cpuspeed", "0"},
                           {"vprof", "vp-classic"}, {"contexts", "0"}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        ck_assert_int_eq(dcpi_vprof_set(vp, kv[i][0], kv[i][1]), 0);
    char v[64];
    snprintf(v, sizeof(v), "0x%" PRIx64, x->info.tstart);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tstart", v), 0);
    snprintf(v, sizeof(v), "%" PRIu64, x->info.tsize);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tsize", v), 0);
    dcpi_vsummary_t *s = dcpi_vprof_at(vp, (uint32_t)(x->f2_addr + 1 - x->info.tstart), 1);
    ck_assert_ptr_nonnull(s);
    dcpi_vsummary_add(s, 7, 0, 0, 3);
    dcpi_vsummary_add(s, 9, 0, 0, 1);
    ck_assert_int_eq(dcpi_vprof_write(file, vp, err), 0);
    dcpi_vprof_free(vp);
}

static void fixture(fx_t *x)
{
    snprintf(x->dir, sizeof(x->dir), "/tmp/check_pprof.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(x->dir));
    snprintf(x->db, sizeof(x->db), "%s/db", x->dir);
    snprintf(x->out, sizeof(x->out), "%s/out.pb.gz", x->dir);
    ssize_t n = readlink("/proc/self/exe", x->path, sizeof(x->path) - 1);
    ck_assert_int_gt(n, 0);
    x->path[n] = '\0';
    ck_assert_int_eq(dcpi_image_probe(x->path, &x->info, NULL), 0);
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(x->path, &st, NULL), 0);
    const dcpi_symbol_t *m = dcpi_symtab_find(st, "main");
    const dcpi_symbol_t *f2 = dcpi_symtab_find(st, "pprof_fixture_leaf");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(f2);
    x->main_addr = m->addr;
    x->f2_addr = f2->addr;
    dcpi_symtab_free(st);
    dcpi_image_dirname(x->path, x->info.id, x->imagedir, sizeof(x->imagedir));
    char d[4400], file[4500];
    snprintf(d, sizeof(d), "%s/%s/%s/%s", x->db, EPOCH, PLAT, x->imagedir);
    ck_assert_int_eq(dcpi__mkdirs(d, 0755), 0);
    snprintf(file, sizeof(file), "%s/cpu-clock.prof", d);
    write_prof(x, file);
    snprintf(file, sizeof(file), "%s/vp-classic.vprof", d);
    write_vprof(x, file);
    write_stacks(x);
}

static ProtobufCMessage *export_and_decode(fx_t *x)
{
    char cmd[1024], err[DCPI_ERRLEN] = "";
    snprintf(cmd, sizeof(cmd), "%s/dcpiexport -db %s -format pprof -o %s", DCPI_TEST_BIN, x->db,
             x->out);
    ck_assert_int_eq(system(cmd), 0);
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(dcpi__read_file(x->out, 0, &buf, &len, err), 0);
    ck_assert_uint_ge(len, 2);
    ck_assert_int_eq(((unsigned char *)buf)[0], 0x1f); /* gzip magic */
    ck_assert_int_eq(((unsigned char *)buf)[1], 0x8b);
    ProtobufCMessage *prof = NULL;
    ck_assert_int_eq(dcpi_pprof_decode(buf, len, "out.pb.gz", &prof, err), 0);
    free(buf);
    return prof;
}

/* ---- the checks ---- */

static void check_types(const ProtobufCMessage *prof)
{
    ck_assert_str_eq(str(prof, 0), "");
    ck_assert_uint_eq(count(prof, "sample_type"), 3);
    const char *want[3][2] = {
        {"cpu-clock", "count"}, {"cpu-clock_total", "nanoseconds"}, {"values", "count"}};
    for (size_t i = 0; i < 3; i++) {
        const ProtobufCMessage *t = msg_at(prof, "sample_type", i);
        ck_assert_str_eq(str(prof, num(t, "type")), want[i][0]);
        ck_assert_str_eq(str(prof, num(t, "unit")), want[i][1]);
    }
    ck_assert_str_eq(str(prof, num(prof, "default_sample_type")), "cpu-clock");
    ck_assert_int_eq(num(prof, "period"), PERIOD);
    ck_assert_str_eq(str(prof, num(msg(prof, "period_type"), "unit")), "nanoseconds");
}

static void check_mappings(const ProtobufCMessage *prof, const fx_t *x)
{
    ck_assert_uint_ge(count(prof, "mapping"), 1);
    const ProtobufCMessage *m = msg_at(prof, "mapping", 0);
    ck_assert_int_eq(num(m, "id"), 1);
    ck_assert_str_eq(str(prof, num(m, "build_id")), x->info.id);
    ck_assert_str_eq(str(prof, num(m, "filename")), x->path);
    ck_assert_uint_eq((uint64_t)num(m, "memory_start"), x->info.tstart);
    ck_assert_uint_eq((uint64_t)num(m, "memory_limit"), x->info.tstart + x->info.tsize);
    ck_assert_int_eq(num(m, "has_functions"), 1);
}

/* Every location's mapping and line function exist; function strings are valid. Returns the
 * id of the location at address addr (0 when none). */
static uint64_t check_locations(const ProtobufCMessage *prof, uint64_t addr)
{
    uint64_t found = 0;
    for (size_t i = 0; i < count(prof, "location"); i++) {
        const ProtobufCMessage *l = msg_at(prof, "location", i);
        uint64_t mid = (uint64_t)num(l, "mapping_id");
        ck_assert(mid == 0 || by_id(prof, "mapping", mid));
        for (size_t j = 0; j < count(l, "line"); j++) {
            const ProtobufCMessage *f =
                by_id(prof, "function", (uint64_t)num(msg_at(l, "line", j), "function_id"));
            ck_assert_ptr_nonnull(f);
            ck_assert_str_ne(str(prof, num(f, "name")), "");
            str(prof, num(f, "filename"));
        }
        if ((uint64_t)num(l, "address") == addr)
            found = (uint64_t)num(l, "id");
    }
    return found;
}

/* Name of the function of location id. */
static const char *loc_func(const ProtobufCMessage *prof, uint64_t id)
{
    const ProtobufCMessage *l = by_id(prof, "location", id);
    ck_assert_ptr_nonnull(l);
    ck_assert_uint_eq(count(l, "line"), 1);
    const ProtobufCMessage *f =
        by_id(prof, "function", (uint64_t)num(msg_at(l, "line", 0), "function_id"));
    return str(prof, num(f, "name"));
}

START_TEST(test_export_fields)
{
    fx_t x;
    fixture(&x);
    ProtobufCMessage *prof = export_and_decode(&x);
    check_types(prof);
    check_mappings(prof, &x);
    uint64_t leaf = check_locations(prof, x.f2_addr + 1);
    ck_assert_uint_ne(leaf, 0);
    ck_assert_str_eq(loc_func(prof, leaf), "pprof_fixture_leaf");
    int64_t tot[3] = {0, 0, 0};
    int chains = 0, labelled = 0;
    for (size_t i = 0; i < count(prof, "sample"); i++) {
        const ProtobufCMessage *s = msg_at(prof, "sample", i);
        ck_assert_uint_eq(count(s, "value"), 3);
        for (size_t j = 0; j < count(s, "location_id"); j++)
            ck_assert_ptr_nonnull(by_id(prof, "location", (uint64_t)rep_num(s, "location_id", j)));
        for (int k = 0; k < 3; k++)
            tot[k] += rep_num(s, "value", (size_t)k);
        if (count(s, "location_id") == 2) {
            chains++;
            ck_assert_uint_eq((uint64_t)rep_num(s, "location_id", 0), leaf);
            ck_assert_str_eq(loc_func(prof, (uint64_t)rep_num(s, "location_id", 1)), "main");
            ck_assert_int_eq(rep_num(s, "value", 0), 4);
        }
        if (count(s, "label")) {
            const ProtobufCMessage *l = msg_at(s, "label", 0);
            ck_assert_str_eq(str(prof, num(l, "key")), "vp-classic");
            int64_t v = num(l, "num"), c = rep_num(s, "value", 2);
            ck_assert(v == 7 ? c == 3 : v == 9 && c == 1);
            ck_assert_int_eq(rep_num(s, "value", 0), 0);
            ck_assert_uint_eq((uint64_t)rep_num(s, "location_id", 0), leaf);
            labelled++;
        }
    }
    ck_assert_int_eq(chains, 1);
    ck_assert_int_eq(labelled, 2);
    ck_assert_int_eq(tot[0], 12); /* = the PC profile's total (dcpiprof's) */
    ck_assert_int_eq(tot[1], 12LL * PERIOD);
    ck_assert_int_eq(tot[2], 4);
    protobuf_c_message_free_unpacked(prof, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", x.dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_builder)
{
    dcpi_pprof_t *p = NULL;
    ck_assert_int_eq(dcpi_pprof_new(&p), 0);
    ck_assert_int_eq(dcpi_pprof_sample_type(p, "e", "count"), 0);
    ck_assert_int_eq(dcpi_pprof_string(p, "e"), dcpi_pprof_string(p, "e"));
    int64_t m = dcpi_pprof_mapping(p, 0x1000, 0x2000, 0, "/bin/x", "abcd", 0);
    int64_t f = dcpi_pprof_function(p, "fn", NULL, NULL, 0);
    int64_t l = dcpi_pprof_location(p, (uint64_t)m, 0x1010, (uint64_t)f, 0);
    ck_assert_int_eq(m, 1);
    ck_assert_int_eq(l, 1);
    ck_assert_int_eq(dcpi_pprof_location(p, 9, 0x1010, 0, 0), DCPI_EINVAL);
    uint64_t bad = 2, good = 1;
    int64_t v = 5;
    ck_assert_int_eq(dcpi_pprof_sample(p, &bad, 1, &v, NULL, 0), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_pprof_sample(p, &good, 1, &v, NULL, 0), 0);
    ck_assert_int_eq(dcpi_pprof_sample_type(p, "late", "count"), DCPI_EINVAL);
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(dcpi_pprof_encode(p, &buf, &len), 0);
    ProtobufCMessage *prof = NULL;
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_pprof_decode(buf, len, "b", &prof, err), 0);
    ck_assert_uint_eq(count(prof, "sample"), 1);
    ck_assert_int_eq(rep_num(msg_at(prof, "sample", 0), "value", 0), 5);
    protobuf_c_message_free_unpacked(prof, NULL);
    ck_assert_int_eq(dcpi_pprof_decode(buf, len / 2, "b", &prof, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "b: "));
    ck_assert_int_eq(dcpi_pprof_decode("hello", 5, "h", &prof, err), DCPI_EFORMAT);
    free(buf);
    dcpi_pprof_free(p);
}
END_TEST

static Suite *pprof_suite(void)
{
    Suite *s = suite_create("pprof");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_builder);
    tcase_add_test(tc, test_export_fields);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(pprof_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
