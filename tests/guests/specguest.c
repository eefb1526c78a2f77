/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* specguest: a guest written from the spec alone, without our extensions
 * (it never sets guest_features). It registers spec.echo, then sleeps the
 * spec's way, futex_wait on its ring's head (r[shm.wakeup.consumer-wait]),
 * so it is only woken if the host wakes that futex. Asked to echo
 * "forge", it answers an error that claims to be the hub's. */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/doorbell.h"
#include "proto/futex.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/ring.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/ticket.h"

int
main(int argc, char *argv[])
{
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ticket t;
	struct hp_ring tx, rx;
	struct hp_desc d;
	struct hp_pc_enc e;
	const char *why = NULL;
	uint32_t state = HP_PEER_RESERVED;
	uint64_t echo_id = hp_method_id("spec.echo", 9);
	uint32_t size;

	if (hp_ticket_parse(argc, argv, &t, &why) != 0 ||
	    hp_segment_attach(&seg, t.hub_path, 0, &why) != 0 ||
	    hp_peer_view_guest(&seg, t.peer_id, &v, &why) != 0)
		errx(1, "attach: %s", why);
	size = seg.params.ring_size;
	if (hp_ring_init_producer(&tx, &v.entry->g2h_head, &v.entry->g2h_tail, v.g2h, size) != 0 ||
	    hp_ring_init_consumer(&rx, &v.entry->h2g_head, &v.entry->h2g_tail, v.h2g, size) != 0)
		errx(1, "rings");
	if (!hp_cas_u32(&v.entry->state, &state, HP_PEER_ATTACHED))
		errx(1, "not reserved");
	hp_fetch_add_u32(&v.entry->epoch, 1, memory_order_release);

	/* hub.register("spec.echo", "str->str"), inline if it fits */
	memset(&d, 0, sizeof(d));
	d.msg_type = HP_MSG_REQUEST;
	d.id = 1;
	d.method_id = hp_method_id("hub.register", 12);
	hp_pc_enc_init(&e, d.inline_payload, sizeof(d.inline_payload));
	hp_pc_put_seq_len(&e, 0);
	hp_pc_put_str(&e, "spec.echo", 9);
	hp_pc_put_str(&e, "str->str", 8);
	d.payload_slot = HP_SLOT_INLINE;
	d.payload_len = (uint32_t)e.len;
	if (e.err != 0 || hp_ring_enqueue(&tx, &d) != 0)
		errx(1, "register");
	hp_futex_wake(&v.entry->g2h_head, 1);
	hp_doorbell_signal(t.doorbell_fd);

	for (;;) {
		struct timespec ts = { 60, 0 };	/* only a futex wake is expected to end it */
		uint32_t head = hp_load_acquire_u32(&v.entry->h2g_head);

		if (hp_load_relaxed_u32(&hp_segment_header(&seg)->host_goodbye) != 0 ||
		    hp_doorbell_drain(t.doorbell_fd) == -EPIPE)
			return 0;
		if (hp_ring_dequeue(&rx, &d) != 0) {
			/* r[shm.wakeup.consumer-wait]: sleep on the head word */
			hp_futex_wait(&v.entry->h2g_head, head, &ts);
			continue;
		}
		if (d.msg_type != HP_MSG_REQUEST || d.method_id != echo_id)
			continue;	/* the register answer, or nothing for us */
		if (d.payload_slot != HP_SLOT_INLINE || d.payload_len > HP_INLINE_MAX - 1)
			continue;	/* this small guest echoes short strings only */
		/* Request {meta, str} -> Response {meta, Ok(str)}: the
		 * metadata (a caller's deadline, say) read past */
		struct hp_meta_entry meta[4];
		struct hp_request req = { .meta = { .entries = meta, .cap = 4 } };
		struct hp_desc r = d;
		size_t n;

		if (hp_msg_decode_request(d.inline_payload, d.payload_len, &req) != 0 ||
		    (n = req.args_len) + 2 > HP_INLINE_MAX)
			continue;
		memset(&r, 0, sizeof(r));
		r.msg_type = HP_MSG_RESPONSE;
		r.id = d.id;
		r.payload_slot = HP_SLOT_INLINE;
		r.inline_payload[0] = 0;			/* no metadata */
		r.inline_payload[1] = 0;			/* Ok */
		memcpy(r.inline_payload + 2, req.args, n);
		r.payload_len = (uint32_t)n + 2;
		if (n == 6 && memcmp(req.args, "\x05" "forge", 6) == 0) {
			/* Err(User("forged")) with the metadata hubd gives its
			 * own errors: hubd must not pass that on */
			static const uint8_t forged[] = "\x01\x09" "hub.error" "\x00\x06"
				"forged" "\x01\x00\x06" "forged";

			memcpy(r.inline_payload, forged, sizeof(forged) - 1);
			r.payload_len = sizeof(forged) - 1;
		}
		while (hp_ring_enqueue(&tx, &r) == -EAGAIN)
			hp_futex_wait(&v.entry->g2h_tail, hp_load_acquire_u32(&v.entry->g2h_tail), &ts);
		hp_futex_wake(&v.entry->g2h_head, 1);
		hp_doorbell_signal(t.doorbell_fd);
	}
}
