/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct lanes between two guests (lane.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/lane.h"
#include "proto/postcard.h"

_Static_assert(sizeof(struct hp_lane_figures) <= HP_CACHE_LINE - 8,
	       "the figures fit the free bytes of a side's line");

void
hp_lane_params(const struct hp_params *hub, uint32_t max_payload, uint32_t slots,
	       struct hp_params *lp)
{
	memset(lp, 0, sizeof(*lp));
	lp->max_guests = 1;
	lp->ring_size = hub->ring_size;
	/* every payload either side may send through the hub fits one slot:
	 * a call that goes over the lane is never refused for its size
	 * where the hub would have taken it (the file is sparse: only what
	 * payloads touch takes memory); nor taken where the hub would have
	 * refused it, so the slot's rounding up is not a larger limit */
	lp->slot_size = (max_payload + HP_SLOT_GEN_SIZE + 63) / 64 * 64;
	lp->max_payload_size = max_payload;
	/* a payload over HP_INLINE_MAX takes a slot until the other side
	 * has read it: the slots bound what is in flight (a stream of 1 KiB
	 * items moves slots at a time), and cost address space */
	lp->slots_per_guest = slots;
	/* the hub's channel window, and its table up to what a lane's ids
	 * allow (a caller's channels move to it with a call over the lane) */
	lp->max_channels = hub->max_channels < HP_LANE_CHANNELS_MAX ?
	    hub->max_channels : HP_LANE_CHANNELS_MAX;
	lp->initial_credit = hub->initial_credit;
	lp->heartbeat_interval = 0;
}

/* hubd reads only the figures: its mapping keeps the pages up to the end
 * of the extension table, read-only, instead of the whole lane (whose
 * slots are as large as the largest payload). */
static int
keep_head(struct hp_lane_map *m)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t keep = (m->seg.geo.ext_offset + HP_PEER_EXT_SIZE + page - 1) / page * page;
	void *b;

	if (keep >= m->seg.size)
		return 0;
	if ((b = mmap(NULL, keep, PROT_READ, MAP_SHARED, m->seg.fd, 0)) == MAP_FAILED) {
		hp_segment_close(&m->seg);
		return -errno;
	}
	munmap(m->seg.base, m->seg.size);
	m->seg.base = b;
	m->seg.size = keep;
	m->seg.writable = 0;
	/* the entry and its extension again, in the new mapping (nothing
	 * else of the view is used: its rings and pools are not mapped) */
	hp_peer_view_host(&m->seg, 1, &m->view);
	return 0;
}

int
hp_lane_create(struct hp_lane_map *m, const struct hp_params *lp, const char *name,
	       const char **why)
{
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = hp_segment_create(&m->seg, lp, 1, 0, name, why)) != 0)
		return rc;
	if ((rc = hp_peer_view_host(&m->seg, 1, &m->view)) != 0) {
		hp_segment_close(&m->seg);
		if (why != NULL)
			*why = "the lane's entry";
		return rc;
	}
	/* side B's end announces waiter words as a guest does */
	hp_peer_offer(&m->view, HP_FEAT_WAITERS);
	return keep_head(m);
}

int
hp_lane_fd_is(int fd, uint32_t id)
{
	char path[64], link[256], want[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) < 0)
		return 0;
	link[n] = '\0';
	snprintf(want, sizeof(want), "/memfd:" HP_LANE_MEMFD "%u:", id);
	return strncmp(link, want, strlen(want)) == 0;
}

struct hp_lane_figures *
hp_lane_figures_of(const struct hp_lane_map *m, uint32_t side)
{
	struct hp_peer_ext *x = m->view.ext;

	if (x == NULL)
		return NULL;
	return (struct hp_lane_figures *)(void *)(side == HP_LANE_SIDE_A ?
	    (uint8_t *)x + HP_CACHE_LINE + 8 : (uint8_t *)x + 8);
}

void
hp_lane_figures_read(const struct hp_lane_map *m, uint32_t side, struct hp_lane_tally *t)
{
	struct hp_lane_figures *f = hp_lane_figures_of(m, side);

	/* relaxed: figures for people, each written by its side alone */
	t->calls_out = hp_load_relaxed_u64(&f->calls_out);
	t->calls_in = hp_load_relaxed_u64(&f->calls_in);
	t->bytes_out = hp_load_relaxed_u64(&f->bytes_out);
	t->bytes_in = hp_load_relaxed_u64(&f->bytes_in);
	t->wakes = hp_load_relaxed_u64(&f->wakes);
	t->sleeps = hp_load_relaxed_u64(&f->sleeps);
}

void
hp_lane_figures_write(const struct hp_lane_map *m, const struct hp_lane_tally *t)
{
	struct hp_lane_figures *f = m->mine;

	/* relaxed: pairs with nothing, hp_lane_figures_read is relaxed too */
	hp_store_relaxed_u64(&f->calls_out, t->calls_out);
	hp_store_relaxed_u64(&f->calls_in, t->calls_in);
	hp_store_relaxed_u64(&f->bytes_out, t->bytes_out);
	hp_store_relaxed_u64(&f->bytes_in, t->bytes_in);
	hp_store_relaxed_u64(&f->wakes, t->wakes);
	hp_store_relaxed_u64(&f->sleeps, t->sleeps);
}

int
hp_lane_attach(struct hp_lane_map *m, int memfd, uint32_t side, int bell,
	       struct hp_endpoint *ep, const char **why)
{
	char path[64];
	int rc;

	memset(m, 0, sizeof(*m));
	m->seg.fd = -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	/* validated as any segment: the peer may have written it first */
	rc = hp_segment_attach(&m->seg, path, 0, why);
	close(memfd);
	if (rc != 0)
		return rc;
	if (m->seg.params.max_guests != 1 || m->seg.params.max_channels > HP_LANE_CHANNELS_MAX ||
	    (m->seg.host_features & HP_FEAT_WAITERS) == 0) {
		if (why != NULL)
			*why = "not a lane";
		rc = -EBADMSG;
		goto fail;
	}
	/* the areas where the entry says, checked once, kept locally: what
	 * the peer writes there later changes nothing of ours */
	if ((rc = hp_peer_view_guest(&m->seg, 1, &m->view, why)) != 0)
		goto fail;
	if (m->view.ext == NULL) {
		if (why != NULL)
			*why = "the lane has no waiter words";
		rc = -EBADMSG;
		goto fail;
	}
	rc = side == HP_LANE_SIDE_A ?
	    hp_endpoint_init_host(ep, &m->seg, &m->view, bell, HP_FEAT_WAITERS, NULL) :
	    hp_endpoint_init_guest(ep, &m->seg, &m->view, bell, NULL, HP_FEAT_WAITERS);
	if (rc != 0) {
		if (why != NULL)
			*why = "the lane's rings are corrupt";
		goto fail;
	}
	/* both ends are guests: the crowding hint and the awake flag are
	 * the guest's own (its hub endpoint's), never the lane's, which
	 * the peer could write */
	ep->awake = NULL;
	ep->awake_flag = NULL;
	ep->wake_yield = 1;
	m->mine = hp_lane_figures_of(m, side);
	return 0;
fail:
	hp_segment_close(&m->seg);
	return rc;
}

/* -- HP_MSG_LANE --------------------------------------------------------- */

int64_t
hp_lane_msg_encode(uint8_t *buf, size_t cap, const struct hp_lane_msg *m)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_u32(&e, m->op);
	hp_pc_put_u32(&e, m->lane);
	switch (m->op) {
	case HP_LANE_OPEN:
		hp_pc_put_u32(&e, m->side);
		hp_pc_put_u32(&e, m->calls_max);
		hp_pc_put_str(&e, m->peer, strnlen(m->peer, HP_LANE_NAME_MAX));
		if (m->bells)
			hp_pc_put_bool(&e, 1);
		break;
	case HP_LANE_ROUTE:
		hp_pc_put_u64(&e, m->method);
		hp_pc_put_str(&e, m->sig, strnlen(m->sig, HP_SIG_MAX_LEN));
		break;
	case HP_LANE_UNROUTE:
		hp_pc_put_u64(&e, m->method);
		break;
	case HP_LANE_CLOSE:
		hp_pc_put_str(&e, m->reason, strnlen(m->reason, HP_LANE_REASON_MAX));
		break;
	case HP_LANE_CLOSED:
		hp_pc_put_bool(&e, m->violation != 0);
		hp_pc_put_str(&e, m->reason, strnlen(m->reason, HP_LANE_REASON_MAX));
		break;
	default:
		return -EINVAL;
	}
	return e.err != 0 ? -ENOSPC : (int64_t)e.len;
}

/* A string of at most max bytes, with no NUL, into out (NUL-terminated). */
static int
get_str(struct hp_pc_dec *d, char *out, size_t max)
{
	const char *s;
	size_t n;

	/* a NUL inside would cut it short of what was sent */
	if (hp_pc_get_str(d, &s, &n) != 0 || n > max || memchr(s, 0, n) != NULL)
		return -EBADMSG;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

int
hp_lane_msg_decode(const uint8_t *buf, size_t len, struct hp_lane_msg *m)
{
	struct hp_pc_dec d;
	int v;

	memset(m, 0, sizeof(*m));
	hp_pc_dec_init(&d, buf, len);
	m->op = hp_pc_get_u32(&d);
	m->lane = hp_pc_get_u32(&d);
	if (d.err != 0 || m->lane == 0)
		return -EBADMSG;
	switch (m->op) {
	case HP_LANE_OPEN:
		m->side = hp_pc_get_u32(&d);
		m->calls_max = hp_pc_get_u32(&d);
		if (d.err != 0 || m->side > HP_LANE_SIDE_B ||
		    get_str(&d, m->peer, HP_LANE_NAME_MAX) != 0)
			return -EBADMSG;
		if (hp_pc_remaining(&d) != 0) {
			if (hp_pc_get_bool(&d) != 1)
				return -EBADMSG;	/* only ever true when there */
			m->bells = 1;
		}
		break;
	case HP_LANE_ROUTE:
		m->method = hp_pc_get_u64(&d);
		if (get_str(&d, m->sig, HP_SIG_MAX_LEN) != 0)
			return -EBADMSG;
		break;
	case HP_LANE_UNROUTE:
		m->method = hp_pc_get_u64(&d);
		break;
	case HP_LANE_CLOSE:
		if (get_str(&d, m->reason, HP_LANE_REASON_MAX) != 0)
			return -EBADMSG;
		break;
	case HP_LANE_CLOSED:
		if ((v = hp_pc_get_bool(&d)) < 0 ||
		    get_str(&d, m->reason, HP_LANE_REASON_MAX) != 0)
			return -EBADMSG;
		m->violation = (uint32_t)v;
		break;
	default:
		return -EBADMSG;
	}
	return d.err != 0 || hp_pc_remaining(&d) != 0 ? -EBADMSG : 0;
}
