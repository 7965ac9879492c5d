/*
 * select.c - which instructions a plugin's specification admits beyond its keys (SDK 2,
 * dcpi/trace-vlist.h): its instruction filter and its symbol restriction, decided once per
 * (image, offset) and cached per plugin (a direct-mapped table; a collision only decides again);
 * and the images' symbol tables, opened on first use, that the symbol restriction and the bp
 * backend's chooser (bp.c) share.
 */
#include "core/values/values-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image/image.h"
#include "dcpi/errno.h"

#define SEL_SLOTS 4096

typedef struct dcpi_values_sel {
    uint32_t image_plus1; /* 0: empty */
    uint32_t off;
    int ok;
} sel_t;

const dcpi_symtab_t *dcpi_values_symtab(dcpi_values_t *vt, const dcpi_image_t *img)
{
    return dcpi_image_symtab(&vt->syms, img);
}

void dcpi__values_select_free(dcpi_values_t *vt)
{
    dcpi_image_symtabs_free(&vt->syms);
    for (unsigned i = 0; i < vt->npl; i++)
        free(vt->pl[i].sel);
}

int dcpi__values_select_init(dcpi_values_plugin_t *p)
{
    p->filter = trace_vlist_table_get_filter(p->spec);
    p->symbol = trace_vlist_table_get_symbol(p->spec);
    p->has_range = trace_vlist_table_get_range(p->spec, &p->lo, &p->hi);
    if ((p->filter || p->symbol || p->has_range) && !(p->sel = calloc(SEL_SLOTS, sizeof *p->sel)))
        return DCPI_ENOMEM;
    return 0;
}

static int decide(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_image_t *img, uint32_t off,
                  const trace_inst_t *inst)
{
    uint64_t vaddr = img->info.tstart + off;
    if (p->has_range && (vaddr < p->lo || vaddr >= p->hi)) {
        if (!p->sel_range++)
            p->sel_range_img = img;
        return 0;
    }
    if (p->filter && !p->filter(inst))
        return p->sel_filter++, 0;
    if (p->symbol) {
        const dcpi_symtab_t *st = dcpi_values_symtab(vt, img);
        const dcpi_symbol_t *sym = st ? dcpi_symtab_lookup(st, vaddr) : NULL;
        if (!sym || strcmp(sym->name, p->symbol) != 0)
            return p->sel_symbol++, 0;
    }
    p->sel_in++;
    return 1;
}

/* Why p got nothing: no sampled instruction had a key it selects, or its selection refused
 * every one that had. */
const char *dcpi__values_select_note(dcpi_values_plugin_t *p)
{
    p->note[0] = '\0';
    if (p->st.disabled || p->st.values)
        return p->note;
    if (!p->sel_keyed)
        snprintf(p->note, sizeof p->note,
                 "%s: none of the sampled instructions has a mnemonic or class its "
                 "specification selects (0 traces; compare its select= or vlist with the "
                 "mnemonics dcpilist -asm prints)",
                 p->name);
    else if (!p->sel || p->sel_in)
        return p->note;
    else if (p->sel_symbol)
        snprintf(p->note, sizeof p->note,
                 "%s: symbol=%s matched none of the sampled instructions its keys select (no "
                 "function of that name holds them: check the name as dcpiprof prints it)",
                 p->name, p->symbol);
    else if (p->sel_range)
        snprintf(
            p->note, sizeof p->note,
            "%s: range=0x%llx-0x%llx matched none of the sampled instructions its keys "
            "select (ELF addresses of the image, as dcpilist shows them: %s has its code at "
            "0x%llx-0x%llx)",
            p->name, (unsigned long long)p->lo, (unsigned long long)p->hi, p->sel_range_img->path,
            (unsigned long long)p->sel_range_img->info.tstart,
            (unsigned long long)(p->sel_range_img->info.tstart + p->sel_range_img->info.tsize));
    else if (p->sel_filter)
        snprintf(p->note, sizeof p->note,
                 "%s: its instruction filter (operand=, conditional=, or "
                 "trace_vlist_table_set_filter) refused every sampled instruction its keys select",
                 p->name);
    return p->note;
}

static sel_t *slot_of(const dcpi_values_plugin_t *p, const dcpi_image_t *img, uint32_t off)
{
    return &p->sel[(off ^ (off >> 11) ^ img->index * 0x9e37u) % SEL_SLOTS];
}

int dcpi__values_admitted(const dcpi_values_plugin_t *p, const dcpi_image_t *img, uint32_t off)
{
    if (!p->sel)
        return 1;
    const sel_t *s = slot_of(p, img, off);
    return s->image_plus1 == img->index + 1 && s->off == off ? s->ok : -1;
}

int dcpi__values_admits(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_image_t *img,
                        uint32_t off, const trace_inst_t *inst)
{
    p->sel_keyed++;
    if (!p->sel)
        return 1;
    sel_t *s = slot_of(p, img, off);
    if (s->image_plus1 != img->index + 1 || s->off != off)
        *s =
            (sel_t){.image_plus1 = img->index + 1, .off = off, .ok = decide(vt, p, img, off, inst)};
    return s->ok;
}
