/*
 * tests/fuzz/fuzz_hosts.c - libFuzzer harness for the DB/hosts parser (dcpi_db_hosts_parse,
 * core/store/db.c). The input is the file's text. It is parsed for a fixed host name and for the
 * first word of the input (so matches happen). Checks: the verdict (error or not) does not
 * depend on the host name; an error is DCPI_EFORMAT with one line "hosts:LINE: reason"; a
 * match gives a usable platform name (non-empty, shorter than DCPI_NAMELEN, no '/', no blank,
 * not "." or "..").
 */
#include <stdint.h>
#include <string.h>

#include "core/store/db.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

static void check_platform(const char *out)
{
    size_t n = strnlen(out, DCPI_NAMELEN);
    FUZZ_CHECK(n > 0 && n < DCPI_NAMELEN);
    FUZZ_CHECK(strpbrk(out, "/ \t\r\n\f\v#") == NULL);
    FUZZ_CHECK(strcmp(out, ".") != 0 && strcmp(out, "..") != 0);
}

static int parse(const uint8_t *data, size_t size, const char *host)
{
    char out[DCPI_NAMELEN] = "", err[DCPI_ERRLEN] = "";
    int rc = dcpi_db_hosts_parse((const char *)data, size, host, out, err);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == DCPI_EFORMAT || rc == DCPI_ENOMEM);
    if (rc == 1)
        check_platform(out);
    if (rc == 0)
        FUZZ_CHECK(out[0] == '\0');
    if (rc == DCPI_EFORMAT) {
        FUZZ_CHECK(strncmp(err, "hosts:", 6) == 0);
        FUZZ_CHECK(strchr(err, '\n') == NULL);
    }
    return rc;
}

/* The first blank-separated word of the input, or "" (at most DCPI_NAMELEN - 1 bytes). */
static void first_word(const uint8_t *data, size_t size, char *word)
{
    size_t i = 0, n = 0;
    while (i < size && strchr(" \t\r\n\f\v", data[i]) && data[i])
        i++;
    while (i < size && n < DCPI_NAMELEN - 1 && data[i] && !strchr(" \t\r\n\f\v#", data[i]))
        word[n++] = (char)data[i++];
    word[n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char word[DCPI_NAMELEN];
    first_word(data, size, word);
    int a = parse(data, size, "walnut");
    int b = parse(data, size, word);
    FUZZ_CHECK((a < 0) == (b < 0));
    return 0;
}
