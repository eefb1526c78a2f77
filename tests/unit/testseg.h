/* Segment parameters the unit tests and fuzzers build their small segments
 * with: the defaults, a few guests, short rings, small slots, and the
 * largest payload a slot holds. */
#ifndef HUB_TESTSEG_H
#define HUB_TESTSEG_H

#include "proto/segment.h"

static inline struct hp_params
testseg_params(uint32_t max_guests, uint32_t ring_size, uint32_t slot_size,
	       uint32_t slots_per_guest)
{
	struct hp_params p;

	hp_params_default(&p);
	p.max_guests = max_guests;
	p.ring_size = ring_size;
	p.slot_size = slot_size;
	p.slots_per_guest = slots_per_guest;
	p.max_payload_size = slot_size - HP_SLOT_GEN_SIZE;
	return p;
}

#endif
