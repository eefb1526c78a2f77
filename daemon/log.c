/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd's log lines (log.h): one writer for every level, a priority prefix
 * when stderr is journald's, debug lines only with -v, each line escaped. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "daemon/escape.h"
#include "daemon/log.h"

static int log_verbose;
static int log_journal;		/* stderr goes to journald: prefix "<prio>" */
static const char *log_prog = "hubd";

void
log_init(int verbose, const char *progname)
{
	log_verbose = verbose;
	log_prog = progname;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

/* Lines standard error had no room for, said with the next that fits;
 * the last of them cut short (a terminal takes what fits). */
static unsigned long log_dropped;
static int log_cut;

/* Standard error's terminal opened anew, non-blocking (-1: not yet, -2:
 * none). */
static int log_tty = -1;

/* Where a write to a terminal never waits: a description of its own,
 * O_NONBLOCK on it alone (fd 2's may be a shell's too); fd 2 for the
 * rest, a file or /dev/null, which take a line at once. */
static int
tty_fd(void)
{
	if (log_tty == -1)
		log_tty = isatty(STDERR_FILENO) ?
			  open("/proc/self/fd/2", O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) : -2;
	return log_tty >= 0 ? log_tty : STDERR_FILENO;
}

/* Whether standard error is a regular file, which takes a line at once:
 * a RWF_NOWAIT write to one can fail where it would only wait for the
 * disk (a file system with buffered writes that do not wait), and the
 * line would be dropped for nothing. */
static int
stderr_is_file(void)
{
	static int is = -1;
	struct stat st;

	if (is < 0)
		is = fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode);
	return is;
}

/* A write to standard error that never waits: hubd's loop writes its log,
 * and a pipe nobody reads (hubd 2>&1 | less, stopped), or a terminal
 * stopped with ^S, held the whole hub in its write, deaf to its guests,
 * its clients and SIGTERM. RWF_NOWAIT where the file takes it (a pipe, a
 * socket such as journald's), else tty_fd; a regular file as it is. */
static ssize_t
write_nowait(const char *s, size_t n)
{
	struct iovec iov = { (void *)(uintptr_t)s, n };
	ssize_t rc;

	if (stderr_is_file()) {
		while ((rc = write(STDERR_FILENO, s, n)) < 0 && errno == EINTR)
			;
		return rc;
	}
	while ((rc = pwritev2(STDERR_FILENO, &iov, 1, -1, RWF_NOWAIT)) < 0 && errno == EINTR)
		;
	if (rc >= 0 || errno != EOPNOTSUPP)
		return rc;
	while ((rc = write(tty_fd(), s, n)) < 0 && errno == EINTR)
		;
	return rc;
}

/* When the lines may wait for room (CLOCK_MONOTONIC, ns; 0: never). */
static int64_t log_wait_until;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
log_last_lines(int wait_ms)
{
	log_wait_until = now_ns() + (int64_t)wait_ms * 1000000;
}

/* Writes s whole, or what fits (the count written): at once while hubd
 * serves; after log_last_lines, waiting for room until its deadline. */
static ssize_t
write_line(const char *s, size_t n)
{
	size_t done = 0;
	ssize_t rc;
	int64_t left;

	while (done < n) {
		if ((rc = write_nowait(s + done, n - done)) > 0) {
			done += (size_t)rc;
			continue;
		}
		if (rc == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
		    (left = log_wait_until - now_ns()) <= 0 ||
		    poll(&(struct pollfd){ log_tty >= 0 ? log_tty : STDERR_FILENO, POLLOUT, 0 },
			 1, (int)(left / 1000000) + 1) <= 0)
			break;
	}
	return (ssize_t)done;
}

/* Writes a whole line (ending in a newline), or drops it counted. */
static void
log_write(const char *line, size_t len)
{
	char note[128];		/* fits: the name is cut to 48 bytes */
	ssize_t rc;
	int n;

	if (log_dropped > 0) {
		n = snprintf(note, sizeof(note), "%s%s%.48s: %lu log lines dropped: standard "
			     "error was full\n", log_cut ? "\n" : "", log_journal ? "<4>" : "",
			     log_prog, log_dropped);
		if ((rc = write_line(note, (size_t)n)) != n) {
			log_dropped++;
			log_cut = log_cut || rc > 0;
			return;
		}
		log_dropped = 0;
		log_cut = 0;
	}
	if ((rc = write_line(line, len)) != (ssize_t)len) {
		log_dropped++;
		log_cut = rc > 0;
	}
}

/* One write per line, so lines from several writers never interleave.
 * The line is escaped whole (escape.c): whatever a guest or a client
 * put in it (a name, a reason, a line it logs) can neither end it early,
 * and forge a line of ours or a journal entry, nor drive a terminal. */
static void
vlog(int prio, const char *fmt, va_list ap, const char *suffix)
{
	char msg[1024], buf[4 * sizeof(msg) + 64];
	size_t len;

	if (prio == LOG_DEBUG && !log_verbose)
		return;
	if (log_journal)
		snprintf(buf, sizeof(buf), "<%d>", prio);
	else
		snprintf(buf, sizeof(buf), "%s: %s", log_prog,
			 prio <= LOG_CRIT ? "fatal: " : "");
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (suffix != NULL) {
		len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, ": %s", suffix);
	}
	len = strlen(buf);
	escape_text(buf + len, sizeof(buf) - len, msg, strlen(msg), 0);
	len = strlen(buf);
	buf[len++] = '\n';
	log_write(buf, len);
}

#define LOGFN(name, prio, with_errno, tail)				\
void									\
name(const char *fmt, ...)						\
{									\
	const char *e = with_errno ? strerror(errno) : NULL;		\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	vlog(prio, fmt, ap, e);						\
	va_end(ap);							\
	tail;								\
}

LOGFN(log_warn, LOG_WARNING, 1, )
LOGFN(log_warnx, LOG_WARNING, 0, )
LOGFN(log_info, LOG_INFO, 0, )
LOGFN(log_debug, LOG_DEBUG, 0, )
LOGFN(fatal, LOG_CRIT, 1, exit(1))
LOGFN(fatalx, LOG_CRIT, 0, exit(1))

const char *
log_argv(char *buf, size_t len, char *const argv[])
{
	size_t n = 0, need;

	if (len < 5)
		return "";
	buf[0] = '\0';
	for (int i = 0; argv[i] != NULL; i++) {
		const char *a = argv[i];
		int quote = *a == '\0' || strpbrk(a, " \t\"\\") != NULL;

		need = (i > 0) + strlen(a);
		if (quote) {
			need += 2;
			for (const char *q = a; *q != '\0'; q++)
				need += *q == '"' || *q == '\\';
		}
		/* and room left for " ..." after it */
		if (n + need + 4 >= len) {
			strlcpy(buf + n, n > 0 ? " ..." : "...", len - n);
			return buf;
		}
		if (i > 0)
			buf[n++] = ' ';
		if (quote)
			buf[n++] = '"';
		for (; *a != '\0'; a++) {
			if (quote && (*a == '"' || *a == '\\'))
				buf[n++] = '\\';
			buf[n++] = *a;
		}
		if (quote)
			buf[n++] = '"';
		buf[n] = '\0';
	}
	return buf;
}
