/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The ABI of older libguests, for binaries built against them: the
 * functions whose structs took a leading size in 0.5 (guest_get_stats,
 * guest_run_mt, guest_rt_new) at the version nodes they had before, with
 * the structs as they were, each passed on to today's function. A new
 * link binds today's (LIBGUEST_0.5); libguest.map lists each in both
 * nodes. Nothing in libguest calls these. */
#include <string.h>

#include "guestlib/guest.h"

/* struct guest_stats before 0.5 */
struct stats_0_1 {
	uint64_t	calls_in, calls_out, credit_waits, ring_waits, wakes, sleeps;
};

/* struct guest_rt_config before 0.5 */
struct rt_config_0_2 {
	unsigned	processors;
	size_t		stack_size;
};

GUEST_API void	guest_get_stats_0_1(const struct guest *g, struct stats_0_1 *s);
GUEST_API int	guest_run_mt_0_2(struct guest *g, const struct rt_config_0_2 *cfg);
GUEST_API int	guest_rt_new_0_2(const struct rt_config_0_2 *cfg, struct guest_rt **rtp);

__asm__(".symver guest_get_stats_0_1, guest_get_stats@LIBGUEST_0");
__asm__(".symver guest_run_mt_0_2, guest_run_mt@LIBGUEST_0.2");
__asm__(".symver guest_rt_new_0_2, guest_rt_new@LIBGUEST_0.2");

void
guest_get_stats_0_1(const struct guest *g, struct stats_0_1 *s)
{
	struct guest_stats st = { .size = sizeof(st) };

	guest_get_stats(g, &st);
	s->calls_in = st.calls_in;
	s->calls_out = st.calls_out;
	s->credit_waits = st.credit_waits;
	s->ring_waits = st.ring_waits;
	s->wakes = st.wakes;
	s->sleeps = st.sleeps;
}

/* NULL stays NULL: the defaults */
static const struct guest_rt_config *
config(const struct rt_config_0_2 *old, struct guest_rt_config *cfg)
{
	if (old == NULL)
		return NULL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->processors = old->processors;
	cfg->stack_size = old->stack_size;
	return cfg;
}

int
guest_run_mt_0_2(struct guest *g, const struct rt_config_0_2 *cfg)
{
	struct guest_rt_config c;

	return guest_run_mt(g, config(cfg, &c));
}

int
guest_rt_new_0_2(const struct rt_config_0_2 *cfg, struct guest_rt **rtp)
{
	struct guest_rt_config c;

	return guest_rt_new(config(cfg, &c), rtp);
}
