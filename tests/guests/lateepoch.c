/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* lateepoch: attaches in the spec's order, but slowly: Reserved ->
 * Attached (r[shm.guest.attach] 4), then its epoch (5) a second and a half
 * later, heartbeating all along; then it rings and lives on quietly until
 * the hub stops. A host that takes the state word alone for "attached"
 * records the old epoch and, once the new one appears, ends a healthy
 * guest for r[shm.crash.epoch].
 * --beat-late: attaches at once, but beats first half a second after: a
 * host that takes the entry's heartbeat word (0 until then) for its last
 * beat ends it as hung at its first look (r[shm.crash.heartbeat]). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "raw.h"

int
main(int argc, char *argv[])
{
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ticket t;
	uint32_t state = HP_PEER_RESERVED;

	int late = 0;

	for (int i = 1; i < argc; i++)
		late |= strcmp(argv[i], "--beat-late") == 0;

	raw_map(argc, argv, &t, &seg, &v);
	if (!late)
		raw_heartbeat(&v);
	if (!hp_cas_u32(&v.entry->state, &state, HP_PEER_ATTACHED))
		errx(1, "not reserved");
	for (int i = 0; i < 15 && !late; i++) {
		raw_heartbeat(&v);
		usleep(100000);
	}
	hp_fetch_add_u32(&v.entry->epoch, 1, memory_order_release);
	hp_doorbell_signal(t.doorbell_fd);
	if (late)
		usleep(500000);
	raw_heartbeat(&v);
	/* until the hub ends us or stops (r[shm.goodbye.host-atomic]) */
	while (hp_doorbell_wait(t.doorbell_fd, 100) != -EPIPE &&
	       hp_load_relaxed_u32(&hp_segment_header(&seg)->host_goodbye) == 0)
		raw_heartbeat(&v);
	return 0;
}
