/* libFuzzer: segment validation (what every guest and hubctl inspect run
 * on a file they did not make) never reads outside the image. Odd first
 * bytes lay the input over a valid small segment after its magic, so most
 * inputs get past the first checks; even ones are the whole image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/segment.h"
#include "tests/unit/testseg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *valid;
static size_t valid_size;

static void
make_valid(void)
{
	struct hp_segment s;
	struct hp_params d = testseg_params(2, 8, 128, 4);
	const char *why;

	d.max_channels = 4;
	if (hp_segment_create(&s, "/dev/shm/hub-fuzz-segment", &d, 0600, &why) != 0)
		abort();
	remove("/dev/shm/hub-fuzz-segment");
	valid_size = s.size;
	valid = malloc(valid_size);
	memcpy(valid, s.base, valid_size);
	hp_segment_close(&s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_params p;
	struct hp_geometry g;
	const char *why;
	uint32_t bad;
	uint8_t *img;
	size_t n;

	if (valid == NULL)
		make_valid();
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		n = valid_size;
		img = malloc(n);
		memcpy(img, valid, n);
		memcpy(img + 8, data + 1, size - 1 < n - 8 ? size - 1 : n - 8);
	} else {
		n = size - 1;
		img = malloc(n ? n : 1);	/* exactly sized: ASan sees overreads */
		memcpy(img, data + 1, n);
	}
	if (hp_segment_validate(img, n, &p, &g, &why) == 0)
		hp_segment_check_peers(img, n, &p, &g, &bad);
	free(img);
	return 0;
}
