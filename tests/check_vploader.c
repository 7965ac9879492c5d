/*
 * check_vploader.c - the plugin loader (core/plugin/vploader.c): every refusal with its code and
 * its message, the success path (private table copy, hooks), unloading in reverse order, and
 * -vtrace short-name resolution, and the root ownership check (a plugin in a directory others
 * can write is refused unless the set allows it). The test plugins live in DCPI_TEST_PLUGINS
 * (tests/plugins); the temporary directories are made in the build directory, not in /tmp,
 * because /tmp is writable by everyone and root would refuse plugins copied there.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

#define PLUGIN(name)  DCPI_TEST_PLUGINS "/" name ".so"
#define SHIPPED(name) DCPI_TEST_BIN "/plugins/" name ".so"
#define SOURCE_DIR    DCPI_TEST_DATA "/../.."

/* ---- helpers ---- */

static char tmpdir[256];
static char hook_log[300];

/* A fresh temporary directory and an empty hook log, named by $DCPI_TEST_HOOK_LOG. */
static void setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "%s/check_vploader.XXXXXX", DCPI_TEST_BIN);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(hook_log, sizeof(hook_log), "%s/hooks.log", tmpdir);
    ck_assert_int_eq(setenv("DCPI_TEST_HOOK_LOG", hook_log, 1), 0);
    unsetenv(DCPI_VP_PATH_ENV);
    dcpi_vp_set_search_dirs(NULL);
}

static void teardown(void)
{
    if (chdir("/") != 0) /* test_resolve_cwd entered tmpdir (matters without fork mode) */
        fprintf(stderr, "check_vploader: chdir /: failed\n");
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "check_vploader: could not remove %s\n", tmpdir);
}

/* The hook log's contents ("" when no hook ran). */
static const char *read_log(void)
{
    static char buf[1024];
    buf[0] = '\0';
    FILE *f = fopen(hook_log, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void copy_file(const char *from, const char *to)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

/* Expect a refusal: the code, nothing added to the set, and err = "PATH: ...reason...". */
static void expect_refused(const char *path, int code, const char *reason)
{
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_t *vp = NULL;
    int rc = dcpi_vp_load(set, path, &vp, err);
    ck_assert_msg(rc == code, "%s: rc %d (%s), want %d; err: %s", path, rc, dcpi_err_name(rc), code,
                  err);
    ck_assert_ptr_null(vp);
    ck_assert_uint_eq(dcpi_vp_count(set), 0);
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':',
                  "message does not start with the path: %s", err);
    ck_assert_msg(strstr(err, reason) != NULL, "message lacks '%s': %s", reason, err);
    ck_assert_ptr_null(strchr(err, '\n'));
    dcpi_vp_set_free(set);
}

/* ---- refusals, one test plugin per rule ---- */

static const struct refusal {
    const char *plugin;
    int code;
    const char *reason;
} refusals[] = {
    {PLUGIN("no_dispatch"), DCPI_EPLUGIN,
     "no _dispatch symbol (is it exported? build with VP_EXPORT / default visibility)"},
    {PLUGIN("bad_abi"), DCPI_EVERSION, "plugin ABI version 7, this dcpi knows 1 to 2"},
    {PLUGIN("small_struct"), DCPI_EPLUGIN, "_dispatch is 24 bytes, ABI 1 needs at least 72"},
    {PLUGIN("abi2_small"), DCPI_EPLUGIN, "_dispatch is 72 bytes, ABI 2 needs at least 88"},
    {PLUGIN("no_name"), DCPI_EPLUGIN, "_dispatch has no vp_name"},
    {PLUGIN("no_prof_init"), DCPI_EPLUGIN, "_dispatch has no vp_prof_init"},
    {PLUGIN("no_prof_process"), DCPI_EPLUGIN, "_dispatch has no vp_prof_process"},
    {PLUGIN("null_name"), DCPI_EPLUGIN, "invalid profile name '(null)' (vp_name returned NULL)"},
    {PLUGIN("empty_name"), DCPI_EPLUGIN, "invalid profile name '' (empty)"},
    {PLUGIN("slash_name"), DCPI_EPLUGIN, "invalid profile name 'a/b' (contains '/')"},
    {PLUGIN("reserved_values"), DCPI_EPLUGIN, "invalid profile name 'values' (reserved)"},
    {PLUGIN("reserved_replay"), DCPI_EPLUGIN, "invalid profile name 'values.replay' (reserved)"},
    {PLUGIN("reserved_trace"), DCPI_EPLUGIN, "invalid profile name 'values.trace' (reserved)"},
    {PLUGIN("load_fails"), DCPI_EPLUGIN, "vp_load failed (returned 3)"},
    {PLUGIN("undefined_sym"), DCPI_EPLUGIN, "undefined symbol: dcpi_test_no_such_function"},
    {DCPI_TEST_PLUGINS "/no_such_plugin.so", DCPI_ENOENT, "No such file or directory"},
};

START_TEST(test_refusal)
{
    const struct refusal *r = &refusals[_i];
    expect_refused(r->plugin, r->code, r->reason);
    /* Only load_fails.so gets as far as its load hook; no refused plugin is ever unloaded. */
    if (strstr(r->plugin, "load_fails"))
        ck_assert_str_eq(read_log(), "load tp-load-fails\n");
    else
        ck_assert_str_eq(read_log(), "");
}
END_TEST

START_TEST(test_not_elf)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/text.so", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a shared object\n", f);
    fclose(f);
    expect_refused(path, DCPI_EPLUGIN, "file too short");
}
END_TEST

/* The refused plugin must really be gone: the same path loads fine once the rule is met, and
 * nothing of it stays mapped (dlopen RTLD_NOLOAD finds nothing). */
START_TEST(test_refused_is_unloaded)
{
    expect_refused(PLUGIN("load_fails"), DCPI_EPLUGIN, "returned 3");
    ck_assert_ptr_null(dlopen(PLUGIN("load_fails"), RTLD_NOW | RTLD_NOLOAD));
    expect_refused(PLUGIN("bad_abi"), DCPI_EVERSION, "ABI version 7");
    ck_assert_ptr_null(dlopen(PLUGIN("bad_abi"), RTLD_NOW | RTLD_NOLOAD));
}
END_TEST

/* ---- success ---- */

START_TEST(test_good)
{
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_t *vp = NULL;
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("good"), &vp, err), 0);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(dcpi_vp_name(vp), "tp-good");
    ck_assert_str_eq(dcpi_vp_path(vp), PLUGIN("good"));
    ck_assert_uint_eq(dcpi_vp_count(set), 1);
    ck_assert_ptr_eq(dcpi_vp_get(set, 0), vp);
    ck_assert_ptr_null(dcpi_vp_get(set, 1));
    ck_assert_ptr_eq(dcpi_vp_find(set, "tp-good"), vp);
    ck_assert_ptr_null(dcpi_vp_find(set, "tp-other"));

    /* The table is a private copy holding the plugin's entries. */
    const vp_dispatch_t *d = dcpi_vp_dispatch(vp);
    void *h = dlopen(PLUGIN("good"), RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    const vp_dispatch_t *orig = dlsym(h, "_dispatch");
    dlclose(h);
    ck_assert_ptr_nonnull(orig);
    ck_assert_ptr_ne(d, orig);
    /* an ABI-1 table (the test plugins use the header's default, VP_WANT_ABI 1): its bytes,
     * then the later entries zero */
    ck_assert_uint_eq(orig->abi_version, 1);
    ck_assert_uint_lt(orig->struct_size, sizeof(*d));
    ck_assert_int_eq(memcmp(d, orig, orig->struct_size), 0);
    ck_assert_ptr_null(d->vp_preface2);
    ck_assert_ptr_null(d->vp_format2);
    ck_assert_uint_eq(d->abi_version, 1);
    ck_assert_str_eq(d->vp_name(), "tp-good");
    ck_assert_str_eq(d->vp_preface(NULL), "tp");
    ck_assert_ptr_null(d->vp_format);
    ck_assert_ptr_null(d->vp_prof_done);

    ck_assert_str_eq(read_log(), "load tp-good\n");
    dcpi_vp_set_free(set);
    ck_assert_str_eq(read_log(), "load tp-good\nunload tp-good\n");
    ck_assert_ptr_null(dlopen(PLUGIN("good"), RTLD_NOW | RTLD_NOLOAD));
}
END_TEST

START_TEST(test_newer_struct)
{
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_t *vp = NULL;
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("newer_struct"), &vp, err), 0);
    const vp_dispatch_t *d = dcpi_vp_dispatch(vp);
    ck_assert_uint_gt(d->struct_size, sizeof(vp_dispatch_t));
    ck_assert_str_eq(d->vp_name(), "tp-newer");
    ck_assert_ptr_nonnull(d->vp_prof_process);
    dcpi_vp_set_free(set);
    ck_assert_str_eq(read_log(), "load tp-newer\nunload tp-newer\n");
}
END_TEST

START_TEST(test_duplicate_name)
{
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("good"), NULL, err), 0);
    dcpi_vp_t *vp = NULL;
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("dup_name"), &vp, err), DCPI_EEXIST);
    ck_assert_ptr_null(vp);
    ck_assert_str_eq(
        err, PLUGIN("dup_name") ": profile name 'tp-good' already loaded from " PLUGIN("good"));
    /* The same file twice is a duplicate too. */
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("good"), NULL, err), DCPI_EEXIST);
    ck_assert_uint_eq(dcpi_vp_count(set), 1);
    /* dup_name.so never ran a hook; good.so is still loaded and hooked once. */
    ck_assert_str_eq(read_log(), "load tp-good\n");
    dcpi_vp_set_free(set);
    ck_assert_str_eq(read_log(), "load tp-good\nunload tp-good\n");
}
END_TEST

START_TEST(test_reverse_unload)
{
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("good"), NULL, err), 0);
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("load_fails"), NULL, err), DCPI_EPLUGIN);
    ck_assert_int_eq(dcpi_vp_load(set, PLUGIN("newer_struct"), NULL, err), 0);
    ck_assert_uint_eq(dcpi_vp_count(set), 2);
    ck_assert_str_eq(dcpi_vp_name(dcpi_vp_get(set, 1)), "tp-newer");
    dcpi_vp_set_free(set);
    ck_assert_str_eq(read_log(), "load tp-good\nload tp-load-fails\nload tp-newer\n"
                                 "unload tp-newer\nunload tp-good\n");
}
END_TEST

/* ---- resolution of -vtrace names ---- */

START_TEST(test_resolve_search_dirs)
{
    const char *dirs[] = {"/nonexistent-a", DCPI_TEST_PLUGINS, NULL};
    ck_assert_int_eq(dcpi_vp_set_search_dirs(dirs), 0);
    char path[512];
    ck_assert_int_eq(dcpi_vp_resolve("good", path, sizeof(path)), 0);
    ck_assert_str_eq(path, PLUGIN("good"));
    ck_assert_int_eq(dcpi_vp_resolve("good.so", path, sizeof(path)), 0);
    ck_assert_str_eq(path, PLUGIN("good"));
    /* A value with '/' is a path, taken as is. */
    ck_assert_int_eq(dcpi_vp_resolve("./x/good", path, sizeof(path)), 0);
    ck_assert_str_eq(path, "./x/good");
    ck_assert_int_eq(dcpi_vp_resolve("good", path, 8), DCPI_ERANGE);

    /* dcpi_vp_load resolves too. */
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    dcpi_vp_t *vp = NULL;
    ck_assert_int_eq(dcpi_vp_load(set, "good", &vp, NULL), 0);
    ck_assert_str_eq(dcpi_vp_path(vp), PLUGIN("good"));
    dcpi_vp_set_free(set);
}
END_TEST

START_TEST(test_resolve_env_first)
{
    char copy[512];
    snprintf(copy, sizeof(copy), "%s/good.so", tmpdir);
    copy_file(PLUGIN("good"), copy);
    const char *dirs[] = {DCPI_TEST_PLUGINS, NULL};
    ck_assert_int_eq(dcpi_vp_set_search_dirs(dirs), 0);
    char env[600];
    snprintf(env, sizeof(env), "/nonexistent-b::%s", tmpdir);
    ck_assert_int_eq(setenv(DCPI_VP_PATH_ENV, env, 1), 0);
    char path[512];
    ck_assert_int_eq(dcpi_vp_resolve("good", path, sizeof(path)), 0);
    ck_assert_str_eq(path, copy);
}
END_TEST

START_TEST(test_resolve_cwd)
{
    char copy[512];
    snprintf(copy, sizeof(copy), "%s/vp-here.so", tmpdir);
    copy_file(PLUGIN("good"), copy);
    ck_assert_int_eq(chdir(tmpdir), 0);
    char path[512];
    ck_assert_int_eq(dcpi_vp_resolve("vp-here", path, sizeof(path)), 0);
    ck_assert_str_eq(path, "./vp-here.so");
    /* A directory of that name is not a plugin. */
    ck_assert_int_eq(mkdir("vp-dir.so", 0700), 0);
    ck_assert_int_eq(dcpi_vp_resolve("vp-dir", path, sizeof(path)), DCPI_ENOENT);
}
END_TEST

START_TEST(test_resolve_not_found)
{
    const char *dirs[] = {"/nonexistent-c", "/nonexistent-d", NULL};
    ck_assert_int_eq(dcpi_vp_set_search_dirs(dirs), 0);
    ck_assert_int_eq(setenv(DCPI_VP_PATH_ENV, "/nonexistent-a:/nonexistent-b", 1), 0);
    char path[512], err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vp_resolve_err("vp-x", path, sizeof(path), err), DCPI_ENOENT);
    ck_assert_str_eq(err, "vp-x: plugin not found (searched: /nonexistent-a, /nonexistent-b, "
                          "/nonexistent-c, /nonexistent-d, .)");
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    err[0] = '\0';
    ck_assert_int_eq(dcpi_vp_load(set, "vp-x", NULL, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "vp-x: plugin not found (searched: "));
    ck_assert_int_eq(dcpi_vp_load(set, "", NULL, err), DCPI_EINVAL);
    dcpi_vp_set_free(set);
}
END_TEST

/* ---- the plugins shipped with dcpi, and the sample, driven as dcpid and dcpilist would ---- */

/* Load one plugin into a fresh set (the set is returned for freeing). */
static const vp_dispatch_t *load_one(const char *path, const char *name, dcpi_vp_set_t **set)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_t *vp = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(set), 0);
    int rc = dcpi_vp_load(*set, path, &vp, err);
    ck_assert_msg(rc == 0, "%s: %s", path, err);
    ck_assert_str_eq(dcpi_vp_name(vp), name);
    return dcpi_vp_dispatch(vp);
}

/* The values the specification captures for mnemonic in memory form mf (-1: ignored). */
static int spec_of(const trace_vlist_table_t *spec, const char *mnemonic, trace_memform_t mf,
                   trace_value_t *first)
{
    trace_opc_t opc = trace_opc_lookup(mnemonic, mf);
    ck_assert_msg(opc != TRACE_OPC_INVALID, "no key %s/%d", mnemonic, (int)mf);
    trace_value_t values[TRACE_VLIST_MAX] = {TRACE_NONE};
    int n = trace_vlist_table_get(spec, opc, values);
    *first = values[0];
    return n;
}

static void expect_spec(const trace_vlist_table_t *spec, const char *mnemonic, trace_memform_t mf,
                        trace_value_t want)
{
    trace_value_t first;
    int n = spec_of(spec, mnemonic, mf, &first);
    if (want == TRACE_NONE) {
        ck_assert_msg(n == -1, "%s/%s: captured (%d values), want ignored", mnemonic,
                      trace_memform_name(mf), n);
        return;
    }
    ck_assert_msg(n == 1 && first == want, "%s/%s: %d values, first %s; want %s", mnemonic,
                  trace_memform_name(mf), n, trace_value_name(first), trace_value_name(want));
}

static trace_inst_t decode(const char *hex_bytes, int len)
{
    trace_inst_t inst;
    ck_assert_int_eq(trace_inst_decode(hex_bytes, len, &inst), len);
    return inst;
}

/* One trace: a burst of pid 42 with contexts, and entries of one value each. */
struct entry {
    trace_inst_t inst;
    uint64_t pc, value;
    unsigned missing;
};

static size_t encode(const struct entry *e, int n, trace_value_t kind, uint8_t *buf, size_t cap)
{
    static trace_encoder_t enc;
    trace_encoder_init(&enc, buf, cap);
    ck_assert_int_eq(trace_encoder_burst(&enc, 42, 43, 1000, 1), 0);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(trace_encoder_entry(&enc, &e[i].inst, e[i].pc, 100 + i, 200 + i, 1, &kind,
                                             &e[i].value, e[i].missing),
                         0);
    }
    return trace_encoder_size(&enc);
}

static int process(const vp_dispatch_t *d, const uint8_t *buf, size_t len, vsample_t **out)
{
    static trace_parser_t parser;
    trace_parser_init(&parser, buf, len);
    return d->vp_prof_process(42, &parser, out);
}

START_TEST(test_vp_classic)
{
    dcpi_vp_set_t *set = NULL;
    const vp_dispatch_t *d = load_one(SHIPPED("vp-classic"), "vp-classic", &set);
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    expect_spec(spec, "mov", TRACE_MEM_READ, TRACE_REGC);
    expect_spec(spec, "add", TRACE_MEM_NONE, TRACE_REGC);
    expect_spec(spec, "add", TRACE_MEM_READ, TRACE_REGC);
    expect_spec(spec, "imul", TRACE_MEM_NONE, TRACE_REGC);
    expect_spec(spec, "add", TRACE_MEM_RW, TRACE_NONE);
    expect_spec(spec, "mov", TRACE_MEM_WRITE, TRACE_NONE);
    expect_spec(spec, "jmp", TRACE_MEM_NONE, TRACE_NONE);
    expect_spec(spec, "call", TRACE_MEM_NONE, TRACE_NONE);
    expect_spec(spec, "addsd", TRACE_MEM_NONE, TRACE_NONE);

    /* The trace: a load, an add whose result is missing, an add with a result. */
    struct entry e[] = {
        {decode("\x48\x8b\x03", 3), 0x401000, 0x1234, 0}, /* mov rax, [rbx] */
        {decode("\x48\x01\xd8", 3), 0x401003, 0, 1},      /* add rax, rbx: missing */
        {decode("\x48\x01\xd8", 3), 0x401003, 7, 0},
    };
    uint8_t buf[1024];
    size_t len = encode(e, 3, TRACE_REGC, buf, sizeof(buf));
    vsample_t *v = NULL;
    ck_assert_int_eq(process(d, buf, len, &v), 2);
    ck_assert_uint_eq(v[0].pc, 0x401000);
    ck_assert_uint_eq(v[0].value, 0x1234);
    ck_assert_uint_eq(v[0].context0, 100);
    ck_assert_uint_eq(v[0].context1, 200);
    ck_assert_uint_eq(v[1].pc, 0x401003);
    ck_assert_uint_eq(v[1].value, 7);
    ck_assert_uint_eq(v[1].context0, 102);
    /* A corrupt trace is an error, not an empty result. */
    buf[len - 1] = 0xff;
    ck_assert_int_lt(process(d, buf, len, &v), 0);

    /* dcpilist: the preface names the destination, the format prints hex. */
    trace_inst_t i = decode("\x48\x8b\x03", 3);
    ck_assert_str_eq(d->vp_preface(&i), "rax:");
    i = decode("\x83\xc0\x01", 3); /* add eax, 1 */
    ck_assert_str_eq(d->vp_preface(&i), "eax:");
    i = decode("\x48\xf7\xe3", 3); /* mul rbx */
    ck_assert_str_eq(d->vp_preface(&i), "rax:");
    i = decode("\x48\x39\xd8", 3); /* cmp rax, rbx */
    ck_assert_str_eq(d->vp_preface(&i), "rflags:");
    i = decode("\xf0\x48\x0f\xc1\x03", 5); /* lock xadd [rbx], rax */
    ck_assert_str_eq(d->vp_preface(&i), "result:");
    ck_assert_str_eq(d->vp_format(&i, 0xdeadbeefULL), "0xdeadbeef");
    d->vp_prof_done();
    dcpi_vp_set_free(set);
}
END_TEST

START_TEST(test_vp_addr)
{
    dcpi_vp_set_t *set = NULL;
    const vp_dispatch_t *d = load_one(SHIPPED("vp-addr"), "vp-addr", &set);
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    expect_spec(spec, "mov", TRACE_MEM_READ, TRACE_EA);
    expect_spec(spec, "mov", TRACE_MEM_WRITE, TRACE_EA);
    expect_spec(spec, "add", TRACE_MEM_RW, TRACE_EA);
    expect_spec(spec, "imul", TRACE_MEM_READ, TRACE_EA);
    expect_spec(spec, "movsd", TRACE_MEM_READ, TRACE_EA);
    expect_spec(spec, "mov", TRACE_MEM_NONE, TRACE_NONE);
    expect_spec(spec, "lea", TRACE_MEM_NONE, TRACE_NONE);
    expect_spec(spec, "push", TRACE_MEM_WRITE, TRACE_NONE);
    expect_spec(spec, "pop", TRACE_MEM_READ, TRACE_NONE);
    expect_spec(spec, "call", TRACE_MEM_READ, TRACE_NONE);
    expect_spec(spec, "ret", TRACE_MEM_READ, TRACE_NONE);
    expect_spec(spec, "movsb", TRACE_MEM_RW, TRACE_NONE);

    struct entry e[] = {
        {decode("\x48\x89\x03", 3), 0x401000, 0x7ffd12345678, 0}, /* mov [rbx], rax */
        {decode("\x48\x89\x03", 3), 0x401000, 0, 1},              /* missing */
    };
    uint8_t buf[1024];
    size_t len = encode(e, 2, TRACE_EA, buf, sizeof(buf));
    vsample_t *v = NULL;
    ck_assert_int_eq(process(d, buf, len, &v), 1);
    ck_assert_uint_eq(v[0].pc, 0x401000);
    ck_assert_uint_eq(v[0].value, 0x7ffd12345678);
    ck_assert_str_eq(d->vp_preface(&e[0].inst), "addr");
    ck_assert_str_eq(d->vp_format(&e[0].inst, 0xffff800012345678ULL), "0x800012345678");
    d->vp_prof_done();
    dcpi_vp_set_free(set);
}
END_TEST

/* samples/vp-load-addr.c builds out of tree, clean, against the public headers and libdcpi. */
START_TEST(test_sample_plugin)
{
    char so[512], cmd[2048];
    snprintf(so, sizeof(so), "%s/vp-load-addr.so", tmpdir);
    snprintf(cmd, sizeof(cmd),
             "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -o '%s' "
             "'%s/samples/vp-load-addr.c' -I'%s/include' -L'%s' -Wl,-rpath,'%s' -ldcpi",
             so, SOURCE_DIR, SOURCE_DIR, DCPI_TEST_BIN, DCPI_TEST_BIN);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);

    dcpi_vp_set_t *set = NULL;
    const vp_dispatch_t *d = load_one(so, "vp-ldq-addr", &set);
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    expect_spec(spec, "mov", TRACE_MEM_READ, TRACE_EA);
    expect_spec(spec, "mov", TRACE_MEM_WRITE, TRACE_NONE);
    expect_spec(spec, "movzx", TRACE_MEM_READ, TRACE_NONE);
    expect_spec(spec, "add", TRACE_MEM_READ, TRACE_NONE);

    struct entry e[] = {
        {decode("\x48\x8b\x03", 3), 0x401000, 0x601040, 0}, /* mov rax, [rbx] */
        {decode("\x8b\x03", 2), 0x401003, 0x601048, 0},     /* mov eax, [rbx]: 32-bit */
        {decode("\x64\x48\x8b\x04\x25\x28\x00\x00\x00", 9), 0x401005, 0x7f0000000028, 0},
        {decode("\x48\x8b\x03", 3), 0x401000, 0, 1}, /* missing */
    };
    uint8_t buf[1024];
    size_t len = encode(e, 4, TRACE_EA, buf, sizeof(buf));
    vsample_t *v = NULL;
    ck_assert_int_eq(process(d, buf, len, &v), 2);
    ck_assert_uint_eq(v[0].value, 0x601040);
    ck_assert_uint_eq(v[1].pc, 0x401005); /* mov rax, fs:[0x28] */
    ck_assert_uint_eq(v[1].value, 0x7f0000000028);
    ck_assert_str_eq(d->vp_preface(&e[0].inst), "addr");
    ck_assert_str_eq(d->vp_format(&e[0].inst, 0xffff7f0000000028ULL), "7f0000000028");
    d->vp_prof_done();
    dcpi_vp_set_free(set);
}
END_TEST

/* ---- the ownership check ---- */

/* The checks as root can be made here: root, and the build directory is root's. */
static const char *root_checks_impossible(void)
{
    static char why[DCPI_ERRLEN + 200];
    char err[DCPI_ERRLEN] = "";
    if (geteuid() != 0)
        return "not running as root (euid != 0): the ownership check applies to root only and "
               "the cases chown files to other users";
    if (dcpi_vp_check_secure(PLUGIN("good"), err) != 0) {
        snprintf(why, sizeof why,
                 "the build directory is not root's (%s): the cases need a plugin root accepts",
                 err);
        return why;
    }
    return NULL;
}

/* tmpdir/sub (mode) holding a copy of good.so; the copy's path goes to path. */
static void plant(const char *sub, mode_t mode, char *path, size_t len)
{
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(chmod(dir, mode), 0); /* chmod: the umask does not apply */
    snprintf(path, len, "%s/good.so", dir);
    copy_file(PLUGIN("good"), path);
    ck_assert_int_eq(chmod(path, 0755), 0);
}

START_TEST(test_secure_build_dir)
{
    char path[512], err[DCPI_ERRLEN] = "";
    plant("ok", 0755, path, sizeof(path));
    ck_assert_msg(dcpi_vp_check_secure(path, err) == 0, "%s", err);
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    ck_assert_msg(dcpi_vp_load(set, path, NULL, err) == 0, "%s", err);
    dcpi_vp_set_free(set);
}
END_TEST

START_TEST(test_insecure_dir)
{
    char path[512], want[700];
    plant("open", 0777, path, sizeof(path));
    snprintf(want, sizeof(want),
             "refusing plugin: %s/open is writable by group/others (use -vtrace-insecure to "
             "override)",
             tmpdir);
    expect_refused(path, DCPI_EPERM, want);
    ck_assert_str_eq(read_log(), ""); /* never ran a hook */
}
END_TEST

START_TEST(test_insecure_override)
{
    char path[512], err[DCPI_ERRLEN] = "";
    plant("open", 0777, path, sizeof(path));
    dcpi_vp_set_t *set = NULL;
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
    dcpi_vp_set_allow_insecure(set, 1);
    ck_assert_msg(dcpi_vp_load(set, path, NULL, err) == 0, "%s", err);
    ck_assert_uint_eq(dcpi_vp_count(set), 1);
    dcpi_vp_set_free(set);
    ck_assert_str_eq(read_log(), "load tp-good\nunload tp-good\n");
}
END_TEST

START_TEST(test_insecure_file)
{
    char path[512], want[700];
    plant("file", 0755, path, sizeof(path));
    ck_assert_int_eq(chmod(path, 0664), 0);
    snprintf(want, sizeof(want), "refusing plugin: %s is writable by group/others", path);
    expect_refused(path, DCPI_EPERM, want);
    ck_assert_int_eq(chmod(path, 0755), 0);
    ck_assert_int_eq(chown(path, 65534, 65534), 0);
    snprintf(want, sizeof(want), "refusing plugin: %s is owned by uid 65534, not root", path);
    expect_refused(path, DCPI_EPERM, want);
}
END_TEST

START_TEST(test_insecure_symlink)
{
    /* A root-owned link in a world-writable directory, to a plugin in a safe place. */
    char dir[400], link[512], want[700], target[4096], err[DCPI_ERRLEN] = "";
    snprintf(dir, sizeof(dir), "%s/open", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0);
    snprintf(link, sizeof(link), "%s/vp.so", dir);
    ck_assert_ptr_nonnull(realpath(PLUGIN("good"), target));
    ck_assert_int_eq(symlink(target, link), 0);
    snprintf(want, sizeof(want), "refusing plugin: %s is writable by group/others", dir);
    expect_refused(link, DCPI_EPERM, want);
    /* The same directory with the sticky bit (like /tmp): others can no longer rename or remove
     * the root-owned link, so it is accepted. */
    ck_assert_int_eq(chmod(dir, 01777), 0);
    ck_assert_int_eq(dcpi_vp_check_secure(link, err), 0);
    /* A safe link to a plugin in a world-writable directory. */
    char path[512], safe[512];
    plant("open2", 0777, path, sizeof(path));
    snprintf(safe, sizeof(safe), "%s/link.so", tmpdir);
    ck_assert_int_eq(symlink(path, safe), 0);
    snprintf(want, sizeof(want), "refusing plugin: %s/open2 is writable by group/others", tmpdir);
    expect_refused(safe, DCPI_EPERM, want);
}
END_TEST

START_TEST(test_check_any_user)
{
    /* dcpi_vp_check_secure itself runs for any user: a 0777 directory is never safe. */
    char path[512], err[DCPI_ERRLEN] = "";
    plant("open", 0777, path, sizeof(path));
    ck_assert_int_eq(dcpi_vp_check_secure(path, err), DCPI_EPERM);
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && strstr(err, ": refusing plugin: "), "%s",
                  err);
    ck_assert_ptr_nonnull(strstr(err, "(use -vtrace-insecure to override)"));
    ck_assert_int_eq(dcpi_vp_check_secure(DCPI_TEST_PLUGINS "/none.so", err), -ENOENT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vploader");
    TCase *tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_refusal, 0, (int)(sizeof(refusals) / sizeof(refusals[0])));
    tcase_add_test(tc, test_not_elf);
    tcase_add_test(tc, test_refused_is_unloaded);
    suite_add_tcase(s, tc);

    tc = tcase_create("load");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_good);
    tcase_add_test(tc, test_newer_struct);
    tcase_add_test(tc, test_duplicate_name);
    tcase_add_test(tc, test_reverse_unload);
    suite_add_tcase(s, tc);

    tc = tcase_create("resolve");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_resolve_search_dirs);
    tcase_add_test(tc, test_resolve_env_first);
    tcase_add_test(tc, test_resolve_cwd);
    tcase_add_test(tc, test_resolve_not_found);
    suite_add_tcase(s, tc);

    tc = tcase_create("shipped");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_vp_classic);
    tcase_add_test(tc, test_vp_addr);
    tcase_add_test(tc, test_sample_plugin);
    suite_add_tcase(s, tc);

    tc = tcase_create("ownership");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_check_any_user);
    suite_add_tcase(s, tc);

    tc = dcpi_check_tcase("root_owner");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_secure_build_dir);
    tcase_add_test(tc, test_insecure_dir);
    tcase_add_test(tc, test_insecure_override);
    tcase_add_test(tc, test_insecure_file);
    tcase_add_test(tc, test_insecure_symlink);
    suite_add_tcase(s, tc);

    static const struct dcpi_check_need needs[] = {{"root_owner", root_checks_impossible}};
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
