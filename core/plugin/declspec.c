/*
 * declspec.c - a declarative plugin's specification (declare.h): KEY=VALUE pairs into a
 * dcpi_decl_t, each key once, every value checked here so that a specification that loads can
 * run: mnemonics against the keys Zydis knows (condition-code aliases taken, the nearest name
 * suggested), classes, operand kinds (a list, or its negation), labels and kept values.
 */
#include "core/plugin/declare-int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/err.h"

static int pick(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

/* Condition-code spellings Zydis does not use, as the suffix of j, cmov and set: "ja" is Zydis's
 * "jnbe" (objdump and the Intel manual say either). */
static const char *const cc_alias[][2] = {
    {"a", "nbe"}, {"ae", "nb"}, {"c", "b"},   {"nae", "b"}, {"nc", "nb"},
    {"na", "be"}, {"e", "z"},   {"ne", "nz"}, {"g", "nle"}, {"ge", "nl"},
    {"nge", "l"}, {"ng", "le"}, {"pe", "p"},  {"po", "np"},
};

/* name in Zydis's spelling (out, len bytes): the condition-code aliases above, lower case. */
static void zydis_name(const char *name, char *out, size_t len)
{
    static const char *const prefixes[] = {"j", "cmov", "set"};
    char low[32];
    size_t n = strlen(name) < sizeof low - 1 ? strlen(name) : sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    snprintf(out, len, "%s", low);
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        size_t lp = strlen(prefixes[p]);
        if (strncmp(low, prefixes[p], lp) != 0)
            continue;
        for (size_t i = 0; i < sizeof cc_alias / sizeof cc_alias[0]; i++)
            if (strcmp(low + lp, cc_alias[i][0]) == 0)
                snprintf(out, len, "%s%s", prefixes[p], cc_alias[i][1]);
    }
}

/* Edit distance of a and b (short names), for "did you mean". */
static unsigned distance(const char *a, const char *b)
{
    unsigned row[33], la = (unsigned)strlen(a), lb = (unsigned)strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    for (unsigned j = 0; j <= lb; j++)
        row[j] = j;
    for (unsigned i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = i;
        for (unsigned j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            row[j] = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diag = up;
        }
    }
    return row[lb];
}

/* Whether some key has this mnemonic; else the nearest one into near (NULL: none close). */
static int mnemonic_known(const char *name, const char **near)
{
    unsigned best = 3; /* at most 2 edits away */
    *near = NULL;
    for (trace_opc_t k = 0; k < trace_opc_count(); k++) {
        const trace_opc_info_t *info = trace_opc_info(k);
        if (!info)
            continue;
        if (strcmp(info->mnemonic, name) == 0)
            return 1;
        unsigned dist = distance(name, info->mnemonic);
        if (dist < best)
            best = dist, *near = info->mnemonic;
    }
    return 0;
}

static int class_known(const char *name)
{
    for (int c = TRACE_CLASS_ALU; c <= TRACE_CLASS_OTHER; c++)
        if (strcasecmp(trace_iclass_name((trace_iclass_t)c), name) == 0)
            return 1;
    return 0;
}

/* One name of select=: into d->sel, or an error naming it and what to do. */
static int add_select(dcpi_decl_t *d, const char *name, const char *label, char *err)
{
    const char *near;
    if (d->nsel == MAXSEL)
        return dcpi__errf(err, DCPI_EINVAL, "%s: select=: more than %d names", label, MAXSEL);
    if (d->by_class) {
        if (!class_known(name))
            return dcpi__errf(err, DCPI_EINVAL,
                              "%s: select=class:%s: no such class (alu muldiv load store branch "
                              "call return fpsimd string other)",
                              label, name);
        snprintf(d->sel[d->nsel++], sizeof d->sel[0], "%s", name);
        return 0;
    }
    zydis_name(name, d->sel[d->nsel], sizeof d->sel[0]);
    if (!mnemonic_known(d->sel[d->nsel], &near))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: select=mnemonic:%s: no instruction has this mnemonic (%s%s%s"
                          "mnemonics as Zydis names them, as dcpilist -asm prints them)",
                          label, name, near ? "did you mean " : "", near ? near : "",
                          near ? "? " : "");
    d->nsel++;
    return 0;
}

static int set_select(dcpi_decl_t *d, const char *v, const char *label, char *err)
{
    const char *list = NULL;
    if (strncmp(v, "mnemonic:", 9) == 0)
        list = v + 9;
    else if (strncmp(v, "class:", 6) == 0)
        list = v + 6, d->by_class = 1;
    if (!list || !*list)
        return dcpi__errf(err, DCPI_EINVAL, "%s: select=%s: want mnemonic:A,B,... or class:C,...",
                          label, v);
    for (const char *p = list; *p;) {
        char name[32];
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof name)
            return dcpi__errf(err, DCPI_EINVAL, "%s: select=%s: an empty or too long name", label,
                              v);
        memcpy(name, p, n);
        name[n] = '\0';
        int rc = add_select(d, name, label, err);
        if (rc < 0)
            return rc;
        p += n + (p[n] == ',');
    }
    return 0;
}

static int set_capture(dcpi_decl_t *d, const char *v)
{
    char a[32] = "", b[32] = "";
    if (sscanf(v, "%31[^,],%31s", a, b) < 1 || trace_value_from_name(a, &d->kinds[0]) < 0 ||
        d->kinds[0] == TRACE_NONE)
        return -1;
    d->nkinds = 1;
    if (b[0] && (trace_value_from_name(b, &d->kinds[1]) < 0 || d->kinds[1] == TRACE_NONE))
        return -1;
    d->nkinds += b[0] != 0;
    return 0;
}

static int set_reduce(dcpi_decl_t *d, const char *v)
{
    static const char *const names[] = {"value", "relative"};
    if (sscanf(v, "bits:%u:%u", &d->bit_lo, &d->bit_n) == 2)
        return d->bit_lo < 64 && d->bit_n > 0 ? (d->reduce = R_BITS, 0) : -1;
    if (strcmp(v, "diff") == 0)
        return d->reduce = R_DIFF, 0;
    int r = pick(v, names, 2);
    return r < 0 ? -1 : (d->reduce = r == 1 ? R_RELATIVE : R_VALUE, 0);
}

/* operand=K[,K...] or operand=!K[,K...] (not-K too): the first operand's kinds admitted. */
static int set_operand(dcpi_decl_t *d, const char *v)
{
    static const char *const kinds[] = {"any", "reg", "mem", "imm", "addr"};
    int neg = 0;
    if (v[0] == '!')
        neg = 1, v++;
    else if (strncmp(v, "not-", 4) == 0)
        neg = 1, v += 4;
    unsigned mask = 0;
    for (const char *p = v; *p;) {
        char k[8];
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof k)
            return -1;
        memcpy(k, p, n);
        k[n] = '\0';
        int i = pick(k, kinds, 5);
        if (i < 0)
            return -1;
        mask |= i == 0 ? 0x1eu : 1u << i; /* any: every kind */
        p += n + (p[n] == ',');
    }
    if (!mask)
        return -1;
    d->operands = neg ? 0x1eu & ~mask : mask;
    return d->operands ? 0 : -1; /* !any admits nothing */
}

/* One number of label=/keep=: decimal, 0x hex, or negative decimal (two's complement). */
static int number(const char *s, size_t n, uint64_t *out)
{
    char buf[32], *end;
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    *out = buf[0] == '-' ? (uint64_t)strtoll(buf, &end, 0) : strtoull(buf, &end, 0);
    return errno || *end ? -1 : 0;
}

/* label=V:TEXT[,V:TEXT...] */
static int set_label(dcpi_decl_t *d, const char *v)
{
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ","), c = strcspn(p, ":");
        if (c >= n || d->nlabel == MAXLABEL || number(p, c, &d->label_v[d->nlabel]) < 0 ||
            n - c - 1 == 0 || n - c - 1 >= sizeof d->label_t[0])
            return -1;
        memcpy(d->label_t[d->nlabel], p + c + 1, n - c - 1);
        d->label_t[d->nlabel++][n - c - 1] = '\0';
        p += n + (p[n] == ',');
    }
    return d->nlabel ? 0 : -1;
}

/* keep=V[,V...]; "other" stands for the first value from 2^64-1 down that is not kept. */
static int set_keep(dcpi_decl_t *d, const char *v)
{
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        if (d->nkeep == MAXLABEL || number(p, n, &d->keep[d->nkeep++]) < 0)
            return -1;
        p += n + (p[n] == ',');
    }
    d->other = UINT64_MAX;
    for (int i = 0; i < d->nkeep; i++)
        if (d->keep[i] == d->other)
            d->other--, i = -1;
    return d->nkeep ? 0 : -1;
}

static const char *const key_names[] = {"name",    "preface",     "select",  "capture", "reduce",
                                        "format",  "memform",     "missing", "range",   "symbol",
                                        "operand", "conditional", "label",   "keep"};
enum {
    K_NAME,
    K_PREFACE,
    K_SELECT,
    K_CAPTURE,
    K_REDUCE,
    K_FORMAT,
    K_MEMFORM,
    K_MISSING,
    K_RANGE,
    K_SYMBOL,
    K_OPERAND,
    K_CONDITIONAL,
    K_LABEL,
    K_KEEP,
    K_COUNT
};

/* One KEY=VALUE but select= (set_select): 0, -1 bad value. */
static int set_value(dcpi_decl_t *d, int k, const char *v)
{
    static const char *const formats[] = {"hex", "dec", "signed", "symbol", "float"};
    static const char *const memforms[] = {"none", "read", "write", "rw"};
    static const char *const ms[] = {"skip", "show"};
    static const char *const yn[] = {"no", "yes"};
    int used = 0;
    switch (k) {
    case K_NAME:
        return snprintf(d->name, sizeof d->name, "%s", v) < (int)sizeof d->name ? 0 : -1;
    case K_PREFACE:
        return snprintf(d->preface, sizeof d->preface, "%s", v) < (int)sizeof d->preface ? 0 : -1;
    case K_CAPTURE:
        return set_capture(d, v);
    case K_REDUCE:
        return set_reduce(d, v);
    case K_FORMAT:
        return (d->format = pick(v, formats, 5)) < 0 ? -1 : 0;
    case K_MEMFORM:
        return (d->memform = pick(v, memforms, 4)) < 0 ? -1 : 0;
    case K_MISSING:
        return (d->show_missing = pick(v, ms, 2)) < 0 ? -1 : 0;
    case K_RANGE:
        return sscanf(v, "%llx-%llx%n", &d->lo, &d->hi, &used) == 2 && !v[used] && d->lo < d->hi
                   ? 0
                   : -1;
    case K_SYMBOL:
        return snprintf(d->symbol, sizeof d->symbol, "%s", v) < (int)sizeof d->symbol ? 0 : -1;
    case K_OPERAND:
        return set_operand(d, v);
    case K_CONDITIONAL:
        return (d->conditional = pick(v, yn, 2)) < 0 ? -1 : 0;
    case K_LABEL:
        return set_label(d, v);
    case K_KEEP:
        return set_keep(d, v);
    }
    return -1;
}

/* What a bad value of key k should look like. */
static const char *const key_wants[K_COUNT] = {
    [K_NAME] = "at most 255 bytes",
    [K_PREFACE] = "at most 63 bytes",
    [K_CAPTURE] = "V or V,V2 of rax..r15 rip rflags ra rb rc ea memval taken target",
    [K_REDUCE] = "value, relative, bits:LO:N or diff",
    [K_FORMAT] = "hex, dec, signed, symbol or float",
    [K_MEMFORM] = "none, read, write or rw",
    [K_MISSING] = "skip or show",
    [K_RANGE] = "LO-HI in hex, LO < HI",
    [K_SYMBOL] = "at most 127 bytes",
    [K_OPERAND] = "K[,K...] or !K[,K...] of reg mem imm addr any",
    [K_CONDITIONAL] = "yes or no",
    [K_LABEL] = "V:TEXT[,V:TEXT...], at most 16, TEXT up to 31 bytes",
    [K_KEEP] = "V[,V...], at most 16 numbers",
};

static int set_key(dcpi_decl_t *d, const char *k, const char *v, const char *label, char *err)
{
    int i = pick(k, key_names, K_COUNT);
    if (i < 0)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: unknown key '%s' (name select memform operand conditional "
                          "symbol range capture reduce format label keep preface missing)",
                          label, k);
    if (d->seen & (1u << i))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: %s= given twice (each key once; a list goes in one value, "
                          "e.g. select=mnemonic:div,idiv)",
                          label, k);
    d->seen |= 1u << i;
    if (i == K_SELECT)
        return set_select(d, v, label, err);
    if (set_value(d, i, v) < 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: bad value for %s: '%s' (want %s)", label, k, v,
                          key_wants[i]);
    return 0;
}

int dcpi__decl_parse(dcpi_decl_t *d, const char *text, const char *label, char *err)
{
    char word[512];
    for (const char *p = text; *p;) {
        p += strspn(p, " \t\r\n");
        if (*p == '#') {
            p += strcspn(p, "\n");
            continue;
        }
        size_t n = strcspn(p, " \t\r\n");
        if (n == 0)
            break;
        if (n >= sizeof word)
            return dcpi__errf(err, DCPI_EINVAL, "%s: '%.40s...' is too long", label, p);
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        char *eq = strchr(word, '=');
        if (!eq)
            return dcpi__errf(err, DCPI_EINVAL, "%s: '%s' is not KEY=VALUE", label, word);
        *eq = '\0';
        int rc = set_key(d, word, eq + 1, label, err);
        if (rc < 0)
            return rc;
    }
    if (!d->name[0] || !d->nsel)
        return dcpi__errf(err, DCPI_EINVAL, "%s: needs name= and select=", label);

    if (d->reduce == R_DIFF && d->nkinds != 2)
        return dcpi__errf(err, DCPI_EINVAL, "%s: reduce=diff needs capture=V,V2", label);
    if (!d->preface[0])
        snprintf(d->preface, sizeof d->preface, "%.63s", d->name);
    return 0;
}
