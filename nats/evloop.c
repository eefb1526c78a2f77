/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libnats on the bridge's own loop (natsOptions_SetEventLoop): no reader
 * thread, so an incoming request wakes no thread but the loop, and what a
 * loop pass publishes goes out in one write at its end (libnats's flusher
 * thread is not started: send_asap, main.c says why).
 * libnats tells which socket to watch and for what, from our thread or
 * its own (a reconnect, a ping): those from its own wake the loop. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#include "nats/hubnats.h"

struct br_evloop {
	pthread_mutex_t		mu;
	pthread_t		loop;		/* the thread that runs the bridge */
	struct br_handoff	*wake;		/* its eventfd wakes the loop */
	natsSock		fd;		/* -1: detached */
	int			want_read, want_write;
};

static void
changed(struct br_evloop *e)
{
	if (!pthread_equal(pthread_self(), e->loop))
		br_handoff_wake(e->wake);
}

static natsStatus
on_attach(void **user, void *loop, natsConnection *nc, natsSock sock)
{
	struct br_evloop *e = loop;

	(void)nc;
	pthread_mutex_lock(&e->mu);
	e->fd = sock;
	e->want_read = 1;
	pthread_mutex_unlock(&e->mu);
	*user = e;
	changed(e);
	return NATS_OK;
}

static natsStatus
on_read(void *user, bool add)
{
	struct br_evloop *e = user;

	pthread_mutex_lock(&e->mu);
	e->want_read = add;
	pthread_mutex_unlock(&e->mu);
	changed(e);
	return NATS_OK;
}

static natsStatus
on_write(void *user, bool add)
{
	struct br_evloop *e = user;

	pthread_mutex_lock(&e->mu);
	e->want_write = add;
	pthread_mutex_unlock(&e->mu);
	if (add)
		changed(e);
	return NATS_OK;
}

static natsStatus
on_detach(void *user)
{
	struct br_evloop *e = user;

	pthread_mutex_lock(&e->mu);
	e->fd = -1;
	e->want_read = e->want_write = 0;
	pthread_mutex_unlock(&e->mu);
	return NATS_OK;
}

struct br_evloop *
br_evloop_new(struct br_handoff *wake)
{
	struct br_evloop *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	if (pthread_mutex_init(&e->mu, NULL) != 0) {
		free(e);
		return NULL;
	}
	e->loop = pthread_self();
	e->wake = wake;
	e->fd = -1;
	return e;
}

void
br_evloop_free(struct br_evloop *e)
{
	if (e != NULL) {
		pthread_mutex_destroy(&e->mu);
		free(e);
	}
}

natsStatus
br_evloop_use(struct br_evloop *e, natsOptions *o)
{
	return natsOptions_SetEventLoop(o, e, on_attach, on_read, on_write, on_detach);
}

void
br_evloop_pollfd(struct br_evloop *e, struct pollfd *pfd)
{
	pthread_mutex_lock(&e->mu);
	/* nothing wanted: libnats stopped polling (the connection lost, its
	 * socket perhaps closed): poll would answer POLLNVAL at once, every
	 * pass, and the loop spin until the reconnect */
	pfd->fd = e->want_read || e->want_write ? e->fd : -1;
	pfd->events = (short)((e->want_read ? POLLIN : 0) | (e->want_write ? POLLOUT : 0));
	pfd->revents = 0;
	pthread_mutex_unlock(&e->mu);
}

int
br_evloop_attached(struct br_evloop *e)
{
	int a;

	pthread_mutex_lock(&e->mu);
	a = e->fd >= 0;
	pthread_mutex_unlock(&e->mu);
	return a;
}

/* What this bridge published, written out now, waiting for the socket
 * at most ms: at the end of a loop pass, one write for all its publishes
 * (libnats asks for writability at each); on the way out the loop no
 * longer writes it, and libnats's own flush waits for a PONG that only
 * the loop would read. */
void
br_write_out(struct bridge *b, int ms)
{
	uint64_t end = br_now_ns() + (uint64_t)ms * 1000000u, now;
	struct pollfd pfd;

	while (b->nc != NULL && br_evloop_attached(b->ev) && natsConnection_Buffered(b->nc) > 0) {
		natsConnection_ProcessWriteEvent(b->nc);
		if (natsConnection_Buffered(b->nc) <= 0 || (now = br_now_ns()) >= end)
			break;
		br_evloop_pollfd(b->ev, &pfd);
		if (pfd.fd < 0)
			break;
		pfd.events = POLLOUT;
		poll(&pfd, 1, (int)((end - now) / 1000000u) + 1);
	}
}
