/*
 * symbols-int.h - private to core/image/: the symbol table's builder (symtab.c) shared by its
 * readers: ELF files (symelf.c), their debug files (symdebug.c), kallsyms and perf maps
 * (symtext.c).
 */
#ifndef DCPI_IMAGE_SYMBOLS_INT_H
#define DCPI_IMAGE_SYMBOLS_INT_H

#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/image/symbols.h"

#define NO_RAW     SIZE_MAX
#define DEBUG_ROOT "/usr/lib/debug"

/* One candidate symbol while a table is built; names are offsets into the builder's pool. */
typedef struct ent {
    uint64_t addr, size;
    uint64_t limit;   /* size 0: the end of its section (0: unknown) */
    size_t name, raw; /* raw is NO_RAW when the name was not demangled */
    int rank;         /* lower wins at one address: global 0, weak 1, local 2 */
} ent_t;

typedef struct builder {
    ent_t *v;
    size_t n, cap;
    char *pool;
    size_t plen, pcap;
    void *map; /* the ELF file being read (its own private mapping), or NULL */
    size_t maplen;
    int fd; /* that file, to read names with pread */
} builder_t;

#define DROP_EVERY 8192 /* symbols read between two drops of the file's pages */

struct dcpi_symtab {
    dcpi_symbol_t *syms;
    const char **raw; /* raw (mangled) name, or NULL when it equals syms[i].name */
    size_t n;
    char *pool;
    char *pool2; /* the names of functions no symbol named (add_unnamed_functions) */
};
typedef struct elf_file {
    int fd;
    Elf *elf;
    struct stat st;
    void *map; /* the whole file, mapped privately (libelf reads it through elf_memory) */
    size_t len;
} elf_file_t;

/* ---- the builder (symtab.c) ---- */

/* s[len] copied into the pool with a NUL: its offset, or NO_RAW without memory. */
size_t dcpi__sym_pool_add(builder_t *b, const char *s, size_t len);
int dcpi__sym_push(builder_t *b, ent_t e);
/* Add a symbol whose name is copied into the pool, demangled when it is C++. */
int dcpi__sym_add_named(builder_t *b, uint64_t addr, uint64_t size, int rank, const char *name);
/* Sort, collapse one symbol per address and hand the pool over to a new table. */
int dcpi__sym_finish(builder_t *b, dcpi_symtab_t **out);
void dcpi__sym_builder_free(builder_t *b);
/* Give back the pages of the ELF file read so far (b->map). */
void dcpi__sym_drop_map(const builder_t *b);

/* ---- ELF (symelf.c) ---- */

/* The function symbols of e's .symtab (and .dynsym when want_dynsym) into b; *has_symtab 1 when
 * it has a .symtab. */
int dcpi__sym_add_elf(builder_t *b, Elf *e, int want_dynsym, int *has_symtab);
int dcpi__sym_elf_has_symtab(Elf *e);

/* ---- ELF files and their debug files (symdebug.c) ---- */

/* Open path; returns 0 (f->elf NULL when it is not ELF) or -errno mapped to DCPI_E*. */
int dcpi__sym_elf_open(const char *path, elf_file_t *f);
void dcpi__sym_elf_close(elf_file_t *f);
/* Read f's symbols next into b, with its pages dropped as they are read. */
void dcpi__sym_reads(builder_t *b, const elf_file_t *f);
/* The symbols of main's separate debug file (build-id path, .gnu_debuglink, debuginfod). */
int dcpi__sym_add_debug(builder_t *b, const char *path, const elf_file_t *main);

#endif
