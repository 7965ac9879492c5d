/*
 * resolve.c - dcpi_resolve (include/dcpi/resolve.h): a loadmap of the processes asked about
 * (filled from /proc/PID/maps, read again once when an address is not found) and the symbol
 * tables of their images, opened on first use, all kept until dcpi_resolve_reset.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/image/loadmap.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"
#include "dcpi/resolve.h"

static dcpi_loadmap_t *lm;
static dcpi_image_symtabs_t tabs;

void dcpi_resolve_reset(void)
{
    dcpi_image_symtabs_free(&tabs);
    dcpi_loadmap_free(lm);
    lm = NULL;
}

int dcpi_resolve(unsigned pid, uint64_t addr, dcpi_resolved_t *out)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    if (!out || pid == 0)
        return DCPI_EINVAL;
    if (!lm && dcpi_loadmap_new(&lm) < 0)
        return DCPI_ENOMEM;
    if (dcpi_loadmap_lookup(lm, (pid_t)pid, addr, &img, &start, &pgoff) < 0) {
        if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
            return DCPI_ESRCH;
        dcpi_loadmap_scan_proc(lm, (pid_t)pid); /* new process, or code mapped since */
        if (dcpi_loadmap_lookup(lm, (pid_t)pid, addr, &img, &start, &pgoff) < 0)
            return DCPI_ENOENT;
    }
    memset(out, 0, sizeof *out);
    out->path = img->path;
    out->build_id = img->info.id;
    out->vaddr = dcpi_image_file_to_vaddr(&img->info, addr - start + pgoff);
    const dcpi_symtab_t *st = dcpi_image_symtab(&tabs, img);
    const dcpi_symbol_t *sym = st ? dcpi_symtab_lookup(st, out->vaddr) : NULL;
    if (sym) {
        out->symbol = sym->name;
        out->symoff = out->vaddr - sym->addr;
    }
    return 0;
}
