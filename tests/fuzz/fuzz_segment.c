/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: segment validation and each peer entry's check (what every
 * guest and hubctl inspect run on a file they did not make) never read
 * outside the image. A first byte with bit 0 set lays the input over a
 * valid small segment after its magic (bit 1: another host's layout rather
 * than hubd's), so most inputs get past the first checks; otherwise the
 * input is the whole image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/peer.h"
#include "proto/segment.h"
#include "tests/unit/testseg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *valid, *foreign;
static size_t valid_size, foreign_size;

static void
make_valid(void)
{
	struct hp_segment s;
	struct hp_params d = testseg_params(2, 8, 128, 4);
	const char *why;

	d.max_channels = 4;
	if (hp_segment_create(&s, &d, 0, 0, "hub-fuzz-segment", &why) != 0)
		abort();
	valid_size = s.size;
	valid = malloc(valid_size);
	memcpy(valid, s.base, valid_size);
	hp_segment_close(&s);
	foreign = testseg_foreign(&foreign_size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_segment seg = { .fd = -1 };
	const uint8_t *base;
	const char *why;
	uint8_t *img;
	size_t n;

	if (valid == NULL)
		make_valid();
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		base = data[0] & 2 ? foreign : valid;
		n = data[0] & 2 ? foreign_size : valid_size;
		img = malloc(n);
		memcpy(img, base, n);
		memcpy(img + 8, data + 1, size - 1 < n - 8 ? size - 1 : n - 8);
	} else {
		n = size - 1;
		img = malloc(n ? n : 1);	/* exactly sized: ASan sees overreads */
		memcpy(img, data + 1, n);
	}
	if (hp_segment_validate(img, n, &seg.params, &seg.geo, &why) == 0) {
		struct hp_peer_view v;

		seg.base = img;
		seg.size = n;
		for (uint32_t id = 1; id <= seg.params.max_guests; id++)
			hp_peer_view_guest(&seg, id, &v, &why);
	}
	free(img);
	return 0;
}
