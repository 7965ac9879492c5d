/*
 * loadmap.h - DCPI's loadmap: which image is mapped where in each process.
 *
 * Filled from a scan of /proc/<pid>/maps at start and then from the perf records MMAP2, COMM
 * (exec), FORK and EXIT. Resolving (pid, ip) gives the image and the offset of ip from the
 * image's tstart, the unit of profiles. Images are shared between processes: one dcpi_image_t
 * per distinct file (device, inode, path, and the identity probed from it), owned by the
 * loadmap and never freed before the loadmap, so callers may keep pointers to them.
 */
#ifndef DCPI_CORE_LOADMAP_H
#define DCPI_CORE_LOADMAP_H

#include <stdint.h>
#include <sys/types.h>
#include "core/image/image.h"

typedef struct dcpi_image {
    unsigned index; /* dense 0.. in order of creation, for per-image tables */
    char *path;     /* as seen in the mapping ("[vdso]" for the vDSO) */
    dcpi_image_info_t info;
    int probed_ok; /* 0 when the file could not be read: id is then a hash of the path */
} dcpi_image_t;

typedef struct dcpi_loadmap dcpi_loadmap_t;

typedef struct dcpi_loadmap_stats {
    unsigned long processes, mappings, images;
    unsigned long probe_failures; /* images whose file could not be read */
} dcpi_loadmap_stats_t;

int dcpi_loadmap_new(dcpi_loadmap_t **out);
void dcpi_loadmap_free(dcpi_loadmap_t *lm);

/* Called when an image was probed through /proc/PID/map_files because its path names no file
 * (a program run from a memfd, "/memfd:NAME (deleted)", or a file deleted since it was mapped):
 * src reads the image now, while the process lives; the callback keeps what it needs. */
typedef void (*dcpi_loadmap_keep_fn)(void *ctx, const dcpi_image_t *img, const char *src);
void dcpi_loadmap_on_unnamed(dcpi_loadmap_t *lm, dcpi_loadmap_keep_fn fn, void *ctx);

/*
 * A new mapping [start, start+len) of path at file offset pgoff in pid; it replaces whatever
 * part of older mappings it overlaps. Only executable mappings need to be reported (prot
 * carries PROT_EXEC). maj/min/ino identify the file (0 when unknown); the image is probed
 * from /proc/<pid>/map_files/<start>-<end> when that exists (the exact file even if path was
 * replaced), else from path. Anonymous or "[...]" pseudo paths other than [vdso] are not
 * images: samples there resolve to unknown.
 */
int dcpi_loadmap_mmap(dcpi_loadmap_t *lm, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                      uint32_t maj, uint32_t min, uint64_t ino, unsigned prot, const char *path);
/* Remove [start, start+len) from pid's mappings (splitting mappings as needed). */
int dcpi_loadmap_munmap(dcpi_loadmap_t *lm, pid_t pid, uint64_t start, uint64_t len);
/* pid forked from ppid: pid gets a copy of ppid's mappings (no-op if ppid unknown). */
int dcpi_loadmap_fork(dcpi_loadmap_t *lm, pid_t ppid, pid_t pid);
/* pid called exec: its mappings are dropped (new MMAP2 records follow). */
int dcpi_loadmap_exec(dcpi_loadmap_t *lm, pid_t pid);
/* pid exited: forget it. */
int dcpi_loadmap_exit(dcpi_loadmap_t *lm, pid_t pid);
/* Read /proc/<pid>/maps (executable mappings) for one pid, or for every pid when pid < 0.
 * A process that vanished meanwhile is skipped. */
int dcpi_loadmap_scan_proc(dcpi_loadmap_t *lm, pid_t pid);

/*
 * Resolve ip in pid: on success *img and *offset (bytes from img->info.tstart, computed as
 * file_to_vaddr(ip - start + pgoff) - tstart) are set and 0 is returned. DCPI_ENOENT when no
 * mapping holds ip (unknown samples); DCPI_ERANGE when the offset does not fit 32 bits.
 */
int dcpi_loadmap_resolve(const dcpi_loadmap_t *lm, pid_t pid, uint64_t ip, dcpi_image_t **img,
                         uint32_t *offset);

/* Also give the mapping holding ip (start address and file offset) for reading code. */
int dcpi_loadmap_lookup(const dcpi_loadmap_t *lm, pid_t pid, uint64_t ip, dcpi_image_t **img,
                        uint64_t *map_start, uint64_t *map_pgoff);

/* The run-time address in pid of img's ELF address vaddr (the inverse of dcpi_loadmap_resolve):
 * 0, or DCPI_ENOENT when no mapping of pid holds it. */
int dcpi_loadmap_addr_of(const dcpi_loadmap_t *lm, pid_t pid, const dcpi_image_t *img,
                         uint64_t vaddr, uint64_t *addr);

/* Images known so far, by index. */
unsigned dcpi_loadmap_nimages(const dcpi_loadmap_t *lm);
dcpi_image_t *dcpi_loadmap_image(const dcpi_loadmap_t *lm, unsigned index);
void dcpi_loadmap_stats(const dcpi_loadmap_t *lm, dcpi_loadmap_stats_t *out);

/* The symbol tables of a loadmap's images, opened on first use (files read whole, with a probed
 * id; NULL for the others), kept until dcpi_image_symtabs_free. Zero-initialize. */
struct dcpi_symtab;
typedef struct dcpi_image_symtabs {
    struct dcpi_symtab **tabs; /* by image index */
    unsigned char *tried;      /* by image index: opened (or failed) */
    size_t n;
} dcpi_image_symtabs_t;
const struct dcpi_symtab *dcpi_image_symtab(dcpi_image_symtabs_t *c, const dcpi_image_t *img);
void dcpi_image_symtabs_free(dcpi_image_symtabs_t *c);

#endif
