/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* violator: attaches like a guest, then breaks one protocol rule, chosen
 * with --mode, and waits to be ended by the host:
 *   msgtype	a descriptor with msg_type 9
 *   slot	a payload in slot 100000 (out of range)
 *   generation	a payload in a real slot with the wrong generation
 *   offset	a payload whose offset + length overflows the slot
 *   parity	Data on an even channel id (the host's parity)
 *   credit	a stream into hub.sink past the granted credit
 *   postcard	registers a method, then answers a call with garbage
 *   response	a Response to a request never made
 *   epoch	bumps its epoch as if another instance had attached
 *   relaywrap	passes a channel to prod.produce (another guest's method,
 *		relayed by the host) with its credit word corrupt
 *   relaydata	passes a channel to prod.produce, then sends Data on it
 *   cancels	not a violation: Cancels of request ids 1..65536, calls it
 *		never made (other guests' calls have such ids), then
 *		"cancels sent" on stderr once hub.ping answered after them;
 *		it must be neither ended nor heard by anyone
 * With --on-term it breaks the rule only once told to stop (SIGTERM),
 * as a guest that misbehaves while it winds down.
 * It is built on proto directly: libguest would not let it. */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/segment.h"
#include "proto/ticket.h"
#include "tests/guests/raw.h"

static struct hp_endpoint ep;
static struct hp_peer_view view;
static struct hp_segment seg;
static volatile sig_atomic_t termed;

static void
on_term(int sig)
{
	(void)sig;
	termed = 1;
}

static void
heartbeat(void)
{
	raw_heartbeat(&view);
}

static void
raw(const struct hp_desc *d)
{
	if (hp_ring_enqueue(&ep.tx, d) != 0)
		errx(1, "ring");
	hp_doorbell_signal(ep.doorbell);
}

static void
request(uint32_t id, const char *method, const uint8_t *args, size_t len)
{
	uint8_t buf[512];

	buf[0] = 0;	/* no metadata */
	memcpy(buf + 1, args, len);
	if (hp_endpoint_send(&ep, HP_MSG_REQUEST, id, hp_method_id(method, strlen(method)),
			     buf, (uint32_t)len + 1, 0) != 0)
		errx(1, "send");
	hp_doorbell_signal(ep.doorbell);
}

/* A call of prod.produce(1000, 100, chan), again while prod is not there
 * yet; then, for relaydata, Data on chan once an item came through it. */
static void
relay(const char *mode, struct hp_ticket *t)
{
	int64_t chan = hp_chan_open(view.chans, seg.params.max_channels, HP_SIDE_GUEST,
				    seg.params.initial_credit, &(uint32_t){ 0 });
	uint8_t args[32];
	struct hp_pc_enc e;
	struct hp_msg_in m;
	const char *rule;
	uint32_t id = 1;
	int broke = 0;

	if (chan < 0)
		errx(1, "relay: no channel");
	/* r[shm.flow.wrap-rule]: granted - sent negative for any sender */
	if (strcmp(mode, "relaywrap") == 0)
		hp_store_release_u32(&view.chans[chan].granted_total, 0x80000001u);
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_u64(&e, 1000);
	hp_pc_put_u64(&e, 100);
	hp_pc_put_u64(&e, (uint64_t)chan);
	request(id, "prod.produce", args, e.len);
	for (;;) {
		while (hp_endpoint_recv(&ep, &m, &rule) == 0) {
			if (m.desc.msg_type == HP_MSG_RESPONSE) {
				/* refused: prod is not up yet */
				usleep(50000);
				request(++id, "prod.produce", args, e.len);
			} else if (m.desc.msg_type == HP_MSG_DATA && m.desc.id == chan &&
				   strcmp(mode, "relaydata") == 0 && !broke) {
				/* once, then wait to be ended: exiting on a
				 * later send's failure could beat the host to
				 * its verdict (and the test to its detail) */
				if (hp_endpoint_send(&ep, HP_MSG_DATA, (uint32_t)chan, 0, "x", 1,
						     0) != 0)
					errx(1, "relaydata: cannot send");
				hp_doorbell_signal(ep.doorbell);
				broke = 1;
			}
			hp_endpoint_release(&ep, &m);
		}
		if (hp_doorbell_wait(t->doorbell_fd, 100) == -EPIPE)
			exit(0);
		heartbeat();
	}
}

/* A Cancel of each id in 1..65536, waiting for ring room as it fills, and
 * a hub.ping after them (waiting for room too): its answer means hubd
 * has read them all. */
static void
cancels(struct hp_ticket *t)
{
	struct hp_desc d = { .msg_type = HP_MSG_CANCEL, .payload_slot = HP_SLOT_INLINE };
	struct hp_msg_in m;
	const char *rule;

	for (uint32_t id = 1; id <= 65536; id++) {
		d.id = id;
		while (hp_ring_enqueue(&ep.tx, &d) != 0) {
			hp_doorbell_signal(ep.doorbell);
			if (hp_doorbell_wait(t->doorbell_fd, 10) == -EPIPE)
				exit(0);
			heartbeat();
		}
	}
	/* no metadata, no arguments: an answer all the same (an error) */
	while (hp_endpoint_send(&ep, HP_MSG_REQUEST, 1, hp_method_id("hub.ping", 8),
				(const uint8_t *)"", 1, 0) != 0) {
		hp_doorbell_signal(ep.doorbell);
		if (hp_doorbell_wait(t->doorbell_fd, 10) == -EPIPE)
			exit(0);
		heartbeat();
	}
	hp_doorbell_signal(ep.doorbell);
	for (;;) {
		if (hp_endpoint_recv(&ep, &m, &rule) == 0) {
			int answer = m.desc.msg_type == HP_MSG_RESPONSE && m.desc.id == 1;

			hp_endpoint_release(&ep, &m);
			if (answer)
				break;
		} else if (hp_doorbell_wait(t->doorbell_fd, 100) == -EPIPE)
			exit(0);
		heartbeat();
	}
	fprintf(stderr, "cancels sent\n");
}

int
main(int argc, char *argv[])
{
	const char *mode = "msgtype";
	struct hp_ticket t;
	struct hp_desc d;
	uint32_t slot, gen;

	int on_term_only = 0;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--mode=", 7) == 0)
			mode = argv[i] + 7;
		on_term_only |= strcmp(argv[i], "--on-term") == 0;
	}
	if (on_term_only)
		signal(SIGTERM, on_term);
	raw_attach(argc, argv, &t, &seg, &view, &ep, HP_FEAT_ALL);
	usleep(200000);		/* let the host see us attached */
	while (on_term_only && !termed) {
		usleep(10000);
		heartbeat();
	}

	memset(&d, 0, sizeof(d));
	d.payload_slot = HP_SLOT_INLINE;
	if (strcmp(mode, "msgtype") == 0) {
		d.msg_type = 9;
		raw(&d);
	} else if (strcmp(mode, "slot") == 0) {
		hp_desc_set_slot(&d, 100000, 1, 0, 100);
		d.msg_type = HP_MSG_DATA;
		d.id = 1;
		raw(&d);
	} else if (strcmp(mode, "generation") == 0 || strcmp(mode, "offset") == 0) {
		if (hp_slot_alloc(&ep.tx_pool, &slot, &gen) != 0)
			errx(1, "slot");
		if (strcmp(mode, "generation") == 0)
			hp_desc_set_slot(&d, slot, gen + 5, 0, 100);
		else
			hp_desc_set_slot(&d, slot, gen, 0xFFFFFFF0u, 0x40);
		d.msg_type = HP_MSG_REQUEST;
		d.id = 1;
		d.method_id = hp_method_id("hub.ping", 8);
		raw(&d);
	} else if (strcmp(mode, "parity") == 0) {
		d.msg_type = HP_MSG_DATA;
		d.id = 2;
		hp_desc_set_inline(&d, "x", 1);
		raw(&d);
	} else if (strcmp(mode, "credit") == 0) {
		/* one item larger than the whole window (initial_credit must be
		 * below max_payload_size for this) */
		uint32_t len = seg.params.initial_credit + 1;
		uint8_t args[4], *item = calloc(1, len);
		int64_t chan = hp_chan_open(view.chans, seg.params.max_channels,
					    HP_SIDE_GUEST, seg.params.initial_credit,
					    &(uint32_t){ 0 });

		args[0] = (uint8_t)chan;
		request(1, "hub.sink", args, 1);
		if (item == NULL || hp_endpoint_send(&ep, HP_MSG_DATA, (uint32_t)chan, 0,
						     item, len, 0) != 0)
			errx(1, "credit: cannot send");
		hp_doorbell_signal(ep.doorbell);
	} else if (strcmp(mode, "postcard") == 0) {
		uint8_t args[64];
		struct hp_pc_enc e;
		struct hp_msg_in m;
		const char *rule;

		hp_pc_enc_init(&e, args, sizeof(args));
		hp_pc_put_str(&e, "bad.call", 8);
		hp_pc_put_str(&e, "->unit", 6);
		request(1, "hub.register", args, e.len);
		for (;;) {	/* answer the test's call to bad.call with garbage */
			if (hp_endpoint_recv(&ep, &m, &rule) == 0 &&
			    m.desc.msg_type == HP_MSG_REQUEST) {
				static const uint8_t garbage[] = { 0xff, 0xff, 0xff };

				hp_endpoint_send(&ep, HP_MSG_RESPONSE, m.desc.id, 0,
						 garbage, sizeof(garbage), 0);
				hp_doorbell_signal(ep.doorbell);
			}
			hp_doorbell_wait(ep.doorbell, 100);
			heartbeat();
		}
	} else if (strcmp(mode, "epoch") == 0) {
		hp_fetch_add_u32(&view.entry->epoch, 1, memory_order_release);
	} else if (strncmp(mode, "relay", 5) == 0) {
		relay(mode, &t);
	} else if (strcmp(mode, "cancels") == 0) {
		cancels(&t);
	} else if (strcmp(mode, "response") == 0) {
		d.msg_type = HP_MSG_RESPONSE;
		d.id = 12345;
		hp_desc_set_inline(&d, "\0\0", 2);
		raw(&d);
	} else {
		errx(1, "unknown mode %s", mode);
	}
	/* The host ends us; waiting on the doorbell also sees it die. The
	 * heartbeat goes on, so that only the violation can be the reason. */
	while (hp_doorbell_wait(t.doorbell_fd, 100) != -EPIPE)
		heartbeat();
	return 0;
}
