/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd's logging, after OpenBSD's log.c: log_warn appends strerror(errno),
 * log_warnx does not; fatal/fatalx exit and are for start-up or broken
 * invariants only. Lines go to stderr (journald adds the time). */
#ifndef HUB_LOG_H
#define HUB_LOG_H

#include <stdarg.h>
#include <stddef.h>

void log_init(int verbose, const char *progname);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* hubd's loop has ended: the lines from now on (why it stopped, what was
 * dropped) wait for room in standard error, up to wait_ms in all, where
 * a reader may be draining it still; before, a line that does not fit
 * at once is dropped (counted, and said with the next that fits). */
void log_last_lines(int wait_ms);
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* argv as one line for a log, in buf: words separated by blanks, a word
 * that needs it in double quotes, as the config's args = takes them; cut
 * short with "..." when it does not fit. */
const char *log_argv(char *buf, size_t len, char *const argv[]);

#endif
