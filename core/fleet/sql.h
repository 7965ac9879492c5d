/*
 * sql.h - text for ClickHouse: a growing byte buffer, SQL string literals and TabSeparated
 * fields written escaped, and TabSeparated lines read back unescaped. Every literal dcpi puts into
 * a query goes through dcpi_fbuf_sqlstr, every field of an insert through dcpi_fbuf_tsv: names
 * with quotes, backslashes, tabs, newlines or any other byte round-trip exactly. Only escapes
 * ClickHouse 18.16 and current releases both read are written.
 */
#ifndef DCPI_CORE_FLEET_SQL_H
#define DCPI_CORE_FLEET_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/api.h"

/* A growing buffer; zero-initialize. A failed allocation sets oom and makes every later add a
 * no-op, so callers check once at the end (dcpi_fbuf_ok). p is NUL-terminated when n > 0. */
typedef struct dcpi_fbuf {
    char *p;
    size_t n, cap;
    int oom;
} dcpi_fbuf_t;

void dcpi_fbuf_add(dcpi_fbuf_t *b, const void *s, size_t n);
void dcpi_fbuf_str(dcpi_fbuf_t *b, const char *s);
void dcpi_fbuf_printf(dcpi_fbuf_t *b, const char *fmt, ...) DCPI_PRINTF(2, 3);
/* s as a quoted SQL string literal: 'a\'b\\c', control bytes and DEL as \xHH. */
void dcpi_fbuf_sqlstr(dcpi_fbuf_t *b, const char *s);
/* s as one TabSeparated field: backslash, tab, newline, CR and NUL... escaped. */
void dcpi_fbuf_tsv(dcpi_fbuf_t *b, const char *s);
/* 0, or DCPI_ENOMEM when an add failed. */
int dcpi_fbuf_ok(const dcpi_fbuf_t *b);
void dcpi_fbuf_reset(dcpi_fbuf_t *b);
void dcpi_fbuf_free(dcpi_fbuf_t *b);

/* A ClickHouse name (database): letters, digits and '_', not starting with a digit, at most
 * 64 bytes. 1 when name is one. */
int dcpi_fleet_valid_name(const char *name);

/*
 * The next line of TabSeparated output at *cur (advanced past it), split in place into at most
 * max fields, each unescaped (\t \n \\ \' \0 \b \f \r and \xHH). Returns the number of fields, 0
 * at the end of the text; a line with more than max fields returns -1.
 */
int dcpi_fleet_tsv_line(char **cur, char **fields, int max);

/* Parse an unsigned decimal field: 0, or DCPI_EFORMAT. */
int dcpi_fleet_u64(const char *s, uint64_t *out);

#endif
