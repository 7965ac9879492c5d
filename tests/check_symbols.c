/*
 * check_symbols.c - function symbol tables: a gcc-built program (static, global and
 * size-less assembly functions), a g++-built one (demangling), a stripped binary with a
 * separate debug file (beside it, or from debuginfod: a file:// URL, no server), libc's dynamic
 * symbols, and kallsyms files (synthetic and the live one).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/base/log.h"
#include "core/image/debuginfod.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

static const char *c_src =
    "static int __attribute__((noinline)) helper_static(int x) { return x * 3 + 1; }\n"
    "int __attribute__((noinline)) global_func(int x) { return helper_static(x) + 2; }\n"
    "__asm__(\".text\\n.globl asm_nosize\\n.type asm_nosize,@function\\n.p2align 6\\n"
    "asm_nosize:\\n nop\\n nop\\n nop\\n ret\\n\");\n"
    "int main(int argc, char **argv) { return global_func(argc) > 100; }\n";

static const char *cxx_src =
    "namespace ns { int __attribute__((noinline)) cxx_func(int x, double y) "
    "{ return x + (int)y; } }\n"
    "int main(int argc, char **) { return ns::cxx_func(argc, 1.5) > 100; }\n";

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_symbols.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

static void remove_tmpdir(void)
{
    sh("rm -rf '%s'%s", tmpdir, "");
}

/* tmpdir/name (a static buffer). */
static const char *tmpdir_bin(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

/* Write src to tmpdir/name.<ext> and compile it with cc into tmpdir/name. */
static const char *build(const char *name, const char *src, const char *cc, const char *ext)
{
    static char bin[512];
    char path[512], cmd[1400];
    snprintf(path, sizeof path, "%s/%s.%s", tmpdir, name, ext);
    snprintf(bin, sizeof bin, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -O1 -fno-inline -falign-functions=64 -o '%s' '%s'", cc, bin,
             path);
    ck_assert_msg(system(cmd) == 0, "compile failed: %s", cmd);
    return bin;
}

/* nm's view of one symbol: address and size (0 when nm prints none). */
typedef struct nm_sym {
    unsigned long long addr, size;
} nm_sym_t;

static nm_sym_t nm_lookup(const char *bin, const char *name, const char *opts)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "nm -S %s '%s' | awk '$NF == \"%s\" { if (NF == 4) print $1, $2; else print $1, 0 }'",
             opts, bin, name);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    nm_sym_t s = {0, 0};
    int n = fscanf(p, "%llx %llx", &s.addr, &s.size);
    pclose(p);
    ck_assert_msg(n == 2 && s.addr != 0, "nm does not list %s in %s", name, bin);
    return s;
}

/* The lowest text-symbol address nm lists above addr (the next function). */
static unsigned long long nm_next_text(const char *bin, unsigned long long addr)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "nm '%s' | awk '$2 ~ /^[tTwWiI]$/ { print $1 }' | sort", bin);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    unsigned long long a, next = ~0ULL;
    while (fscanf(p, "%llx", &a) == 1)
        if (a > addr && a < next)
            next = a;
    pclose(p);
    return next;
}

static void check_named(const dcpi_symtab_t *st, const char *bin, const char *name)
{
    nm_sym_t want = nm_lookup(bin, name, "");
    const dcpi_symbol_t *s = dcpi_symtab_find(st, name);
    ck_assert_msg(s != NULL, "%s not found", name);
    ck_assert_uint_eq(s->addr, want.addr);
    ck_assert_uint_eq(s->size, want.size);
    ck_assert_ptr_eq(dcpi_symtab_lookup(st, want.addr), s);
    if (want.size > 0)
        ck_assert_ptr_eq(dcpi_symtab_lookup(st, want.addr + want.size - 1), s);
}

/* Every NAME@plt objdump shows in bin, dcpi names the same at that address (16 bytes); returns
 * how many. */
static int check_plt(const dcpi_symtab_t *st, const char *bin)
{
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "objdump -d '%s' 2>/dev/null | grep -E '^[0-9a-f]+ <[^>]+@plt>:$'",
             bin);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    while (fgets(line, sizeof line, p)) {
        unsigned long long addr;
        char name[256];
        if (sscanf(line, "%llx <%255[^>]>:", &addr, name) != 2)
            continue;
        const dcpi_symbol_t *sym = dcpi_symtab_lookup(st, addr + 4);
        ck_assert_msg(sym && strcmp(sym->name, name) == 0, "%s: %#llx is %s, objdump says %s", bin,
                      addr, sym ? sym->name : "(nothing)", name);
        n++;
    }
    pclose(p);
    return n;
}

START_TEST(test_plt)
{
    /* a program of ours and one from a Debian package (coreutils, stripped: .dynsym only) */
    const char *bins[] = {DCPI_TEST_BIN "/samples/work-demo", "/usr/bin/sort"};
    for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
        dcpi_symtab_t *st = NULL;
        char err[DCPI_ERRLEN] = "";
        ck_assert_int_eq(dcpi_symtab_open(bins[i], &st, err), 0);
        ck_assert_int_ge(check_plt(st, bins[i]), 3);
        dcpi_symtab_free(st);
    }
    /* _init has no size: it ends with .init, before the PLT */
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(DCPI_TEST_BIN "/samples/work-demo", &st, NULL), 0);
    const dcpi_symbol_t *init = dcpi_symtab_find(st, "_init");
    ck_assert_ptr_nonnull(init);
    ck_assert_uint_gt(init->size, 0);
    const dcpi_symbol_t *after = dcpi_symtab_lookup(st, init->addr + init->size);
    ck_assert(after == NULL || strcmp(after->name, "_init") != 0);
    dcpi_symtab_free(st);
}
END_TEST

START_TEST(test_c_program)
{
    make_tmpdir();
    const char *bin = build("prog", c_src, "gcc", "c");
    dcpi_symtab_t *st = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_symtab_open(bin, &st, err), 0);
    check_named(st, bin, "helper_static");
    check_named(st, bin, "global_func");
    check_named(st, bin, "main");
    /* Past the end of a sized function, before the next one (alignment padding): no symbol. */
    nm_sym_t h = nm_lookup(bin, "helper_static", "");
    ck_assert_uint_gt(h.size, 0);
    ck_assert_msg(nm_next_text(bin, h.addr) > h.addr + h.size, "no gap after helper_static");
    ck_assert_ptr_null(dcpi_symtab_lookup(st, h.addr + h.size));
    /* A function without size extends to the next symbol (its size says so), never past its
     * section's end. */
    nm_sym_t a = nm_lookup(bin, "asm_nosize", "");
    const dcpi_symbol_t *s = dcpi_symtab_lookup(st, a.addr + 3);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->name, "asm_nosize");
    ck_assert_uint_eq(s->size, nm_next_text(bin, a.addr) - a.addr);
    /* Sorted, one symbol per address. */
    size_t n = dcpi_symtab_count(st);
    ck_assert_uint_ge(n, 4);
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_lt(dcpi_symtab_get(st, i - 1)->addr, dcpi_symtab_get(st, i)->addr);
    ck_assert_ptr_null(dcpi_symtab_get(st, n));
    ck_assert_ptr_null(dcpi_symtab_lookup(st, 0));
    ck_assert_ptr_null(dcpi_symtab_find(st, "no_such_function"));
    dcpi_symtab_free(st);
    remove_tmpdir();
}
END_TEST

START_TEST(test_cxx_demangle)
{
    make_tmpdir();
    const char *bin = build("cxx", cxx_src, "g++", "cc");
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(bin, &st, NULL), 0);
    nm_sym_t want = nm_lookup(bin, "_ZN2ns8cxx_funcEid", "");
    const dcpi_symbol_t *s = dcpi_symtab_lookup(st, want.addr);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->name, "ns::cxx_func(int, double)");
    ck_assert_ptr_eq(dcpi_symtab_find(st, "ns::cxx_func(int, double)"), s);
    ck_assert_ptr_eq(dcpi_symtab_find(st, "_ZN2ns8cxx_funcEid"), s);
    dcpi_symtab_free(st);

    char *d = dcpi_demangle("_ZN2ns8cxx_funcEid");
    ck_assert_str_eq(d, "ns::cxx_func(int, double)");
    free(d);
    ck_assert_ptr_null(dcpi_demangle("main"));
    ck_assert_ptr_null(dcpi_demangle("_Zbogus!"));
    remove_tmpdir();
}
END_TEST

static int has_static(const char *bin, unsigned long long addr)
{
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(bin, &st, NULL), 0);
    const dcpi_symbol_t *s = dcpi_symtab_find(st, "helper_static");
    int ok = s && s->addr == addr && dcpi_symtab_lookup(st, addr) == s;
    dcpi_symtab_free(st);
    return ok;
}

START_TEST(test_debug_file)
{
    make_tmpdir();
    const char *bin = build("dbg", c_src, "gcc -g", "c");
    unsigned long long addr = nm_lookup(bin, "helper_static", "").addr;
    sh("cd '%s' && objcopy --only-keep-debug dbg dbg.debug && strip dbg && "
       "objcopy --add-gnu-debuglink=dbg.debug dbg && mkdir .debug%s",
       tmpdir, "");
    /* Stripped: only .dynsym, which has no static functions. */
    sh("cd '%s' && ! readelf -SW dbg | grep -q ' .symtab '%s", tmpdir, "");
    ck_assert(has_static(bin, addr)); /* dbg.debug beside the binary */
    sh("cd '%s' && mv dbg.debug .debug/%s", tmpdir, "");
    ck_assert(has_static(bin, addr)); /* .debug/dbg.debug */
    sh("cd '%s' && mv .debug/dbg.debug gone.debug%s", tmpdir, "");
    ck_assert(!has_static(bin, addr)); /* no debug file: the static name is gone */
    remove_tmpdir();
}
END_TEST

/* ---- debuginfod: DEBUGINFOD_URLS=file://DIR reads DIR/buildid/ID/debuginfo, no server ---- */

/* tmpdir/dbg stripped (no .symtab); tmpdir/mock/buildid/ID/debuginfo holds its unstripped build,
 * or with other set, the same source built as other.c: the same code and symbols under another
 * build-id. DEBUGINFOD_CACHE_PATH is tmpdir/cache. Returns helper_static's address. */
static unsigned long long debuginfod_setup(int other)
{
    make_tmpdir();
    const char *bin = build("dbg", c_src, "gcc -g", "c");
    unsigned long long addr = nm_lookup(bin, "helper_static", "").addr;
    if (other) {
        ck_assert_uint_eq(nm_lookup(build("other", c_src, "gcc -g", "c"), "helper_static", "").addr,
                          addr);
        sh("cd '%s' && test \"$(readelf -n dbg | grep 'Build ID')\" != "
           "\"$(readelf -n other | grep 'Build ID')\"%s",
           tmpdir, "");
    }
    sh("cd '%s' && d=mock/buildid/$(readelf -n dbg | sed -n 's/.*Build ID: //p') && "
       "mkdir -p $d && cp %s $d/debuginfo && strip dbg && ! readelf -SW dbg | grep -q ' .symtab '",
       tmpdir, other ? "other" : "dbg");
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
    unsetenv("DEBUGINFOD_URLS");
    return addr;
}

static void set_urls(const char *scheme, const char *where)
{
    char urls[400];
    snprintf(urls, sizeof urls, "%s%s", scheme, where);
    setenv("DEBUGINFOD_URLS", urls, 1);
}

/* Whether libdebuginfod.so.1 is in the process at all (dcpi's dlopen or anyone else's). */
static int libdebuginfod_in_process(void)
{
    void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* Without DEBUGINFOD_URLS (or with a blank one) nothing is asked and the library never loaded. */
START_TEST(test_debuginfod_unset)
{
    unsigned long long addr = debuginfod_setup(0);
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    setenv("DEBUGINFOD_URLS", " \t", 1);
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    ck_assert(!dcpi_debuginfod_loaded());
    ck_assert(!libdebuginfod_in_process());
    sh("test ! -e '%s/cache'%s", tmpdir, "");
    remove_tmpdir();
}
END_TEST

/* With it, the debug file comes through libdebuginfod (loaded by dlopen) into its cache. */
START_TEST(test_debuginfod_found)
{
    unsigned long long addr = debuginfod_setup(0);
    char mock[300];
    snprintf(mock, sizeof mock, "%s/mock", tmpdir);
    set_urls("file://", mock);
    ck_assert(has_static(tmpdir_bin("dbg"), addr));
    ck_assert(dcpi_debuginfod_loaded());
    sh("cd '%s' && test -s cache/$(readelf -n dbg | sed -n 's/.*Build ID: //p')/debuginfo%s",
       tmpdir, "");
    ck_assert(has_static(tmpdir_bin("dbg"), addr)); /* the same client again, from the cache */
    remove_tmpdir();
}
END_TEST

/* A file of another build-id under this one's is refused; no server answering is no error, and
 * the log says so once. */
START_TEST(test_debuginfod_refused)
{
    unsigned long long addr = debuginfod_setup(1);
    char mock[300], log[300];
    snprintf(mock, sizeof mock, "%s/mock", tmpdir);
    snprintf(log, sizeof log, "%s/log", tmpdir);
    set_urls("file://", mock);
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    ck_assert_int_eq(dcpi__log_open(log), 0);
    set_urls("http://127.0.0.1:1", ""); /* port 1: nothing listens (refused) */
    sh("rm -rf '%s/cache'%s", tmpdir, "");
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    sh("test $(grep -c 'debuginfod: no debug file for %s/dbg' '%s/log') = 1", tmpdir, tmpdir);
    remove_tmpdir();
}
END_TEST

/* dcpid turns it off: nothing is asked even with DEBUGINFOD_URLS set. */
START_TEST(test_debuginfod_off)
{
    unsigned long long addr = debuginfod_setup(0);
    char mock[300];
    snprintf(mock, sizeof mock, "%s/mock", tmpdir);
    set_urls("file://", mock);
    dcpi_debuginfod_off();
    ck_assert(!has_static(tmpdir_bin("dbg"), addr));
    ck_assert(!dcpi_debuginfod_loaded());
    remove_tmpdir();
}
END_TEST

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* Debian's libc path: another layout (or an unreadable libc) is this machine's, not a bug. */
static const char *libc_unreadable(void)
{
    static char why[300];
    if (access(LIBC, R_OK) == 0)
        return NULL;
    snprintf(why, sizeof why,
             "%s is not readable (%s): the case reads the dynamic symbols of the system's libc",
             LIBC, strerror(errno));
    return why;
}

START_TEST(test_libc_dynsym)
{
    nm_sym_t want = nm_lookup(LIBC, "malloc@@GLIBC_2.2.5", "-D");
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(LIBC, &st, NULL), 0);
    const dcpi_symbol_t *s = dcpi_symtab_find(st, "malloc");
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->addr, want.addr);
    ck_assert_ptr_eq(dcpi_symtab_lookup(st, want.addr + 1), s);
    ck_assert_uint_gt(dcpi_symtab_count(st), 1000);
    dcpi_symtab_free(st);
}
END_TEST

/* libc's debug file under /usr/lib/debug/.build-id (libc6-dbg, not installed by make test-deps). */
static const char *libc_debug_missing(void)
{
    if (libc_unreadable())
        return libc_unreadable();
    FILE *p = popen("f=/usr/lib/debug/.build-id/$(readelf -n " LIBC " | "
                    "sed -n 's/.*Build ID: \\(..\\)\\(.*\\)/\\1\\/\\2/p').debug; "
                    "test -r $f && readelf -SW $f 2>/dev/null | grep -c ' .symtab '",
                    "r");
    int has_debug = 0;
    if (!p)
        return "cannot run readelf on libc";
    if (fscanf(p, "%d", &has_debug) != 1)
        has_debug = 0;
    pclose(p);
    return has_debug ? NULL
                     : "no debug file with a .symtab for " LIBC " under /usr/lib/debug/.build-id "
                       "(libc6-dbg): the case finds libc's static functions (_int_malloc) there";
}

START_TEST(test_libc_debug)
{
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open(LIBC, &st, NULL), 0);
    ck_assert_ptr_nonnull(dcpi_symtab_find(st, "_int_malloc"));
    dcpi_symtab_free(st);
    /* by its build-id alone, as for a profile of a libc upgraded since */
    dcpi_image_info_t info;
    memset(&info, 0, sizeof info);
    ck_assert_int_eq(dcpi_image_probe(LIBC, &info, NULL), 0);
    ck_assert_int_eq(info.id_is_buildid, 1);
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_symtab_open_buildid(info.id, "/old/libc.so.6", &st, err), 0);
    ck_assert_ptr_nonnull(dcpi_symtab_find(st, "_int_malloc"));
    dcpi_symtab_free(st);
}
END_TEST

START_TEST(test_open_errors)
{
    dcpi_symtab_t *st = (dcpi_symtab_t *)1;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_symtab_open("/nonexistent/x.so", &st, err), DCPI_ENOENT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err, "/nonexistent/x.so: No such file or directory");
    ck_assert_int_eq(dcpi_symtab_open_kallsyms("/nonexistent/kallsyms", &st, err), DCPI_ENOENT);
    ck_assert_str_eq(err, "/nonexistent/kallsyms: No such file or directory");
    /* a debug file by build-id: none (no debuginfod asked), or not a build-id */
    unsetenv("DEBUGINFOD_URLS");
    ck_assert_int_eq(dcpi_symtab_open_buildid("00112233445566778899aabbccddeeff00112233",
                                              "/gone/prog", &st, err),
                     DCPI_ENOENT);
    ck_assert_ptr_null(st);
    ck_assert_str_eq(err, "/gone/prog: no debug file for build-id "
                          "00112233445566778899aabbccddeeff00112233");
    ck_assert_int_eq(dcpi_symtab_open_buildid("../x", "/gone/prog", &st, err), DCPI_EINVAL);
    ck_assert_str_eq(err, "../x: not a build-id");
    /* A file that is not ELF: an empty table. */
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/text", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("not an elf file\n", f);
    fclose(f);
    ck_assert_int_eq(dcpi_symtab_open(path, &st, err), 0);
    ck_assert_uint_eq(dcpi_symtab_count(st), 0);
    ck_assert_ptr_null(dcpi_symtab_lookup(st, 5));
    dcpi_symtab_free(st);
    dcpi_symtab_free(NULL);
    remove_tmpdir();
}
END_TEST

/* A perf map: sizes kept (code between two entries is unnamed), names with spaces; a line
 * that is no map line fails the file. */
START_TEST(test_perfmap)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/jitmap", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("2000 100 JS:*fib /tmp/app.js:1:13\n2200 40 JS:*hot /tmp/app.js:2:13\n0 10 zero\n", f);
    fclose(f);
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open_perfmap(path, &st, NULL), 0);
    ck_assert_uint_eq(dcpi_symtab_count(st), 2);
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0x20ff)->name, "JS:*fib /tmp/app.js:1:13");
    ck_assert_ptr_null(dcpi_symtab_lookup(st, 0x2100)); /* the gap */
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0x2200)->name, "JS:*hot /tmp/app.js:2:13");
    ck_assert_ptr_null(dcpi_symtab_lookup(st, 0x2240));
    dcpi_symtab_free(st);
    f = fopen(path, "w");
    fputs("2000 100 ok\n2100 t not_a_size\n", f);
    fclose(f);
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_symtab_open_perfmap(path, &st, err), DCPI_EFORMAT);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, "line 2 is not a perf map line") != NULL, "%s", err);
    remove_tmpdir();
}
END_TEST

START_TEST(test_kallsyms_synthetic)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/kallsyms", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("0000000000000000 T zero_addr\n"
          "ffffffff81000000 T _stext\n"
          "ffffffff81000000 T _text\n"
          "ffffffff81000100 t local_fn\n"
          "ffffffff81000200 D data_sym\n"
          "ffffffff81000300 W weak_fn\n"
          "ffffffff81000400 T schedule\n"
          "ffffffff81000500 r rodata_sym\n"
          "ffffffffc0001000 t mod_fn\t[mymod]\n"
          "ffffffffc0000800 T first_mod_fn\t[other]", /* unsorted, no final newline */
          f);
    fclose(f);
    dcpi_symtab_t *st = NULL;
    ck_assert_int_eq(dcpi_symtab_open_kallsyms(path, &st, NULL), 0);
    ck_assert_uint_eq(dcpi_symtab_count(st), 6);
    ck_assert_str_eq(dcpi_symtab_get(st, 0)->name, "_text");
    ck_assert_ptr_null(dcpi_symtab_find(st, "_stext")); /* collapsed into _text */
    ck_assert_ptr_null(dcpi_symtab_find(st, "zero_addr"));
    ck_assert_ptr_null(dcpi_symtab_find(st, "data_sym"));
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0xffffffff81000150ULL)->name, "local_fn");
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0xffffffff81000250ULL)->name, "local_fn");
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0xffffffff81000300ULL)->name, "weak_fn");
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0xffffffff81000600ULL)->name, "schedule");
    ck_assert_str_eq(dcpi_symtab_lookup(st, 0xffffffffc0000900ULL)->name, "first_mod_fn [other]");
    const dcpi_symbol_t *m = dcpi_symtab_find(st, "mod_fn [mymod]");
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(m->addr, 0xffffffffc0001000ULL);
    ck_assert_uint_eq(m->size, 0);
    ck_assert_ptr_null(dcpi_symtab_lookup(st, 0xffffffff80ffffffULL));
    dcpi_symtab_free(st);
    remove_tmpdir();
}
END_TEST

START_TEST(test_proc_kallsyms)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dcpi_symtab_t *st = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_symtab_open_kallsyms("/proc/kallsyms", &st, err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "check_symbols: /proc/kallsyms: %zu text symbols in %.3f s\n",
            dcpi_symtab_count(st), secs);
    ck_assert_uint_ge(dcpi_symtab_count(st), 1000);
    const dcpi_symbol_t *s = dcpi_symtab_find(st, "schedule");
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(dcpi_symtab_lookup(st, s->addr)->name, "schedule");
    ck_assert_str_eq(dcpi_symtab_lookup(st, s->addr + 1)->name, "schedule");
    dcpi_symtab_free(st);
}
END_TEST

/* /proc/kallsyms with real addresses (kptr_restrict lets us see them), or NULL and why not. */
static const char *kallsyms_unusable(void)
{
    FILE *f = fopen("/proc/kallsyms", "r");
    if (!f)
        return "/proc/kallsyms is not readable: the case reads the live kernel's symbols";
    unsigned long long a = 0;
    int n = fscanf(f, "%llx", &a);
    fclose(f);
    return n == 1 && a != 0 ? NULL
                            : "/proc/kallsyms shows zero addresses (kptr_restrict, or not root): "
                              "the case looks up the live kernel's symbols by address";
}

int main(void)
{
    Suite *s = suite_create("symbols");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_c_program);
    tcase_add_test(tc, test_plt);
    tcase_add_test(tc, test_cxx_demangle);
    tcase_add_test(tc, test_debug_file);
    tcase_add_test(tc, test_debuginfod_unset);
    tcase_add_test(tc, test_debuginfod_found);
    tcase_add_test(tc, test_debuginfod_refused);
    tcase_add_test(tc, test_debuginfod_off);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_kallsyms_synthetic);
    tcase_add_test(tc, test_perfmap);
    suite_add_tcase(s, tc);
    TCase *tl = dcpi_check_tcase("libc");
    tcase_set_timeout(tl, 60);
    tcase_add_test(tl, test_libc_dynsym);
    suite_add_tcase(s, tl);
    TCase *td = dcpi_check_tcase("libc_debug");
    tcase_set_timeout(td, 60);
    tcase_add_test(td, test_libc_debug);
    suite_add_tcase(s, td);
    TCase *tk = dcpi_check_tcase("kallsyms");
    tcase_set_timeout(tk, 60);
    tcase_add_test(tk, test_proc_kallsyms);
    suite_add_tcase(s, tk);
    static const struct dcpi_check_need needs[] = {
        {"libc", libc_unreadable},
        {"libc_debug", libc_debug_missing},
        {"kallsyms", kallsyms_unusable},
    };
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
