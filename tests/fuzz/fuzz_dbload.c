/*
 * tests/fuzz/fuzz_dbload.c - libFuzzer harness for damaged data in a whole database (issue 22
 * item 3): a small database (an epoch, one platform, images a and b and the kernel, with a's
 * split by process and value profile, a stack file, the kernel's symbol snapshot) has one file
 * replaced by the input: input[0] chooses which (a's .prof, a's .procs, a's .vprof, the .stk,
 * the kallsyms snapshot), the rest is its content. Checks: loading the epoch never fails for
 * damage (core/base/damage.h) and keeps b whole (and a whole unless its profile was the one
 * replaced); the stack file loads or is skipped; symbols open or say why in one line without
 * raw bytes; with -strict, dcpi_profset_verify passes or fails with one such line.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/damage.h"
#include "core/base/fsutil.h"
#include "core/model/profset.h"
#include "core/store/procprof.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "fuzz_util.h"

#define EPOCH    "202601010000"
#define A_TOTAL  12
#define B_TOTAL  7
#define NTARGETS 5

static char db[128], targets[NTARGETS][400];
static void *pristine[NTARGETS];
static size_t pristine_len[NTARGETS];

static void put_prof(const char *dir, const char *id, const char *path, unsigned c0, unsigned c4)
{
    char file[400];
    dcpi_profile_t *p = NULL;
    FUZZ_CHECK(dcpi_profile_new(&p) == 0);
    dcpi_profile_set(p, "image", id);
    dcpi_profile_set(p, "epoch", EPOCH);
    dcpi_profile_set(p, "platform", "p1");
    dcpi_profile_set(p, "event", "cpu-clock");
    dcpi_profile_set(p, "period", "1000000");
    dcpi_profile_set(p, "tstart", "0x1000");
    dcpi_profile_set(p, "tsize", "4096");
    dcpi_profile_set(p, "cpuspeed", "1000");
    dcpi_profile_set(p, "path", path);
    dcpi_profile_add(p, 0, c0);
    dcpi_profile_add(p, 4, c4);
    snprintf(file, sizeof file, "%s/cpu-clock.prof", dir);
    FUZZ_CHECK(dcpi_profile_write(file, p, NULL) == 0);
    dcpi_profile_free(p);
}

static void put_procs(const char *dir)
{
    dcpi_procprof_t pp = {0};
    unsigned char *buf = NULL;
    size_t len = 0;
    dcpi_procprof_add(&pp, 42, "prog", 0, 10);
    dcpi_procprof_add(&pp, 43, "other", 4, 2);
    FUZZ_CHECK(dcpi_procprof_encode(&pp, &buf, &len) == 0);
    snprintf(targets[1], sizeof targets[1], "%s/cpu-clock" DCPI_PROCPROF_SUFFIX, dir);
    FUZZ_CHECK(dcpi__write_atomic(targets[1], buf, len, NULL) == 0);
    free(buf);
    dcpi_procprof_free(&pp);
}

static void put_vprof(const char *dir)
{
    dcpi_vprof_t *vp = NULL;
    FUZZ_CHECK(dcpi_vprof_new(4, &vp) == 0);
    const char *kv[][2] = {{"image", "aa"},        {"epoch", EPOCH},      {"platform", "p1"},
                           {"event", "cpu-clock"}, {"period", "1000000"}, {"tstart", "0x1000"},
                           {"tsize", "4096"},      {"cpuspeed", "1000"},  {"vprof", "vp-x"},
                           {"hotsize", "4"},       {"contexts", "0"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        dcpi_vprof_set(vp, kv[i][0], kv[i][1]);
    snprintf(targets[2], sizeof targets[2], "%s/vp-x.vprof", dir);
    FUZZ_CHECK(dcpi_vprof_write(targets[2], vp, NULL) == 0);
    dcpi_vprof_free(vp);
}

static void put_stack(void)
{
    dcpi_stackprof_t *sp = NULL;
    FUZZ_CHECK(dcpi_stackprof_new(0, &sp) == 0);
    dcpi_stackprof_set(sp, "epoch", EPOCH);
    dcpi_stackprof_set(sp, "platform", "p1");
    dcpi_stackprof_set(sp, "event", "cpu-clock");
    dcpi_stackprof_set(sp, "period", "1000000");
    int a = dcpi_stackprof_image(sp, "aa", "a_aa", "/bin/a", 0x1000, 4096);
    dcpi_frame_t f[2] = {{(uint32_t)a, 0}, {(uint32_t)a, 4}};
    dcpi_stackprof_add(sp, f, 2, 5);
    char dir[200];
    snprintf(dir, sizeof dir, "%s/" EPOCH "/p1/stacks", db);
    FUZZ_CHECK(dcpi__mkdirs(dir, 0755) == 0);
    snprintf(targets[3], sizeof targets[3], "%s/cpu-clock.stk", dir);
    FUZZ_CHECK(dcpi_stackprof_write(targets[3], sp, NULL) == 0);
    dcpi_stackprof_free(sp);
}

static void build_db(void)
{
    char dir[200];
    snprintf(db, sizeof db, "%s/db", fuzz_tmpdir());
    snprintf(dir, sizeof dir, "%s/" EPOCH "/p1/a_aa", db);
    FUZZ_CHECK(dcpi__mkdirs(dir, 0755) == 0);
    put_prof(dir, "aa", "/bin/a", 10, 2);
    snprintf(targets[0], sizeof targets[0], "%s/cpu-clock.prof", dir);
    put_procs(dir);
    put_vprof(dir);
    snprintf(dir, sizeof dir, "%s/" EPOCH "/p1/b_bb", db);
    FUZZ_CHECK(dcpi__mkdirs(dir, 0755) == 0);
    put_prof(dir, "bb", "/bin/b", 3, 4);
    snprintf(dir, sizeof dir, "%s/" EPOCH "/p1/kernel.kallsyms_cc", db);
    FUZZ_CHECK(dcpi__mkdirs(dir, 0755) == 0);
    put_prof(dir, "cc", "[kernel.kallsyms]", 1, 1);
    snprintf(targets[4], sizeof targets[4], "%s/kallsyms", dir);
    const char *ks = "ffffffff81000000 T _text\nffffffff81000100 t do_work\n";
    FUZZ_CHECK(dcpi__write_atomic(targets[4], ks, strlen(ks), NULL) == 0);
    put_stack();
    for (int k = 0; k < NTARGETS; k++)
        FUZZ_CHECK(dcpi__read_file(targets[k], 0, &pristine[k], &pristine_len[k], NULL) == 0);
}

/* A message for a terminal: one line, no raw bytes. */
static void check_line(const char *msg)
{
    FUZZ_CHECK(msg[0] && !strchr(msg, '\n') && !dcpi__needs_escape(msg));
}

static void check_set(const dcpi_profset_t *set, int a_damaged)
{
    int seen_a = 0, seen_b = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        uint64_t t = dcpi_profset_image_total(set, img);
        if (!strcmp(img->id, "bb")) {
            seen_b = 1;
            FUZZ_CHECK(t == B_TOTAL);
        }
        if (!strcmp(img->id, "aa")) {
            seen_a = 1;
            FUZZ_CHECK(t == A_TOTAL || a_damaged);
        }
        dcpi_symtab_t *st = NULL;
        char why[DCPI_ERRLEN] = "";
        int damaged = 0;
        if (dcpi_profset_open_symbols(img, &st, why, &damaged) < 0 && why[0])
            check_line(why);
        dcpi_symtab_free(st);
    }
    FUZZ_CHECK(seen_b && (seen_a || a_damaged));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db[0])
        build_db();
    if (size < 1)
        return 0;
    int k = data[0] % NTARGETS;
    FUZZ_CHECK(dcpi__write_atomic(targets[k], data + 1, size - 1, NULL) == 0);
    dcpi__damage_init(NULL, 0); /* skipped, counted, no warnings printed */
    char err[DCPI_ERRLEN] = "";
    dcpi_profset_t *set = NULL;
    int rc = dcpi_profset_load(db, EPOCH, NULL, DCPI_PSET_LOAD_PROCS, &set, err);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0) {
        check_set(set, k == 0);
        dcpi_stackprof_t *sp = NULL;
        rc = dcpi_stackprof_load(db, EPOCH, NULL, "cpu-clock", &sp, err);
        FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
        dcpi_stackprof_free(sp);
        dcpi__damage_init(NULL, 1); /* -strict: the first damaged file is the error */
        err[0] = '\0';
        if (dcpi_profset_verify(db, EPOCH, NULL, set, err) < 0)
            check_line(err);
    }
    dcpi_profset_free(set);
    FUZZ_CHECK(dcpi__write_atomic(targets[k], pristine[k], pristine_len[k], NULL) == 0);
    return 0;
}
