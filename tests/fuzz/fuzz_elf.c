/*
 * tests/fuzz/fuzz_elf.c - libFuzzer harness for dcpi's code around libelf: the image prober
 * (dcpi_image_probe, core/image/image.c) and the ELF symbol reader (dcpi_symtab_open,
 * core/image/symelf.c), on the input written to a file in a private directory. Checks: the probe
 * succeeds or fails with a documented code and a "PATH: reason" message; its result is
 * consistent (id in lowercase hex, nseg within bounds, the file<->vaddr mappings invert each
 * other inside every segment); the symbol table is sorted and each symbol is found by lookup.
 */
#include <stdint.h>
#include <string.h>

#include "core/image/image.h"
#include "core/image/symbols.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

static void check_image(const dcpi_image_info_t *img)
{
    size_t idlen = strnlen(img->id, DCPI_IMAGE_IDLEN);
    FUZZ_CHECK(idlen > 0 && idlen < DCPI_IMAGE_IDLEN);
    FUZZ_CHECK(strspn(img->id, "0123456789abcdef") == idlen);
    FUZZ_CHECK(img->nseg >= 0 && img->nseg <= DCPI_IMAGE_MAXSEG);
    FUZZ_CHECK(img->is_elf || img->nseg == 0);
    for (int i = 0; i < img->nseg; i++) {
        const dcpi_segment_t *s = &img->seg[i];
        if (s->filesz == 0)
            continue;
        /* The first segment holding this offset may be another (overlaps): map, then back. */
        uint64_t va = dcpi_image_file_to_vaddr(img, s->offset), off = 0;
        FUZZ_CHECK(dcpi_image_vaddr_to_file(img, va, &off) == 0);
        (void)dcpi_image_file_to_vaddr(img, off);
    }
}

static void check_probe(const char *path)
{
    dcpi_image_info_t img;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_image_probe(path, &img, err);
    FUZZ_CHECK(rc == 0 || rc == DCPI_EFORMAT || rc == DCPI_EFULL || rc == DCPI_ENOMEM);
    if (rc < 0) {
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0);
        FUZZ_CHECK(strchr(err, '\n') == NULL);
    }
    check_image(&img); /* filled in every case above */
}

static void check_symbols(const char *path)
{
    dcpi_symtab_t *st = NULL;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_symtab_open(path, &st, err);
    if (rc < 0) {
        FUZZ_CHECK(st == NULL);
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0);
        return;
    }
    size_t n = dcpi_symtab_count(st);
    for (size_t i = 0; i < n; i++) {
        const dcpi_symbol_t *s = dcpi_symtab_get(st, i);
        FUZZ_CHECK(s->name != NULL);
        FUZZ_CHECK(i == 0 || dcpi_symtab_get(st, i - 1)->addr < s->addr);
        FUZZ_CHECK(dcpi_symtab_lookup(st, s->addr) == s);
    }
    dcpi_symtab_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input(data, size);
    if (!path)
        return 0;
    check_probe(path);
    check_symbols(path);
    return 0;
}
