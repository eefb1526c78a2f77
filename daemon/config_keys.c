/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The keys of hubd.conf: one table row per key of [hub], of [pool] and
 * of [guest NAME] with its bounds and where its value goes; the syntax of
 * each kind of value (numbers, sizes, durations, strings, users and
 * groups, uid ranges, restart policies, args, names and patterns) and
 * how a problem is told (config_perr, config.c's too); inih's handler, which
 * takes a key = value line of the current section to its row; and each [hub]
 * and [pool] value written back as the file takes it, for what a reload says
 * (config_hub_changes). Reading the file
 * and its sections is config.c's. Over 600 lines because it is one table:
 * each row names the parser of its kind of value, and the rows and those
 * parsers are read together (make check-man holds hubd.conf.5 to the
 * rows); split, a row's meaning would sit in another file. */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/libutil.h>

#include "daemon/config.h"
#include "daemon/config_parser.h"
#include "daemon/size.h"
#include "proto/builtin.h"
#include "proto/lane.h"
#include "proto/method.h"
#include "proto/topic.h"

#define ARGS_MAX	64
#define PROVIDES_MAX	64	/* patterns in one provides = */

/* -- problems, names and patterns ------------------------------------- */

void
config_perr(struct parser *p, int line, const char *fmt, ...)
{
	va_list ap;

	p->errors++;
	if (p->errs == NULL)
		return;
	fprintf(p->errs, "%s:%d: ", p->file, line);
	va_start(ap, fmt);
	vfprintf(p->errs, fmt, ap);
	va_end(ap);
	fputc('\n', p->errs);
}

int
config_valid_name(const char *s, size_t n)
{
	if (n == 0 || n > CONFIG_GUEST_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) == NULL)
			return 0;
	return 1;
}

/* A pattern of provides or publishes ("a.b" that name, "a.*" every name
 * that begins with "a." and goes on), or a guest's own names, "NAME.*". */
static int
pattern_glob(const char *pat, size_t n)
{
	return n >= 2 && pat[n - 2] == '.' && pat[n - 1] == '*';
}

int
config_pattern_match(const char *pat, const char *name)
{
	size_t n = strlen(pat);

	if (pattern_glob(pat, n))
		return strncmp(name, pat, n - 1) == 0 && name[n - 1] != '\0';
	return strcmp(pat, name) == 0;
}

/* Whether some method name matches both. */
int
config_patterns_overlap(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	int ga = pattern_glob(a, na), gb = pattern_glob(b, nb);

	if (ga && gb)	/* "x." a prefix of "x.y." or the other way round */
		return strncmp(a, b, (na < nb ? na : nb) - 1) == 0;
	if (ga)
		return config_pattern_match(a, b);
	if (gb)
		return config_pattern_match(b, a);
	return strcmp(a, b) == 0;
}

/* A plain unsigned decimal. */
static int
parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *q = s;

	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	for (; isdigit((unsigned char)*q); q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	if (*q != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

/* A byte size: a decimal number, or one with a binary unit (K, M, G, T,
 * P, E; either case). expand_number does the units and the overflow; its
 * input is checked first, since it also takes what a config must not mean:
 * octal ("010" is 8), hex, a sign, blanks, and anything after the unit
 * ("1e3" is an exbibyte). Leading zeros are decimal, as before. */
static int
parse_size(const char *s, uint64_t *out)
{
	size_t n = strspn(s, "0123456789");

	if (n == 0 || (s[n] != '\0' && (strchr("KMGTPEkmgtpe", s[n]) == NULL ||
					s[n + 1] != '\0')))
		return -EINVAL;
	while (n > 1 && *s == '0')
		s++, n--;
	errno = 0;
	/* libbsd 0.11 returns 0 on overflow, with errno ERANGE */
	if (expand_number(s, out) != 0 || errno != 0)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	return 0;
}

/* The longest duration, a year (525600min): twice it, or it added to a
 * monotonic clock, is far from overflowing 64-bit nanoseconds, so no sum
 * on one needs to care. A key's own max may be less. */
#define DURATION_MAX	(525600ull * 60000000000ull)
#define HEARTBEAT_MIN_NS	10000000ull	/* 10 ms: hubd's fastest look */

static const struct { const char *unit; uint64_t ns; } units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
	{ "s", 1000000000ull }, { "min", 60000000000ull },
};
#define NUNITS		(sizeof(units) / sizeof(units[0]))

/* A duration: 0, or a number with a unit ns, us, ms, s, min. */
static int
parse_duration(const char *s, uint64_t *ns)
{
	char num[32];
	size_t n = strspn(s, "0123456789");
	uint64_t v = 0;
	int big;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	big = parse_u64(num, &v) != 0;	/* too long only if its unit is right */
	if (s[n] == '\0')
		return !big && v == 0 ? (*ns = 0, 0) : -EINVAL;
	for (size_t i = 0; i < NUNITS; i++) {
		if (strcmp(s + n, units[i].unit) != 0)
			continue;
		if (big || v > UINT64_MAX / units[i].ns)
			return -ERANGE;
		*ns = v * units[i].ns;
		return 0;
	}
	return -EINVAL;
}

/* A key of [hub], [pool] or [guest NAME]: its name, the parser that reads its
 * value, and where the value goes (a field of struct hub_conf or struct
 * config_guest, at off, size bytes) within bounds. A parser reports its own
 * errors and returns 0 or -1; base is the struct its section fills. */
struct key {
	const char	*name;
	int		(*parse)(struct parser *p, const struct key *k, const char *value,
				 void *base);
	size_t		off;
	size_t		size;
	uint64_t	min;		/* numbers, sizes and durations */
	uint64_t	max;		/* numbers and sizes; durations: 0 is
					 * DURATION_MAX */
};

#define HUB(f)		.off = offsetof(struct hub_conf, f), \
			.size = sizeof(((struct hub_conf *)0)->f)
#define GUEST(f)	.off = offsetof(struct config_guest, f), \
			.size = sizeof(((struct config_guest *)0)->f)

static void *
field(const struct key *k, void *base)
{
	return (char *)base + k->off;
}

/* An unsigned field of 4 or 8 bytes (the table's bounds fit it). */
static void
store_uint(const struct key *k, void *base, uint64_t v)
{
	if (k->size == sizeof(uint32_t))
		*(uint32_t *)field(k, base) = (uint32_t)v;
	else
		*(uint64_t *)field(k, base) = v;
}

static int
key_number(struct parser *p, const struct key *k, const char *value, void *base)
{
	uint64_t v;

	if (parse_u64(value, &v) != 0 || v < k->min || v > k->max) {
		config_perr(p, p->line, "%s: '%s' is not a number from %" PRIu64 " to %" PRIu64,
			    k->name, value, k->min, k->max);
		return -1;
	}
	store_uint(k, base, v);
	return 0;
}

static int
key_size(struct parser *p, const struct key *k, const char *value, void *base)
{
	char least[24];
	uint64_t v;

	if (parse_size(value, &v) == 0 && v >= k->min && v <= k->max) {
		store_uint(k, base, v);
		return 0;
	}
	/* no upper bound: the least, as a size ("1.0M") */
	if (k->max == UINT64_MAX)
		config_perr(p, p->line, "%s: '%s' is not a size of %s or more", k->name, value,
			    size_text(least, sizeof(least), k->min));
	else
		config_perr(p, p->line, "%s: '%s' is not a size or number from %" PRIu64
			    " to %" PRIu64, k->name, value, k->min, k->max);
	return -1;
}

/* A duration; min 1 refuses 0, which would mean "at once". */
static int
key_duration(struct parser *p, const struct key *k, const char *value, void *base)
{
	uint64_t v, max = k->max != 0 ? k->max : DURATION_MAX;
	size_t i = NUNITS - 1;
	int rc;

	if ((rc = parse_duration(value, &v)) == -EINVAL) {
		config_perr(p, p->line, "%s: '%s' is not a duration (0, or a number "
			    "with ns, us, ms, s or min)", k->name, value);
		return -1;
	}
	if (rc != 0 || v > max) {
		/* the max in the largest unit that holds it whole */
		while (max % units[i].ns != 0)
			i--;
		config_perr(p, p->line, "%s: '%s' is longer than %" PRIu64 "%s", k->name,
			    value, max / units[i].ns, units[i].unit);
		return -1;
	}
	if (v < k->min) {
		config_perr(p, p->line, "%s: must be more than 0", k->name);
		return -1;
	}
	*(uint64_t *)field(k, base) = v;
	return 0;
}

/* backoff_min and backoff_max: a duration, and where the later of the
 * two is, for config.c's check of one against the other */
static int
key_backoff(struct parser *p, const struct key *k, const char *value, void *base)
{
	((struct config_guest *)base)->backoff_line = p->line;
	return key_duration(p, k, value, base);
}

/* hang_stack = auto | off */
static int
key_hang_stack(struct parser *p, const struct key *k, const char *value, void *base)
{
	if (strcmp(value, "auto") == 0 || strcmp(value, "off") == 0) {
		*(int *)field(k, base) = strcmp(value, "off") == 0 ? HANG_STACK_OFF :
		    HANG_STACK_AUTO;
		return 0;
	}
	config_perr(p, p->line, "%s: '%s' is not auto or off", k->name, value);
	return -1;
}

/* A heartbeat interval, the hub's or a guest's own: off or 0 (a guest in
 * a debugger is never taken for hung), or 10 ms at least: hubd looks at
 * heartbeats at most 100 times a second, and a guest beating more often
 * would only wake for it. */
static int
key_heartbeat(struct parser *p, const struct key *k, const char *value, void *base)
{
	uint64_t *v = field(k, base), was = *v;

	if (strcmp(value, "off") == 0) {
		*v = 0;
		return 0;
	}
	if (key_duration(p, k, value, base) != 0)
		return -1;
	if (*v != 0 && *v < HEARTBEAT_MIN_NS) {
		*v = was;
		config_perr(p, p->line, "%s: '%s' is shorter than 10ms (off or 0 turns "
			    "heartbeats off)", k->name, value);
		return -1;
	}
	return 0;
}

/* start = auto | manual: hubd starts it, or a person does (manual.c) */
static int
key_start(struct parser *p, const struct key *k, const char *value, void *base)
{
	if (strcmp(value, "auto") == 0 || strcmp(value, "manual") == 0) {
		*(int *)field(k, base) = strcmp(value, "manual") == 0;
		return 0;
	}
	config_perr(p, p->line, "%s: '%s' is not auto or manual", k->name, value);
	return -1;
}

static int
key_string(struct parser *p, const struct key *k, const char *value, void *base)
{
	char **out = field(k, base);

	if (*value == '\0') {
		config_perr(p, p->line, "%s: empty value", k->name);
		return -1;
	}
	free(*out);
	if ((*out = strdup(value)) == NULL) {
		config_perr(p, p->line, "out of memory");
		return -1;
	}
	return 0;
}

/* zone = NAME: a pool shared with the guests of the same zone. */
static int
key_zone(struct parser *p, const struct key *k, const char *value, void *base)
{
	char *out = field(k, base);

	if (!config_valid_name(value, strlen(value))) {
		config_perr(p, p->line, "%s: '%s' is not a name (A-Z a-z 0-9 _ . -, up to %d)",
			    k->name, value, CONFIG_GUEST_NAME_MAX);
		return -1;
	}
	strcpy(out, value);
	return 0;
}

/* A key hubd no longer has: a clear error rather than a silent change. */
static int
key_gone(struct parser *p, const struct key *k, const char *value, void *base)
{
	(void)value;
	(void)base;
	config_perr(p, p->line, "%s: no longer a key: each guest's memory is handed to it as a "
		    "file descriptor and nothing is kept in /dev/shm (the lock is the control "
		    "socket's path with .lock; hubctl dump saves the memory); remove the line",
		    k->name);
	return -1;
}

static int
key_group(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct group *gr = getgrnam(value);

	if (gr == NULL) {
		config_perr(p, p->line, "%s: no group '%s' on this system", k->name, value);
		return -1;
	}
	*(int64_t *)field(k, base) = gr->gr_gid;
	return 0;
}

/* user = NAME: its uid, and its group unless group = is given. */
static int
key_user(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_guest *g = base;
	struct passwd *pw = getpwnam(value);

	if (pw == NULL) {
		config_perr(p, p->line, "%s: no user '%s' on this system", k->name, value);
		return -1;
	}
	g->uid = pw->pw_uid;
	if (g->gid < 0)
		g->gid = pw->pw_gid;
	return 0;
}

/* guest_uids = FIRST-LAST (decimal uids), or no. Never uid 0, nor
 * hubd's own (a guest would be hubd's equal), nor one above 2^31 - 1
 * (many programs take a uid for a signed int); FIRST-LAST holds
 * FIRST and LAST. */
static int
key_uids(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_uids *r = field(k, base);
	char first[24];
	size_t n = strspn(value, "0123456789");
	uint64_t a, b;

	if (strcmp(value, "no") == 0) {
		r->first = r->last = 0;
		return 0;
	}
	if (n == 0 || n >= sizeof(first) || value[n] != '-') {
		config_perr(p, p->line, "%s: '%s' is neither FIRST-LAST (uids, as in %u-%u) nor no",
			    k->name, value, CONFIG_GUEST_UIDS_FIRST, CONFIG_GUEST_UIDS_LAST);
		return -1;
	}
	memcpy(first, value, n);
	first[n] = '\0';
	if (parse_u64(first, &a) != 0 || parse_u64(value + n + 1, &b) != 0 ||
	    a > INT32_MAX || b > INT32_MAX) {
		config_perr(p, p->line, "%s: '%s' is not FIRST-LAST of uids from 1 to %d",
			    k->name, value, INT32_MAX);
		return -1;
	}
	if (a > b) {
		config_perr(p, p->line, "%s: '%s': FIRST is above LAST", k->name, value);
		return -1;
	}
	if (a == 0) {
		config_perr(p, p->line, "%s: '%s' holds uid 0, root's", k->name, value);
		return -1;
	}
	if (geteuid() >= a && geteuid() <= b) {
		config_perr(p, p->line, "%s: '%s' holds hubd's own uid %u", k->name, value,
			    (unsigned)geteuid());
		return -1;
	}
	r->first = (uint32_t)a;
	r->last = (uint32_t)b;
	return 0;
}

static const char *const restart_names[] = {
	[RESTART_NEVER] = "never",
	[RESTART_ON_FAILURE] = "on-failure",
	[RESTART_ALWAYS] = "always",
};
_Static_assert(sizeof(restart_names) / sizeof(restart_names[0]) == RESTART_NPOLICIES,
	       "a name for every restart policy");

static int
key_restart(struct parser *p, const struct key *k, const char *value, void *base)
{
	for (int i = 0; i < RESTART_NPOLICIES; i++) {
		if (strcmp(value, restart_names[i]) == 0) {
			*(enum restart_policy *)field(k, base) = (enum restart_policy)i;
			return 0;
		}
	}
	config_perr(p, p->line, "%s: '%s' is not %s, %s or %s", k->name, value,
		    restart_names[RESTART_ALWAYS], restart_names[RESTART_ON_FAILURE],
		    restart_names[RESTART_NEVER]);
	return -1;
}

/* Given, it is not derived from slot_size (finish). */
static int
key_payload(struct parser *p, const struct key *k, const char *value, void *base)
{
	if (key_size(p, k, value, base) != 0)
		return -1;
	p->payload_set = 1;
	return 0;
}

static int key_args(struct parser *p, const struct key *k, const char *value, void *base);
static int key_env(struct parser *p, const struct key *k, const char *value, void *base);
static int key_provides(struct parser *p, const struct key *k, const char *value, void *base);
static int key_publishes(struct parser *p, const struct key *k, const char *value, void *base);
static int key_names(struct parser *p, const struct key *k, const char *value, void *base);
static int key_slots(struct parser *p, const struct key *k, const char *value, void *base);
static int key_lanes(struct parser *p, const struct key *k, const char *value, void *base);

static int
key_bool(struct parser *p, const struct key *k, const char *value, void *base)
{
	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
		*(int *)field(k, base) = strcmp(value, "yes") == 0;
		return 0;
	}
	config_perr(p, p->line, "%s: '%s' is not yes or no", k->name, value);
	return -1;
}

/* " 16K x 64 " into "16K" and "64" (each under 32 characters). */
static int
class_item(const char *s, char size[32], char count[32])
{
	size_t n;

	s += strspn(s, " \t");
	n = strspn(s, "0123456789");
	if (n > 0 && s[n] != '\0' && strchr("KMGTPEkmgtpe", s[n]) != NULL)
		n++;
	if (n == 0 || n >= 32)
		return -EINVAL;
	memcpy(size, s, n);
	size[n] = '\0';
	s += n;
	s += strspn(s, " \t");
	if (*s != 'x' && *s != 'X')
		return -EINVAL;
	s++;
	s += strspn(s, " \t");
	n = strspn(s, "0123456789");
	if (n == 0 || n >= 32 || s[n + strspn(s + n, " \t")] != '\0')
		return -EINVAL;
	memcpy(count, s, n);
	count[n] = '\0';
	return 0;
}

/* classes = SIZE x COUNT, ... (smallest first), or none. Each class is
 * checked with the rest of the pool's terms once the file is read. */
static int
key_classes(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct hp_var_conf *vc = field(k, base);
	char buf[LINE_MAX_LEN], *item, *save = NULL;
	uint32_t n = 0;

	if (strcmp(value, "none") == 0) {
		vc->nclasses = 0;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	/* strtok_r would pass over an empty item: a stray comma is a typo */
	for (const char *c = buf, *e; buf[strspn(buf, " \t")] != '\0'; c = e + 1) {
		size_t len = (e = strchr(c, ',')) != NULL ? (size_t)(e - c) : strlen(c);

		if (strspn(c, " \t") >= len) {
			config_perr(p, p->line, "%s: an empty class between commas", k->name);
			return -1;
		}
		if (e == NULL)
			break;
	}
	for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		char size[32], count[32];
		uint64_t sz, cnt;

		if (class_item(item, size, count) != 0 || parse_size(size, &sz) != 0 ||
		    parse_u64(count, &cnt) != 0) {
			config_perr(p, p->line, "%s: '%s' is not SIZE x COUNT (as in 16K x 64)",
				    k->name, item);
			return -1;
		}
		if (n == HP_VAR_MAX_CLASSES) {
			config_perr(p, p->line, "%s: more than %d classes", k->name,
				    HP_VAR_MAX_CLASSES);
			return -1;
		}
		if (sz > UINT32_MAX || cnt == 0 || cnt > UINT32_MAX) {
			config_perr(p, p->line, "%s: '%s' is out of range", k->name, item);
			return -1;
		}
		vc->cls[n].slot_size = (uint32_t)sz;
		vc->cls[n].count = (uint32_t)cnt;
		n++;
	}
	if (n == 0) {
		config_perr(p, p->line, "%s: no class given (none turns the pool off)", k->name);
		return -1;
	}
	vc->nclasses = n;
	return 0;
}

static const struct key hub_keys[] = {
	{ "segment", key_gone, 0, 0, 0, 0 },
	{ "control", key_string, HUB(control_path) },
	{ "max_guests", key_number, HUB(params.max_guests), .min = 1, .max = HP_MAX_GUESTS },
	{ "ring_size", key_slots, HUB(params.ring_size), .min = 2, .max = HP_RING_SIZE_MAX },
	{ "slot_size", key_size, HUB(params.slot_size), .min = 64, .max = UINT32_MAX },
	{ "slots_per_guest", key_number, HUB(params.slots_per_guest), .min = 1,
	  .max = HP_SLOTS_MAX },
	{ "max_channels", key_number, HUB(params.max_channels), .min = 2,
	  .max = HP_CHANNELS_MAX },
	{ "initial_credit", key_size, HUB(params.initial_credit), .min = 1, .max = INT32_MAX },
	{ "max_payload_size", key_payload, HUB(params.max_payload_size), .min = 1,
	  .max = UINT32_MAX },
	{ "heartbeat_interval", key_heartbeat, HUB(params.heartbeat_interval) },
	{ "attach_timeout", key_duration, HUB(attach_timeout_ns), .min = 1 },
	{ "stop_grace", key_duration, HUB(stop_grace_ns) },
	{ "group", key_group, HUB(gid) },
	{ "guest_uids", key_uids, HUB(guest_uids) },
	{ "goodbye_grace", key_duration, HUB(goodbye_grace_ns) },
	{ "client_timeout", key_duration, HUB(client_timeout_ns) },
	{ "hang_stack", key_hang_stack, HUB(hang_stack) },
	{ "calls_in_flight", key_number, HUB(calls_in_flight), .min = 1, .max = 1000000 },
	{ "channels_per_caller", key_number, HUB(channels_per_caller), .min = 1,
	  .max = HP_CHANNELS_MAX },
	{ "lanes_per_guest", key_number, HUB(lanes_per_guest), .min = 1, .max = 64 },
	{ "lane_ban", key_duration, HUB(lane_ban_ns) },
	{ "lane_slots", key_number, HUB(lane_slots), .min = 1, .max = HP_LANE_SLOTS_MAX },
};

static const struct key pool_keys[] = {
	{ "classes", key_classes, HUB(params.var) },
	{ "max_extents", key_number, HUB(params.var.max_extents), .min = 1,
	  .max = HP_VAR_MAX_EXTENTS },
	{ "sweep_interval", key_duration, HUB(pool_sweep_ns), .min = 1 },
	{ "stuck_after", key_duration, HUB(pool_stuck_ns) },
	{ "release_after", key_duration, HUB(pool_release_ns) },
	{ "quota", key_size, HUB(pool_quota), .min = 1, .max = UINT64_MAX },
	{ "quota_slots", key_number, HUB(pool_quota_slots), .min = 1, .max = UINT32_MAX },
};

static const struct key guest_keys[] = {
	{ "exec", key_string, GUEST(exec) },
	{ "args", key_args, GUEST(argv) },
	{ "restart", key_restart, GUEST(restart) },
	{ "max_deaths", key_number, GUEST(max_deaths), .min = 1, .max = 1000000 },
	{ "death_window", key_duration, GUEST(death_window_ns) },
	{ "backoff_min", key_backoff, GUEST(backoff_min_ns) },
	{ "backoff_max", key_backoff, GUEST(backoff_max_ns) },
	{ "user", key_user, GUEST(uid) },
	{ "group", key_group, GUEST(gid) },
	{ "limit_memory", key_size, GUEST(limit_memory), .min = 1u << 20, .max = UINT64_MAX },
	{ "limit_files", key_number, GUEST(limit_files), .min = 16, .max = 1u << 20 },
	{ "processors", key_number, GUEST(processors), .min = 1, .max = 256 },
	{ "heartbeat", key_heartbeat, GUEST(heartbeat_ns) },
	{ "shared_pool", key_bool, GUEST(shared_pool) },
	{ "seccomp", key_bool, GUEST(seccomp) },
	{ "zone", key_zone, GUEST(zone) },
	{ "pool_quota", key_size, GUEST(pool_quota), .min = 1, .max = UINT64_MAX },
	{ "pool_quota_slots", key_number, GUEST(pool_quota_slots), .min = 1, .max = UINT32_MAX },
	{ "provides", key_provides, GUEST(provides) },
	{ "publishes", key_publishes, GUEST(publishes) },
	{ "lanes", key_lanes, GUEST(lanes) },
	{ "env", key_env, GUEST(env) },
	{ "start", key_start, GUEST(start_manual) },
};

#define TOPIC(f)	.off = offsetof(struct config_topic, f), \
			.size = sizeof(((struct config_topic *)0)->f)
static const struct key topic_keys[] = {
	{ "subscribers", key_names, TOPIC(subscribers) },
	{ "slots", key_slots, TOPIC(slots), .min = HP_TOPIC_SLOTS_MIN, .max = HP_TOPIC_SLOTS_MAX },
	{ "event_max", key_size, TOPIC(event_max), .min = HP_TOPIC_EVENT_MIN,
	  .max = HP_TOPIC_EVENT_MAX },
	/* milliseconds in an int on the guest's side */
	{ "block_timeout", key_duration, TOPIC(block_ns), .max = INT32_MAX * 1000000ull },
};

/* A bit per key in parser.hub_seen and guest_seen */
_Static_assert(sizeof(hub_keys) / sizeof(hub_keys[0]) <= 64, "hub_seen has 64 bits");
_Static_assert(sizeof(guest_keys) / sizeof(guest_keys[0]) <= 64, "guest_seen has 64 bits");

static const struct key *
key_find(const struct key *keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* value's words into words[0..], strdup'd: split on blanks; "double
 * quotes" group, \" and \\ escape inside. Their count, or -1 (an error
 * told, nothing left allocated). */
static int
split_words(struct parser *p, const struct key *k, const char *value, char **words, int max)
{
	char buf[LINE_MAX_LEN];
	const char *s = value;
	int n = 0;

	while (*s != '\0') {
		size_t len = 0;
		int quoted = 0;

		while (isspace((unsigned char)*s))
			s++;
		if (*s == '\0')
			break;
		while (*s != '\0' && (quoted || !isspace((unsigned char)*s))) {
			if (*s == '"') {
				quoted = !quoted;
				s++;
				continue;
			}
			if (quoted && *s == '\\' && (s[1] == '"' || s[1] == '\\'))
				s++;
			buf[len++] = *s++;
		}
		if (quoted) {
			/* most likely cut by a comment: the reader ends the
			 * value at a blank then '#' or ';', quotes or not */
			config_perr(p, p->line, "%s: unterminated quote (a '#' or ';' after a "
				    "blank starts a comment, inside quotes too)", k->name);
			goto fail;
		}
		if (n == max) {
			config_perr(p, p->line, "%s: more than %d words", k->name, max);
			goto fail;
		}
		buf[len] = '\0';
		if ((words[n++] = strdup(buf)) == NULL) {
			config_perr(p, p->line, "out of memory");
			goto fail;
		}
	}
	return n;
fail:
	while (n > 0)
		free(words[--n]);
	return -1;
}

/* args: the words after argv[0], which is exec (config.c sets it). */
static int
key_args(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_guest *g = base;
	char *words[ARGS_MAX];
	int n;

	if ((n = split_words(p, k, value, words, ARGS_MAX)) < 0)
		return -1;
	if (g->argv != NULL) {
		for (int i = 1; g->argv[i] != NULL; i++)
			free(g->argv[i]);
		free(g->argv);
	}
	if ((g->argv = calloc((size_t)n + 2, sizeof(char *))) == NULL) {
		config_perr(p, p->line, "out of memory");
		while (n > 0)
			free(words[--n]);
		return -1;
	}
	memcpy(g->argv + 1, words, (size_t)n * sizeof(char *));
	return 0;
}

/* env = NAME=VALUE ...: words as args = splits them, each a portable
 * variable name ([A-Za-z_][A-Za-z0-9_]*), once, and not one hubd sets
 * itself (HUB_PROCESSORS: processors =). */
static int
key_env(struct parser *p, const struct key *k, const char *value, void *base)
{
	char **env, *words[ARGS_MAX];
	int n;

	if ((n = split_words(p, k, value, words, ARGS_MAX)) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		size_t len = strcspn(words[i], "=");

		if (words[i][len] != '=' || len == 0 || isdigit((unsigned char)words[i][0]) ||
		    strspn(words[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_") != len) {
			config_perr(p, p->line, "%s: '%s' is not NAME=VALUE (a name of "
				    "letters, digits and _, not first a digit)", k->name, words[i]);
			goto fail;
		}
		if (len == strlen("HUB_PROCESSORS") && strncmp(words[i], "HUB_PROCESSORS", len) == 0) {
			config_perr(p, p->line, "%s: HUB_PROCESSORS is hubd's to set "
				    "(processors =)", k->name);
			goto fail;
		}
		for (int j = 0; j < i; j++)
			if (strncmp(words[j], words[i], len + 1) == 0) {
				config_perr(p, p->line, "%s: %.*s given twice", k->name,
					    (int)len, words[i]);
				goto fail;
			}
	}
	if (n == 0) {
		config_perr(p, p->line, "%s: no NAME=VALUE given", k->name);
		return -1;
	}
	/* a key once per section (config_handler): the field is unset */
	if ((env = calloc((size_t)n + 1, sizeof(char *))) == NULL) {
		config_perr(p, p->line, "out of memory");
		goto fail;
	}
	memcpy(env, words, (size_t)n * sizeof(char *));
	*(char ***)field(k, base) = env;
	return 0;
fail:
	while (n > 0)
		free(words[--n]);
	return -1;
}

/* One pattern of provides, s[0..n): a method name ("kv.get") or a
 * prefix ("kv.*": every name that begins with "kv." and goes on), the
 * name or prefix one that hub.register takes (hp_method_name_refused),
 * and no longer than the names it stands for (HP_METHOD_NAME_MAX).
 * Nothing else: no bare "*", no "*" inside or after anything but a dot. */
static int
pattern_ok(const char *s, size_t n)
{
	size_t len = n >= 2 && s[n - 2] == '.' && s[n - 1] == '*' ? n - 2 : n;

	return n <= HP_METHOD_NAME_MAX && hp_method_name_refused(s, len) == NULL;
}

/* The next item of a comma-separated list at *s, blanks around it cut:
 * its start and length; *s moves past its comma, to NULL after the last. */
static const char *
list_item(const char **s, size_t *len)
{
	const char *item = *s, *end = strchr(item, ',');

	*len = end != NULL ? (size_t)(end - item) : strlen(item);
	*s = end != NULL ? end + 1 : NULL;
	while (*len > 0 && isblank((unsigned char)*item))
		item++, (*len)--;
	while (*len > 0 && isblank((unsigned char)item[*len - 1]))
		(*len)--;
	return item;
}

/* PATTERN, ...: names or PREFIX.* into the key's field, each checked
 * here (every bad one reported). 0 or -1. */
static int
key_patterns(struct parser *p, const struct key *k, const char *value, void *base)
{
	char *pats[PROVIDES_MAX + 1];
	const char *next = value;
	int n = 0, bad = 0;

	while (next != NULL) {
		size_t len;
		const char *s = list_item(&next, &len);

		if (len == 0) {
			config_perr(p, p->line, "%s: an empty pattern: give method names or "
				    "PREFIX.* separated by commas", k->name);
			bad = 1;
		} else if (!pattern_ok(s, len)) {
			config_perr(p, p->line, "%s: '%.*s' is neither a method name nor PREFIX.* "
				    "(A-Z a-z 0-9 _ . -, no empty part between dots, up to %d bytes)",
				    k->name, (int)len, s, HP_METHOD_NAME_MAX);
			bad = 1;
		} else if (n == PROVIDES_MAX) {
			config_perr(p, p->line, "%s: more than %d patterns", k->name, PROVIDES_MAX);
			bad = 1;
			break;
		} else if ((pats[n] = strndup(s, len)) == NULL) {
			config_perr(p, p->line, "out of memory");
			bad = 1;
			break;
		} else {
			n++;
		}
	}
	pats[n] = NULL;
	if (!bad && (*(char ***)field(k, base) = calloc((size_t)n + 1, sizeof(char *))) == NULL) {
		config_perr(p, p->line, "out of memory");
		bad = 1;
	}
	if (bad) {
		while (--n >= 0)
			free(pats[n]);
		return -1;
	}
	memcpy(*(char ***)field(k, base), pats, ((size_t)n + 1) * sizeof(char *));
	return 0;
}

/* provides = PATTERN, ...: the names the guest may register besides its
 * own NAME.*; whether they overlap another guest's names or the host's
 * is finish()'s. */
static int
key_provides(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_guest *g = base;

	if (key_patterns(p, k, value, base) != 0)
		return -1;
	g->provides_line = p->line;
	return 0;
}

/* publishes = PATTERN, ...: the topics it may publish besides NAME.*; two
 * guests that claim one topic find out at the second's advertise. */
static int
key_publishes(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_guest *g = base;

	if (key_patterns(p, k, value, base) != 0)
		return -1;
	for (char **q = g->publishes; q != NULL && *q != NULL; q++) {
		if (config_patterns_overlap(*q, HP_SVC_PREFIX "*")) {
			config_perr(p, p->line, "%s: %s: hub.* topics are the host's", k->name, *q);
			return -1;
		}
	}
	return 0;
}

/* subscribers = NAME, ...: guests' names, whether or not in the file (a
 * later reload may add them). */
static int
key_names(struct parser *p, const struct key *k, const char *value, void *base)
{
	char *names[PROVIDES_MAX + 1];
	const char *next = value;
	int n = 0;

	while (next != NULL) {
		size_t len;
		const char *s = list_item(&next, &len);

		if (!config_valid_name(s, len) || n == PROVIDES_MAX ||
		    (names[n] = strndup(s, len)) == NULL) {
			config_perr(p, p->line, "%s: '%.*s' is not a guest's name (up to %d "
				    "names separated by commas)", k->name, (int)len, s,
				    PROVIDES_MAX);
			while (--n >= 0)
				free(names[n]);
			return -1;
		}
		n++;
	}
	names[n] = NULL;
	if ((*(char ***)field(k, base) = calloc((size_t)n + 1, sizeof(char *))) == NULL) {
		config_perr(p, p->line, "out of memory");
		while (--n >= 0)
			free(names[n]);
		return -1;
	}
	memcpy(*(char ***)field(k, base), names, ((size_t)n + 1) * sizeof(char *));
	return 0;
}

/* slots = N, ring_size = N: a power of two within the key's bounds. */
static int
key_slots(struct parser *p, const struct key *k, const char *value, void *base)
{
	uint32_t v, was = *(uint32_t *)field(k, base);

	if (key_number(p, k, value, base) != 0)
		return -1;
	v = *(uint32_t *)field(k, base);
	if ((v & (v - 1)) != 0) {
		config_perr(p, p->line, "%s: %u is not a power of two", k->name, v);
		/* said once, here: the checks of the whole not again */
		*(uint32_t *)field(k, base) = was;
		return -1;
	}
	return 0;
}

/* lanes = yes | no | NAME, ...: the names kept as " a b " for
 * config_lanes_allow; whether they name guests of the file is not
 * checked (a guest added by a later reload may be meant). */
static int
key_lanes(struct parser *p, const struct key *k, const char *value, void *base)
{
	struct config_guest *g = base;
	const char *next = value;
	size_t used = 1;

	if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
		g->lanes = value[0] == 'y' ? LANES_ANY : LANES_NONE;
		return 0;
	}
	g->lanes = LANES_WITH;
	snprintf(g->lanes_with, sizeof(g->lanes_with), " ");
	while (next != NULL) {
		size_t len;
		const char *s = list_item(&next, &len);

		if (!config_valid_name(s, len)) {
			config_perr(p, p->line, "%s: '%.*s' is not yes, no or a guest's name "
				    "(give yes, no, or names separated by commas)",
				    k->name, (int)len, s);
			return -1;
		}
		/* 'yes, b' would read as the guests yes and b, not as anyone */
		if ((len == 3 && memcmp(s, "yes", 3) == 0) || (len == 2 && memcmp(s, "no", 2) == 0)) {
			config_perr(p, p->line, "%s: '%.*s' stands alone, not in a list of names",
				    k->name, (int)len, s);
			return -1;
		}
		if (used + len + 1 >= sizeof(g->lanes_with)) {
			config_perr(p, p->line, "%s: more names than fit in %d bytes", k->name,
				    CONFIG_LANES_WITH_MAX);
			return -1;
		}
		memcpy(g->lanes_with + used, s, len);
		used += len;
		g->lanes_with[used++] = ' ';
		g->lanes_with[used] = '\0';
	}
	return 0;
}

/* -- values as text: what a reload says it changed or kept ------------------ */

/* bytes in the largest unit that divides them, as the file takes it */
static void
size_exact(char *buf, size_t len, uint64_t v)
{
	static const char prefix[] = "KMGTPE";
	int u = 0;

	while (v != 0 && u < 6 && (v & 1023) == 0) {
		v >>= 10;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 "%.*s", v, u > 0 ? 1 : 0, u > 0 ? &prefix[u - 1] : "");
}

/* ns likewise: 0, or a number with the largest unit that divides it */
static void
duration_exact(char *buf, size_t len, uint64_t ns)
{
	size_t i = NUNITS - 1;

	if (ns == 0) {
		snprintf(buf, len, "0");
		return;
	}
	while (ns % units[i].ns != 0)	/* ns divides all */
		i--;
	snprintf(buf, len, "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
}

static const void *
cfield(const struct key *k, const void *base)
{
	return (const char *)base + k->off;
}

static uint64_t
load_uint(const struct key *k, const void *base)
{
	return k->size == sizeof(uint32_t) ? *(const uint32_t *)cfield(k, base) :
	    *(const uint64_t *)cfield(k, base);
}

/* Key k's value in base as the file writes it ("default" for a number
 * below its least, which only an unset key holds: channels_per_caller,
 * quota); NULL for a key with no value (segment). A kind of value this
 * does not know is its bytes in hex, so a change is never taken for
 * none. */
static const char *
key_text(const struct key *k, const void *base, char *buf, size_t len)
{
	int number = k->parse == key_number || k->parse == key_slots,
	    bytes = k->parse == key_size || k->parse == key_payload;

	if (k->parse == key_gone)
		return NULL;
	if ((number || bytes) && load_uint(k, base) < k->min) {
		snprintf(buf, len, "default");
	} else if (k->parse == key_string) {
		const char *v = *(char *const *)cfield(k, base);

		snprintf(buf, len, "%s", v != NULL ? v : "");
	} else if (number) {
		snprintf(buf, len, "%" PRIu64, load_uint(k, base));
	} else if (bytes) {
		size_exact(buf, len, load_uint(k, base));
	} else if (k->parse == key_duration || k->parse == key_heartbeat) {
		duration_exact(buf, len, *(const uint64_t *)cfield(k, base));
	} else if (k->parse == key_hang_stack) {
		snprintf(buf, len, "%s", *(const int *)cfield(k, base) == HANG_STACK_OFF ?
			 "off" : "auto");
	} else if (k->parse == key_group) {
		int64_t gid = *(const int64_t *)cfield(k, base);
		struct group *gr = gid >= 0 ? getgrgid((gid_t)gid) : NULL;

		if (gid < 0)
			snprintf(buf, len, "unset");
		else if (gr != NULL)
			snprintf(buf, len, "%s", gr->gr_name);
		else
			snprintf(buf, len, "%" PRId64, gid);
	} else if (k->parse == key_uids) {
		const struct config_uids *r = cfield(k, base);

		if (r->first == 0)
			snprintf(buf, len, "no");
		else
			snprintf(buf, len, "%u-%u", r->first, r->last);
	} else if (k->parse == key_classes) {
		const struct hp_var_conf *vc = cfield(k, base);

		snprintf(buf, len, "%s", vc->nclasses == 0 ? "none" : "");
		for (uint32_t i = 0; i < vc->nclasses; i++) {
			char size[24];

			size_exact(size, sizeof(size), vc->cls[i].slot_size);
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s x %u",
				 i > 0 ? ", " : "", size, vc->cls[i].count);
		}
	} else {
		const unsigned char *b = cfield(k, base);

		buf[0] = '\0';
		for (size_t i = 0; i < k->size && strlen(buf) + 3 <= len; i++)
			snprintf(buf + strlen(buf), len - strlen(buf), "%02x", b[i]);
	}
	return buf;
}

void
config_hub_changes(const struct hub_conf *was, const struct hub_conf *now,
		   const struct hub_conf *n, config_change_fn *fn, void *arg)
{
	static const struct {
		const char	*section;
		const struct key *keys;
		size_t		nkeys;
	} tabs[] = {
		{ "hub", hub_keys, sizeof(hub_keys) / sizeof(hub_keys[0]) },
		{ "pool", pool_keys, sizeof(pool_keys) / sizeof(pool_keys[0]) },
	};
	char a[LINE_MAX_LEN], b[LINE_MAX_LEN], c[LINE_MAX_LEN];

	for (size_t t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++)
		for (size_t i = 0; i < tabs[t].nkeys; i++) {
			const struct key *k = &tabs[t].keys[i];

			if (key_text(k, was, a, sizeof(a)) == NULL ||
			    strcmp(a, key_text(k, n, b, sizeof(b))) == 0)
				continue;
			fn(arg, tabs[t].section, k->name, a, b,
			   strcmp(key_text(k, now, c, sizeof(c)), b) == 0);
		}
}

int
config_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	const struct key *keys, *k;
	uint64_t *seen, bit;
	size_t nkeys;
	void *base;

	(void)section;	/* tracked by the reader, which knows the line */
	switch (p->section) {
	case SEC_NONE:
		config_perr(p, p->line, "'%s' outside of any section", name);
		return 1;
	case SEC_BAD:
		return 1;	/* the section line was reported already */
	case SEC_HUB:
		keys = hub_keys;
		nkeys = sizeof(hub_keys) / sizeof(hub_keys[0]);
		seen = &p->hub_seen;
		base = p->c;
		break;
	case SEC_POOL:
		keys = pool_keys;
		nkeys = sizeof(pool_keys) / sizeof(pool_keys[0]);
		seen = &p->pool_seen;
		base = p->c;
		break;
	case SEC_TOPIC:
		keys = topic_keys;
		nkeys = sizeof(topic_keys) / sizeof(topic_keys[0]);
		seen = &p->topic_seen;
		base = &p->c->topics[p->c->ntopics - 1];
		break;
	default:
		keys = guest_keys;
		nkeys = sizeof(guest_keys) / sizeof(guest_keys[0]);
		seen = &p->guest_seen;
		base = &p->c->guests[p->c->nguests - 1];
		break;
	}
	if ((k = key_find(keys, nkeys, name)) == NULL) {
		config_perr(p, p->line, "unknown key '%s' in [%s]", name,
			    p->section == SEC_HUB ? "hub" : p->section == SEC_POOL ? "pool" :
			    p->section == SEC_TOPIC ? "topic" : "guest");
		return 1;
	}
	bit = 1ull << (k - keys);
	if (*seen & bit) {
		config_perr(p, p->line, "duplicate key '%s'", name);
		return 1;
	}
	*seen |= bit;
	if (p->section == SEC_HUB)
		p->hub_key_line[k - keys] = p->line;
	k->parse(p, k, value, base);
	return 1;
}

int
config_hub_line(const struct parser *p, const char *name)
{
	const struct key *k = key_find(hub_keys, sizeof(hub_keys) / sizeof(hub_keys[0]), name);

	if (k != NULL && p->hub_key_line[k - hub_keys] != 0)
		return p->hub_key_line[k - hub_keys];
	return p->hub_line ? p->hub_line : 1;
}
