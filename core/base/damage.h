/*
 * damage.h - damaged input a tool skipped: one process-wide count of the files (profiles,
 * value profiles, stack files, symbol snapshots) that could not be read and were left out,
 * each named in one warning line on stderr, so that one bad file costs its own samples only
 * and the exit status still says that something was skipped (DCPI_EXIT_SKIPPED). With -strict
 * (dcpi__damage_init) nothing is skipped: the reader fails as it would without this module.
 *
 * And the one escaper of text bound for a terminal: bytes that are not printable (control
 * characters, DEL, malformed UTF-8) become "\xNN", so a corrupt file's bytes never reach a
 * terminal raw (dcpi__errf escapes every error message with it).
 */
#ifndef DCPI_CORE_BASE_DAMAGE_H
#define DCPI_CORE_BASE_DAMAGE_H

#include <stddef.h>
#include "dcpi/api.h"

/* The exit status of a tool that printed everything it could read but skipped damaged files
 * (documented in every analysis tool's man page; 1 is an error, 2 a usage error). */
#define DCPI_EXIT_SKIPPED 3

/* The tool named in front of the warnings ("dcpiprof"; NULL: no warnings, only the count),
 * and whether damage is an error
 * (strict = 1: dcpi__damage_skip returns the error instead of skipping). */
void dcpi__damage_init(const char *tool, int strict);
/* Also hand every warning's message (unescaped, without "TOOL: " and "; skipped") to fn(arg,
 * msg), for a server that shows them in its page; fn NULL: stop. */
void dcpi__damage_sink(void (*fn)(void *arg, const char *msg), void *arg);

/*
 * A reader met damage it can leave out: with -strict returns rc (< 0; the caller fails with the
 * message it has); else prints "TOOL: MSG; skipped" on stderr (MSG printf'd, escaped), counts
 * it and returns 0 (the caller goes on without the file).
 */
int dcpi__damage_skip(int rc, const char *fmt, ...) DCPI_PRINTF(2, 3);
/* Count damage the caller reported itself (its own warning line; not in -strict mode). */
void dcpi__damage_count_one(void);
/* A tool's exit status: status, or DCPI_EXIT_SKIPPED when status is 0 and something was
 * skipped. */
int dcpi__damage_status(int status);

/* Copy src into dst (size n > 0, always terminated, truncated to fit) with every byte that is
 * not printable as "\xNN": control characters (newline and tab included), DEL, and bytes that
 * do not form valid UTF-8. Returns dst. */
char *dcpi__escape(char *dst, size_t n, const char *src);
/* 1 when dcpi__escape would change s. */
int dcpi__needs_escape(const char *s);

#endif
