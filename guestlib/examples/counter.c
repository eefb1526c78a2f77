/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* counter: streams over channels.
 *   counter.count N CHAN	sends 1..N (u64 items) on CHAN, answers N
 *   counter.stream BYTES ITEM	streams BYTES bytes in ITEM-byte items into
 *				the host's hub.sink and answers
 *				"ok BYTES CHECKSUM CREDIT_WAITS" once the
 *				host's checksum matches its own
 *   counter.sum CHAN		reads u64 items from CHAN (an rx<u64>, an
 *				upload: the caller sends them) and answers
 *				their sum once the caller closes it */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "guest.h"

static void
count(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	uint64_t n, chan;
	size_t pos = 0, out;
	uint8_t item[16];
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &chan) != 0 || chan > UINT32_MAX) {
		guest_reply_error(c, "counter.count takes a count and a channel");
		return;
	}
	/* guest_chan_send serves what comes meanwhile: a Cancel (the caller
	 * gave up), or the receiver's Reset (-ENOTCONN: nobody reads) */
	for (uint64_t i = 1; i <= n && rc == 0 && !guest_call_cancelled(c); i++) {
		out = 0;
		guest_pc_put_u64(item, sizeof(item), &out, i);
		rc = guest_chan_send(g, (uint32_t)chan, item, out, -1);
	}
	if (rc != 0 || guest_call_cancelled(c)) {
		guest_chan_reset(g, (uint32_t)chan);	/* -ENOTCONN if it was */
		if (guest_call_cancelled(c))
			guest_reply_cancelled(c);
		else
			guest_reply_error(c, "the stream broke");
		return;
	}
	guest_chan_close(g, (uint32_t)chan);
	out = 0;
	guest_pc_put_u64(item, sizeof(item), &out, n);
	guest_reply(c, item, out);
}

struct stream {
	struct guest_call	*call;
	uint64_t		bytes;
	uint64_t		checksum;	/* the stream hash of every item as sent */
	uint64_t		credit_waits;
};

static void
sink_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct stream *s = ctx;
	uint64_t host;
	size_t pos = 0;
	char text[128];
	uint8_t res[160];
	size_t out = 0;

	if (status != 0 || guest_pc_get_u64(result, len, &pos, &host) != 0) {
		guest_reply_error(s->call, "hub.sink failed");
	} else if (host != s->checksum) {
		snprintf(text, sizeof(text), "checksum mismatch: host %016" PRIx64
			 ", ours %016" PRIx64, host, s->checksum);
		guest_reply_error(s->call, text);
	} else {
		snprintf(text, sizeof(text), "ok %" PRIu64 " %016" PRIx64 " %" PRIu64,
			 s->bytes, s->checksum, s->credit_waits);
		guest_pc_put_str(res, sizeof(res), &out, text, strlen(text));
		guest_reply(s->call, res, out);
	}
	free(s);
}

static void
stream(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	struct guest_stats before = { .size = sizeof(before) };
	struct guest_stats after = { .size = sizeof(after) };
	uint64_t total, item_size, seq = 0;
	size_t pos = 0, hdr;
	uint8_t arg[16], *item;
	struct stream *s;
	int64_t chan;
	int rc = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &total) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item_size) != 0 ||
	    item_size == 0 || item_size > (1u << 24)) {
		guest_reply_error(c, "counter.stream takes a byte count and an item size");
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL || (item = malloc(item_size + 10)) == NULL) {
		free(s);
		guest_reply_error(c, "out of memory");
		return;
	}
	s->call = c;
	s->checksum = 0;
	if ((chan = guest_chan_open_send(g)) < 0) {
		free(item);
		free(s);
		guest_reply_error(c, "no free channel");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	/* The host opens its end before our data reaches it: same ring, FIFO. */
	if (guest_call_async(g, "hub.sink", arg, pos, sink_done, s, NULL) != 0) {
		free(item);
		free(s);
		guest_reply_error(c, "hub.sink could not be called");
		return;
	}
	guest_get_stats(g, &before);
	while (s->bytes < total && rc == 0) {
		uint64_t n = total - s->bytes < item_size ? total - s->bytes : item_size;

		hdr = 0;
		guest_pc_put_u64(item, 10, &hdr, n);		/* bytes: length, then data */
		for (uint64_t i = 0; i < n; i++)
			item[hdr + i] = (uint8_t)(seq * 131 + i * 7);
		s->checksum = XXH3_64bits_withSeed(item, hdr + n, s->checksum);
		rc = guest_chan_send(g, (uint32_t)chan, item, hdr + n, -1);
		s->bytes += n;
		seq++;
	}
	free(item);
	guest_get_stats(g, &after);
	s->credit_waits = after.credit_waits - before.credit_waits;
	if (rc != 0)
		guest_chan_reset(g, (uint32_t)chan);	/* the sink answers with an error */
	else
		guest_chan_close(g, (uint32_t)chan);
	/* answered from sink_done */
}

/* counter.sum: the items come to on_item as the caller sends them, the
 * sum goes back at the end. */
struct sum {
	struct guest_call	*call;
	uint64_t		sum;
	int			bad;	/* an item that is not a u64 */
};

static void
sum_item(void *ctx, const uint8_t *item, size_t len)
{
	struct sum *s = ctx;
	size_t pos = 0;
	uint64_t v;

	if (guest_pc_get_u64(item, len, &pos, &v) != 0 || pos != len)
		s->bad = 1;
	else
		s->sum += v;	/* wraps, as u64 arithmetic does */
}

static void
sum_end(void *ctx, int status)
{
	struct sum *s = ctx;
	uint8_t out[16];
	size_t n = 0;

	if (status != 0)
		guest_reply_error(s->call, "the stream was reset");
	else if (s->bad)
		guest_reply_error(s->call, "an item that is not a u64");
	else {
		guest_pc_put_u64(out, sizeof(out), &n, s->sum);
		guest_reply(s->call, out, n);
	}
	free(s);
}

static void
sum(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct guest *g = guest_call_guest(c);
	struct sum *s;
	uint64_t chan;
	size_t pos = 0;

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &chan) != 0 || chan > UINT32_MAX) {
		guest_reply_error(c, "counter.sum takes a channel");
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		guest_reply_error(c, "out of memory");
		return;
	}
	s->call = c;
	/* the caller sends from now on; answered from sum_end */
	if (guest_chan_accept(g, (uint32_t)chan, sum_item, sum_end, s) != 0) {
		free(s);
		guest_reply_error(c, "not an upload");
	}
}

int
main(int argc, char *argv[])
{
	struct guest *g;
	const char *why;
	int rc;

	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "%s", why);
	if (guest_register(g, "counter.count", "u64,chan<u64>->u64", count, NULL) != 0 ||
	    guest_register(g, "counter.stream", "u64,u64->str", stream, NULL) != 0 ||
	    guest_register(g, "counter.sum", "rx<u64>->u64", sum, NULL) != 0)
		errx(1, "cannot register methods");
	rc = guest_run(g);
	if (rc == -ECONNABORTED)	/* the hub ended us for breaking a rule */
		fprintf(stderr, "counter: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
