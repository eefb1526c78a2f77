/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest's output (guestlog.h). The pipe is read without blocking, one
 * read of READ_CHUNK per loop round and guest, so that a guest that
 * floods is served like the others and never starves the data path,
 * and within a budget of bytes a second (GUESTLOG_READ_RATE): what it
 * writes faster waits in its pipe (its writes block). Lines are
 * cut at GUESTLOG_LINE_MAX and the kept ones bounded in count and bytes:
 * memory stays bounded whatever it writes; a long line is cut between
 * characters. Control characters and bytes that are not UTF-8 are
 * replaced, so that a guest cannot forge a line of hubd's log, play
 * with a terminal or break a JSON answer. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/escape.h"
#include "daemon/guestlog.h"
#include "daemon/hub.h"
#include "daemon/log.h"
#include "proto/clock.h"

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

/* The lines not logged, said once hubd's log takes the guest's again. */
static void
say_unlogged(struct peer *p)
{
	struct guestlog *l = &p->out;

	if (l->unlogged == 0)
		return;
	log_warnx("guest %s: %llu lines of its output not logged (more than %d at once, "
		  "then %d a second): hubctl logs %s has the last ones", p->conf->name,
		  (unsigned long long)l->unlogged, GUESTLOG_BURST, GUESTLOG_RATE,
		  p->conf->name);
	l->unlogged = 0;
}

/* What b holds now, refilled at rate a second up to burst: a token per
 * HP_NS_PER_S / rate of the time since, what is left of that time kept
 * for the next look (however often it is looked at). */
static uint64_t
budget(struct guestlog_budget *b, uint64_t rate, uint64_t burst, uint64_t now)
{
	uint64_t step = HP_NS_PER_S / rate, add = (now - b->at_ns) / step;

	if (add >= burst - b->tokens) {
		b->tokens = burst;
		b->at_ns = now;
	} else {
		b->tokens += add;
		b->at_ns += add * step;
	}
	return b->tokens;
}

int
guestlog_may_log(struct peer *p)
{
	struct guestlog *l = &p->out;
	uint64_t now = hp_now_ns();

	if (budget(&l->log_budget, GUESTLOG_RATE, GUESTLOG_BURST, now) == 0) {
		l->unlogged++;
		return 0;
	}
	l->log_budget.tokens--;
	/* once a second at most, the flood going on */
	if (l->unlogged > 0 && now - l->said_ns >= HP_NS_PER_S) {
		say_unlogged(p);
		l->said_ns = now;
	}
	return 1;
}

/* One line of the guest's (len bytes, no newline), or of what hubd
 * wrote about it (tag, e.g. "[stack] "): kept, and logged within the
 * guest's budget (what hubd says of it always), so that a guest that
 * floods its output neither fills the disk nor costs hubd the time of a
 * log write a line. */
static void
emit(struct peer *p, const char *tag, char *s, size_t len)
{
	struct guestlog *l = &p->out;
	size_t tlen = strlen(tag);
	char *copy;

	escape_mask(s, len);
	if (tlen > 0 || guestlog_may_log(p))
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

/* Where to cut s[0..n), next the byte after it, so that no UTF-8
 * character is cut in two (its halves would show as '?'): n, or before
 * the lead byte of the character next continues. */
static size_t
utf8_cut(const char *s, size_t n, char next)
{
	if (((unsigned char)next & 0xC0) != 0x80)
		return n;
	for (size_t j = n; j > 0 && n - j < 3; j--) {
		unsigned char c = (unsigned char)s[j - 1];

		if ((c & 0xC0) == 0xC0)
			return j - 1;
		if ((c & 0xC0) != 0x80)
			break;
	}
	return n;
}

void
guestlog_text(struct peer *p, const char *tag, char *text, size_t len)
{
	while (len > 0) {
		char *nl = memchr(text, '\n', len);
		size_t n = nl != NULL ? (size_t)(nl - text) : len;
		size_t cut = n > GUESTLOG_LINE_MAX ?
		    utf8_cut(text, GUESTLOG_LINE_MAX, text[GUESTLOG_LINE_MAX]) : n;

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
			size_t cut = utf8_cut(l->part, l->plen, buf[i]);

			emit(p, "", l->part, cut);
			memmove(l->part, l->part + cut, l->plen - cut);
			l->plen -= cut;
		}
		l->part[l->plen++] = buf[i];
	}
}

/* Reading on, or pausing while the budget has no chunk's worth. */
static void
watch(struct ev_loop *loop, struct peer *p)
{
	struct guestlog *l = &p->out;

	if (l->fd < 0)
		return;
	if (budget(&l->read_budget, GUESTLOG_READ_RATE, GUESTLOG_READ_BURST, hp_now_ns()) >=
	    READ_CHUNK) {
		ev_io_start(loop, &l->w);
		return;
	}
	ev_io_stop(loop, &l->w);
	ev_timer_set(&l->pause, (double)(READ_CHUNK - l->read_budget.tokens) / GUESTLOG_READ_RATE +
		     0.05, 0.);
	ev_timer_start(loop, &l->pause);
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
		p->out.read_budget.tokens -= (uint64_t)n < p->out.read_budget.tokens ? (uint64_t)n :
		    p->out.read_budget.tokens;
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
	else if (p->out.read_budget.tokens < READ_CHUNK)
		watch(loop, p);
}

static void
pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	watch(loop, w->data);
}

void
guestlog_init(struct peer *p)
{
	memset(&p->out, 0, sizeof(p->out));
	p->out.fd = -1;
	p->out.log_budget = (struct guestlog_budget){ GUESTLOG_BURST, hp_now_ns() };
	p->out.read_budget = (struct guestlog_budget){ GUESTLOG_READ_BURST, hp_now_ns() };
	ev_io_init(&p->out.w, read_cb, -1, EV_READ);
	p->out.w.data = p;
	ev_timer_init(&p->out.pause, pause_cb, 0., 0.);
	p->out.pause.data = p;
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
	watch(h->loop, p);
}

void
guestlog_end(struct hub *h, struct peer *p)
{
	struct guestlog *l = &p->out;
	char buf[READ_CHUNK];
	size_t got = 0;
	ssize_t n;

	ev_io_stop(h->loop, &l->w);
	ev_timer_stop(h->loop, &l->pause);
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
	say_unlogged(p);
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
