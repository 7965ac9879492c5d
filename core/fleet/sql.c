/*
 * sql.c - the fleet's text: growing buffers, escaped SQL literals and TabSeparated fields, and
 * the TabSeparated reader (sql.h).
 */
#include "core/fleet/sql.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/mem.h"
#include "dcpi/errno.h"

static int reserve(dcpi_fbuf_t *b, size_t more)
{
    if (b->oom)
        return -1;
    if (more > SIZE_MAX - b->n - 1 || dcpi__grow((void **)&b->p, &b->cap, b->n + more + 1, 1) < 0) {
        b->oom = 1;
        return -1;
    }
    return 0;
}

void dcpi_fbuf_add(dcpi_fbuf_t *b, const void *s, size_t n)
{
    if (reserve(b, n) < 0)
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void dcpi_fbuf_str(dcpi_fbuf_t *b, const char *s)
{
    dcpi_fbuf_add(b, s, strlen(s));
}

void dcpi_fbuf_printf(dcpi_fbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)len < sizeof small) {
        dcpi_fbuf_add(b, small, (size_t)len);
        return;
    }
    if (reserve(b, (size_t)len) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)len;
}

static void add_hex(dcpi_fbuf_t *b, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
    dcpi_fbuf_add(b, e, 4);
}

void dcpi_fbuf_sqlstr(dcpi_fbuf_t *b, const char *s)
{
    dcpi_fbuf_add(b, "'", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\'' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            dcpi_fbuf_add(b, e, 2);
        } else if (*p < 0x20 || *p == 0x7f)
            add_hex(b, *p);
        else
            dcpi_fbuf_add(b, p, 1);
    }
    dcpi_fbuf_add(b, "'", 1);
}

void dcpi_fbuf_tsv(dcpi_fbuf_t *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *e = NULL;
        switch (*p) {
        case '\\':
            e = "\\\\";
            break;
        case '\t':
            e = "\\t";
            break;
        case '\n':
            e = "\\n";
            break;
        case '\r':
            e = "\\r";
            break;
        case '\b':
            e = "\\b";
            break;
        case '\f':
            e = "\\f";
            break;
        default:
            break;
        }
        if (e)
            dcpi_fbuf_add(b, e, 2);
        else
            dcpi_fbuf_add(b, p, 1);
    }
}

int dcpi_fbuf_ok(const dcpi_fbuf_t *b)
{
    return b->oom ? DCPI_ENOMEM : 0;
}

void dcpi_fbuf_reset(dcpi_fbuf_t *b)
{
    b->n = 0;
    if (b->p)
        b->p[0] = 0;
}

void dcpi_fbuf_free(dcpi_fbuf_t *b)
{
    free(b->p);
    *b = (dcpi_fbuf_t){0};
}

int dcpi_fleet_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || (name[0] >= '0' && name[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Unescape s in place (it only shrinks). */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        r++;
        switch (*r) {
        case 't':
            *w++ = '\t';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case '0':
            *w++ = '\0';
            break;
        case 'x':
            if (hexval(r[1]) >= 0 && hexval(r[2]) >= 0) {
                *w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
                r += 2;
                break;
            }
            *w++ = 'x';
            break;
        default:
            *w++ = *r;
            break; /* \\ \' and anything else: the byte itself */
        }
    }
    *w = 0;
}

int dcpi_fleet_tsv_line(char **cur, char **fields, int max)
{
    char *p = *cur;
    if (!p || !*p)
        return 0;
    char *end = strchr(p, '\n');
    if (end)
        *end = 0;
    *cur = end ? end + 1 : p + strlen(p);
    int n = 0;
    for (;;) {
        if (n == max)
            return -1;
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = 0;
        p = tab + 1;
    }
    for (int i = 0; i < n; i++)
        unescape(fields[i]);
    return n;
}

int dcpi_fleet_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return DCPI_EFORMAT;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return DCPI_EFORMAT;
    *out = v;
    return 0;
}
