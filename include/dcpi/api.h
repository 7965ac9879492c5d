/*
 * dcpi/api.h - export and compiler helpers shared by every public header.
 *
 * libdcpi is built with -fvisibility=hidden; only declarations marked DCPI_API are exported
 * (and listed in core/dcpi.map, versioned DCPI_0.1 and up).
 */
#ifndef DCPI_API_H
#define DCPI_API_H

#if defined(__GNUC__)
#define DCPI_API          __attribute__((visibility("default")))
#define DCPI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DCPI_API
#define DCPI_PRINTF(f, a)
#endif

/* Size of the error-message buffers the library fills ("FILE: reason"). */
#define DCPI_ERRLEN 512

#endif
