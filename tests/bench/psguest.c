/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* psguest: one side of a hub topic for the publish-subscribe bench, a
 * run as tests/bench/pubsub.h has it (ioxps and dbusps are its peers).
 *   --pub TOPIC --out DIR	advertises TOPIC (signature bytes) and
 *	serves PREFIX.run RUN FLAT_MS PACED_N PERIOD_US NEED: publishes a
 *	run, waiting for NEED subscribers to drain; "published=.. per_s=.."
 *   --sub TOPIC --policy P --out DIR	subscribes with policy P (block,
 *	drop-oldest, latest), takes each event in a callback and writes
 *	DIR/PREFIX.RUN at each run's end; DIR/PREFIX.sub once subscribed.
 * An event is the 64-byte event as postcard bytes: a 1-byte length, 63
 * bytes (the event's last byte is padding). */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "guest.h"
#include "tests/bench/pubsub.h"
#include "tests/guests/testguest.h"

#define PS_WIRE	(PS_EVENT - 1)	/* the event's bytes sent */

static struct guest *g;
static const char *topic, *dir;

static void
reply_text(struct guest_call *c, const char *text)
{
	uint8_t buf[256];
	size_t pos = 0;

	guest_pc_put_str(buf, sizeof(buf), &pos, text, strlen(text));
	guest_reply(c, buf, pos);
}

static int
send_event(void *ctx, const struct ps_event *ev)
{
	uint8_t buf[PS_EVENT];
	size_t pos = 0;

	(void)ctx;
	guest_pc_put_bytes(buf, sizeof(buf), &pos, ev, PS_WIRE);
	return guest_publish(g, topic, buf, pos);
}

static void
serve_ms(int ms)
{
	uint64_t end = hp_now_ns() + (uint64_t)ms * HP_NS_PER_MS;

	while (hp_now_ns() < end && guest_service_wait(g, ms) == 0)
		;
}

static void
run(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	struct ps_plan p = { .dir = dir, .idle = serve_ms };
	uint64_t v[5], flat = 0, flat_ns = 0;
	size_t pos = 0;
	char text[128];
	int rc;

	(void)ctx;
	for (int i = 0; i < 5; i++)
		if (guest_pc_get_u64(args, len, &pos, &v[i]) != 0) {
			guest_reply_error(c, "run RUN FLAT_MS PACED_N PERIOD_US NEED");
			return;
		}
	p.run = (uint32_t)v[0];
	p.flat_ms = v[1];
	p.paced_n = v[2];
	p.period_us = v[3];
	p.need = (uint32_t)v[4];
	if ((rc = ps_publish(&p, send_event, NULL, &flat, &flat_ns)) != 0) {
		snprintf(text, sizeof(text), "publish: %s", strerror(-rc));
		guest_reply_error(c, text);
		return;
	}
	snprintf(text, sizeof(text), "published=%llu per_s=%.0f", (unsigned long long)flat,
		 (double)flat * 1e9 / (double)flat_ns);
	reply_text(c, text);
}

static void
on_event(struct guest *gg, const struct guest_event *ev, void *ctx)
{
	struct ps_tally *t = ctx;
	uint64_t now = hp_now_ns();
	const uint8_t *p;
	size_t pos = 0, n;

	(void)gg;
	if (ev->bad || guest_pc_get_bytes(ev->data, ev->len, &pos, &p, &n) != 0)
		return;
	if (ps_take(t, p, n, now) && ps_report(t) != 0)
		warn("report");
}

static const char *
arg(int argc, char *argv[], const char *opt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return NULL;
}

int
main(int argc, char *argv[])
{
	static const struct tg_method methods[] = {
		{ "run", "u64,u64,u64,u64,u64->str", run },
	};
	static struct ps_tally t;
	const char *why, *pol = arg(argc, argv, "--policy"), *sub = arg(argc, argv, "--sub");
	char path[512];
	int rc, fd;

	dir = arg(argc, argv, "--out");
	topic = sub != NULL ? sub : arg(argc, argv, "--pub");
	if (topic == NULL || dir == NULL)
		errx(2, "usage: psguest --pub TOPIC | --sub TOPIC --policy P, --out DIR");
	prctl(PR_SET_TIMERSLACK, 1UL);	/* paced sends on time */
	if (guest_attach(argc, argv, &g, &why) != 0)
		errx(1, "%s", why);
	if (sub == NULL) {
		if ((rc = guest_advertise(g, topic, "bytes", 0)) != 0)
			errx(1, "advertise %s: %s", topic, strerror(-rc));
		tg_register(g, tg_prefix(argc, argv, "pb"), methods, 1);
	} else {
		t.dir = dir;
		t.name = tg_prefix(argc, argv, "s");
		rc = guest_subscribe(g, topic, pol != NULL && strcmp(pol, "block") == 0 ?
		    GUEST_BLOCK : pol != NULL && strcmp(pol, "latest") == 0 ? GUEST_LATEST :
		    GUEST_DROP_OLDEST, on_event, &t);
		if (rc < 0)
			errx(1, "subscribe %s: %s", topic, strerror(-rc));
		snprintf(path, sizeof(path), "%s/%s.sub", dir, t.name);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
			close(fd);
	}
	rc = guest_run(g);
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
