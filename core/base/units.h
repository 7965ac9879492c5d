/*
 * units.h - durations and sizes given on command lines: "90s", "10m", "2h", "7d", "1w";
 * "500K", "20M", "1G", "2T" (powers of 1024; a trailing "B" or "iB" is accepted); the monotonic
 * clock in seconds.
 */
#ifndef DCPI_CORE_UNITS_H
#define DCPI_CORE_UNITS_H

#include <stdint.h>

/* A duration with its unit (s, m, h, d, w; a plain number is seconds when bare_ok) into
 * seconds: 0, or DCPI_EINVAL (no number, unknown unit, zero, overflow). */
int dcpi__parse_duration(const char *s, int bare_ok, uint64_t *seconds);
/* A size with its unit (K, M, G, T, optionally followed by B or iB; B alone is bytes) into
 * bytes: 0, or DCPI_EINVAL. */
int dcpi__parse_size(const char *s, uint64_t *bytes);
/* bytes as "512", "1.5K", "20.0M", "3.2G" into buf. */
void dcpi__format_size(uint64_t bytes, char *buf, unsigned len);
/* CLOCK_MONOTONIC in seconds (dcpid's timers and durations). */
double dcpi__monotonic_s(void);

#endif
