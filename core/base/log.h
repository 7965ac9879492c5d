/*
 * log.h - the daemon's and tools' log: one line per message, "time PROGRAM[PID] level: text".
 * Goes to stderr until dcpi__log_open() names a file. In journal mode (stderr is systemd's
 * journal stream) a line is "<PRIORITY>text": the journal adds the time and the program.
 */
#ifndef DCPI_CORE_LOG_H
#define DCPI_CORE_LOG_H

#include "dcpi/api.h"

enum { DCPI_LOG_ERR = 0, DCPI_LOG_WARN = 1, DCPI_LOG_INFO = 2, DCPI_LOG_DEBUG = 3 };

int dcpi__log_open(const char *path);
/* The descriptor the log is written to (2 until dcpi__log_open; a child keeps it open). */
int dcpi__log_fd(void);
void dcpi__log_level(int level);
/* 1 when stderr is the journal's stream ($JOURNAL_STREAM names its device and inode). */
int dcpi__log_stderr_is_journal(void);
/* Journal mode on (1) or off for lines written to stderr. */
void dcpi__log_journal(int on);
void dcpi__log(int level, const char *fmt, ...) DCPI_PRINTF(2, 3);

#endif
