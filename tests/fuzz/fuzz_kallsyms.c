/*
 * tests/fuzz/fuzz_kallsyms.c - libFuzzer harness for the kallsyms reader
 * (dcpi_symtab_open_kallsyms, core/image/symtext.c). The input is written to a file and read as a
 * saved /proc/kallsyms (gunzipped when it starts with the gzip magic). Checks: symbols come sorted
 * by strictly increasing address with non-empty names; looking up each symbol's address returns
 * that symbol; finding each name returns that symbol or an earlier one with the same (raw) name.
 */
#include <stdint.h>
#include <string.h>

#include "core/image/symbols.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

static void check_table(const dcpi_symtab_t *st)
{
    size_t n = dcpi_symtab_count(st);
    for (size_t i = 0; i < n; i++) {
        const dcpi_symbol_t *s = dcpi_symtab_get(st, i);
        FUZZ_CHECK(s != NULL && s->name != NULL && s->name[0] != '\0');
        FUZZ_CHECK(strchr(s->name, '\n') == NULL);
        FUZZ_CHECK(i == 0 || dcpi_symtab_get(st, i - 1)->addr < s->addr);
        FUZZ_CHECK(dcpi_symtab_lookup(st, s->addr) == s);
        const dcpi_symbol_t *f = dcpi_symtab_find(st, s->name);
        FUZZ_CHECK(f != NULL && f <= s); /* the first with that name (or raw name) */
    }
    FUZZ_CHECK(dcpi_symtab_get(st, n) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_input(data, size);
    if (!path)
        return 0;
    char err[DCPI_ERRLEN] = "";
    dcpi_symtab_t *st = NULL;
    int rc = dcpi_symtab_open_kallsyms(path, &st, err);
    int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b; /* gunzipped first */
    /* A line that is no "ADDRESS TYPE NAME" line fails the file (a damaged snapshot), gzip or
     * not; the reason is one line. */
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM || rc == DCPI_EFORMAT ||
               (gz && (rc == DCPI_ETRUNC || rc == DCPI_ERANGE)));
    FUZZ_CHECK(rc == 0 || (err[0] && !strchr(err, '\n')));
    if (rc == 0) {
        check_table(st);
        dcpi_symtab_free(st);
    }
    return 0;
}
