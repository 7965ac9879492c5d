/*
 * dcpi/version.h - the library version, in the header and at run time.
 */
#ifndef DCPI_VERSION_H
#define DCPI_VERSION_H

#include "api.h"

#define DCPI_VERSION_MAJOR 0
#define DCPI_VERSION_MINOR 1
#define DCPI_VERSION_PATCH 0
#define DCPI_VERSION_HEX                                                                           \
    ((DCPI_VERSION_MAJOR << 16) | (DCPI_VERSION_MINOR << 8) | DCPI_VERSION_PATCH)
#define DCPI_VERSION_STRING "0.1.0"

/* DCPI_VERSION_HEX of the library actually loaded. */
DCPI_API unsigned dcpi_version(void);
/* "0.1.0" */
DCPI_API const char *dcpi_version_string(void);

#endif
