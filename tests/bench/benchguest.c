/* benchguest: measures the hub's data path from inside a guest, against
 * the real hubd and its host services. Methods, named PREFIX.x (--prefix):
 *   rtt N		N calls of hub.ping (8 bytes), one at a time:
 *			"median_ns=.. p99_ns=.. p999_ns=.."
 *   pipe MS W		hub.ping with W calls in flight for MS ms: "per_s=.."
 *   stream BYTES ITEM	BYTES in ITEM-byte items into hub.sink:
 *			"items_per_s=.. gb_per_s=.."
 *   idle N MS		N calls with MS ms of silence before each (both
 *			sides asleep): "median_ns=.." */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto/clock.h"
#include "guest.h"
#include "tests/guests/testguest.h"

static struct guest *g;

static void
reply_text(struct guest_call *c, const char *text)
{
	uint8_t buf[256];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, text, strlen(text));
	guest_reply(c, buf, pos);
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
ping(void)
{
	static const uint8_t arg[] = { 8, 'p', 'i', 'n', 'g', 'p', 'i', 'n', 'g' };
	uint8_t res[16];
	size_t len;

	return guest_call(g, "hub.ping", arg, sizeof(arg), res, sizeof(res), &len, 10000);
}

static void
rtt(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, *t;
	size_t pos = 0;
	char text[160];

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 || n == 0 || n > 10000000 ||
	    (t = malloc(n * sizeof(*t))) == NULL) {
		guest_reply_error(c, "rtt N");
		return;
	}
	for (int i = 0; i < 2000; i++)
		ping();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = hp_now_ns();

		if (ping() != 0) {
			free(t);
			guest_reply_error(c, "a ping failed");
			return;
		}
		t[i] = hp_now_ns() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	snprintf(text, sizeof(text), "median_ns=%llu p99_ns=%llu p999_ns=%llu",
		 (unsigned long long)t[n / 2], (unsigned long long)t[n * 99 / 100],
		 (unsigned long long)t[n * 999 / 1000]);
	free(t);
	reply_text(c, text);
}

static uint64_t done_calls;
static unsigned inflight;

static void
pipe_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	(void)result;
	(void)len;
	inflight--;
	if (status == 0)
		done_calls++;
}

static void
pipelined(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const uint8_t arg[] = { 8, 'p', 'i', 'n', 'g', 'p', 'i', 'n', 'g' };
	uint64_t ms, window, t0, end;
	size_t pos = 0;
	char text[96];

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &ms) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &window) != 0 || window == 0 || window > 4096) {
		guest_reply_error(c, "pipe MS WINDOW");
		return;
	}
	done_calls = 0;
	t0 = hp_now_ns();
	end = t0 + ms * 1000000u;
	while (hp_now_ns() < end) {
		while (inflight < window &&
		       guest_call_async(g, "hub.ping", arg, sizeof(arg), pipe_done, NULL, NULL) == 0)
			inflight++;
		if (guest_service_wait(g, 10) != 0)
			break;
	}
	while (inflight > 0 && guest_service_wait(g, 1000) == 0)
		;
	snprintf(text, sizeof(text), "per_s=%.0f calls=%llu",
		 (double)done_calls * 1e9 / (double)(hp_now_ns() - t0), (unsigned long long)done_calls);
	reply_text(c, text);
}

struct sink {
	int		done;
	int		status;
};

static void
sink_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sink *s = ctx;

	(void)result;
	(void)len;
	s->done = 1;
	s->status = status;
}

static void
stream(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t bytes, item, sent = 0, items = 0, t0, dt;
	struct sink s = { 0, 0 };
	uint8_t arg[16], *buf;
	size_t pos = 0;
	int64_t chan;
	char text[128];

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &bytes) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &item) != 0 || item == 0 || item > (8u << 20) ||
	    (buf = calloc(1, item)) == NULL) {
		guest_reply_error(c, "stream BYTES ITEM");
		return;
	}
	for (uint64_t i = 0; i < item; i++)
		buf[i] = (uint8_t)i;
	if ((chan = guest_chan_open_send(g)) < 0) {
		free(buf);
		guest_reply_error(c, "no channel");
		return;
	}
	pos = 0;
	guest_pc_put_u64(arg, sizeof(arg), &pos, (uint64_t)chan);
	guest_call_async(g, "hub.sink", arg, pos, sink_done, &s, NULL);
	/* small items go in batches: one publication per 32 */
	struct iovec batch[32];
	int per = item <= 1024 ? 32 : 1;

	for (int i = 0; i < per; i++)
		batch[i] = (struct iovec){ buf, item };
	t0 = hp_now_ns();
	while (sent < bytes) {
		int k = bytes - sent >= per * item ? per : 1;

		if (guest_chan_send_batch(g, (uint32_t)chan, batch, k, 10000) != 0)
			break;
		sent += (uint64_t)k * item;
		items += (uint64_t)k;
	}
	guest_chan_close(g, (uint32_t)chan);
	while (!s.done && guest_service_wait(g, 1000) == 0)
		;
	dt = hp_now_ns() - t0;
	free(buf);
	snprintf(text, sizeof(text), "items_per_s=%.0f gb_per_s=%.3f status=%d",
		 (double)items * 1e9 / (double)dt, (double)sent / (double)dt, s.status);
	reply_text(c, text);
}

static void
idle(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t n, ms, *t;
	size_t pos = 0;
	char text[64];

	(void)ctx;
	if (guest_pc_get_u64(args, len, &pos, &n) != 0 ||
	    guest_pc_get_u64(args, len, &pos, &ms) != 0 || n == 0 || n > 100000 ||
	    (t = malloc(n * sizeof(*t))) == NULL) {
		guest_reply_error(c, "idle N MS");
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0;

		usleep((useconds_t)(ms * 1000));	/* both sides fall asleep */
		t0 = hp_now_ns();
		ping();
		t[i] = hp_now_ns() - t0;
	}
	qsort(t, n, sizeof(*t), cmp);
	snprintf(text, sizeof(text), "median_ns=%llu", (unsigned long long)t[n / 2]);
	free(t);
	reply_text(c, text);
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "rtt", "u64->str", rtt }, { "pipe", "u64,u64->str", pipelined },
		{ "stream", "u64,u64->str", stream }, { "idle", "u64,u64->str", idle },
	};
	const char *why;
	int rc;

	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	tg_register(g, tg_prefix(argc, argv, "bench"), methods,
		    sizeof(methods) / sizeof(methods[0]));
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
