/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Segment geometry, creation and validated attach (segment.h); the
 * header's goodbye flag. Over 600 lines and whole: the host's geometry and
 * a reader's validation derive the same sizes from the same parameter
 * checks (params_check, sizes), so that one never accepts what the other
 * would not lay out. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/segment.h"
#include "proto/slot.h"

void
hp_params_default(struct hp_params *p)
{
	p->max_guests = 16;
	p->ring_size = 256;
	p->slot_size = 64 * 1024;
	p->slots_per_guest = 32;	/* 34.5 MiB with the rest of the defaults */
	p->max_channels = 64;
	p->initial_credit = 64 * 1024;
	p->max_payload_size = p->slot_size - HP_SLOT_GEN_SIZE;
	p->heartbeat_interval = 1000000000ull;	/* 1 s */
	hp_var_conf_default(&p->var);
}

static uint64_t
align64(uint64_t v)
{
	return (v + HP_CACHE_LINE - 1) & ~(uint64_t)(HP_CACHE_LINE - 1);
}

/* a + b * c, or UINT64_MAX on overflow (all inputs here are far smaller
 * than 2^40, but a corrupt header must not be able to wrap anything) */
static uint64_t
mad(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m;

	if (c != 0 && b > UINT64_MAX / c)
		return UINT64_MAX;
	m = b * c;
	return a > UINT64_MAX - m ? UINT64_MAX : a + m;
}

static int
invalid(const char **why, const char *msg)
{
	if (why != NULL)
		*why = msg;
	return -EINVAL;
}

/* Parameters any spec segment must have in range. ours: hubd's own
 * stricter choice for the segments it creates (slot_size a multiple of 64,
 * so every slot starts a cache line). */
static int
params_check(const struct hp_params *p, int ours, const char **why)
{
	/* r[shm.topology.max-guests] */
	if (p->max_guests < 1 || p->max_guests > HP_MAX_GUESTS)
		return invalid(why, "max_guests must be 1 to 255");
	/* r[shm.ring.capacity]: indices wrap with a mask */
	if (p->ring_size < 2 || p->ring_size > HP_RING_SIZE_MAX ||
	    (p->ring_size & (p->ring_size - 1)) != 0)
		return invalid(why, "ring_size must be a power of two from 2 to 65536");
	if (ours && (p->slot_size < HP_CACHE_LINE || p->slot_size % HP_CACHE_LINE != 0))
		return invalid(why, "slot_size must be a multiple of 64, at least 64");
	/* r[shm.slot.generation]: each slot starts with an aligned u32 */
	if (p->slot_size <= HP_SLOT_GEN_SIZE || p->slot_size % HP_SLOT_GEN_SIZE != 0)
		return invalid(why, "slot_size must be a multiple of 4, more than 4");
	if (p->slots_per_guest < 1 || p->slots_per_guest > HP_SLOTS_MAX)
		return invalid(why, "slots_per_guest must be 1 to 1048576");
	/* r[shm.flow.channel-table-indexing]: id 0 unused, so 2 at least */
	if (p->max_channels < 2 || p->max_channels > HP_CHANNELS_MAX)
		return invalid(why, "max_channels must be 2 to 1048576");
	/* r[shm.flow.wrap-rule]: credit beyond 2^31 reads as corruption */
	if (p->initial_credit < 1 || p->initial_credit > INT32_MAX)
		return invalid(why, "initial_credit must be 1 to 2147483647");
	/* r[shm.slot.generation]: a payload fits one slot's payload area */
	if (p->max_payload_size < 1 || p->max_payload_size > p->slot_size - HP_SLOT_GEN_SIZE)
		return invalid(why, "max_payload_size must be 1 to slot_size - 4");
	return 0;
}

/* The sizes every reader derives from the parameters, whoever laid out
 * the segment. */
static void
sizes(const struct hp_params *p, struct hp_geometry *g)
{
	/* r[shm.segment.guest-rings] r[shm.ring.layout]: two rings of
	 * ring_size descriptors per guest */
	g->ring_bytes = 2ull * p->ring_size * HP_DESC_SIZE;
	/* r[shm.flow.channel-table-location] */
	g->chan_bytes = (uint64_t)p->max_channels * HP_CHAN_ENTRY_SIZE;
	/* r[shm.segment.pool-size] */
	g->pool_header_size = hp_slot_pool_header_size(p->slots_per_guest);
	g->pool_size = mad(g->pool_header_size, p->slots_per_guest, p->slot_size);
}

int
hp_geometry_compute(const struct hp_params *p, struct hp_geometry *g, const char **why)
{
	int rc;

	if ((rc = params_check(p, 1, why)) != 0)
		return rc;
	sizes(p, g);
	g->chan_bytes = align64(g->chan_bytes);
	g->peer_table_offset = HP_HEADER_SIZE;
	g->ext_offset = align64(mad(g->peer_table_offset, p->max_guests, HP_PEER_ENTRY_SIZE));
	g->ring_region_offset = align64(mad(g->ext_offset, p->max_guests, HP_PEER_EXT_SIZE));
	g->chan_region_offset = mad(g->ring_region_offset, p->max_guests, g->ring_bytes);
	g->slot_region_offset = mad(g->chan_region_offset, p->max_guests, g->chan_bytes);
	/* r[shm.segment.slot-pools] r[shm.segment.host-slots]: the host's
	 * pool, then one per guest */
	g->total_size = mad(g->slot_region_offset, (uint64_t)p->max_guests + 1, g->pool_size);
	if (p->var.nclasses > 0 && (rc = hp_var_conf_check(&p->var, why)) != 0)
		return rc;
	if (g->total_size > HP_SEGMENT_MAX)
		return invalid(why, "the segment would be larger than 64 GiB");
	return 0;
}

uint64_t
hp_geometry_ring_offset(const struct hp_geometry *g, uint32_t peer_id)
{
	return g->ring_region_offset + (uint64_t)(peer_id - 1) * g->ring_bytes;
}

uint64_t
hp_geometry_chan_offset(const struct hp_geometry *g, uint32_t peer_id)
{
	return g->chan_region_offset + (uint64_t)(peer_id - 1) * g->chan_bytes;
}

uint64_t
hp_geometry_pool_offset(const struct hp_geometry *g, uint32_t peer_id)
{
	/* r[shm.segment.guest-slot-offset]: slot_region_offset + P * pool_size */
	return g->slot_region_offset + (uint64_t)peer_id * g->pool_size;
}

static uint64_t
magic_word(void)
{
	uint64_t w;

	memcpy(&w, HP_MAGIC, HP_MAGIC_LEN);
	return w;
}

struct hp_peer_entry *
hp_segment_peer(const struct hp_segment *seg, uint32_t peer_id)
{
	/* r[shm.topology.peer-id]: entry P - 1 is peer P */
	if (peer_id < 1 || peer_id > seg->params.max_guests)
		return NULL;
	return (struct hp_peer_entry *)(void *)(seg->base + seg->geo.peer_table_offset +
						(uint64_t)(peer_id - 1) * HP_PEER_ENTRY_SIZE);
}

int
hp_segment_memfd(const char *name, uint64_t size, int fixed, const char **why)
{
	unsigned int seals = F_SEAL_SHRINK | F_SEAL_SEAL | (fixed ? F_SEAL_GROW : 0);
	int fd, rc;

	/* No name in any filesystem. r[shm.file.permissions]: nothing
	 * another process can open unless handed the fd (MFD_CLOEXEC: only
	 * the guest it is meant for inherits it, spawn.c), whatever its
	 * mode; r[shm.file.cleanup]: nothing to leave behind, the memory
	 * goes with the last process that holds it, a hubd killed too */
	if ((fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0) {
		rc = -errno;
		if (why != NULL)
			*why = "memfd_create";
		return rc;
	}
	/* Sparse: memfd pages come from no mounted tmpfs (a small /dev/shm
	 * does not limit them) and are allocated as touched. Sealed against
	 * shrinking, so that no process given the fd can make a page vanish
	 * under the host's mapping (SIGBUS); holes punched read as zeros. */
	if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, seals) != 0) {
		rc = -errno;
		close(fd);
		if (why != NULL)
			*why = "cannot size or seal the memfd";
		return rc;
	}
	return fd;
}

int
hp_segment_create(struct hp_segment *seg, const struct hp_params *p, uint32_t peer_id,
		  uint32_t features, const char *name, const char **why)
{
	struct hp_header *h;
	struct hp_slot_pool pool;
	int fd, rc;
	void *base;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	if ((rc = hp_geometry_compute(p, &seg->geo, why)) != 0)
		return rc;
	if (peer_id > p->max_guests)
		return invalid(why, "peer id beyond max_guests");
	/* r[shm.file.create] 1-2: a fresh memfd reads zero everywhere
	 * (r[shm.ring.initialization]); its size is fixed */
	if ((fd = hp_segment_memfd(name, seg->geo.total_size, 1, why)) < 0)
		return fd;
	/* r[shm.file.mmap-posix] 3 */
	base = mmap(NULL, seg->geo.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		close(fd);
		if (why != NULL)
			*why = "cannot map the segment";
		return rc;
	}
	seg->base = base;
	seg->size = seg->geo.total_size;
	seg->fd = fd;
	seg->writable = 1;
	seg->params = *p;
	seg->host_features = HP_FEAT_WAITERS | (features & HP_FEAT_VARSLOT);
	/* 4: only what is not zero is written */
	h = hp_segment_header(seg);
	h->version = HP_VERSION;
	h->header_size = HP_HEADER_SIZE;
	h->total_size = seg->geo.total_size;
	h->max_payload_size = p->max_payload_size;
	h->initial_credit = p->initial_credit;
	h->max_guests = p->max_guests;
	h->ring_size = p->ring_size;
	h->peer_table_offset = seg->geo.peer_table_offset;
	h->slot_region_offset = seg->geo.slot_region_offset;
	h->slot_size = p->slot_size;
	h->slots_per_guest = p->slots_per_guest;
	h->max_channels = p->max_channels;
	h->heartbeat_interval = p->heartbeat_interval;
	h->host_features = seg->host_features;
	h->ext_offset = seg->geo.ext_offset;
	/* one guest's domain: its entry alone has areas; the others stay
	 * Empty with none, and their areas are never touched (no pages) */
	for (uint32_t id = 1; id <= p->max_guests; id++) {
		struct hp_peer_entry *e = hp_segment_peer(seg, id);

		if (peer_id != 0 && id != peer_id)
			continue;
		/* r[shm.segment.peer-table]: state Empty (0) already; the
		 * areas are fresh memory, published by the magic below */
		e->ring_offset = hp_geometry_ring_offset(&seg->geo, id);
		e->slot_pool_offset = hp_geometry_pool_offset(&seg->geo, id);
		e->channel_table_offset = hp_geometry_chan_offset(&seg->geo, id);
	}
	for (uint32_t id = 0; id <= p->max_guests; id++) {
		if (peer_id != 0 && id != 0 && id != peer_id)
			continue;
		hp_slot_pool_view(&pool, seg->base + hp_geometry_pool_offset(&seg->geo, id),
				  p->slots_per_guest, p->slot_size);
		hp_slot_pool_reset(&pool);
	}
	/* 5: the magic last; release: pairs with the acquire load of magic
	 * in hp_segment_validate, so whoever sees it sees all of the above */
	hp_store_release_u64(&h->magic, magic_word());
	return 0;
}

static int
corrupt(const char **why, const char *msg)
{
	if (why != NULL)
		*why = msg;
	return -EBADMSG;
}

/* An area of the file: [off, off + len). */
struct area {
	uint64_t	off;
	uint64_t	len;
};

/* Whether a lies inside size bytes, aligned to align. */
static int
inside(struct area a, uint64_t align, uint64_t size)
{
	return a.off % align == 0 && a.off <= size && a.len <= size - a.off;
}

static int
overlap(struct area a, struct area b)
{
	return a.off < b.off + b.len && b.off < a.off + a.len;
}

/* The areas the header locates (valid once hp_segment_validate passed). */
static struct area
header_area(void)
{
	return (struct area){ 0, HP_HEADER_SIZE };
}

static struct area
peer_table_area(const struct hp_params *p, const struct hp_geometry *g)
{
	return (struct area){ g->peer_table_offset, (uint64_t)p->max_guests * HP_PEER_ENTRY_SIZE };
}

/* r[shm.segment.host-slots] r[shm.segment.guest-slot-offset]: the host's
 * pool, then one per guest */
static struct area
slot_region_area(const struct hp_params *p, const struct hp_geometry *g)
{
	return (struct area){ g->slot_region_offset,
			      mad(0, (uint64_t)p->max_guests + 1, g->pool_size) };
}

static struct area
ext_area(const struct hp_params *p, const struct hp_geometry *g)
{
	return (struct area){ g->ext_offset, (uint64_t)p->max_guests * HP_PEER_EXT_SIZE };
}

int
hp_segment_validate(const uint8_t *base, uint64_t size, struct hp_params *p,
		    struct hp_geometry *g, const char **why)
{
	struct hp_header *h = (struct hp_header *)(uintptr_t)base;
	struct hp_params p_unused;
	struct hp_geometry g_unused;
	struct area pt, sr, ext;
	uint64_t magic;

	if (p == NULL)
		p = &p_unused;
	if (g == NULL)
		g = &g_unused;
	if (size < HP_HEADER_SIZE)
		return corrupt(why, "the file is smaller than a segment header");
	/* r[shm.segment.magic]; acquire: pairs with the creator's release
	 * store of magic in hp_segment_create, made after everything else */
	magic = hp_load_acquire_u64(&h->magic);
	if (magic == 0) {
		if (why != NULL)
			*why = "the segment is not initialised yet";
		return -EAGAIN;
	}
	if (magic != magic_word())
		return corrupt(why, "not a hub segment (wrong magic)");
	if (h->version != HP_VERSION) {
		if (why != NULL)
			*why = "unsupported segment version";
		return -EPROTONOSUPPORT;
	}
	/* r[shm.segment.header-size] */
	if (h->header_size != HP_HEADER_SIZE)
		return corrupt(why, "header_size is not 128");
	if (h->total_size != size)
		return corrupt(why, "total_size does not match the file size");
	p->max_guests = h->max_guests;
	p->ring_size = h->ring_size;
	p->slot_size = h->slot_size;
	p->slots_per_guest = h->slots_per_guest;
	p->max_channels = h->max_channels;
	p->initial_credit = h->initial_credit;
	p->max_payload_size = h->max_payload_size;
	p->heartbeat_interval = h->heartbeat_interval;
	/* r[shm.handshake.no-negotiation]: parameters we cannot work with */
	if (params_check(p, 0, why) != 0)
		return -EBADMSG;
	/* The header says where the shared tables are; whatever the host's
	 * order of regions, each must lie in the file, aligned for its
	 * atomics, clear of the others. Only the sizes are derived. */
	memset(g, 0, sizeof(*g));
	sizes(p, g);
	g->peer_table_offset = h->peer_table_offset;
	g->slot_region_offset = h->slot_region_offset;
	g->total_size = h->total_size;
	pt = peer_table_area(p, g);
	sr = slot_region_area(p, g);
	/* r[shm.segment.peer-table]: u64 atomics in every entry */
	if (!inside(pt, 8, size))
		return corrupt(why, "the peer table lies outside the file or is not 8-byte aligned");
	if (overlap(pt, header_area()))
		return corrupt(why, "the peer table overlaps the header");
	/* r[shm.slot.pool-layout]: u64 bitmap words */
	if (!inside(sr, 8, size))
		return corrupt(why, "the slot region lies outside the file or is not 8-byte aligned");
	if (overlap(sr, header_area()) || overlap(sr, pt))
		return corrupt(why, "the slot region overlaps the header or the peer table");
	/* Our extension table, only where the host announces it; a host
	 * that does not is served the plain spec way. */
	if ((h->host_features & HP_FEAT_WAITERS) != 0 && h->ext_offset != 0) {
		g->ext_offset = h->ext_offset;
		ext = ext_area(p, g);
		if (!inside(ext, HP_CACHE_LINE, size))
			return corrupt(why, "the extension table lies outside the file or is not 64-byte aligned");
		if (overlap(ext, header_area()) || overlap(ext, pt) || overlap(ext, sr))
			return corrupt(why, "the extension table overlaps the header, the peer table or the slot region");
	}
	return 0;
}

/* One peer entry's own areas, in entry order. */
enum { AREA_RINGS, AREA_POOL, AREA_CHANS, AREAS };

/* Why a peer entry is refused: [area][problem], then pairs of areas. */
enum { BAD_OUTSIDE, BAD_ALIGN, BAD_HEADER, BAD_PEER_TABLE, BAD_SLOT_REGION, BAD_EXT, BADS };
static const char *const bad_area[AREAS][BADS] = {
	{ "peer entry: its rings lie outside the file",
	  "peer entry: its rings are not 64-byte aligned",
	  "peer entry: its rings overlap the header",
	  "peer entry: its rings overlap the peer table",
	  "peer entry: its rings overlap the slot region",
	  "peer entry: its rings overlap the extension table" },
	{ "peer entry: its slot pool lies outside the file",
	  "peer entry: its slot pool is not 8-byte aligned",
	  "peer entry: its slot pool overlaps the header",
	  "peer entry: its slot pool overlaps the peer table",
	  "peer entry: its slot pool overlaps the host's slot pool",
	  "peer entry: its slot pool overlaps the extension table" },
	{ "peer entry: its channel table lies outside the file",
	  "peer entry: its channel table is not 4-byte aligned",
	  "peer entry: its channel table overlaps the header",
	  "peer entry: its channel table overlaps the peer table",
	  "peer entry: its channel table overlaps the slot region",
	  "peer entry: its channel table overlaps the extension table" },
};
static const char *const bad_pair[AREAS] = {
	"peer entry: its rings and its slot pool overlap",
	"peer entry: its rings and its channel table overlap",
	"peer entry: its slot pool and its channel table overlap",
};

/* Each area inside the file, aligned as its atomics need
 * (r[shm.ring.alignment]: rings 64; the pool's u64 bitmap 8; the channel
 * table's u32s 4), clear of the header, the peer table and the extension
 * table and of each other. A guest's pool lies in the slot region
 * (r[shm.segment.guest-slot-offset]) but must stay clear of the host's;
 * rings and channel tables may lie anywhere else. */
int
hp_segment_check_areas(const struct hp_segment *seg, uint64_t ring_offset,
		       uint64_t slot_pool_offset, uint64_t channel_table_offset,
		       const char **why)
{
	const struct hp_params *p = &seg->params;
	const struct hp_geometry *g = &seg->geo;
	uint64_t size = seg->size;
	struct area out[AREAS];
	static const uint64_t align[AREAS] = { HP_CACHE_LINE, 8, 4 };
	struct area host_pool = { g->slot_region_offset, g->pool_size };
	struct area sr = slot_region_area(p, g);

	out[AREA_RINGS] = (struct area){ ring_offset, g->ring_bytes };
	out[AREA_POOL] = (struct area){ slot_pool_offset, g->pool_size };
	out[AREA_CHANS] = (struct area){ channel_table_offset, g->chan_bytes };
	for (int i = 0; i < AREAS; i++) {
		struct area a = out[i];
		int bad = -1;

		if (!inside(a, 1, size))
			bad = BAD_OUTSIDE;
		else if (a.off % align[i] != 0)
			bad = BAD_ALIGN;
		else if (overlap(a, header_area()))
			bad = BAD_HEADER;
		else if (overlap(a, peer_table_area(p, g)))
			bad = BAD_PEER_TABLE;
		else if (overlap(a, i == AREA_POOL ? host_pool : sr))
			bad = BAD_SLOT_REGION;
		else if (g->ext_offset != 0 && overlap(a, ext_area(p, g)))
			bad = BAD_EXT;
		if (bad >= 0)
			return corrupt(why, bad_area[i][bad]);
	}
	if (overlap(out[AREA_RINGS], out[AREA_POOL]))
		return corrupt(why, bad_pair[0]);
	if (overlap(out[AREA_RINGS], out[AREA_CHANS]))
		return corrupt(why, bad_pair[1]);
	if (overlap(out[AREA_POOL], out[AREA_CHANS]))
		return corrupt(why, bad_pair[2]);
	return 0;
}

int
hp_segment_attach(struct hp_segment *seg, const char *path, int flags, const char **why)
{
	int ro = (flags & HP_ATTACH_RDONLY) != 0, fd, rc;
	struct stat st;
	void *base;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	/* r[shm.file.attach] 1: O_NONBLOCK so that a FIFO (or a device)
	 * given by mistake cannot block the open; only a regular file passes
	 * fstat, and for one O_NONBLOCK changes nothing */
	if ((fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK)) < 0) {
		rc = -errno;
		if (why != NULL)
			*why = "cannot open the segment file";
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return corrupt(why, "the segment is not a regular file");
	}
	if ((uint64_t)st.st_size < HP_HEADER_SIZE || (uint64_t)st.st_size > HP_SEGMENT_MAX) {
		close(fd);
		if (st.st_size == 0) {
			if (why != NULL)
				*why = "the segment is empty (being created?)";
			return -EAGAIN;
		}
		return corrupt(why, "the segment file has an impossible size");
	}
	/* 2: r[shm.file.mmap-posix] */
	base = mmap(NULL, (size_t)st.st_size, ro ? PROT_READ : PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		close(fd);
		if (why != NULL)
			*why = "cannot map the segment";
		return rc;
	}
	seg->base = base;
	seg->size = (uint64_t)st.st_size;
	seg->fd = fd;
	seg->writable = !ro;
	/* 3-4: validate, read the configuration */
	if ((rc = hp_segment_validate(seg->base, seg->size, &seg->params, &seg->geo, why)) != 0) {
		hp_segment_close(seg);
		return rc;
	}
	/* waiter words need the table they live in */
	if (seg->geo.ext_offset != 0)
		seg->host_features |= hp_segment_header(seg)->host_features & HP_FEAT_WAITERS;
	return 0;
}

int
hp_segment_attach_pool(struct hp_segment *seg, const char *path, uint32_t self,
		       const char **why)
{
	struct stat st;
	void *base;
	int fd, rc;

	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK)) < 0) {
		rc = -errno;
		if (why != NULL)
			*why = "cannot open the shared pool";
		return rc;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < HP_VAR_EXTENT_ALIGN ||
	    (uint64_t)st.st_size > HP_SEGMENT_MAX) {
		close(fd);
		return corrupt(why, "the shared pool is not a regular file of a possible size");
	}
	/* the region and the extents there are now; later ones are mapped
	 * as they appear (hp_var_attach) */
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		close(fd);
		if (why != NULL)
			*why = "cannot map the shared pool";
		return rc;
	}
	rc = hp_var_attach(&seg->var, base, (uint64_t)st.st_size, fd, 1, 0,
			   seg->params.max_guests, self, why);
	if (rc != 0) {
		munmap(base, (size_t)st.st_size);
		close(fd);
		return rc;
	}
	seg->var_map = base;
	seg->var_map_size = (uint64_t)st.st_size;
	seg->host_features |= HP_FEAT_VARSLOT;
	return 0;
}

void
hp_segment_close(struct hp_segment *seg)
{
	hp_var_close(&seg->var);
	if (seg->var_map != NULL) {
		munmap(seg->var_map, seg->var_map_size);
		close(seg->var.fd);
		seg->var_map = NULL;
	}
	if (seg->base != NULL)
		munmap(seg->base, seg->size);
	if (seg->fd >= 0)
		close(seg->fd);
	seg->base = NULL;
	seg->fd = -1;
}

void
hp_host_goodbye_say(const struct hp_segment *seg)
{
	hp_store_relaxed_u32(&hp_segment_header(seg)->host_goodbye, 1);
}

int
hp_host_goodbye_said(const struct hp_segment *seg)
{
	return hp_load_relaxed_u32(&hp_segment_header(seg)->host_goodbye) != 0;
}
