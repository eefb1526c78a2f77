/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect: each guest's domain and each zone's pool, read-only,
 * with their invariants checked: those of a live hub (their fds from
 * hubd, domains.c), or files (what hubctl dump wrote, or any segment the
 * spec allows). Part of hubctl (hubctl.h), not of hubd. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "daemon/poolfig.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/slot.h"
#include "proto/varpool_host.h"

static const char *const peer_states[] = { "empty", "attached", "goodbye", "reserved" };

/* What inspect found, for the answer: each domain's object, each pool's,
 * and every problem named with the domain or pool it is in. */
struct found {
	json_object	*domains, *pools, *problems;
};

/* One broken invariant into a domain's or pool's own list. */
static void __attribute__((format(printf, 2, 3)))
problem(json_object *problems, const char *fmt, ...)
{
	char m[224];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_object_array_add(problems, json_object_new_string(m));
}

/* o's problems into the answer's, each after prefix ("guest echo"). */
static void
found_add(struct found *f, json_object *list, json_object *o, const char *prefix)
{
	json_object *ps = js_get(o, "problems");

	json_object_array_add(list, o);
	for (size_t i = 0; i < json_object_array_length(ps); i++)
		problem(f->problems, "%s: %s", prefix,
			json_object_get_string(json_object_array_get_idx(ps, i)));
}

/* One area of a file, as the answer's "areas" lists them. */
static void
add_area(json_object *areas, const char *name, int peer, uint64_t off, uint64_t len)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "area", json_object_new_string(name));
	if (peer > 0)
		json_object_object_add(a, "peer_id", json_object_new_int(peer));
	json_object_object_add(a, "offset", json_object_new_uint64(off));
	json_object_object_add(a, "size", json_object_new_uint64(len));
	json_object_array_add(areas, a);
}

static int
by_offset(const void *a, const void *b)
{
	uint64_t x = json_object_get_uint64(js_get(*(json_object *const *)a, "offset"));
	uint64_t y = json_object_get_uint64(js_get(*(json_object *const *)b, "offset"));

	return x < y ? -1 : x > y;
}

/* -- a pool ------------------------------------------------------------- */

static void
add_problem(void *arg, const char *text)
{
	problem(arg, "%s", text);
}

/* validate()'s problems into problems. Who is alive is not known here:
 * any peer id counts as a live owner. A live pool changes meanwhile:
 * with twice set, a problem counts only when a second pass says it
 * again, as in hubd's pool --validate. */
static void
pool_problems(struct hp_varpool *vp, int twice, json_object *problems)
{
	if (hp_var_validate_twice(vp, twice, NULL, NULL, add_problem, problems) < 0)
		problem(problems, "not checked: out of memory");
}

/* A pool, read-only: its areas, its figures per class and validate()'s
 * problems. */
static json_object *
inspect_pool(struct hp_varpool *vp, const char *name, const char *file, int live)
{
	json_object *o = json_object_new_object(), *classes = json_object_new_array();
	json_object *areas = json_object_new_array(), *problems = json_object_new_array();
	uint64_t end = vp->offset + hp_var_region_size(vp->nclasses, vp->max_guests);

	json_object_object_add(o, "name", json_object_new_string(name));
	if (file != NULL)
		json_object_object_add(o, "file", json_object_new_string(file));
	add_area(areas, "shared pool headers", 0, vp->offset, end - vp->offset);
	for (uint32_t c = 0; c < vp->nclasses; c++) {
		json_object *e = pool_class_json(vp, c);
		uint64_t extents = json_object_get_uint64(json_object_object_get(e, "extents"));

		for (uint32_t x = 0; x < extents && x < vp->c[c].mapped; x++) {
			uint64_t off = hp_load_relaxed_u64(&vp->cls[c].extent_offsets[x]);
			char area[48];

			snprintf(area, sizeof(area), "pool class %u extent %u", c, x);
			add_area(areas, area, 0, off, vp->c[c].extent_bytes);
			if (off + vp->c[c].extent_bytes > end)
				end = off + vp->c[c].extent_bytes;
		}
		json_object_array_add(classes, e);
	}
	json_object_array_sort(areas, by_offset);
	pool_problems(vp, live, problems);
	json_object_object_add(o, "bytes", json_object_new_uint64(end - vp->offset));
	json_object_object_add(o, "max_extents", json_object_new_int((int)vp->max_extents));
	json_object_object_add(o, "max_guests", json_object_new_int((int)vp->max_guests));
	json_object_object_add(o, "classes", classes);
	json_object_object_add(o, "areas", areas);
	json_object_object_add(o, "problems", problems);
	return o;
}

/* A pool's file (a zone's memfd, or a dump's copy), mapped read-only
 * and its headers checked; its owner ids run to max_guests (hubd's: not
 * in the file). */
struct pool_map {
	struct hp_varpool	vp;
	void			*base;
	uint64_t		size;
	int			fd;
};

static int
pool_open(struct pool_map *pm, const char *path, uint32_t max_guests, const char **why)
{
	struct stat st;
	int rc;

	pm->base = NULL;
	if ((pm->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		*why = "cannot open it";
		return -errno;
	}
	if (fstat(pm->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		rc = -EBADMSG;
		goto fail;
	}
	if ((uint64_t)st.st_size < HP_VAR_EXTENT_ALIGN || (uint64_t)st.st_size > HP_SEGMENT_MAX) {
		*why = "not a pool file: too short or too long";
		rc = -EBADMSG;
		goto fail;
	}
	pm->size = (uint64_t)st.st_size;
	pm->base = mmap(NULL, (size_t)pm->size, PROT_READ, MAP_SHARED, pm->fd, 0);
	if (pm->base == MAP_FAILED) {
		pm->base = NULL;
		*why = "cannot map it";
		rc = -errno;
		goto fail;
	}
	/* extents published after this fstat are mapped read-only on their own */
	if ((rc = hp_var_attach(&pm->vp, pm->base, pm->size, pm->fd, 0, 0, max_guests, 0,
				why)) != 0)
		goto fail;
	return 0;
fail:
	if (pm->base != NULL)
		munmap(pm->base, (size_t)pm->size);
	close(pm->fd);
	return rc;
}

static void
pool_close(struct pool_map *pm)
{
	hp_var_close(&pm->vp);
	munmap(pm->base, (size_t)pm->size);
	close(pm->fd);
}

/* -- a domain ----------------------------------------------------------- */

/* Whether the entry has no areas at all: in a guest's domain every other
 * guest's entry is so (Empty, its areas never made). */
static int
no_areas(const struct hp_peer_snap *e)
{
	return e->ring_offset == 0 && e->slot_pool_offset == 0 && e->channel_table_offset == 0;
}

/* Whether the segment is laid out as hubd lays out its own: then it was
 * most likely made by hubd; any other layout the spec allows reads the
 * same. Entries without areas (the other guests' in a domain) say nothing. */
static int
hubd_layout(const struct hp_segment *seg)
{
	struct hp_geometry mine;

	if (hp_geometry_compute(&seg->params, &mine, NULL) != 0 ||
	    mine.total_size != hp_segment_header(seg)->total_size ||
	    mine.peer_table_offset != seg->geo.peer_table_offset ||
	    mine.slot_region_offset != seg->geo.slot_region_offset)
		return 0;
	for (uint32_t id = 1; id <= seg->params.max_guests; id++) {
		struct hp_peer_snap e;

		hp_peer_snapshot(hp_segment_peer(seg, id), &e);
		if (no_areas(&e))
			continue;
		if (e.ring_offset != hp_geometry_ring_offset(&mine, id) ||
		    e.slot_pool_offset != hp_geometry_pool_offset(&mine, id) ||
		    e.channel_table_offset != hp_geometry_chan_offset(&mine, id))
			return 0;
	}
	return 1;
}

/* The peer whose domain seg is: the one entry with areas; 0 when there
 * are more (a whole hub's segment, as the spec draws it) or none. */
static uint32_t
domain_owner(const struct hp_segment *seg)
{
	uint32_t own = 0, n = 0;

	for (uint32_t id = 1; id <= seg->params.max_guests; id++) {
		struct hp_peer_snap e;

		hp_peer_snapshot(hp_segment_peer(seg, id), &e);
		if (!no_areas(&e)) {
			own = id;
			n++;
		}
	}
	return n == 1 ? own : 0;
}

/* One peer entry: its words, and the invariants of it and of its areas;
 * NULL for an entry never used that has no areas (every other guest's in
 * a domain). */
static json_object *
inspect_peer(struct hp_segment *seg, uint32_t id, uint64_t now, json_object *areas,
	     json_object *problems)
{
	const struct hp_params *p = &seg->params;
	const struct hp_geometry *geo = &seg->geo;
	struct hp_slot_pool pool;
	struct hp_peer_snap e;
	struct hp_peer_view v;
	const char *why = NULL;
	json_object *j;
	uint32_t open = 0, freeslots = 0, idx[4];
	int usable;

	hp_peer_snapshot(hp_segment_peer(seg, id), &e);
	if (no_areas(&e) && e.state == HP_PEER_EMPTY && e.epoch == 0 && e.g2h_head == 0 &&
	    e.g2h_tail == 0 && e.h2g_head == 0 && e.h2g_tail == 0)
		return NULL;
	idx[0] = e.g2h_head;
	idx[1] = e.g2h_tail;
	idx[2] = e.h2g_head;
	idx[3] = e.h2g_tail;
	if (e.state > HP_PEER_RESERVED)
		problem(problems, "peer %u: state %u is not a state", id, e.state);
	for (int k = 0; k < 4; k++)
		if (idx[k] >= p->ring_size)
			problem(problems, "peer %u: ring index %u out of range", id, idx[k]);
	usable = hp_peer_view_guest(seg, id, &v, &why) == 0;
	if (!usable && !(no_areas(&e) && e.state == HP_PEER_EMPTY)) {
		problem(problems, "peer %u: %s", id, why);
	} else if (usable) {
		add_area(areas, "rings", (int)id, (uint64_t)((uint8_t *)v.g2h - seg->base),
			 geo->ring_bytes);
		add_area(areas, "slot pool", (int)id, (uint64_t)(v.pool - seg->base), geo->pool_size);
		add_area(areas, "channel table", (int)id, (uint64_t)((uint8_t *)v.chans - seg->base),
			 geo->chan_bytes);
		hp_slot_pool_view(&pool, v.pool, p->slots_per_guest, p->slot_size);
		freeslots = hp_slot_count_free(&pool);
		/* r[shm.slot.pool-layout]: no bits past the last slot */
		if (p->slots_per_guest % 64 != 0 &&
		    (hp_load_relaxed_u64(&pool.bitmap[pool.nwords - 1]) >>
		     (p->slots_per_guest % 64)) != 0)
			problem(problems, "peer %u: bitmap bits set past the last slot", id);
		for (uint32_t c = 0; c < p->max_channels; c++) {
			uint32_t cs = hp_load_relaxed_u32(&v.chans[c].state);

			open += cs == HP_CHAN_ACTIVE;
			if (cs > HP_CHAN_CLOSED || (c == 0 && cs != HP_CHAN_FREE))
				problem(problems, "peer %u: channel %u in state %u", id, c, cs);
		}
		/* r[shm.crash.recovery]: an Empty entry was left clean */
		if (e.state == HP_PEER_EMPTY && (idx[0] != idx[1] || idx[2] != idx[3] ||
						 freeslots != p->slots_per_guest || open != 0))
			problem(problems, "peer %u: Empty but not recovered (rings, slots or "
				"channels in use)", id);
	}
	j = json_object_new_object();
	json_object_object_add(j, "peer_id", json_object_new_int((int)id));
	json_object_object_add(j, "state", json_object_new_string(
		e.state <= HP_PEER_RESERVED ? peer_states[e.state] : "?"));
	json_object_object_add(j, "epoch", json_object_new_int64(e.epoch));
	json_object_object_add(j, "g2h_head", json_object_new_int64(idx[0]));
	json_object_object_add(j, "g2h_tail", json_object_new_int64(idx[1]));
	json_object_object_add(j, "h2g_head", json_object_new_int64(idx[2]));
	json_object_object_add(j, "h2g_tail", json_object_new_int64(idx[3]));
	json_object_object_add(j, "slots_free", usable ? json_object_new_int((int)freeslots) : NULL);
	json_object_object_add(j, "channels_open", usable ? json_object_new_int((int)open) : NULL);
	json_object_object_add(j, "heartbeat_age_ms",
			       e.last_heartbeat == 0 || e.last_heartbeat > now ? NULL :
			       json_fixed((now - e.last_heartbeat) / 1000, 3));
	return j;
}

/* A segment read the way a guest reads it (hp_segment_validate, then
 * each PeerEntry), so any segment the spec allows, not only hubd's: a
 * guest's domain (its own entry alone has areas) or a whole hub's. own:
 * the peer whose domain it is (0: find out). */
static json_object *
inspect_domain(struct hp_segment *seg, const char *name, uint32_t own, const char *zone,
	       const char *file)
{
	const struct hp_params *p = &seg->params;
	const struct hp_geometry *geo = &seg->geo;
	struct hp_header *h = hp_segment_header(seg);
	json_object *o = json_object_new_object(), *peers = json_object_new_array();
	json_object *problems = json_object_new_array(), *areas = json_object_new_array();
	struct hp_slot_pool pool;
	uint64_t now = hp_now_ns();

	if (own == 0)
		own = domain_owner(seg);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "peer_id", own != 0 ? json_object_new_int((int)own) : NULL);
	if (zone != NULL)
		json_object_object_add(o, "zone", json_object_new_string(zone));
	if (file != NULL)
		json_object_object_add(o, "file", json_object_new_string(file));
	json_object_object_add(o, "size", json_object_new_uint64(seg->size));
	json_object_object_add(o, "version", json_object_new_int((int)h->version));
	json_object_object_add(o, "layout", json_object_new_string(hubd_layout(seg) ? "hubd" : "other"));
	json_object_object_add(o, "host_features", json_object_new_int64(h->host_features));
	json_object_object_add(o, "max_guests", json_object_new_int((int)p->max_guests));
	json_object_object_add(o, "ring_size", json_object_new_int((int)p->ring_size));
	json_object_object_add(o, "slot_size", json_object_new_int64(p->slot_size));
	json_object_object_add(o, "slots_per_guest", json_object_new_int((int)p->slots_per_guest));
	json_object_object_add(o, "max_channels", json_object_new_int((int)p->max_channels));
	json_object_object_add(o, "max_payload_size", json_object_new_int64(p->max_payload_size));
	json_object_object_add(o, "host_goodbye", json_object_new_int(
		(int)hp_load_relaxed_u32(&h->host_goodbye)));
	add_area(areas, "header", 0, 0, HP_HEADER_SIZE);
	add_area(areas, "peer table", 0, geo->peer_table_offset,
		 (uint64_t)p->max_guests * HP_PEER_ENTRY_SIZE);
	if (geo->ext_offset != 0)
		add_area(areas, "extension table", 0, geo->ext_offset,
			 (uint64_t)p->max_guests * HP_PEER_EXT_SIZE);
	add_area(areas, "host slot pool", 0, geo->slot_region_offset, geo->pool_size);
	hp_slot_pool_view(&pool, seg->base + hp_geometry_pool_offset(geo, 0),
			  p->slots_per_guest, p->slot_size);
	json_object_object_add(o, "host_slots_free", json_object_new_int(
		(int)hp_slot_count_free(&pool)));
	for (uint32_t id = 1; id <= p->max_guests; id++) {
		json_object *j = inspect_peer(seg, id, now, areas, problems);

		if (j != NULL)
			json_object_array_add(peers, j);
	}
	json_object_array_sort(areas, by_offset);
	json_object_object_add(o, "areas", areas);
	json_object_object_add(o, "peers", peers);
	json_object_object_add(o, "problems", problems);
	return o;
}

/* "guest NAME" for a domain, "segment NAME" for a whole hub's. */
static const char *
domain_label(char *buf, size_t len, json_object *o)
{
	snprintf(buf, len, "%s %s", js_get(o, "peer_id") != NULL ? "guest" : "segment",
		 js_text(o, "name"));
	return buf;
}

/* -- live: the fds hubd passes ----------------------------------------- */

static void
inspect_live(struct ctl *ctl, struct found *f, json_object *o)
{
	struct domains d;
	char path[40], label[96];

	domains_fetch(ctl, &d);
	json_object_object_add(o, "control", json_object_new_string(ctl->sock));
	json_object_object_add(o, "max_guests", json_object_new_int((int)d.max_guests));
	for (uint32_t i = 0; i < d.nfds; i++) {
		json_object *e = json_object_array_get_idx(d.list, i), *j;
		const char *name = js_text(e, "name"), *why = NULL;
		int rc;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", d.fds[i]);
		if (strcmp(js_text(e, "kind"), "pool") == 0) {
			struct pool_map pm;

			if ((rc = pool_open(&pm, path, d.max_guests, &why)) != 0) {
				snprintf(label, sizeof(label), "pool %s", name);
				domains_free(&d);
				errx(2, "%s: %s (%s)", label, why, strerror(-rc));
			}
			j = inspect_pool(&pm.vp, name, NULL, 1);
			pool_close(&pm);
			snprintf(label, sizeof(label), "pool %s", name);
			found_add(f, f->pools, j, label);
		} else {
			struct hp_segment seg;

			if ((rc = hp_segment_attach(&seg, path, HP_ATTACH_RDONLY, &why)) != 0) {
				snprintf(label, sizeof(label), "guest %s", name);
				domains_free(&d);
				errx(2, "%s: %s", label, why ? why : strerror(-rc));
			}
			j = inspect_domain(&seg, name, (uint32_t)js_u64(e, "peer"),
					   js_get(e, "zone") ? js_text(e, "zone") : NULL, NULL);
			hp_segment_close(&seg);
			found_add(f, f->domains, j, domain_label(label, sizeof(label), j));
		}
		/* mapped or copied: hubctl holds none of the hub's fds longer */
		close(d.fds[i]);
		d.fds[i] = -1;
	}
	domains_free(&d);
}

/* -- files: a dump's, or any segment ------------------------------------ */

/* The file's name without its directory and without suffix. */
static void
file_label(char *buf, size_t len, const char *path, const char *suffix)
{
	char copy[4096];
	const char *base;
	size_t n, s = strlen(suffix);

	snprintf(copy, sizeof(copy), "%s", path);
	base = basename(copy);
	n = strlen(base);
	if (n > s && strcmp(base + n - s, suffix) == 0)
		n -= s;
	snprintf(buf, len, "%.*s", (int)n, base);
}

/* max_guests as hubctl dump's domains.json beside path says; 0 when
 * there is none; exit 2 when it is there but says no such thing. */
static uint32_t
dump_max_guests(const char *path)
{
	static char buf[1 << 20];
	char copy[4096], js[4200];
	json_object *a;
	int64_t mg;
	ssize_t n;
	int fd;

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(js, sizeof(js), "%s/domains.json", dirname(copy));
	if ((fd = open(js, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	a = json_tokener_parse(buf);
	mg = json_object_get_int64(js_get(a, "max_guests"));
	if (!json_object_is_type(js_get(a, "max_guests"), json_type_int) || mg < 1 || mg > 255)
		errx(2, "%s: not hubctl dump's answer (no max_guests from 1 to 255)", js);
	json_object_put(a);
	return (uint32_t)mg;
}

/* What path holds: 1 a segment (its magic first), 0 anything else, to be
 * read as a pool; exit 2 when it is no regular file. */
static int
is_segment(const char *path)
{
	uint8_t magic[HP_MAGIC_LEN];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), seg;

	if (fd < 0)
		err(2, "%s", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errx(2, "%s: not a regular file (a domain, pool or segment file is)", path);
	}
	seg = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	      memcmp(magic, HP_MAGIC, HP_MAGIC_LEN) == 0;
	close(fd);
	return seg;
}

/* Whether path is a dump's domains.json: read for max_guests, not a
 * file to inspect (so that a shell's glob of a dump's directory reads). */
static int
is_answer(const char *path)
{
	size_t n = strlen(path);

	return strcmp(path, "domains.json") == 0 ||
	       (n > 13 && strcmp(path + n - 13, "/domains.json") == 0);
}

static void
inspect_files(int argc, char **argv, struct found *f)
{
	uint32_t max_guests = 0;
	char name[80], label[96];
	int n = 0;

	/* the answers out */
	for (int i = 0; i < argc; i++)
		if (!is_answer(argv[i]))
			argv[n++] = argv[i];
	if ((argc = n) == 0)
		errx(2, "inspect: no domain, pool or segment file among the files");

	/* the segments first: a pool file takes their max_guests when no
	 * domains.json is beside it */
	for (int i = 0; i < argc; i++) {
		struct hp_segment seg;
		const char *why = NULL;
		json_object *j;
		int rc;

		if (!is_segment(argv[i]))
			continue;
		if ((rc = hp_segment_attach(&seg, argv[i], HP_ATTACH_RDONLY, &why)) != 0)
			errx(2, "%s: %s", argv[i], why ? why : strerror(-rc));
		if (max_guests == 0)
			max_guests = seg.params.max_guests;
		file_label(name, sizeof(name), argv[i], ".domain");
		j = inspect_domain(&seg, name, 0, NULL, argv[i]);
		hp_segment_close(&seg);
		found_add(f, f->domains, j, domain_label(label, sizeof(label), j));
	}
	for (int i = 0; i < argc; i++) {
		struct pool_map pm;
		uint32_t mg;
		const char *why = NULL;
		int rc;

		if (is_segment(argv[i]))
			continue;
		if ((mg = dump_max_guests(argv[i])) == 0 && (mg = max_guests) == 0) {
			/* one guest at most reads the fewest bytes: is it a pool at all? */
			if (pool_open(&pm, argv[i], 1, &why) != 0)
				errx(2, "%s: neither a domain (no segment magic) nor a pool: %s",
				     argv[i], why);
			pool_close(&pm);
			errx(2, "%s: no segment magic, so a pool file; reading one needs its hub's "
			     "max_guests: hubctl dump's domains.json beside it, or a domain file "
			     "of the same hub among the files", argv[i]);
		}
		if ((rc = pool_open(&pm, argv[i], mg, &why)) != 0)
			errx(2, "%s: neither a domain (no segment magic) nor a pool: %s", argv[i],
			     why);
		file_label(name, sizeof(name), argv[i], ".pool");
		snprintf(label, sizeof(label), "pool %s", name);
		found_add(f, f->pools, inspect_pool(&pm.vp, name, argv[i], 0), label);
		pool_close(&pm);
	}
}

/* -- printing ----------------------------------------------------------- */

static void
print_areas(json_object *areas)
{
	char size[24];

	/* where everything is, in file order */
	printf("%-18s %-16s %s\n", "OFFSET", "SIZE", "AREA");
	for (size_t i = 0; i < json_object_array_length(areas); i++) {
		json_object *a = json_object_array_get_idx(areas, i), *peer = js_get(a, "peer_id");
		char name[48];

		if (peer != NULL)
			snprintf(name, sizeof(name), "peer %d %s", json_object_get_int(peer),
				 js_text(a, "area"));
		else
			snprintf(name, sizeof(name), "%s", js_text(a, "area"));
		printf("0x%-16" PRIx64 " %-16s %s\n", js_u64(a, "offset"),
		       size_text(size, sizeof(size), js_u64(a, "size")), name);
	}
}

static void
print_domain(json_object *o)
{
	json_object *peers = js_get(o, "peers");
	int64_t feat = json_object_get_int64(js_get(o, "host_features"));
	char size[24], label[96], where[160] = "";

	if (js_get(o, "peer_id") != NULL)
		snprintf(where, sizeof(where), "peer %d%s%s%s%s", json_object_get_int(js_get(o, "peer_id")),
			 js_get(o, "zone") ? ", zone " : "", js_text(o, "zone"),
			 js_get(o, "file") ? ", " : "", js_text(o, "file"));
	else
		snprintf(where, sizeof(where), "%s", js_text(o, "file"));
	printf("%s (%s): %s, version %d, %s layout, %d guests at most, ring %d, "
	       "%d slots of %" PRId64 " bytes, %d channels, host_goodbye %d\n",
	       domain_label(label, sizeof(label), o), where,
	       size_text(size, sizeof(size), js_u64(o, "size")),
	       json_object_get_int(js_get(o, "version")), js_text(o, "layout"),
	       json_object_get_int(js_get(o, "max_guests")),
	       json_object_get_int(js_get(o, "ring_size")), json_object_get_int(js_get(o, "slots_per_guest")),
	       json_object_get_int64(js_get(o, "slot_size")), json_object_get_int(js_get(o, "max_channels")),
	       json_object_get_int(js_get(o, "host_goodbye")));
	printf("host pool: %d slots free; extensions: %s%s%s\n",
	       json_object_get_int(js_get(o, "host_slots_free")),
	       feat & HP_FEAT_WAITERS ? "waiter words" : "",
	       (feat & HP_FEAT_ALL) == HP_FEAT_ALL ? ", " : "",
	       feat & HP_FEAT_VARSLOT ? "shared pool" : (feat & HP_FEAT_ALL) == 0 ? "none" : "");
	print_areas(js_get(o, "areas"));
	printf("%4s %-9s %6s %11s %11s %6s %5s %10s\n", "PEER", "STATE", "EPOCH", "G2H H/T",
	       "H2G H/T", "FREE", "CHANS", "HB-AGE");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *j = json_object_array_get_idx(peers, i);
		char g2h[24], h2g[24], hb[24] = "-";

		if (strcmp(js_text(j, "state"), "empty") == 0 &&
		    json_object_get_int64(js_get(j, "epoch")) == 0)
			continue;	/* never used */
		snprintf(g2h, sizeof(g2h), "%" PRId64 "/%" PRId64,
			 json_object_get_int64(js_get(j, "g2h_head")),
			 json_object_get_int64(js_get(j, "g2h_tail")));
		snprintf(h2g, sizeof(h2g), "%" PRId64 "/%" PRId64,
			 json_object_get_int64(js_get(j, "h2g_head")),
			 json_object_get_int64(js_get(j, "h2g_tail")));
		if (js_get(j, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), js_ns(js_get(j, "heartbeat_age_ms"), HP_NS_PER_MS));
		printf("%4d %-9s %6" PRId64 " %11s %11s %6d %5d %10s\n",
		       json_object_get_int(js_get(j, "peer_id")), js_text(j, "state"),
		       json_object_get_int64(js_get(j, "epoch")), g2h, h2g,
		       json_object_get_int(js_get(j, "slots_free")),
		       json_object_get_int(js_get(j, "channels_open")), hb);
	}
}

static void
print_pool(json_object *o)
{
	json_object *cls = js_get(o, "classes");
	char size[24];

	printf("pool %s%s%s%s: %s, %d extents per class at most\n", js_text(o, "name"),
	       js_get(o, "file") ? " (" : "", js_text(o, "file"), js_get(o, "file") ? ")" : "",
	       size_text(size, sizeof(size), js_u64(o, "bytes")),
	       json_object_get_int(js_get(o, "max_extents")));
	print_areas(js_get(o, "areas"));
	printf("%5s %6s %7s %7s %6s %6s %6s %6s %10s %10s %8s\n", "CLASS", "SIZE",
	       "PER-EXT", "EXTENTS", "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS", "FREES",
	       "ERRORS");
	for (size_t i = 0; i < json_object_array_length(cls); i++) {
		json_object *c = json_object_array_get_idx(cls, i);

		printf("%5d %6s %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64
		       " %6" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 "%s\n",
		       json_object_get_int(js_get(c, "class")),
		       size_text(size, sizeof(size), js_u64(c, "slot_size")),
		       js_u64(c, "slots_per_extent"), js_u64(c, "extents"), js_u64(c, "slots"),
		       js_u64(c, "free"), js_u64(c, "in_use"), js_u64(c, "high_water"), js_u64(c, "allocs"),
		       js_u64(c, "frees"), js_u64(c, "errors"),
		       json_object_get_boolean(js_get(c, "corrupt")) ? " (marked corrupt)" : "");
	}
}

/* hubctl inspect [FILE...]: without files, every domain and pool of the
 * live hub (their fds from hubd); with, those files. Exit 0 when every
 * invariant holds, 1 when one does not, 2 when there is nothing to read. */
int
hubctl_inspect(struct ctl *ctl, int argc, char **argv)
{
	json_object *o = json_object_new_object();
	struct found f = { json_object_new_array(), json_object_new_array(),
			   json_object_new_array() };
	int rc;

	if (argc == 0)
		inspect_live(ctl, &f, o);
	else
		inspect_files(argc, argv, &f);
	json_object_object_add(o, "domains", f.domains);
	json_object_object_add(o, "pools", f.pools);
	json_object_object_add(o, "problems", f.problems);
	rc = json_object_array_length(f.problems) == 0 ? 0 : 1;
	json_object_object_add(o, "valid", json_object_new_boolean(rc == 0));
	if (ctl->json) {
		js_print(o);
		return rc;
	}
	if (argc == 0)
		printf("hub at %s: %zu guests' domains, %zu pools, %d guests at most\n",
		       js_text(o, "control"), json_object_array_length(f.domains),
		       json_object_array_length(f.pools), json_object_get_int(js_get(o, "max_guests")));
	for (size_t i = 0; i < json_object_array_length(f.domains); i++) {
		if (i > 0 || argc == 0)
			printf("\n");
		print_domain(json_object_array_get_idx(f.domains, i));
	}
	for (size_t i = 0; i < json_object_array_length(f.pools); i++) {
		printf("\n");
		print_pool(json_object_array_get_idx(f.pools, i));
	}
	if (json_object_array_length(f.domains) + json_object_array_length(f.pools) > 0)
		printf("\n");
	for (size_t i = 0; i < json_object_array_length(f.problems); i++)
		printf("PROBLEM: %s\n", js_shown(json_object_array_get_idx(f.problems, i)));
	printf("invariants: %s\n", rc == 0 ? "ok" : "broken");
	json_object_put(o);
	return rc;
}
