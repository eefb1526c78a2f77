/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hostile: a guest that attacks the isolation from inside its own memory
 * (tests/e2e/check_isolation.c). It serves through libguest and maps its
 * domain (fd 5) and its zone's pool (fd 6) a second time, raw, to do
 * what a plugin must not be able to turn against hubd or the others:
 *   hostile.ping ->str		"pong": it still serves
 *   hostile.fds ->str		the fds it was started with, before it
 *				opened any itself ("0 1 2 3 5 6")
 *   hostile.seals ->str	shrinks and empties its domain and pool
 *				(the inherited fds and fresh opens of
 *				/proc/self/fd/N), grows them, adds
 *				F_SEAL_WRITE; the errno of each attempt
 *   hostile.search str->str	"HUBD_PID ECHO_PID": opens what it can of
 *				those processes (/proc/PID/fd/N, mem,
 *				map_files) and lists /dev/shm; a line per
 *				thing found ("opened PATH", "shm NAME")
 *   hostile.attack str->str	answers "ok MODE", then once the answer is
 *				out does MODE to its own memory and says
 *				what it did on stderr (hubd's log):
 *	punch		fallocate(PUNCH_HOLE) over its whole domain and pool,
 *			then checks that they read back zero
 *	random		random bytes (a fixed seed) over its header, peer
 *			table, extension table and its own areas, and at
 *			random places across its domain and pool
 *	self		targeted: its header's host_goodbye, awake and
 *			geometry, its entry's state, epoch, heartbeat, ring
 *			indices and offsets, its rings, its credit and waiter
 *			words, the host's slot bitmap, its pool's free lists,
 *			counters and every slot's owner and link
 *	others		every other peer entry of its domain (state, epoch,
 *			heartbeat, ring indices, offsets) and their extension
 *			words; its header's awake 0 then 0xffffffff and its
 *			own awake flag 0xffffffff, again after every round
 *	forge-rings	descriptors (kv.put, echo.echo, answers) in the rings
 *			where every other peer's would be, their entries made
 *			to look attached, and its doorbell rung
 *	forge-responses	Responses in its own ring with ids hubd never sent it
 *	bells		the eventfd it shares with hubd (fd 8) made blocking,
 *			then rung and read dry, over and over: hubd's reads
 *			must not block, nor its wakes stop anyone else
 * After punch, random, self and forge-responses it serves no more: it
 * keeps its heartbeat (so that only a broken rule can be why it is ended)
 * until hubd ends it; after others, forge-rings and bells it serves on. */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "guest.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "tests/guests/raw.h"

#define DOMAIN_FD	5
#define POOL_FD		6
#define REPORT_MAX	(32 * 1024)

static struct guest *g;
static struct hp_ticket ticket;
static struct hp_segment dom;		/* our second mapping; its pool in dom.var */
static struct hp_peer_view view;
static struct hp_geometry geo;		/* hubd's layout, from the header's params */
static char start_fds[256];
static char pending[32];		/* the attack hostile.attack asked for */
static int forge_awake;			/* others: the awake words again each round */
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static char report[REPORT_MAX];
static size_t report_len;

static void
say(const char *fmt, ...)
{
	va_list ap;

	if (report_len >= sizeof(report) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(report + report_len, sizeof(report) - report_len, fmt, ap);
	va_end(ap);
	report_len += strlen(report + report_len);
}

static void
reply_report(struct guest_call *c)
{
	static uint8_t buf[REPORT_MAX + 16];
	size_t pos = 0;

	if (guest_pc_put_str(buf, sizeof(buf), &pos, report, report_len) < 0)
		guest_reply_error(c, "report too long");
	else
		guest_reply(c, buf, pos);
	report_len = 0;
	report[0] = '\0';
}

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
fill_random(void *p, uint64_t n)
{
	uint8_t *b = p;

	for (uint64_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

static const char *
errname(int e)
{
	const char *s = strerrorname_np(e);

	return s != NULL ? s : "?";
}

/* -- what it was started with ------------------------------------------- */

/* The open fds, before libguest or we open any (the directory's own fd
 * left out). */
static void
list_start_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fds[64], n = 0;
	size_t len = 0;

	if (d == NULL) {
		snprintf(start_fds, sizeof(start_fds), "(/proc/self/fd: %s)", errname(errno));
		return;
	}
	while ((e = readdir(d)) != NULL && n < 64) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end == '\0' && e->d_name[0] != '\0' && fd != dirfd(d))
			fds[n++] = (int)fd;
	}
	closedir(d);
	/* readdir's order is the kernel's: sort them */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int tmp = fds[j];

			fds[j] = fds[j - 1];
			fds[j - 1] = tmp;
		}
	for (int i = 0; i < n && len < sizeof(start_fds) - 12; i++)
		len += (size_t)snprintf(start_fds + len, sizeof(start_fds) - len, "%s%d",
					i > 0 ? " " : "", fds[i]);
}

static void
m_ping(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	say("pong");
	reply_report(c);
}

static void
m_fds(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	say("%s", start_fds);
	reply_report(c);
}

/* -- seals ------------------------------------------------------------------ */

/* Shrinks, empties and (grow) grows fd, then asks for F_SEAL_WRITE: each
 * attempt's outcome, "ok" or its errno's name. */
static void
try_resize(const char *what, int fd, int grow)
{
	struct stat st;

	if (fd < 0) {
		say("%s: open %s; ", what, errname(errno));
		return;
	}
	if (fstat(fd, &st) != 0) {
		say("%s: fstat %s; ", what, errname(errno));
		return;
	}
	say("%s: shrink %s", what, ftruncate(fd, 4096) == 0 ? "ok" : errname(errno));
	say(", empty %s", ftruncate(fd, 0) == 0 ? "ok" : errname(errno));
	if (grow)
		say(", grow %s", ftruncate(fd, st.st_size + 4096) == 0 ? "ok" : errname(errno));
	say(", seal-write %s; ", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0 ? "ok" :
	    errname(errno));
}

static void
m_seals(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char path[32];
	int fd;

	(void)args;
	(void)len;
	(void)ctx;
	try_resize("domain fd", DOMAIN_FD, 1);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", DOMAIN_FD);
	fd = open(path, O_RDWR | O_CLOEXEC);
	try_resize("domain fresh", fd, 1);
	if (fd >= 0)
		close(fd);
	/* the pool's file is as long as it may grow: sealed against
	 * growing too (memory no limit of the guest's would count) */
	if (ticket.pool_path != NULL) {
		try_resize("pool fd", POOL_FD, 1);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", POOL_FD);
		fd = open(path, O_RDWR | O_CLOEXEC);
		try_resize("pool fresh", fd, 1);
		if (fd >= 0)
			close(fd);
	}
	reply_report(c);
}

/* -- searching for the others' memory --------------------------------------- */

static int opened;

static void
try_open(const char *path, int flags)
{
	/* never blocks (a FIFO), never becomes our terminal */
	int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0) {
		say("opened %s%s\n", path, (flags & O_ACCMODE) == O_RDWR ? " read-write" : "");
		opened++;
		close(fd);
	}
}

/* Every fd of pid: listed if we may, else tried by number. */
static void
try_fds(int pid)
{
	char dir[64], path[320];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	if ((d = opendir(dir)) != NULL) {
		say("listed %s\n", dir);
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				try_open(path, O_RDONLY);
			}
		closedir(d);
		return;
	}
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "%s/%d", dir, fd);
		try_open(path, O_RDONLY);
	}
}

/* Each mapping of pid through map_files: listed if we may, else by the
 * ranges its maps file gives (if that can be read). */
static void
try_map_files(int pid)
{
	char dir[64], path[320], line[200];
	struct dirent *e;
	FILE *f;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/map_files", pid);
	if ((d = opendir(dir)) != NULL) {
		say("listed %s\n", dir);
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				try_open(path, O_RDONLY);
			}
		closedir(d);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	say("read %s\n", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		int c;

		/* a long line's rest (its path) is not wanted */
		if (strchr(line, '\n') == NULL)
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		line[strcspn(line, " ")] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		try_open(path, O_RDONLY);
	}
	fclose(f);
}

static void
try_process(int pid, int guest)
{
	char path[64];

	try_fds(pid);
	try_map_files(pid);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	try_open(path, O_RDONLY);
	if (guest) {
		/* its domain and its pool, where it was given them */
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, DOMAIN_FD);
		try_open(path, O_RDWR);
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, POOL_FD);
		try_open(path, O_RDWR);
	}
}

static void
m_search(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const char *s;
	size_t n, pos = 0;
	char text[64];
	int hubd, echo;
	struct dirent *e;
	DIR *d;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0 || n >= sizeof(text)) {
		guest_reply_error(c, "hostile.search takes \"HUBD_PID ECHO_PID\"");
		return;
	}
	memcpy(text, s, n);
	text[n] = '\0';
	if (sscanf(text, "%d %d", &hubd, &echo) != 2 || hubd <= 1 || echo <= 1) {
		guest_reply_error(c, "hostile.search takes \"HUBD_PID ECHO_PID\"");
		return;
	}
	opened = 0;
	try_process(hubd, 0);
	try_process(echo, 1);
	if ((d = opendir("/dev/shm")) != NULL) {
		while ((e = readdir(d)) != NULL)
			if (strncmp(e->d_name, "hub", 3) == 0)
				say("shm %s\n", e->d_name);
		closedir(d);
	}
	say("opened %d\n", opened);
	reply_report(c);
}

/* -- attacks on its own memory ---------------------------------------------- */

static void
m_attack(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	static const char *const modes[] = {
		"punch", "random", "self", "others", "forge-rings", "forge-responses",
		"bells",
	};
	const char *s;
	size_t n, pos = 0;

	(void)ctx;
	if (guest_pc_get_str(args, len, &pos, &s, &n) != 0)
		n = 0;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (n == strlen(modes[i]) && memcmp(s, modes[i], n) == 0) {
			/* after this round: the answer goes out first */
			snprintf(pending, sizeof(pending), "%s", modes[i]);
			say("ok %s", modes[i]);
			reply_report(c);
			return;
		}
	guest_reply_error(c, "no such attack");
}

static uint64_t
fd_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Whether n bytes at p are all zero. */
static int
all_zero(const void *p, uint64_t n)
{
	const uint8_t *b = p;

	for (uint64_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* The whole domain and pool punched out: the seals allow it (the size
 * stays), and every page reads back zero. Only what hubd never writes
 * is checked (it may write its own words meanwhile): the magic, our
 * entry's state, epoch and offsets, our rings, channel table and slots,
 * and the pool's header. */
static void
punch(void)
{
	uint64_t dsize = fd_size(DOMAIN_FD), psize = ticket.pool_path ? fd_size(POOL_FD) : 0;
	const struct hp_params *p = &dom.params;
	int zero;

	if (fallocate(DOMAIN_FD, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      (off_t)dsize) != 0)
		err(1, "punch the domain");
	if (psize != 0 && fallocate(POOL_FD, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				    (off_t)psize) != 0)
		err(1, "punch the pool");
	zero = hp_load_relaxed_u64(&hp_segment_header(&dom)->magic) == 0 &&
	    all_zero(view.entry, 8) && all_zero(&view.entry->ring_offset, 24) &&
	    all_zero(view.g2h, (uint64_t)p->ring_size * HP_DESC_SIZE) &&
	    all_zero(view.chans, (uint64_t)p->max_channels * HP_CHAN_ENTRY_SIZE) &&
	    all_zero(view.pool, geo.pool_size) &&
	    (psize == 0 || all_zero(dom.var_map, 16));
	fprintf(stderr, "hostile: punched its domain (%" PRIu64 " bytes) and pool (%" PRIu64
		" bytes): %s\n", dsize, psize, zero ? "reads back zero" : "NOT ZERO");
}

/* n random 8-byte words at random places of [base, base + size). */
static void
random_words(uint8_t *base, uint64_t size, int n)
{
	for (int i = 0; i < n && size >= 8; i++) {
		uint64_t off = (rnd() % (size / 8)) * 8, v = rnd();

		memcpy(base + off, &v, 8);
	}
}

static void
scribble_random(void)
{
	const struct hp_params *p = &dom.params;
	uint64_t n = 0;

	fill_random(dom.base, HP_HEADER_SIZE);
	fill_random(dom.base + geo.peer_table_offset, (uint64_t)p->max_guests * HP_PEER_ENTRY_SIZE);
	fill_random(dom.base + geo.ext_offset, (uint64_t)p->max_guests * HP_PEER_EXT_SIZE);
	fill_random(view.g2h, geo.ring_bytes);
	fill_random(view.chans, geo.chan_bytes);
	fill_random(view.host_pool, geo.pool_header_size);
	fill_random(view.pool, geo.pool_header_size);
	n += HP_HEADER_SIZE + (uint64_t)p->max_guests * (HP_PEER_ENTRY_SIZE + HP_PEER_EXT_SIZE) +
	    geo.ring_bytes + geo.chan_bytes + 2 * geo.pool_header_size;
	random_words(dom.base, dom.size, 4096);
	n += 4096 * 8;
	if (dom.var_map != NULL) {
		uint64_t region = hp_var_region_size(dom.var.nclasses, p->max_guests);

		fill_random(dom.var_map, region);
		random_words(dom.var_map, dom.var_map_size, 4096);
		n += region + 4096 * 8;
	}
	fprintf(stderr, "hostile: scribbled random bytes: %" PRIu64 " over its domain and pool\n",
		n);
}

static void
scribble_self(void)
{
	struct hp_header *hdr = hp_segment_header(&dom);
	struct hp_peer_entry *e = view.entry;
	const struct hp_params *p = &dom.params;
	uint32_t nslots = 0;

	/* its header: the hub is going, nobody is awake, everybody is; and a
	 * geometry of nonsense (hubd keeps its own) */
	hp_store_release_u32(&hdr->host_goodbye, 1);
	hp_store_relaxed_u32(&hdr->awake, 0);
	hp_store_relaxed_u32(&hdr->awake, 0xffffffffu);
	hdr->ring_size = 3;
	hdr->max_guests = 255;
	hdr->total_size = UINT64_MAX;
	hdr->peer_table_offset = UINT64_MAX - 63;
	hdr->ext_offset = dom.size - 8;
	/* its entry */
	hp_store_relaxed_u32(&e->epoch, hp_load_relaxed_u32(&e->epoch) + 7);
	hp_store_relaxed_u64(&e->last_heartbeat, 0);
	hp_store_relaxed_u32(&e->g2h_head, hp_load_relaxed_u32(&e->g2h_tail) + 3 * p->ring_size);
	hp_store_relaxed_u32(&e->g2h_tail, 0xffffffffu);
	hp_store_relaxed_u32(&e->h2g_head, 0x80000000u);
	hp_store_relaxed_u32(&e->h2g_tail, 0xffffffffu);
	e->ring_offset = dom.size - 64;
	e->slot_pool_offset = 0;
	e->channel_table_offset = UINT64_MAX;
	hp_store_relaxed_u32(&e->guest_features, 0xffffffffu);
	/* its rings: descriptors of every kind of nonsense */
	fill_random(view.g2h, geo.ring_bytes);
	/* credit and channels */
	for (uint32_t id = 0; id < p->max_channels; id++) {
		hp_store_relaxed_u32(&view.chans[id].state, id % 2 ? HP_CHAN_ACTIVE : 0xffffffffu);
		hp_store_relaxed_u32(&view.chans[id].granted_total, 0x80000001u);
	}
	/* waiter words, the host's line too, and its awake flag */
	if (view.ext != NULL) {
		hp_store_relaxed_u32(&view.ext->guest_waits, 0xffffffffu);
		hp_store_relaxed_u32(&view.ext->guest_awake, 0xffffffffu);
		hp_store_relaxed_u32(&view.ext->host_waits, 0xffffffffu);
		hp_store_relaxed_u32(&view.ext->host_offer, 0xffffffffu);
	}
	/* the host's slots in its domain: all free, all used */
	memset(view.host_pool, 0xff, geo.pool_header_size);
	memset(view.host_pool, 0x00, geo.pool_header_size);
	/* its pool: free lists into nowhere, counters and extents of
	 * nonsense, every slot owned by anybody at all and linked anywhere */
	for (uint32_t c = 0; c < dom.var.nclasses; c++) {
		struct hp_var_class *k = &dom.var.cls[c];
		struct hp_var_cview *cv = &dom.var.c[c];

		hp_store_relaxed_u64(&k->free_head, 0x12345678ull << 32 | HP_VAR_INDEX_MASK);
		hp_store_relaxed_u32(&k->in_use, 0xffffffffu);
		hp_store_relaxed_u32(&k->high_water, 0xffffffffu);
		hp_store_relaxed_u32(&k->grow_request, 0xffffffffu);
		hp_store_relaxed_u32(&k->corrupt, 0);
		for (uint32_t x = 0; x < cv->mapped; x++)
			for (uint32_t i = 0; i < cv->spe; i++, nslots++) {
				struct hp_var_slot *s = &cv->meta[x][i];

				hp_store_relaxed_u32(&s->owner, (uint32_t)(rnd() % (p->max_guests + 2)));
				hp_store_relaxed_u32(&s->next_free, (uint32_t)rnd());
				if (i % 3 == 0)
					hp_store_relaxed_u64(&s->gen_state, rnd());
			}
		hp_store_relaxed_u32(&k->extent_count, 99);
		for (uint32_t x = 0; x < HP_VAR_MAX_EXTENTS; x++)
			hp_store_relaxed_u64(&k->extent_offsets[x], rnd());
	}
	if (dom.var.hdr != NULL) {
		hp_store_relaxed_u32(&dom.var.hdr->waiters, 0xffffffffu);
		hp_store_relaxed_u32(&dom.var.hdr->wake_seq, 0xffffffffu);
		dom.var.hdr->nclasses = 0xffffffffu;
	}
	/* and its state last, with nonsense */
	hp_store_release_u32(&e->state, 0xdeadbeefu);
	hp_doorbell_signal(ticket.doorbell_fd);
	fprintf(stderr, "hostile: scribbled itself: header, entry, rings, %u channels, "
		"%u classes, %u slots\n", p->max_channels, dom.var.nclasses, nslots);
}

/* Its awake words, which hubd must neither sum as they are nor let
 * reach anybody else. */
static void
forge_awake_words(void)
{
	struct hp_header *hdr = hp_segment_header(&dom);

	hp_store_relaxed_u32(&hdr->awake, 0);
	hp_store_relaxed_u32(&hdr->awake, 0xffffffffu);
	if (view.ext != NULL)
		hp_store_relaxed_u32(&view.ext->guest_awake, 0xffffffffu);
}

static void
scribble_others(void)
{
	const struct hp_params *p = &dom.params;
	/* the extension table, if there is one: ours is entry peer_id - 1 */
	struct hp_peer_ext *ext = view.ext != NULL ? view.ext - (view.peer_id - 1) : NULL;
	uint32_t n = 0;

	for (uint32_t id = 1; id <= p->max_guests; id++) {
		struct hp_peer_entry *e = hp_segment_peer(&dom, id);

		if (id == view.peer_id)
			continue;
		hp_store_relaxed_u32(&e->epoch, (uint32_t)rnd());
		hp_store_relaxed_u64(&e->last_heartbeat, rnd());
		hp_store_relaxed_u32(&e->g2h_head, (uint32_t)rnd());
		hp_store_relaxed_u32(&e->g2h_tail, (uint32_t)rnd());
		hp_store_relaxed_u32(&e->h2g_head, (uint32_t)rnd());
		hp_store_relaxed_u32(&e->h2g_tail, (uint32_t)rnd());
		/* pointed at our own areas, and at nonsense */
		e->ring_offset = id % 2 ? view.entry->ring_offset : rnd();
		e->slot_pool_offset = id % 2 ? view.entry->slot_pool_offset : rnd();
		e->channel_table_offset = id % 2 ? view.entry->channel_table_offset : rnd();
		hp_store_relaxed_u32(&e->guest_features, 0xffffffffu);
		hp_store_release_u32(&e->state, id % 3 == 0 ? HP_PEER_GOODBYE :
				      id % 3 == 1 ? HP_PEER_ATTACHED : 0xffffffffu);
		if (ext != NULL) {
			hp_store_relaxed_u32(&ext[id - 1].guest_waits, 0xffffffffu);
			hp_store_relaxed_u32(&ext[id - 1].guest_awake, 0xffffffffu);
			hp_store_relaxed_u32(&ext[id - 1].host_waits, 0xffffffffu);
			hp_store_relaxed_u32(&ext[id - 1].host_offer, 0xffffffffu);
		}
		n++;
	}
	forge_awake_words();
	forge_awake = 1;
	hp_doorbell_signal(ticket.doorbell_fd);
	fprintf(stderr, "hostile: scribbled the %u other entries of its domain and its awake "
		"words\n", n);
}

/* A Request for method with postcard args, inline in d. */
static void
forged_request(struct hp_desc *d, uint32_t id, const char *method, const uint8_t *args,
	       size_t len)
{
	uint8_t buf[HP_INLINE_MAX];
	struct hp_meta none = { NULL, 0, 0 };
	int64_t n = hp_msg_encode_request(buf, sizeof(buf), &none, args, len);

	memset(d, 0, sizeof(*d));
	d->msg_type = HP_MSG_REQUEST;
	d->id = id;
	d->method_id = hp_method_id(method, strlen(method));
	if (n < 0 || hp_desc_set_inline(d, buf, (uint32_t)n) != 0)
		errx(1, "forged request too long");
}

/* An Ok Response of the unit value, inline in d. */
static void
forged_response(struct hp_desc *d, uint32_t id)
{
	uint8_t buf[HP_INLINE_MAX];
	struct hp_response r = { .result = HP_RESULT_OK };
	int64_t n = hp_msg_encode_response(buf, sizeof(buf), &r);

	memset(d, 0, sizeof(*d));
	d->msg_type = HP_MSG_RESPONSE;
	d->id = id;
	if (n < 0 || hp_desc_set_inline(d, buf, (uint32_t)n) != 0)
		errx(1, "forged response too long");
}

static void
forge_rings(void)
{
	const struct hp_params *p = &dom.params;
	uint8_t put[32], say_hi[16];
	struct hp_pc_enc enc;
	uint32_t peers = 0, descs = 0;

	hp_pc_enc_init(&enc, put, sizeof(put));
	hp_pc_put_str(&enc, "forged", 6);
	hp_pc_put_bytes(&enc, (const uint8_t *)"x", 1);
	size_t put_len = enc.len;

	hp_pc_enc_init(&enc, say_hi, sizeof(say_hi));
	hp_pc_put_str(&enc, "forged", 6);
	size_t hi_len = enc.len;

	for (uint32_t id = 1; id <= p->max_guests; id++) {
		struct hp_peer_entry *e = hp_segment_peer(&dom, id);
		struct hp_desc *g2h, *h2g, d;
		uint32_t n = 0;

		if (id == view.peer_id)
			continue;
		/* where hubd would have put that peer's rings */
		g2h = (struct hp_desc *)(void *)(dom.base + hp_geometry_ring_offset(&geo, id));
		h2g = g2h + p->ring_size;
		for (uint32_t i = 0; i + 3 < p->ring_size && i < 24; i += 3, n += 3) {
			forged_request(&d, 1000 + i, "kv.put", put, put_len);
			memcpy(&g2h[i], &d, sizeof(d));
			forged_request(&d, 1001 + i, "echo.echo", say_hi, hi_len);
			memcpy(&g2h[i + 1], &d, sizeof(d));
			forged_request(&d, 1002 + i, "counter.count", (const uint8_t *)"\x05\x01", 2);
			memcpy(&g2h[i + 2], &d, sizeof(d));
			/* answers, as if from the host, to whatever it asked */
			forged_response(&d, 1 + i);
			memcpy(&h2g[i], &d, sizeof(d));
			forged_response(&d, 2 + i);
			memcpy(&h2g[i + 1], &d, sizeof(d));
			forged_response(&d, 3 + i);
			memcpy(&h2g[i + 2], &d, sizeof(d));
		}
		e->ring_offset = hp_geometry_ring_offset(&geo, id);
		e->channel_table_offset = hp_geometry_chan_offset(&geo, id);
		e->slot_pool_offset = hp_geometry_pool_offset(&geo, id);
		hp_store_relaxed_u32(&e->g2h_tail, 0);
		hp_store_relaxed_u32(&e->h2g_tail, 0);
		hp_store_release_u32(&e->g2h_head, n);
		hp_store_release_u32(&e->h2g_head, n);
		hp_store_relaxed_u32(&e->epoch, 1);
		hp_store_relaxed_u64(&e->last_heartbeat, hp_now_ns());
		hp_store_release_u32(&e->state, HP_PEER_ATTACHED);
		peers++;
		descs += 2 * n;
	}
	hp_doorbell_signal(ticket.doorbell_fd);
	fprintf(stderr, "hostile: forged %u descriptors in the rings of %u other peers\n",
		descs, peers);
}

/* Responses with ids hubd never sent us, in our own ring as the
 * protocol has it (libguest's loop is not running now). */
static void
forge_responses(void)
{
	struct hp_ring tx;
	struct hp_desc d;
	uint32_t n = 0;

	if (hp_ring_init_producer(&tx, &view.entry->g2h_head, &view.entry->g2h_tail, view.g2h,
				  dom.params.ring_size) != 0)
		errx(1, "forge-responses: our own ring is corrupt");
	/* low ids: what hubd asked the others (each guest's ids are its
	 * own); high ones: never used */
	for (uint32_t id = 1; id <= 8; id++, n++) {
		forged_response(&d, id + 1000000);
		if (hp_ring_enqueue(&tx, &d) != 0)
			break;
	}
	for (uint32_t id = 1; id <= 16; id++, n++) {
		forged_response(&d, id);
		if (hp_ring_enqueue(&tx, &d) != 0)
			break;
	}
	hp_doorbell_signal(ticket.doorbell_fd);
	fprintf(stderr, "hostile: forged %u responses to calls never sent to it\n", n);
}

/* Serves no more: beats until hubd ends us (our doorbell's other end
 * closes when it has), so that no silence can be why. */
static void __attribute__((noreturn))
linger(void)
{
	for (;;) {
		raw_heartbeat(&view);
		if (hp_doorbell_wait(ticket.doorbell_fd, 50) == -EPIPE)
			_exit(0);
	}
}

/* Until hubd has taken everything we published (the answer to
 * hostile.attack among it), or 30 s (however loaded the machine): the
 * attack must not overtake it. */
static void
drained(void)
{
	for (int i = 0; i < 6000; i++) {
		/* acquire: pairs with hubd's release of the tail as it consumes */
		if (hp_load_acquire_u32(&view.entry->g2h_tail) ==
		    hp_load_relaxed_u32(&view.entry->g2h_head))
			break;
		usleep(5000);
	}
	usleep(50000);		/* and hubd has passed it on */
}

/* The eventfd hubd reads, blocking from now on (the flag is on the
 * description both share), rung and read dry by us: a read of hubd's that
 * blocked there would hang it for good. */
static void
ring_bells(void)
{
	int fd = ticket.bells[1], fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	uint64_t v = 1, n = 0;
	struct iovec iov = { &v, sizeof(v) };

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		fprintf(stderr, "hostile: no bells (%s)\n", strerror(errno));
		return;
	}
	for (int i = 0; i < 20000; i++) {
		v = 1;
		if (write(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
			n++;
		while (preadv2(fd, &iov, 1, -1, RWF_NOWAIT) > 0)
			;
	}
	fprintf(stderr, "hostile: rang and emptied its bell %" PRIu64 " times\n", n);
}

static void
attack(const char *mode)
{
	drained();
	if (strcmp(mode, "punch") == 0) {
		punch();
		linger();
	} else if (strcmp(mode, "random") == 0) {
		scribble_random();
		linger();
	} else if (strcmp(mode, "self") == 0) {
		scribble_self();
		linger();
	} else if (strcmp(mode, "others") == 0) {
		scribble_others();
	} else if (strcmp(mode, "forge-rings") == 0) {
		forge_rings();
	} else if (strcmp(mode, "bells") == 0) {
		ring_bells();
	} else if (strcmp(mode, "forge-responses") == 0) {
		forge_responses();
		linger();
	}
}

int
main(int argc, char *argv[])
{
	static const struct {
		const char	*name, *sig;
		guest_handler	fn;
	} methods[] = {
		{ "hostile.ping", "->str", m_ping },
		{ "hostile.fds", "->str", m_fds },
		{ "hostile.seals", "->str", m_seals },
		{ "hostile.search", "str->str", m_search },
		{ "hostile.attack", "str->str", m_attack },
	};
	const char *why = NULL;
	int rc;

	list_start_fds();
	if ((rc = guest_attach(argc, argv, &g, &why)) != 0)
		errx(1, "attach: %s", why);
	/* our own view of our memory, beside libguest's */
	if (hp_ticket_parse(argc, argv, &ticket, &why) != 0 ||
	    hp_segment_attach(&dom, ticket.hub_path, 0, &why) != 0 ||
	    hp_peer_view_guest(&dom, ticket.peer_id, &view, &why) != 0 ||
	    hp_geometry_compute(&dom.params, &geo, &why) != 0)
		errx(1, "raw map: %s", why);
	if (ticket.pool_path != NULL &&
	    hp_segment_attach_pool(&dom, ticket.pool_path, ticket.peer_id, &why) != 0)
		errx(1, "raw pool: %s", why);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (guest_register(g, methods[i].name, methods[i].sig, methods[i].fn, NULL) != 0)
			errx(1, "cannot register %s", methods[i].name);
	while ((rc = guest_service_wait(g, 100)) == 0) {
		if (pending[0] != '\0') {
			attack(pending);
			pending[0] = '\0';
		}
		if (forge_awake)
			forge_awake_words();
	}
	/* the hub stopping, or it ended us */
	if (rc == -ECONNABORTED)
		fprintf(stderr, "hostile: hub ended me: %s\n", guest_goodbye_reason(g));
	guest_detach(g);
	return rc == -ESHUTDOWN ? 0 : 1;
}
