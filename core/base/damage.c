/*
 * damage.c - the count of damaged files a tool skipped, its warnings and exit status, and the
 * escaper of non-printable bytes (see damage.h).
 */
#include "core/base/damage.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/hash.h"

static const char *damage_tool = "dcpi"; /* NULL: quiet (count only; the fuzz harnesses) */
static int damage_strict;
static size_t damage_n;
/* Hashes of the warnings printed, so that a file read again (a report reads a value profile per
 * procedure) is named and counted once. */
#define SEEN_MAX 256
static uint64_t damage_seen[SEEN_MAX];
static size_t damage_nseen;
/* Where each warning also goes (dcpiweb's page), or NULL. */
static void (*damage_sink)(void *arg, const char *msg);
static void *damage_sink_arg;

/* 1 when msg was seen before (then it is not printed or counted again). */
static int seen_before(const char *msg)
{
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, msg, strlen(msg));
    for (size_t i = 0; i < damage_nseen; i++)
        if (damage_seen[i] == h)
            return 1;
    if (damage_nseen < SEEN_MAX)
        damage_seen[damage_nseen++] = h;
    return 0;
}

void dcpi__damage_init(const char *tool, int strict)
{
    damage_tool = tool;
    damage_strict = strict;
    damage_n = damage_nseen = 0;
}

void dcpi__damage_sink(void (*fn)(void *arg, const char *msg), void *arg)
{
    damage_sink = fn;
    damage_sink_arg = arg;
}

int dcpi__damage_skip(int rc, const char *fmt, ...)
{
    if (damage_strict)
        return rc;
    char msg[1024], safe[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (seen_before(msg))
        return 0;
    if (damage_tool)
        fprintf(stderr, "%s: %s; skipped\n", damage_tool, dcpi__escape(safe, sizeof(safe), msg));
    if (damage_sink)
        damage_sink(damage_sink_arg, msg);
    damage_n++;
    return 0;
}

void dcpi__damage_count_one(void)
{
    damage_n++;
}

int dcpi__damage_status(int status)
{
    return status == 0 && damage_n > 0 ? DCPI_EXIT_SKIPPED : status;
}

/* Length of the valid UTF-8 sequence at s (2 to 4), or 0 when s does not start one. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0; /* overlong, surrogate or beyond U+10FFFF */
    return n;
}

/* Bytes of the printable unit at s (1 to 4), or 0 when *s is to be escaped. */
static size_t printable(const unsigned char *s)
{
    if (*s >= 0x20 && *s < 0x7f)
        return 1;
    return *s >= 0x80 ? utf8_len(s) : 0;
}

char *dcpi__escape(char *dst, size_t n, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    while (*s) {
        size_t k = printable(s);
        if (k == 0) {
            if (o + 4 >= n)
                break;
            snprintf(dst + o, n - o, "\\x%02x", *s);
            o += 4;
            s++;
            continue;
        }
        if (o + k >= n)
            break;
        memcpy(dst + o, s, k);
        o += k;
        s += k;
    }
    dst[o] = '\0';
    return dst;
}

int dcpi__needs_escape(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t k = printable(p);
        if (k == 0)
            return 1;
        p += k;
    }
    return 0;
}
