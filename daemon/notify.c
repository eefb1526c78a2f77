/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Telling systemd how hubd is (notify.h): READY=, STATUS=, WATCHDOG= as
 * datagrams to $NOTIFY_SOCKET, and the watchdog interval it asks for. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <bsd/string.h>

#include "daemon/log.h"
#include "daemon/notify.h"

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static double watchdog_s;

static double
watchdog_interval(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long v;

	if (usec == NULL || (pid != NULL && atol(pid) != (long)getpid()))
		return 0;
	v = strtoull(usec, &end, 10);
	return *end == '\0' ? (double)v / 1e6 : 0;
}

void
notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;

	watchdog_s = watchdog_interval();
	/* our guests are not systemd's business */
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    (n = strlcpy(notify_addr.sun_path, path, sizeof(notify_addr.sun_path))) >=
	    sizeof(notify_addr.sun_path))
		return;
	notify_addr.sun_family = AF_UNIX;
	if (path[0] == '@')
		notify_addr.sun_path[0] = '\0';	/* abstract namespace */
	notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	if ((notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		log_warn("notify socket");
	log_debug("systemd notify socket %s, watchdog %.3f s", path, watchdog_s);
	unsetenv("NOTIFY_SOCKET");
}

void
notify(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	if (notify_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	if (sendto(notify_fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT,
		   (struct sockaddr *)&notify_addr, notify_len) < 0 && errno != EAGAIN)
		log_warn("notify");
}

double
notify_watchdog_s(void)
{
	return watchdog_s;
}
