/*
 * errors.c - dcpi_strerror / dcpi_err_name and the run-time version, generated from
 * DCPI_ERRNO_MAP (include/dcpi/errno.h).
 */
#include "dcpi/errno.h"
#include "dcpi/version.h"

const char *dcpi_strerror(int err)
{
    switch (err) {
#define DCPI_ERR_TEXT(name, value, text)                                                           \
    case value:                                                                                    \
        return text;
        DCPI_ERRNO_MAP(DCPI_ERR_TEXT)
#undef DCPI_ERR_TEXT
    }
    return "unknown error";
}

const char *dcpi_err_name(int err)
{
    switch (err) {
#define DCPI_ERR_NAME(name, value, text)                                                           \
    case value:                                                                                    \
        return #name;
        DCPI_ERRNO_MAP(DCPI_ERR_NAME)
#undef DCPI_ERR_NAME
    }
    return "EUNKNOWN";
}

unsigned dcpi_version(void)
{
    return DCPI_VERSION_HEX;
}

const char *dcpi_version_string(void)
{
    return DCPI_VERSION_STRING;
}
