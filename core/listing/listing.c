/*
 * listing.c - dcpilist's model of one procedure: its instructions decoded from the image file
 * (with the targets of its branches), the per-event counts attributed to them, their source
 * lines and value hotlists (see listing.h; hotlist texts in hotlist.c, printers in
 * listprint.c).
 */
#include "core/listing/listing.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/mem.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

int dcpi_listing_new(const char *proc, uint64_t lo, uint64_t hi, const char *const *events,
                     size_t nevents, size_t nvp, dcpi_listing_t **out)
{
    *out = NULL;
    if (hi < lo)
        return DCPI_EINVAL;
    dcpi_listing_t *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return DCPI_ENOMEM;
    *ls = (dcpi_listing_t){
        .proc = proc, .lo = lo, .hi = hi, .events = events, .nevents = nevents, .nvp = nvp};
    ls->proc_total = calloc(nevents + 1, sizeof(uint64_t));
    ls->image_total = calloc(nevents + 1, sizeof(uint64_t));
    ls->vp = calloc(nvp + 1, sizeof(*ls->vp));
    if (!ls->proc_total || !ls->image_total || !ls->vp) {
        dcpi_listing_free(ls);
        return DCPI_ENOMEM;
    }
    *out = ls;
    return 0;
}

void dcpi_listing_free(dcpi_listing_t *ls)
{
    if (!ls)
        return;
    for (size_t i = 0; i < ls->n; i++) {
        for (size_t v = 0; ls->insns[i].vtext && v < ls->nvp; v++)
            free(ls->insns[i].vtext[v]);
        free(ls->insns[i].vtext);
        free(ls->insns[i].named);
        free(ls->insns[i].counts);
        free(ls->insns[i].vs);
    }
    free(ls->insns);
    free(ls->vp);
    free(ls->image_total);
    free(ls->proc_total);
    free(ls);
}

/* ---- decoding ---- */

static dcpi_lst_insn_t *insn_append(dcpi_listing_t *ls, size_t *cap)
{
    if (dcpi__grow((void **)&ls->insns, cap, ls->n + 1, sizeof(*ls->insns)) < 0)
        return NULL;
    dcpi_lst_insn_t *in = &ls->insns[ls->n];
    *in = (dcpi_lst_insn_t){0};
    in->counts = calloc(ls->nevents + 1, sizeof(uint64_t));
    in->vs = calloc(ls->nvp + 1, sizeof(*in->vs));
    if (!in->counts || !in->vs) {
        free(in->counts);
        free(in->vs);
        return NULL;
    }
    ls->n++;
    return in;
}

/* The target of in's relative jmp/jcc/loop/call (trace_inst_flow), or 0 when it is not one;
 * *jump is 1 for a jump (a target inside the procedure is marked), 0 for a call. */
static uint64_t branch_target(const dcpi_lst_insn_t *in, int *jump)
{
    uint64_t t = 0;
    trace_flow_t fl = in->bad ? TRACE_FLOW_NONE : trace_inst_flow(&in->inst, in->addr, &t);
    *jump = fl == TRACE_FLOW_COND || fl == TRACE_FLOW_JUMP;
    return *jump || fl == TRACE_FLOW_CALL ? t : 0;
}

/* "jnz 0x11fc" -> "jnz 11fc": a relative target is written as objdump writes it, bare hex
 * (dcpi_listing_name_targets adds its symbol). */
static void bare_target(dcpi_lst_insn_t *in)
{
    char hex[24];
    snprintf(hex, sizeof(hex), " 0x%" PRIx64, in->target);
    size_t n = strlen(in->text), h = strlen(hex);
    if (n >= h && strcmp(in->text + n - h, hex) == 0)
        memmove(in->text + n - h + 1, in->text + n - h + 3, h - 2);
}

static void mark_targets(dcpi_listing_t *ls, const uint64_t *targets, size_t nt)
{
    for (size_t i = 0; i < nt; i++) {
        dcpi_lst_insn_t *in = dcpi_listing_find(ls, targets[i]);
        if (in && in->addr == targets[i])
            in->is_target = 1;
    }
}

/* Decode one instruction at p (or one "(bad)" byte); returns its length. */
static size_t decode_one(dcpi_lst_insn_t *in, const uint8_t *p, size_t left, uint64_t addr)
{
    int n = trace_inst_decode(p, left > 15 ? 15 : (int)left, &in->inst);
    in->addr = addr;
    if (n <= 0 || trace_inst_format(&in->inst, addr, in->text, sizeof(in->text)) < 0) {
        in->bad = 1;
        snprintf(in->text, sizeof(in->text), "(bad) 0x%02x", p[0]);
        return 1;
    }
    return (size_t)n;
}

int dcpi_listing_decode_bytes(dcpi_listing_t *ls, const uint8_t *bytes, size_t len)
{
    uint64_t *targets = malloc((len + 1) * sizeof(*targets));
    if (!targets)
        return DCPI_ENOMEM;
    size_t cap = ls->n, nt = 0, off = 0;
    int rc = 0;
    while (off < len) {
        dcpi_lst_insn_t *in = insn_append(ls, &cap);
        if (!in) {
            rc = DCPI_ENOMEM;
            break;
        }
        size_t n = decode_one(in, bytes + off, len - off, ls->lo + off);
        int jump = 0;
        uint64_t t = branch_target(in, &jump);
        if (jump && t >= ls->lo && t < ls->hi)
            targets[nt++] = t;
        in->target = t;
        if (t)
            bare_target(in);
        off += n;
    }
    if (rc == 0)
        mark_targets(ls, targets, nt);
    free(targets);
    return rc;
}

static int read_range(const char *path, const dcpi_image_info_t *info, uint64_t lo, size_t len,
                      uint8_t *buf, char *err)
{
    uint64_t off = 0;
    uint64_t last = 0;
    if (dcpi_image_vaddr_to_file(info, lo + len - 1, &last) < 0 ||
        dcpi_image_vaddr_to_file(info, lo, &off) < 0 || last - off != len - 1) {
        return dcpi__errf(err, DCPI_ERANGE, "%s: 0x%" PRIx64 "..0x%" PRIx64 " is not in the file",
                          path, lo, lo + len);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out_errno;
    ssize_t got = pread(fd, buf, len, (off_t)off);
    int saved = errno;
    close(fd);
    errno = saved;
    if (got < 0)
        goto out_errno;
    if ((size_t)got != len) {
        return dcpi__errf(err, DCPI_ETRUNC, "%s: file ends inside 0x%" PRIx64 "..0x%" PRIx64, path,
                          lo, lo + len);
    }
    return 0;
out_errno:
    saved = errno;
    return dcpi__errf(err, dcpi__errno_code(saved), "%s: %s", path, strerror(saved));
}

int dcpi_listing_decode(dcpi_listing_t *ls, const char *path, const dcpi_image_info_t *info,
                        char *err)
{
    size_t len = (size_t)(ls->hi - ls->lo);
    if (len == 0)
        return 0;
    uint8_t *buf = malloc(len);
    if (!buf)
        return DCPI_ENOMEM;
    int rc = read_range(path, info, ls->lo, len, buf, err);
    if (rc == 0)
        rc = dcpi_listing_decode_bytes(ls, buf, len);
    free(buf);
    return rc;
}

void dcpi_listing_name_targets(dcpi_listing_t *ls, const dcpi_symtab_t *st)
{
    for (size_t i = 0; st && i < ls->n; i++) {
        dcpi_lst_insn_t *in = &ls->insns[i];
        const dcpi_symbol_t *sym = in->target ? dcpi_symtab_lookup(st, in->target) : NULL;
        if (!sym || in->named)
            continue;
        uint64_t off = in->target - sym->addr;
        char plus[24] = "";
        if (off)
            snprintf(plus, sizeof(plus), "+0x%" PRIx64, off);
        if (asprintf(&in->named, "%s <%s%s>", in->text, sym->name, plus) < 0)
            in->named = NULL; /* out of memory: the bare target is still right */
    }
}

const char *dcpi_lst_insn_text(const dcpi_lst_insn_t *in)
{
    return in->named ? in->named : in->text;
}

/* ---- data ---- */

dcpi_lst_insn_t *dcpi_listing_find(dcpi_listing_t *ls, uint64_t vaddr)
{
    size_t a = 0, b = ls->n;
    while (a < b) { /* first instruction starting after vaddr */
        size_t m = a + (b - a) / 2;
        if (ls->insns[m].addr <= vaddr)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0)
        return NULL;
    dcpi_lst_insn_t *in = &ls->insns[a - 1];
    uint64_t len = in->bad ? 1 : in->inst.length;
    return vaddr < in->addr + len ? in : NULL;
}

int dcpi_listing_add_samples(dcpi_listing_t *ls, size_t e, uint64_t vaddr, uint64_t count)
{
    dcpi_lst_insn_t *in = e < ls->nevents ? dcpi_listing_find(ls, vaddr) : NULL;
    if (!in) {
        ls->outside += count;
        return DCPI_ENOENT;
    }
    in->counts[e] += count;
    ls->proc_total[e] += count;
    return 0;
}

void dcpi_listing_add_image_total(dcpi_listing_t *ls, size_t e, uint64_t count)
{
    if (e < ls->nevents)
        ls->image_total[e] += count;
}

size_t dcpi_listing_set_lines(dcpi_listing_t *ls, const dcpi_srclines_t *sl)
{
    size_t found = 0;
    for (size_t i = 0; i < ls->n; i++) {
        dcpi_lst_insn_t *in = &ls->insns[i];
        found += dcpi_srclines_lookup(sl, in->addr, &in->file, &in->line) == 0;
    }
    return found;
}

int dcpi_listing_set_values(dcpi_listing_t *ls, size_t v, uint64_t vaddr, const dcpi_vsummary_t *s)
{
    dcpi_lst_insn_t *in = v < ls->nvp ? dcpi_listing_find(ls, vaddr) : NULL;
    if (!in || in->addr != vaddr)
        return DCPI_ENOENT;
    in->vs[v] = s;
    if (s && s->err > ls->vp[v].max_err)
        ls->vp[v].max_err = s->err;
    return 0;
}
