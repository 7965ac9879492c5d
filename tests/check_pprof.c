/*
 * check_pprof.c - pprof export: a database with a PC profile, a stack profile and a value
 * profile of this test program, a PC profile of libdcpi.so and a chain through the step agent
 * (a stack image only) is exported by dcpiexport -format pprof; the file is gunzipped and
 * unpacked by protobuf-c and checked field by field (string indices, mapping build id, location
 * and function ids, sample values equal to the profile totals, chains, value labels), and its
 * mappings for pprof's address model: disjoint, the program first, then ascending, every
 * location inside its mapping and address - memory_start + file_offset the code's file offset.
 * With Go's pprof (case go_symbolize): the profile without dcpi's names is symbolized by
 * `go tool pprof` from the files (DWARF) into the functions dcpi named.
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
#include "core/formats/export.h"
#include "core/formats/pprof.h"
#include "core/store/stackprof.h"
#include "core/image/symbols.h"
#include "core/image/srclines.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "check_skip.h"

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

/* Another image of the fixture: a file of the build, fn the ELF address of one of its
 * functions. */
typedef struct fimg {
    dcpi_image_info_t info;
    char path[4096], imagedir[DCPI_NAMELEN];
    uint64_t fn;
} fimg_t;

typedef struct fx {
    char dir[64], db[128], out[160];
    dcpi_image_info_t info;
    char path[4096], imagedir[DCPI_NAMELEN];
    uint64_t main_addr, f2_addr;
    fimg_t lib;   /* libdcpi.so: LIB_SAMPLES PC samples at fn + 1, LIB_CHAIN of them in a chain */
    fimg_t agent; /* libdcpi-agent.so: the caller of that chain, at fn + 5; no PC profile */
} fx_t;

#define LIB_SAMPLES 6
#define LIB_CHAIN   2

__attribute__((noinline)) int pprof_fixture_leaf(int x)
{
    return x * 3 + 1;
}

/* A PC profile of one image: count0 samples at offset off0, count1 at off1 (count1 may be 0). */
static void write_prof_of(const dcpi_image_info_t *info, const char *path, const char *file,
                          uint32_t off0, uint32_t count0, uint32_t off1, uint32_t count1)
{
    dcpi_profile_t *p = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "image", info->id), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "epoch", EPOCH), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "platform", PLAT), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "period", "%d", PERIOD), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "tstart", "0x%" PRIx64, info->tstart), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "tsize", "%" PRIu64, info->tsize), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "cpuspeed", "0"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "path", path), 0);
    ck_assert_int_eq(dcpi_profile_add(p, off0, count0), 0);
    if (count1)
        ck_assert_int_eq(dcpi_profile_add(p, off1, count1), 0);
    ck_assert_int_eq(dcpi_profile_write(file, p, err), 0);
    dcpi_profile_free(p);
}

static void write_prof(fx_t *x, const char *file)
{
    write_prof_of(&x->info, x->path, file, (uint32_t)(x->main_addr - x->info.tstart), 5,
                  (uint32_t)(x->f2_addr + 1 - x->info.tstart), 7);
}

/* The build's file name (under DCPI_TEST_BIN), probed, with function fn's address. */
static void fixture_image(fimg_t *im, const char *name, const char *fn)
{
    snprintf(im->path, sizeof(im->path), "%s/%s", DCPI_TEST_BIN, name);
    ck_assert_msg(dcpi_image_probe(im->path, &im->info, NULL) == 0, "%s not built", im->path);
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(im->path, &st, NULL), 0);
    const dcpi_symbol_t *s = dcpi_symtab_find(st, fn);
    ck_assert_msg(s != NULL, "%s: no %s", im->path, fn);
    im->fn = s->addr;
    dcpi_symtab_free(st);
    dcpi_image_dirname(im->path, im->info.id, im->imagedir, sizeof(im->imagedir));
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
    const fimg_t *l = &x->lib, *a = &x->agent;
    int li =
        dcpi_stackprof_image(sp, l->info.id, l->imagedir, l->path, l->info.tstart, l->info.tsize);
    int ai =
        dcpi_stackprof_image(sp, a->info.id, a->imagedir, a->path, a->info.tstart, a->info.tsize);
    ck_assert_int_eq(li, 1);
    ck_assert_int_eq(ai, 2);
    dcpi_frame_t g[] = {{1, (uint32_t)(l->fn + 1 - l->info.tstart)},
                        {2, (uint32_t)(a->fn + 5 - a->info.tstart)}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, g, 2, LIB_CHAIN), 0);
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
    fixture_image(&x->lib, "libdcpi.so", "dcpi_strerror");
    fixture_image(&x->agent, "libdcpi-agent.so", "sigaction");
    snprintf(d, sizeof(d), "%s/%s/%s/%s", x->db, EPOCH, PLAT, x->lib.imagedir);
    ck_assert_int_eq(dcpi__mkdirs(d, 0755), 0);
    snprintf(file, sizeof(file), "%s/cpu-clock.prof", d);
    write_prof_of(&x->lib.info, x->lib.path, file, (uint32_t)(x->lib.fn + 1 - x->lib.info.tstart),
                  LIB_SAMPLES, 0, 0);
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

/* The mapping of file path (NULL when none). */
static const ProtobufCMessage *mapping_of(const ProtobufCMessage *prof, const char *path)
{
    for (size_t i = 0; i < count(prof, "mapping"); i++)
        if (!strcmp(str(prof, num(msg_at(prof, "mapping", i), "filename")), path))
            return msg_at(prof, "mapping", i);
    return NULL;
}

/* pprof's model: the mappings are disjoint, the program's first, the others in ascending
 * memory_start; every location of a mapping lies inside it. */
static void check_disjoint(const ProtobufCMessage *prof)
{
    for (size_t i = 0; i < count(prof, "mapping"); i++) {
        const ProtobufCMessage *m = msg_at(prof, "mapping", i);
        ck_assert_int_eq(num(m, "id"), (int64_t)i + 1);
        ck_assert_uint_lt((uint64_t)num(m, "memory_start"), (uint64_t)num(m, "memory_limit"));
        if (i > 0)
            ck_assert_uint_le((uint64_t)num(msg_at(prof, "mapping", i - 1), "memory_limit"),
                              (uint64_t)num(m, "memory_start"));
    }
    for (size_t i = 0; i < count(prof, "location"); i++) {
        const ProtobufCMessage *l = msg_at(prof, "location", i);
        const ProtobufCMessage *m = by_id(prof, "mapping", (uint64_t)num(l, "mapping_id"));
        uint64_t addr = (uint64_t)num(l, "address");
        if (!m)
            continue;
        ck_assert_uint_ge(addr, (uint64_t)num(m, "memory_start"));
        ck_assert_uint_lt(addr, (uint64_t)num(m, "memory_limit"));
    }
}

/* A shifted image (not the program): its text at a page-aligned shift at or above
 * DCPI_EXPORT_LIB_BASE, file_offset the text segment's p_offset, and the location of ELF address
 * vaddr at vaddr + the shift, so that pprof's address - memory_start + file_offset is vaddr's
 * file offset. Returns that location's id. */
static uint64_t check_shifted(const ProtobufCMessage *prof, const fimg_t *im, uint64_t vaddr)
{
    const ProtobufCMessage *m = mapping_of(prof, im->path);
    ck_assert_msg(m != NULL, "no mapping of %s", im->path);
    uint64_t start = (uint64_t)num(m, "memory_start"), off = (uint64_t)num(m, "file_offset");
    uint64_t text_off = 0, want_off = 0;
    ck_assert_int_eq(dcpi_image_vaddr_to_file(&im->info, im->info.tstart, &text_off), 0);
    ck_assert_int_eq(dcpi_image_vaddr_to_file(&im->info, vaddr, &want_off), 0);
    ck_assert_uint_ge(start, DCPI_EXPORT_LIB_BASE);
    ck_assert_uint_eq((start - im->info.tstart) % 4096, 0);
    ck_assert_uint_eq((uint64_t)num(m, "memory_limit") - start, im->info.tsize);
    ck_assert_uint_eq(off, text_off);
    ck_assert_str_eq(str(prof, num(m, "build_id")), im->info.id);
    uint64_t addr = start + (vaddr - im->info.tstart), id = 0;
    for (size_t i = 0; i < count(prof, "location"); i++) {
        const ProtobufCMessage *l = msg_at(prof, "location", i);
        if ((uint64_t)num(l, "address") == addr) {
            ck_assert_int_eq(num(l, "mapping_id"), num(m, "id"));
            id = (uint64_t)num(l, "id");
        }
    }
    ck_assert_msg(id != 0, "%s: no location at 0x%" PRIx64, im->path, addr);
    ck_assert_uint_eq(addr - start + off, want_off);
    return id;
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
    check_disjoint(prof);
    uint64_t leaf = check_locations(prof, x.f2_addr + 1);
    ck_assert_uint_ne(leaf, 0);
    ck_assert_str_eq(loc_func(prof, leaf), "pprof_fixture_leaf");
    uint64_t lib_leaf = check_shifted(prof, &x.lib, x.lib.fn + 1);
    uint64_t caller = check_shifted(prof, &x.agent, x.agent.fn + 5);
    ck_assert_str_eq(loc_func(prof, lib_leaf), "dcpi_strerror");
    ck_assert_str_eq(loc_func(prof, caller), "sigaction");
    ck_assert_uint_eq(count(prof, "mapping"), 3);
    int64_t tot[3] = {0, 0, 0};
    int chains = 0, labelled = 0;
    for (size_t i = 0; i < count(prof, "sample"); i++) {
        const ProtobufCMessage *s = msg_at(prof, "sample", i);
        ck_assert_uint_eq(count(s, "value"), 3);
        for (size_t j = 0; j < count(s, "location_id"); j++)
            ck_assert_ptr_nonnull(by_id(prof, "location", (uint64_t)rep_num(s, "location_id", j)));
        for (int k = 0; k < 3; k++)
            tot[k] += rep_num(s, "value", (size_t)k);
        if (count(s, "location_id") == 2 && (uint64_t)rep_num(s, "location_id", 0) == lib_leaf) {
            ck_assert_uint_eq((uint64_t)rep_num(s, "location_id", 1), caller);
            ck_assert_int_eq(rep_num(s, "value", 0), LIB_CHAIN);
        } else if (count(s, "location_id") == 2) {
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
    ck_assert_int_eq(tot[0], 12 + LIB_SAMPLES); /* = the PC profiles' total (dcpiprof's) */
    ck_assert_int_eq(tot[1], (12LL + LIB_SAMPLES) * PERIOD);
    ck_assert_int_eq(tot[2], 4);
    protobuf_c_message_free_unpacked(prof, NULL);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", x.dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- Go's pprof symbolizes the export from the files ---- */

static const char *no_go(void)
{
    if (system("go tool -n pprof >/dev/null 2>&1") != 0)
        return "no `go tool pprof` (Debian golang-go): the case has Go's pprof symbolize the "
               "export";
    const char *libs[] = {DCPI_TEST_BIN "/libdcpi.so", DCPI_TEST_BIN "/libdcpi-agent.so"};
    for (size_t i = 0; i < 2; i++) {
        dcpi_srclines_t *sl = NULL;
        if (dcpi_srclines_open(libs[i], &sl, NULL) < 0)
            return "libdcpi.so or libdcpi-agent.so has no DWARF (a build without -g): Go's pprof "
                   "symbolizes C code from DWARF only";
        dcpi_srclines_free(sl);
    }
    return NULL;
}

/* Empty the repeated field name of m (its messages freed). */
static void clear_msgs(ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f = field(m, name);
    ProtobufCMessage **v = *(ProtobufCMessage ***)((char *)m + f->offset);
    size_t *n = (size_t *)((char *)m + f->quantifier_offset);
    for (size_t i = 0; i < *n; i++)
        protobuf_c_message_free_unpacked(v[i], NULL);
    free(v);
    *(ProtobufCMessage ***)((char *)m + f->offset) = NULL;
    *n = 0;
}

/* Leave out dcpi's names (every location's lines, the functions, the mappings' has_* flags)
 * and write the profile uncompressed to path. */
static void write_stripped(ProtobufCMessage *prof, const char *path)
{
    for (size_t i = 0; i < count(prof, "location"); i++)
        clear_msgs((ProtobufCMessage *)msg_at(prof, "location", i), "line");
    clear_msgs(prof, "function");
    const char *flags[] = {"has_functions", "has_filenames", "has_line_numbers",
                           "has_inline_frames"};
    for (size_t i = 0; i < count(prof, "mapping"); i++) {
        ProtobufCMessage *m = (ProtobufCMessage *)msg_at(prof, "mapping", i);
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
            *(protobuf_c_boolean *)((char *)m + field(m, flags[k])->offset) = 0;
    }
    size_t len = protobuf_c_message_get_packed_size(prof);
    uint8_t *buf = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(protobuf_c_message_pack(prof, buf), len);
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi__write_atomic(path, buf, len, err) == 0, "%s", err);
    free(buf);
}

/* The function Go's pprof names at address addr in `go tool pprof -raw` output (its location
 * lines: "ID: 0xADDR M=MAPPING FUNCTION FILE:LINE ..."), "" when it names none. */
static void go_function(const char *raw, uint64_t addr, char *out, size_t len)
{
    char want[64];
    snprintf(want, sizeof(want), ": 0x%" PRIx64 " M=", addr);
    const char *p = strstr(raw, want);
    ck_assert_msg(p != NULL, "go tool pprof -raw shows no location at 0x%" PRIx64, addr);
    p = strchr(p + strlen(want), ' ');
    size_t n = p && p[1] != '\n' ? strcspn(p + 1, " \n") : 0;
    snprintf(out, len, "%.*s", (int)n, n ? p + 1 : "");
}

START_TEST(test_go_symbolize)
{
    fx_t x;
    fixture(&x);
    ProtobufCMessage *prof = export_and_decode(&x);
    const ProtobufCMessage *lm = mapping_of(prof, x.lib.path), *am = mapping_of(prof, x.agent.path);
    ck_assert_ptr_nonnull(lm);
    ck_assert_ptr_nonnull(am);
    uint64_t at[3] = {x.f2_addr + 1,
                      (uint64_t)num(lm, "memory_start") + x.lib.fn + 1 - x.lib.info.tstart,
                      (uint64_t)num(am, "memory_start") + x.agent.fn + 5 - x.agent.info.tstart};
    char dcpi_name[3][256], stripped[200], cmd[600], go_name[256];
    for (int i = 0; i < 3; i++) {
        uint64_t id = 0;
        for (size_t j = 0; j < count(prof, "location"); j++)
            if ((uint64_t)num(msg_at(prof, "location", j), "address") == at[i])
                id = (uint64_t)num(msg_at(prof, "location", j), "id");
        ck_assert_uint_ne(id, 0);
        snprintf(dcpi_name[i], sizeof(dcpi_name[i]), "%s", loc_func(prof, id));
    }
    snprintf(stripped, sizeof(stripped), "%s/stripped.pb", x.dir);
    write_stripped(prof, stripped);
    protobuf_c_message_free_unpacked(prof, NULL);
    /* HOME: where Go's pprof looks for binaries by build id ($HOME/pprof/binaries): none */
    snprintf(cmd, sizeof(cmd), "HOME=%s go tool pprof -raw -symbolize=local %s 2>&1", x.dir,
             stripped);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    static char raw[1 << 20];
    size_t n = fread(raw, 1, sizeof(raw) - 1, f);
    raw[n] = '\0';
    ck_assert_msg(pclose(f) == 0, "%s: %s", cmd, raw);
    for (int i = 0; i < 3; i++) {
        go_function(raw, at[i], go_name, sizeof(go_name));
        ck_assert_msg(!strcmp(go_name, dcpi_name[i]),
                      "0x%" PRIx64 ": dcpi names %s, go tool pprof from the file: '%s'\n%s", at[i],
                      dcpi_name[i], go_name, raw);
    }
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
    tc = dcpi_check_tcase("go_symbolize");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_go_symbolize);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    static const struct dcpi_check_need needs[] = {{"go_symbolize", no_go}};
    return dcpi_check_run(pprof_suite(), needs, sizeof(needs) / sizeof(needs[0]));
}
