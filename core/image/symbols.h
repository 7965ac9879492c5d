/*
 * symbols.h - function symbols of an image (ELF .symtab and .dynsym via libelf, with a
 * separate debug file found by build-id, .gnu_debuglink or, with DEBUGINFOD_URLS set, from
 * debuginfod when the file has no .symtab) or of the kernel
 * (/proc/kallsyms or a saved copy of it). Names are demangled when they are C++.
 */
#ifndef DCPI_CORE_SYMBOLS_H
#define DCPI_CORE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dcpi_symbol {
    uint64_t addr;    /* ELF vaddr (kernel: absolute address) */
    uint64_t size;    /* 0 when unknown: then it extends to the next symbol */
    const char *name; /* demangled where C++ */
} dcpi_symbol_t;

typedef struct dcpi_symtab dcpi_symtab_t;

/* Function symbols (STT_FUNC, STT_GNU_IFUNC) of an ELF file, sorted by address, duplicates at
 * one address collapsed (prefer global over weak over local names). Returns 0 or a negative
 * DCPI_E* with "PATH: reason" in err. A file with no symbols gives an empty table, not an error. */
int dcpi_symtab_open(const char *path, dcpi_symtab_t **out, char *err);

/* Text symbols (types t, T, w, W) of a kallsyms-format file, plain or gzip-compressed; module
 * names "[mod]" kept as a suffix " [mod]". A line that is no "ADDRESS TYPE NAME" line (a
 * damaged file) fails it: DCPI_EFORMAT, "PATH: line N is not a symbol line (...)". */
int dcpi_symtab_open_kallsyms(const char *path, dcpi_symtab_t **out, char *err);
/* A perf map ("START SIZE NAME" per line, hex, hex, the rest: what JITs write for perf), plain
 * or gzip-compressed: each symbol covers its size only (code between two is unnamed). A line
 * that is no such line fails it: DCPI_EFORMAT, "PATH: line N is not a perf map line (...)". */
int dcpi_symtab_open_perfmap(const char *path, dcpi_symtab_t **out, char *err);

/* Function symbols of the debug file of build-id hexid (lowercase hex) for an image whose file
 * no longer has that build-id (rebuilt, upgraded, deleted): /usr/lib/debug/.build-id, then
 * debuginfod when DEBUGINFOD_URLS is set. path (the image's file) only names it in messages.
 * 0, DCPI_ENOENT when no debug file is found, DCPI_EINVAL for a malformed id; "PATH: reason". */
int dcpi_symtab_open_buildid(const char *hexid, const char *path, dcpi_symtab_t **out, char *err);

/* A table of the n symbols v (names copied as they are, not demangled again): symbols that
 * came from elsewhere (the fleet store, core/fleet). 0 or DCPI_ENOMEM. */
int dcpi_symtab_from_list(const dcpi_symbol_t *v, size_t n, dcpi_symtab_t **out);
void dcpi_symtab_free(dcpi_symtab_t *st);

/* The symbol containing addr, or NULL. With size 0, a symbol covers up to the next one. */
const dcpi_symbol_t *dcpi_symtab_lookup(const dcpi_symtab_t *st, uint64_t addr);
/* The first symbol with this exact (demangled or raw) name, or NULL. */
const dcpi_symbol_t *dcpi_symtab_find(const dcpi_symtab_t *st, const char *name);
size_t dcpi_symtab_count(const dcpi_symtab_t *st);
const dcpi_symbol_t *dcpi_symtab_get(const dcpi_symtab_t *st, size_t i);

/* Demangle a C++ name into a malloc'd string, or NULL if it is not a mangled name. */
char *dcpi_demangle(const char *name);

#endif
