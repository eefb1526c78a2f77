/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* lateepoch: attaches in the spec's order, but slowly: Reserved ->
 * Attached (r[shm.guest.attach] 4), then its epoch (5) a second and a half
 * later, heartbeating all along; then it rings and lives on quietly until
 * the hub stops. A host that takes the state word alone for "attached"
 * records the old epoch and, once the new one appears, ends a healthy
 * guest for r[shm.crash.epoch]. */
#include <errno.h>
#include <unistd.h>

#include "raw.h"

int
main(int argc, char *argv[])
{
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ticket t;
	uint32_t state = HP_PEER_RESERVED;

	raw_map(argc, argv, &t, &seg, &v);
	raw_heartbeat(&v);
	if (!hp_cas_u32(&v.entry->state, &state, HP_PEER_ATTACHED))
		errx(1, "not reserved");
	for (int i = 0; i < 15; i++) {
		raw_heartbeat(&v);
		usleep(100000);
	}
	hp_fetch_add_u32(&v.entry->epoch, 1, memory_order_release);
	raw_heartbeat(&v);
	hp_doorbell_signal(t.doorbell_fd);
	/* until the hub ends us or stops (r[shm.goodbye.host-atomic]) */
	while (hp_doorbell_wait(t.doorbell_fd, 100) != -EPIPE &&
	       hp_load_relaxed_u32(&hp_segment_header(&seg)->host_goodbye) == 0)
		raw_heartbeat(&v);
	return 0;
}
