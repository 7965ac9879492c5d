/*
 * json.h - the one JSON writer helper of the tools' -json output and dcpireport's page: a string
 * escaped as a JSON string (UTF-8 kept, invalid bytes as U+FFFD, control characters, quotes and
 * backslashes escaped; '<', '>', '&', U+2028 and U+2029 escaped too so the text is also safe
 * inside an HTML <script> element).
 */
#ifndef DCPI_CORE_BASE_JSON_H
#define DCPI_CORE_BASE_JSON_H

#include <stdint.h>
#include <stdio.h>

/* s as a JSON string, quotes included; "null" when s is NULL. */
void dcpi__json_str(FILE *f, const char *s);
/* "key": with key escaped, after a ',' when comma is set. */
void dcpi__json_key(FILE *f, int comma, const char *key);

#endif
