/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest's output (guestlog.h). The pipe is read without blocking, one
 * read of READ_CHUNK per loop round and guest, so that a guest that
 * floods is served like the others and never starves the data path;
 * what it writes faster waits in its pipe (its writes block). Lines are
 * cut at GUESTLOG_LINE_MAX and the kept ones bounded in count and bytes:
 * memory stays bounded whatever it writes. Control characters are
 * replaced, so that a guest cannot forge a line of hubd's log or play
 * with a terminal. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/guestlog.h"
#include "daemon/hub.h"
#include "daemon/log.h"

#define READ_CHUNK	16384
#define DRAIN_MAX	(1024 * 1024)	/* read at its end, at most */

static void
drop_oldest(struct guestlog *l)
{
	char *s = l->lines[l->first];

	l->bytes -= strlen(s) + 1;
	free(s);
	l->lines[l->first] = NULL;
	l->first = (l->first + 1) % GUESTLOG_LINES;
	l->n--;
}

/* One line of the guest's (len bytes, no newline), or of what hubd
 * wrote about it (tag, e.g. "[stack] "): logged and kept. */
static void
emit(struct peer *p, const char *tag, char *s, size_t len)
{
	struct guestlog *l = &p->out;
	size_t tlen = strlen(tag);
	char *copy;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			s[i] = '?';
	log_info("%s: %s%.*s", p->conf->name, tag, (int)len, s);
	l->total++;
	if (l->lines == NULL &&
	    (l->lines = calloc(GUESTLOG_LINES, sizeof(*l->lines))) == NULL)
		return;		/* logged, not kept */
	len += tlen;
	while (l->n > 0 && (l->n == GUESTLOG_LINES || l->bytes + len + 1 > GUESTLOG_BYTES))
		drop_oldest(l);
	if ((copy = malloc(len + 1)) == NULL)
		return;
	memcpy(copy, tag, tlen);
	memcpy(copy + tlen, s, len - tlen);
	copy[len] = '\0';
	l->lines[(l->first + l->n) % GUESTLOG_LINES] = copy;
	l->n++;
	l->bytes += len + 1;
}

void
guestlog_text(struct peer *p, const char *tag, char *text, size_t len)
{
	while (len > 0) {
		char *nl = memchr(text, '\n', len);
		size_t n = nl != NULL ? (size_t)(nl - text) : len;
		size_t cut = n > GUESTLOG_LINE_MAX ? GUESTLOG_LINE_MAX : n;

		emit(p, tag, text, cut);
		if (cut < n) {		/* the rest of a long line next */
			text += cut;
			len -= cut;
			continue;
		}
		text += n + (nl != NULL);
		len -= n + (nl != NULL);
	}
}

/* Bytes read: complete lines out, the rest kept for the next read. */
static void
take(struct peer *p, const char *buf, size_t len)
{
	struct guestlog *l = &p->out;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n') {
			emit(p, "", l->part, l->plen);
			l->plen = 0;
			continue;
		}
		if (l->plen == sizeof(l->part)) {
			emit(p, "", l->part, l->plen);
			l->plen = 0;
		}
		l->part[l->plen++] = buf[i];
	}
}

/* One read; 1 if more may come, 0 at its end (EOF or an error). */
static int
read_once(struct peer *p)
{
	char buf[READ_CHUNK];
	ssize_t n;

	while ((n = read(p->out.fd, buf, sizeof(buf))) < 0 && errno == EINTR)
		;
	if (n > 0) {
		take(p, buf, (size_t)n);
		return 1;
	}
	return n < 0 && errno == EAGAIN ? 1 : 0;
}

static void
read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;

	(void)revents;
	if (!read_once(p))
		ev_io_stop(loop, w);	/* closed: guestlog_end closes it */
}

void
guestlog_init(struct peer *p)
{
	memset(&p->out, 0, sizeof(p->out));
	p->out.fd = -1;
	ev_io_init(&p->out.w, read_cb, -1, EV_READ);
	p->out.w.data = p;
}

int
guestlog_pipe(struct peer *p, int *wfd)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	p->out.fd = fds[0];
	*wfd = fds[1];
	return 0;
}

void
guestlog_watch(struct hub *h, struct peer *p)
{
	if (p->out.fd < 0)
		return;
	ev_io_set(&p->out.w, p->out.fd, EV_READ);
	ev_io_start(h->loop, &p->out.w);
}

void
guestlog_end(struct hub *h, struct peer *p)
{
	struct guestlog *l = &p->out;
	char buf[READ_CHUNK];
	size_t got = 0;
	ssize_t n;

	ev_io_stop(h->loop, &l->w);
	if (l->fd < 0)
		return;
	/* its last words, which say why it died more often than not */
	while (got < DRAIN_MAX && ((n = read(l->fd, buf, sizeof(buf))) > 0 ||
				   (n < 0 && errno == EINTR))) {
		if (n > 0) {
			take(p, buf, (size_t)n);
			got += (size_t)n;
		}
	}
	if (l->plen > 0) {
		emit(p, "", l->part, l->plen);
		l->plen = 0;
	}
	close(l->fd);
	l->fd = -1;
}

void
guestlog_free(struct peer *p)
{
	while (p->out.n > 0)
		drop_oldest(&p->out);
	free(p->out.lines);
	p->out.lines = NULL;
	p->out.first = 0;
	p->out.bytes = 0;
	p->out.total = 0;
}

const char *
guestlog_line(const struct peer *p, uint32_t i)
{
	return p->out.lines[(p->out.first + i) % GUESTLOG_LINES];
}
