/*
 * dcpi/dcpi.h - umbrella header: everything public in one include.
 */
#ifndef DCPI_DCPI_H
#define DCPI_DCPI_H

#include "api.h"
#include "errno.h"
#include "dcpi/version.h" /* generated from version.h.in */
#include "insn.h"
#include "trace-vlist.h"
#include "trace-parse.h"
#include "vprofiler.h"
#include "trace-test.h"
#include "resolve.h"
#include "profile.h"

#endif
