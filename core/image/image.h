/*
 * image.h - what dcpi knows about one executable image file (DCPI's "image"): its identity
 * (ELF build-id, or a hash of path, size and mtime when it has none), its text range and
 * its PT_LOAD segments, so that a file offset in a mapping becomes an ELF virtual address and
 * then an offset from "tstart" (the profile's unit).
 */
#ifndef DCPI_CORE_IMAGE_H
#define DCPI_CORE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_IMAGE_MAXSEG 16
#define DCPI_IMAGE_IDLEN  48 /* hex digits + NUL; a build-id is usually 40 hex digits */

typedef struct dcpi_segment {
    uint64_t vaddr, memsz;   /* ELF p_vaddr, p_memsz */
    uint64_t offset, filesz; /* ELF p_offset, p_filesz */
    unsigned flags;          /* PF_X | PF_W | PF_R */
} dcpi_segment_t;

typedef struct dcpi_image_info {
    char id[DCPI_IMAGE_IDLEN]; /* lowercase hex only */
    int id_is_buildid;         /* 1: ELF NT_GNU_BUILD_ID; 0: hash of path, size, mtime */
    int is_elf;
    uint64_t tstart; /* lowest vaddr of the executable PT_LOAD segments (0 when not ELF) */
    uint64_t tsize;  /* end of the highest executable segment - tstart */
    int nseg;
    dcpi_segment_t seg[DCPI_IMAGE_MAXSEG]; /* PT_LOAD segments, in file order */
} dcpi_image_info_t;

/*
 * Probe the file at path (read with libelf). A file that is not ELF still gets an id (the
 * hash), is_elf = 0, tstart = 0 and tsize = file size. Returns 0, or a negative DCPI_E* with
 * "PATH: reason" in err (DCPI_ERRLEN, may be NULL) when the file cannot be opened.
 * Also DCPI_EINVAL for a file that is not a regular file, DCPI_EFORMAT for an ELF file whose
 * program headers cannot be read or hold a malformed PT_LOAD (p_filesz > p_memsz, or an address
 * or offset range that wraps around 2^64: that segment is left out) and DCPI_EFULL when it has more
 * than DCPI_IMAGE_MAXSEG PT_LOAD segments; in those last two cases out is still filled (id, tstart,
 * tsize, the first segments) and err says what was lost.
 */
int dcpi_image_probe(const char *path, dcpi_image_info_t *out, char *err);

/* Whether the program at path loads through a dynamic linker (an ELF file with PT_INTERP, which
 * honours LD_PRELOAD): 1, 0 for a static ELF executable, a negative DCPI_E* when path cannot be
 * read or is not ELF (a script: its interpreter decides). */
int dcpi_image_dynamic(const char *path);

/* Map a file offset to an ELF vaddr through the PT_LOAD segments (identity when not ELF or
 * outside every segment). */
uint64_t dcpi_image_file_to_vaddr(const dcpi_image_info_t *img, uint64_t file_off);

/* The reverse: vaddr to file offset. Returns 0 or DCPI_ENOENT if no segment holds vaddr. */
int dcpi_image_vaddr_to_file(const dcpi_image_info_t *img, uint64_t vaddr, uint64_t *file_off);

/* The running kernel's build-id as hex (from /sys/kernel/notes), or a hash of /proc/version
 * when unavailable. Always succeeds with some id. */
void dcpi_image_kernel_id(char out[DCPI_IMAGE_IDLEN]);

/* The name used for an image's directory in the database: "<basename>_<id>" (basename with
 * characters other than [A-Za-z0-9._+-] replaced by '_'). */
void dcpi_image_dirname(const char *path, const char *id, char *out, size_t len);

/* Helpers shared by the libelf readers (image.c, symelf.c, symdebug.c). */
/* elf_version(EV_CURRENT), once per process (thread-safe); call before elf_begin. */
void dcpi__elf_init(void);

#endif
