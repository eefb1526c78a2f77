/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* chaos: a hostile guest. It attaches like any guest, then does, at
 * random, one thing after another that a buggy or malicious plugin could
 * do to the segment, counting each in the shared counter file given with
 * --counter (the test's tally of rounds; its second word takes the
 * harmful acts in turn across instances, so that each comes up), until
 * the host ends it:
 * descriptors with a bad type, slot, generation, offset or length,
 * channel ids out of range or of the host's parity, Data past its credit,
 * duplicate request ids, answers to nothing, truncated and overlong
 * postcard, metadata over the limits, ring indices out of range or moved
 * back, scribbles over its peer entry, bitmap, generations and channel
 * table, payloads changed after publication, floods without reading, and
 * plain silence. Built on proto: libguest would refuse all of it. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/method.h"
#include "proto/postcard.h"
#include "proto/segment.h"
#include "proto/ticket.h"
#include "tests/guests/raw.h"

static struct hp_endpoint ep;
static struct hp_peer_view view;
static struct hp_segment seg;
static hp_atomic_u64 *rounds;	/* [0] rounds, [1] harmful acts so far */
static uint64_t rng;
static uint32_t next_id = 1;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
heartbeat(void)
{
	raw_heartbeat(&view);
}

static void
publish(const struct hp_desc *d)
{
	hp_ring_enqueue(&ep.tx, d);
	hp_doorbell_signal(ep.doorbell);
}

static struct hp_desc
desc(uint8_t type, uint32_t id)
{
	struct hp_desc d;

	memset(&d, 0, sizeof(d));
	d.msg_type = type;
	d.id = id;
	d.payload_slot = HP_SLOT_INLINE;
	return d;
}

/* A request with raw payload bytes, through the endpoint (inline or slot). */
static void
request(const char *method, const void *payload, uint32_t len)
{
	hp_endpoint_send(&ep, HP_MSG_REQUEST, next_id++, hp_method_id(method, strlen(method)),
			 payload, len, 0);
	hp_doorbell_signal(ep.doorbell);
}

static void
in_slot(struct hp_desc *d, uint32_t gen_delta, uint32_t off, uint32_t len)
{
	uint32_t slot, gen;

	if (hp_slot_alloc(&ep.tx_pool, &slot, &gen) != 0)
		return;
	memset(hp_slot_payload(&ep.tx_pool, slot), 0, 64);
	hp_desc_set_slot(d, slot, gen + gen_delta, off, len);
}

static void
act(unsigned what)
{
	const struct hp_params *p = &seg.params;
	struct hp_peer_entry *e = view.entry;
	struct hp_desc d;
	uint8_t buf[512];
	struct hp_pc_enc enc;

	switch (what) {
	case 0:		/* r[shm.desc.msg-type] */
		d = desc((uint8_t)(8 + rnd() % 240), 1);
		publish(&d);
		break;
	case 1:		/* a slot that does not exist */
		d = desc(HP_MSG_REQUEST, next_id++);
		d.method_id = hp_method_id("hub.ping", 8);
		hp_desc_set_slot(&d, (uint32_t)(p->slots_per_guest + rnd() % 1000), 1, 0, 100);
		publish(&d);
		break;
	case 2:		/* the wrong generation */
		d = desc(HP_MSG_REQUEST, next_id++);
		d.method_id = hp_method_id("hub.ping", 8);
		in_slot(&d, 1 + (uint32_t)(rnd() % 100), 0, 100);
		publish(&d);
		break;
	case 3:		/* offset + length past the slot, or wrapping */
		d = desc(HP_MSG_REQUEST, next_id++);
		d.method_id = hp_method_id("hub.ping", 8);
		in_slot(&d, 0, rnd() % 2 ? 0xFFFFFFF0u : p->slot_size - 40, 0x40);
		publish(&d);
		break;
	case 4:		/* longer than max_payload_size */
		d = desc(HP_MSG_REQUEST, next_id++);
		in_slot(&d, 0, 0, p->max_payload_size + 1 + (uint32_t)(rnd() % 1000));
		publish(&d);
		break;
	case 5:		/* channel ids out of range, 0, or the host's parity */
		d = desc((uint8_t)(HP_MSG_DATA + rnd() % 3), 0);
		d.id = rnd() % 3 == 0 ? 0 : rnd() % 2 ? p->max_channels + (uint32_t)(rnd() % 9) :
		    2 * (1 + (uint32_t)(rnd() % (p->max_channels / 2 - 1)));
		hp_desc_set_inline(&d, "x", 1);
		publish(&d);
		break;
	case 6: {	/* Data past the credit it was granted */
		uint32_t cur = 0;
		int64_t chan = hp_chan_open(view.chans, p->max_channels, HP_SIDE_GUEST,
					    p->initial_credit, &cur);
		uint8_t arg[2] = { 0, (uint8_t)chan };
		static uint8_t item[70000];

		if (chan < 0 || chan > 127)
			break;
		request("hub.sink", arg, 2);	/* no metadata, the channel id */
		hp_endpoint_send(&ep, HP_MSG_DATA, (uint32_t)chan, 0, item,
				 p->initial_credit + 1 < p->max_payload_size ?
				 p->initial_credit + 1 : p->max_payload_size, 0);
		hp_doorbell_signal(ep.doorbell);
		break;
	}
	case 7:		/* the same request id twice */
		buf[0] = 0, buf[1] = 2, buf[2] = 'h', buf[3] = 'i';
		request("hub.ping", buf, 4);
		next_id--;
		request("hub.ping", buf, 4);
		break;
	case 8:		/* an answer to a question never asked */
		d = desc(HP_MSG_RESPONSE, 0x7FFF0000u + (uint32_t)(rnd() % 1000));
		hp_desc_set_inline(&d, "\0\0", 2);
		publish(&d);
		break;
	case 9:		/* truncated postcard: 5 metadata entries announced, none there */
		request("hub.ping", "\x05\x01", 2);
		break;
	case 10:	/* overlong: arguments with bytes left over */
		request("hub.log", "\x00\x02hi\xff\xff\xff", 7);
		break;
	case 11:	/* metadata over the limits: 129 entries */
		hp_pc_enc_init(&enc, buf, sizeof(buf));
		hp_pc_put_seq_len(&enc, 129);
		for (int i = 0; i < 129; i++) {
			hp_pc_put_str(&enc, "k", 1);
			hp_pc_put_tag(&enc, 2);
			hp_pc_put_u64(&enc, 1);
		}
		request("hub.ping", buf, (uint32_t)enc.len);
		break;
	case 12:	/* r[shm.ring.capacity]: head out of range */
		hp_store_release_u32(&e->g2h_head, p->ring_size + (uint32_t)(rnd() % 1000));
		hp_doorbell_signal(ep.doorbell);
		break;
	case 13:	/* head moved back: stale descriptors come round again */
		hp_store_release_u32(&e->g2h_head,
				     (hp_load_relaxed_u32(&e->g2h_tail) + p->ring_size - 1) %
				     p->ring_size);
		hp_doorbell_signal(ep.doorbell);
		break;
	case 14:	/* its own tail out of range, then its state and epoch */
		hp_store_release_u32(&e->h2g_tail, 0xFFFFFFFFu);
		if (rnd() % 2)
			hp_store_release_u32(&e->state, (uint32_t)rnd());
		else
			hp_fetch_add_u32(&e->epoch, 1, memory_order_release);
		break;
	case 15:	/* scribbles: offsets, bitmap, generations, channel table */
		e->ring_offset = rnd();
		e->channel_table_offset = rnd();
		ep.tx_pool.bitmap[rnd() % ep.tx_pool.nwords] = rnd();
		memset(ep.tx_pool.slots + (rnd() % p->slots_per_guest) * p->slot_size,
		       (int)rnd(), 4);
		memset(view.chans, (int)rnd(), p->max_channels * sizeof(*view.chans));
		hp_store_relaxed_u64(&e->last_heartbeat, rnd());
		break;
	case 16: {	/* a payload changed after its descriptor was published */
		uint8_t pay[300];
		struct hp_outbuf ob;

		memset(pay, 0, sizeof(pay));
		pay[1] = 0x80;
		pay[2] = 0x02;	/* a 256-byte bytes value follows */
		if (hp_endpoint_reserve(&ep, sizeof(pay), &ob) != 0)
			break;
		memcpy(ob.buf, pay, sizeof(pay));
		hp_endpoint_commit(&ep, &ob, HP_MSG_REQUEST, next_id++,
				   hp_method_id("hub.ping", 8), sizeof(pay), 0);
		hp_doorbell_signal(ep.doorbell);
		for (int i = 0; i < 20000; i++) {	/* race the host's read */
			ob.buf[rnd() % sizeof(pay)] = (uint8_t)rnd();
			ep.tx.descs[(ep.tx.mine - 1) & ep.tx.mask].payload_len = (uint32_t)rnd();
		}
		break;
	}
	case 17:	/* requests and never a look at the answers */
		for (int i = 0; i < 5000; i++) {
			buf[0] = 0, buf[1] = 1, buf[2] = 'x';
			if (hp_endpoint_send(&ep, HP_MSG_REQUEST, next_id++,
					     hp_method_id("hub.ping", 8), buf, 3, 0) != 0)
				usleep(100);
			hp_doorbell_signal(ep.doorbell);
			heartbeat();
		}
		break;
	default:	/* silence: no reading, no heartbeat */
		for (;;)
			pause();
	}
}

int
main(int argc, char *argv[])
{
	const char *counter = NULL;
	struct hp_ticket t;
	int fd;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--counter=", 10) == 0)
			counter = argv[i] + 10;
	if (counter == NULL || (fd = open(counter, O_RDWR)) < 0 ||
	    (rounds = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		errx(1, "--counter=FILE (16 bytes) needed");
	/* it would use the shared pool, but the test keeps it out
	 * (shared_pool = no): its acts aim at its own pool and rings */
	raw_attach(argc, argv, &t, &seg, &view, &ep, HP_FEAT_ALL);
	rng = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
	for (;;) {
		/* 16 ends us when the host reads the descriptor after our
		 * scribble over its length: harmful, in turn with the rest */
		static const unsigned harmful[] = { 0, 1, 2, 3, 4, 5, 6, 8, 12, 13, 14, 15, 16 };
		static const unsigned harmless[] = { 7, 9, 10, 11 };
		struct hp_msg_in m;
		const char *rule;
		unsigned r = (unsigned)(rnd() % 1000), what;

		/* mostly what the host answers with an error and survives; a
		 * tenth of the time a violation that ends us; rarely a flood
		 * or silence, which take the host longest to decide about */
		if (r < 1)
			what = 18;
		else if (r < 4)
			what = 17;
		else if (r < 100)
			what = harmful[atomic_fetch_add_explicit(&rounds[1], 1,
				memory_order_relaxed) % (sizeof(harmful) / sizeof(harmful[0]))];
		else
			what = harmless[rnd() % (sizeof(harmless) / sizeof(harmless[0]))];

		/* read what the host sends, mostly (case 17 and 18 do not) */
		while (hp_endpoint_recv(&ep, &m, &rule) == 0)
			hp_endpoint_release(&ep, &m);
		hp_endpoint_notify_consumed(&ep);
		atomic_fetch_add_explicit(rounds, 1, memory_order_relaxed);
		act(what);
		heartbeat();
		if (hp_doorbell_wait(t.doorbell_fd, 1) == -EPIPE)
			return 0;
	}
}
