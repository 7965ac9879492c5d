/*
 * symtab.c - function symbol tables: the builder every reader fills (entries sorted by address
 * and collapsed to one per address; C++ names demangled with the C++ runtime's __cxa_demangle,
 * the raw name kept for dcpi_symtab_find), a given list (the fleet's symbols) and the queries.
 * The readers: ELF files (symelf.c) and their debug files (symdebug.c), kallsyms and perf maps
 * (symtext.c).
 */
#include "core/image/symbols.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/image/debuginfod.h"
#include "core/image/image.h"
#include "core/image/symbols-int.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *dcpi_demangle(const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *out = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---- builder ---------------------------------------------------------------------------- */

size_t dcpi__sym_pool_add(builder_t *b, const char *s, size_t len)
{
    if (len >= SIZE_MAX - b->plen ||
        dcpi__grow((void **)&b->pool, &b->pcap, b->plen + len + 1, 1) < 0)
        return NO_RAW;
    size_t at = b->plen;
    memcpy(b->pool + at, s, len);
    b->pool[at + len] = '\0';
    b->plen += len + 1;
    return at;
}

int dcpi__sym_push(builder_t *b, ent_t e)
{
    if (dcpi__grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v) < 0)
        return DCPI_ENOMEM;
    b->v[b->n++] = e;
    return 0;
}

/* name demangled when it is C++, keeping a suffix from '@' ("_Znwm@plt" -> "operator
 * new(unsigned long)@plt", as objdump names it); NULL when it is not C++ (or no memory). */
static char *demangle_suffixed(const char *name)
{
    const char *at = strchr(name, '@');
    if (!at)
        return dcpi_demangle(name);
    char *head = strndup(name, (size_t)(at - name));
    char *dem = head ? dcpi_demangle(head) : NULL;
    char *out = NULL;
    if (dem && asprintf(&out, "%s%s", dem, at) < 0)
        out = NULL;
    free(dem);
    free(head);
    return out;
}

/* Add a symbol whose name is copied into the pool, demangled when it is C++. */
int dcpi__sym_add_named(builder_t *b, uint64_t addr, uint64_t size, int rank, const char *name)
{
    ent_t e = {.addr = addr, .size = size, .rank = rank, .raw = NO_RAW};
    char *dem = demangle_suffixed(name);
    if (dem) {
        e.raw = dcpi__sym_pool_add(b, name, strlen(name));
        e.name = dcpi__sym_pool_add(b, dem, strlen(dem));
        free(dem);
        if (e.raw == NO_RAW)
            return DCPI_ENOMEM;
    } else {
        e.name = dcpi__sym_pool_add(b, name, strlen(name));
    }
    if (e.name == NO_RAW)
        return DCPI_ENOMEM;
    return dcpi__sym_push(b, e);
}

static int cmp_ent(const void *pa, const void *pb, void *pool)
{
    const ent_t *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    const char *na = (const char *)pool + a->name, *nb = (const char *)pool + b->name;
    size_t la = strlen(na), lb = strlen(nb);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(na, nb);
}

/* Count the distinct addresses of the sorted entries. */
static size_t count_unique(const builder_t *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += (i == 0 || b->v[i].addr != b->v[i - 1].addr);
    return n;
}

/* Sort, collapse one symbol per address (the best-ranked; its size, or the group's largest when
 * it has none) and hand the pool over to a new table. */
int dcpi__sym_finish(builder_t *b, dcpi_symtab_t **out)
{
    dcpi_symtab_t *st = calloc(1, sizeof *st);
    if (!st)
        return DCPI_ENOMEM;
    if (b->n > 1)
        qsort_r(b->v, b->n, sizeof *b->v, cmp_ent, b->pool);
    size_t n = count_unique(b);
    st->syms = calloc(n ? n : 1, sizeof *st->syms);
    st->raw = calloc(n ? n : 1, sizeof *st->raw);
    if (!st->syms || !st->raw) {
        dcpi_symtab_free(st);
        return DCPI_ENOMEM;
    }
    uint64_t *limit = calloc(n ? n : 1, sizeof *limit);
    if (!limit) {
        dcpi_symtab_free(st);
        return DCPI_ENOMEM;
    }
    for (size_t i = 0; i < b->n; i++) {
        const ent_t *e = &b->v[i];
        if (i > 0 && e->addr == b->v[i - 1].addr) {
            dcpi_symbol_t *last = &st->syms[st->n - 1];
            if (last->size == 0 && e->size > last->size)
                last->size = e->size;
            if (!limit[st->n - 1])
                limit[st->n - 1] = e->limit;
            continue;
        }
        st->syms[st->n] = (dcpi_symbol_t){e->addr, e->size, b->pool + e->name};
        st->raw[st->n] = e->raw == NO_RAW ? NULL : b->pool + e->raw;
        limit[st->n] = e->limit;
        st->n++;
    }
    /* A symbol without size covers up to the next symbol, never past its section's end (as
     * perf: a zero-size _init does not swallow the PLT after .init). */
    for (size_t i = 0; i < st->n; i++)
        if (st->syms[i].size == 0 && limit[i]) {
            uint64_t end = limit[i];
            if (i + 1 < st->n && st->syms[i + 1].addr < end)
                end = st->syms[i + 1].addr;
            st->syms[i].size = end - st->syms[i].addr;
        }
    free(limit);
    st->pool = b->pool;
    b->pool = NULL;
    *out = st;
    return 0;
}

void dcpi__sym_builder_free(builder_t *b)
{
    free(b->v);
    free(b->pool);
}

/* Give back the pages of the ELF file read so far: what is kept of it is copied into the pool,
 * so its symbol table (MBs in a large C++ or Haskell program) is never resident at once. The
 * mapping stays valid: a page read again faults in from the file (the page cache). */
void dcpi__sym_drop_map(const builder_t *b)
{
    if (b->map)
        (void)madvise(b->map, b->maplen, MADV_DONTNEED);
}

/* ---- a given list (the fleet's symbols) ------------------------------------------------- */

int dcpi_symtab_from_list(const dcpi_symbol_t *v, size_t n, dcpi_symtab_t **out)
{
    builder_t b = {0};
    *out = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ent_t e = {.addr = v[i].addr, .size = v[i].size, .rank = 0, .raw = NO_RAW};
        e.name = dcpi__sym_pool_add(&b, v[i].name, strlen(v[i].name));
        rc = e.name == NO_RAW ? DCPI_ENOMEM : dcpi__sym_push(&b, e);
    }
    if (rc == 0)
        rc = dcpi__sym_finish(&b, out);
    dcpi__sym_builder_free(&b);
    return rc;
}

/* ---- queries ---------------------------------------------------------------------------- */

void dcpi_symtab_free(dcpi_symtab_t *st)
{
    if (!st)
        return;
    free(st->syms);
    free(st->raw);
    free(st->pool);
    free(st->pool2);
    free(st);
}

const dcpi_symbol_t *dcpi_symtab_lookup(const dcpi_symtab_t *st, uint64_t addr)
{
    if (!st || st->n == 0 || addr < st->syms[0].addr)
        return NULL;
    size_t lo = 0, hi = st->n; /* find the last symbol with syms[i].addr <= addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    const dcpi_symbol_t *s = &st->syms[lo];
    if (s->size > 0 && addr - s->addr >= s->size)
        return NULL;
    return s;
}

const dcpi_symbol_t *dcpi_symtab_find(const dcpi_symtab_t *st, const char *name)
{
    if (!st || !name)
        return NULL;
    for (size_t i = 0; i < st->n; i++) {
        if (strcmp(st->syms[i].name, name) == 0 || (st->raw[i] && strcmp(st->raw[i], name) == 0))
            return &st->syms[i];
    }
    return NULL;
}

size_t dcpi_symtab_count(const dcpi_symtab_t *st)
{
    return st ? st->n : 0;
}

const dcpi_symbol_t *dcpi_symtab_get(const dcpi_symtab_t *st, size_t i)
{
    return st && i < st->n ? &st->syms[i] : NULL;
}
