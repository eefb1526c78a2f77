/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Timers and stream combinators: guest_mt_after, _tick, _map, _filter and
 * _buffer. Each is a microthread of the caller's runtime, written on the
 * runtime's public calls alone; it holds the writer end of the channel it
 * gives out (and a combinator the reader end of its input), and ends when
 * either side is over. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/guest.h"
#include "mt/mt.h"

/* -- timers ---------------------------------------------------------------- */

struct timer {
	struct guest_mtchan	*ch;		/* its writer end */
	uint64_t		due;
	uint64_t		period;		/* 0: after, one item */
};

static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void
timer_main(void *arg)
{
	struct timer *t = arg;
	struct guest_mtop ops[3];
	uint64_t now;
	int r;

	for (;;) {
		/* A deadline rather than guest_mt_sleep: a reader that goes
		 * early ends the timer now, not at its due time (a long one
		 * would keep guest_rt_run from returning). */
		ops[0] = (struct guest_mtop){ .kind = GUEST_MT_READER_GONE, .ch = t->ch };
		ops[1] = (struct guest_mtop){ .kind = GUEST_MT_DEADLINE, .deadline_ns = t->due };
		if (guest_mt_prialt(ops, 2) != 1)
			break;
		now = guest_mt_now_ns();
		ops[1] = (struct guest_mtop){ .kind = GUEST_MT_SEND, .ch = t->ch, .item = &now };
		/* A tick the reader has no room for is dropped (the deadline
		 * already reached makes the send a try): a slow reader gets
		 * the next one on time, not a backlog. after's one item
		 * always fits. */
		ops[2] = (struct guest_mtop){ .kind = GUEST_MT_DEADLINE, .deadline_ns = 0 };
		r = guest_mt_prialt(ops, t->period ? 3 : 2);
		if (r < 1 || (r == 1 && ops[1].status != 0) || t->period == 0)
			break;
		/* the next due time after now, on the period's grid */
		t->due = add_sat(t->due, t->period);
		if (t->due <= now)
			t->due = add_sat(t->due,
			    ((now - t->due) / t->period + 1) * t->period);
	}
	guest_mtchan_close(t->ch, GUEST_MT_WRITER);
	free(t);
}

static int
timer_start(uint64_t ns, uint64_t period, struct guest_mtchan **chp)
{
	struct timer *t;
	int ret;

	if ((t = malloc(sizeof(*t))) == NULL)
		return -ENOMEM;
	/* room for one item: the timer never waits for its reader */
	if ((ret = guest_mtchan_new(sizeof(uint64_t), 1, &t->ch)) < 0)
		goto fail;
	t->due = add_sat(guest_mt_now_ns(), ns);
	t->period = period;
	*chp = t->ch;
	if ((ret = guest_mt_spawn(timer_main, t, NULL)) < 0) {
		guest_mtchan_close(t->ch, GUEST_MT_WRITER);
		guest_mtchan_close(t->ch, GUEST_MT_READER);
		*chp = NULL;
		goto fail;
	}
	return 0;
fail:
	free(t);
	return ret;
}

int
guest_mt_after(uint64_t ns, struct guest_mtchan **chp)
{
	if (chp == NULL)
		return -EINVAL;
	return timer_start(ns, 0, chp);
}

int
guest_mt_tick(uint64_t ns, struct guest_mtchan **chp)
{
	if (chp == NULL || ns == 0)	/* 0 would never let its reader be */
		return -EINVAL;
	return timer_start(ns, ns, chp);
}

/* -- combinators ------------------------------------------------------------ */

enum stage_kind { STAGE_MAP, STAGE_FILTER, STAGE_BUFFER };

struct stage {
	struct guest_mtchan	*in;		/* its reader end */
	struct guest_mtchan	*out;		/* its writer end */
	enum stage_kind		kind;
	void			(*fn)(void *, const void *, void *);
	int			(*keep)(void *, const void *);
	void			*ctx;
	unsigned char		*mapped;	/* map's output item */
	/* the input item, aligned as malloc would align it: the callbacks
	 * read it in place */
	_Alignas(max_align_t) unsigned char item[];
};

/* The seed's loop: prialt(out's reader gone, receive from in). Reader
 * gone comes first, so a torn down pipeline stops at once even with
 * input waiting. */
static void
stage_main(void *arg)
{
	struct stage *s = arg;
	struct guest_mtop ops[2];
	const void *item;

	for (;;) {
		ops[0] = (struct guest_mtop){ .kind = GUEST_MT_READER_GONE, .ch = s->out };
		ops[1] = (struct guest_mtop){ .kind = GUEST_MT_RECV, .ch = s->in, .item = s->item };
		if (guest_mt_prialt(ops, 2) != 1 || ops[1].status != 0)
			break;
		item = s->item;
		if (s->kind == STAGE_FILTER && !s->keep(s->ctx, s->item))
			continue;
		if (s->kind == STAGE_MAP) {
			s->fn(s->ctx, s->item, s->mapped);
			item = s->mapped;
		}
		if (guest_mtchan_send(s->out, item) != 0)
			break;
	}
	/* upstream sees -EPIPE on its next send, downstream the end */
	guest_mtchan_close(s->in, GUEST_MT_READER);
	guest_mtchan_close(s->out, GUEST_MT_WRITER);
	free(s);
}

/* Spawns a stage reading in. On failure nothing changed: the caller still
 * holds its reader end of in. */
static int
stage_start(struct stage *s, struct guest_mtchan *in, size_t out_size,
	    unsigned capacity, struct guest_mtchan **outp)
{
	int ret;

	s->in = in;
	if ((ret = guest_mtchan_new(out_size, capacity, &s->out)) < 0)
		goto fail;
	*outp = s->out;
	if ((ret = guest_mt_spawn(stage_main, s, NULL)) < 0) {
		guest_mtchan_close(s->out, GUEST_MT_WRITER);
		guest_mtchan_close(s->out, GUEST_MT_READER);
		*outp = NULL;
		goto fail;
	}
	return 0;
fail:
	free(s);
	return ret;
}

/* A stage with room for one item of in and, for map, one of out_size. */
static struct stage *
stage_alloc(struct guest_mtchan *in, enum stage_kind kind, size_t out_size)
{
	size_t in_size = mt_chan_item_size(in);
	struct stage *s;

	if (in_size > SIZE_MAX / 2 - sizeof(*s) || out_size > SIZE_MAX / 2)
		return NULL;
	/* the mapped item after it, aligned the same */
	in_size = (in_size + _Alignof(max_align_t) - 1) &
	    ~(_Alignof(max_align_t) - 1);
	if ((s = calloc(1, sizeof(*s) + in_size +
	    (kind == STAGE_MAP ? out_size : 0))) == NULL)
		return NULL;
	s->kind = kind;
	if (kind == STAGE_MAP)
		s->mapped = s->item + in_size;
	return s;
}

int
guest_mt_map(struct guest_mtchan *in, size_t out_size,
	     void (*fn)(void *ctx, const void *item, void *out), void *ctx,
	     struct guest_mtchan **outp)
{
	struct stage *s;

	if (in == NULL || fn == NULL || outp == NULL)
		return -EINVAL;
	if ((s = stage_alloc(in, STAGE_MAP, out_size)) == NULL)
		return -ENOMEM;
	s->fn = fn;
	s->ctx = ctx;
	return stage_start(s, in, out_size, 0, outp);
}

int
guest_mt_filter(struct guest_mtchan *in, int (*keep)(void *ctx, const void *item),
		void *ctx, struct guest_mtchan **outp)
{
	struct stage *s;

	if (in == NULL || keep == NULL || outp == NULL)
		return -EINVAL;
	if ((s = stage_alloc(in, STAGE_FILTER, 0)) == NULL)
		return -ENOMEM;
	s->keep = keep;
	s->ctx = ctx;
	return stage_start(s, in, mt_chan_item_size(in), 0, outp);
}

/* The buffer is the output channel's: the stage only keeps it filled. */
int
guest_mt_buffer(struct guest_mtchan *in, unsigned n, struct guest_mtchan **outp)
{
	struct stage *s;

	if (in == NULL || outp == NULL)
		return -EINVAL;
	if ((s = stage_alloc(in, STAGE_BUFFER, 0)) == NULL)
		return -ENOMEM;
	return stage_start(s, in, mt_chan_item_size(in), n, outp);
}
