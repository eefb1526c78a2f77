/* hubd.conf parser on libinih. Our own line reader feeds inih so that every
 * message carries file:line, overlong lines are caught instead of split,
 * and sections are seen even when they hold no key. */
#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "daemon/config.h"

#define LINE_MAX_LEN	1024
#define GUESTS_MAX	HP_MAX_GUESTS
#define ARGS_MAX	64

enum { SEC_NONE, SEC_HUB, SEC_GUEST, SEC_BAD };

struct parser {
	struct hub_conf	*c;
	const char	*file;
	FILE		*in;
	FILE		*errs;
	int		errors;
	int		line;
	int		section;	/* SEC_* */
	int		hub_line;
	uint64_t	hub_seen;	/* bit per hub key */
	uint64_t	guest_seen;	/* bit per guest key, current guest */
	int		payload_set;	/* max_payload_size given explicitly */
};

static void
perr(struct parser *p, int line, const char *fmt, ...)
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

/* Unsigned decimal with an optional binary suffix (K, M, G) when sizes. */
static int
parse_u64(const char *s, int sizes, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *q = s;

	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	for (; isdigit((unsigned char)*q); q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	if (sizes && *q != '\0' && q[1] == '\0') {
		switch (*q) {
		case 'K': case 'k': mult = 1ull << 10; q++; break;
		case 'M': case 'm': mult = 1ull << 20; q++; break;
		case 'G': case 'g': mult = 1ull << 30; q++; break;
		}
	}
	if (*q != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* A duration: 0, or a number with a unit ns, us, ms, s, min. */
static int
parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000ull }, { "min", 60000000000ull },
	};
	char num[32];
	size_t n = strspn(s, "0123456789");
	uint64_t v;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	if (parse_u64(num, 0, &v) != 0)
		return -ERANGE;
	if (s[n] == '\0')
		return v == 0 ? (*ns = 0, 0) : -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s + n, units[i].unit) != 0)
			continue;
		if (v > UINT64_MAX / units[i].ns)
			return -ERANGE;
		*ns = v * units[i].ns;
		return 0;
	}
	return -EINVAL;
}

static int
parse_u32_key(struct parser *p, const char *name, const char *value, int sizes,
	      uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(value, sizes, &v) != 0 || v < min || v > max) {
		perr(p, p->line, "%s: '%s' is not a%s number from %" PRIu32
		     " to %" PRIu32, name, value, sizes ? " size or" : "", min, max);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int
parse_duration_key(struct parser *p, const char *name, const char *value,
		   uint64_t *out)
{
	if (parse_duration(value, out) != 0) {
		perr(p, p->line, "%s: '%s' is not a duration (0, or a number "
		     "with ns, us, ms, s or min)", name, value);
		return -1;
	}
	return 0;
}

/* A duration that must not be 0 (0 would mean "at once", never wanted). */
static void
parse_positive_duration_key(struct parser *p, const char *name, const char *value,
			    uint64_t *out)
{
	uint64_t v;

	if (parse_duration_key(p, name, value, &v) != 0)
		return;
	if (v == 0) {
		perr(p, p->line, "%s: must be more than 0", name);
		return;
	}
	*out = v;
}

static int
set_string(struct parser *p, const char *name, const char *value, char **out)
{
	if (*value == '\0') {
		perr(p, p->line, "%s: empty value", name);
		return -1;
	}
	free(*out);
	if ((*out = strdup(value)) == NULL) {
		perr(p, p->line, "out of memory");
		return -1;
	}
	return 0;
}

static const char *const hub_keys[] = {
	"segment", "control", "max_guests", "ring_size", "slot_size",
	"slots_per_guest", "max_channels", "initial_credit", "max_payload_size",
	"heartbeat_interval", "attach_timeout", "stop_grace", "group",
	"goodbye_grace", "client_timeout", NULL,
};
static const char *const guest_keys[] = {
	"exec", "args", "restart", "max_deaths", "death_window",
	"backoff_min", "backoff_max", "user", "group", "limit_memory", "limit_files", NULL,
};

static int
key_index(const char *const *keys, const char *name)
{
	for (int i = 0; keys[i] != NULL; i++)
		if (strcmp(keys[i], name) == 0)
			return i;
	return -1;
}

static int64_t
group_id(struct parser *p, const char *value)
{
	struct group *gr = getgrnam(value);

	if (gr == NULL) {
		perr(p, p->line, "group: no group '%s' on this system", value);
		return -1;
	}
	return gr->gr_gid;
}

static void
hub_key(struct parser *p, int k, const char *name, const char *value)
{
	struct hub_conf *c = p->c;
	struct hp_params *hp = &c->params;

	switch (k) {
	case 0: set_string(p, name, value, &c->segment_path); break;
	case 1: set_string(p, name, value, &c->control_path); break;
	case 2: parse_u32_key(p, name, value, 0, 1, HP_MAX_GUESTS, &hp->max_guests); break;
	case 3: parse_u32_key(p, name, value, 0, 2, HP_RING_SIZE_MAX, &hp->ring_size); break;
	case 4: parse_u32_key(p, name, value, 1, 64, UINT32_MAX, &hp->slot_size); break;
	case 5: parse_u32_key(p, name, value, 0, 1, HP_SLOTS_MAX, &hp->slots_per_guest); break;
	case 6: parse_u32_key(p, name, value, 0, 2, HP_CHANNELS_MAX, &hp->max_channels); break;
	case 7: parse_u32_key(p, name, value, 1, 1, INT32_MAX, &hp->initial_credit); break;
	case 8:
		if (parse_u32_key(p, name, value, 1, 1, UINT32_MAX, &hp->max_payload_size) == 0)
			p->payload_set = 1;
		break;
	case 9: parse_duration_key(p, name, value, &hp->heartbeat_interval); break;
	case 10: parse_positive_duration_key(p, name, value, &c->attach_timeout_ns); break;
	case 11: parse_duration_key(p, name, value, &c->stop_grace_ns); break;
	case 12: c->gid = group_id(p, value); break;
	case 13: parse_duration_key(p, name, value, &c->goodbye_grace_ns); break;
	case 14: parse_duration_key(p, name, value, &c->client_timeout_ns); break;
	}
}

/* args: split on blanks; "double quotes" group, \" and \\ escape inside. */
static int
split_args(struct parser *p, const char *value, struct guest_conf *g)
{
	char *argv[ARGS_MAX + 2], buf[LINE_MAX_LEN];
	int argc = 1;
	const char *s = value;

	while (*s != '\0') {
		size_t n = 0;
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
			buf[n++] = *s++;
		}
		if (quoted) {
			perr(p, p->line, "args: unterminated quote");
			goto fail;
		}
		if (argc > ARGS_MAX) {
			perr(p, p->line, "args: more than %d arguments", ARGS_MAX);
			goto fail;
		}
		buf[n] = '\0';
		if ((argv[argc++] = strdup(buf)) == NULL)
			goto fail;
	}
	argv[argc] = NULL;
	if (g->argv != NULL) {
		for (int i = 1; g->argv[i] != NULL; i++)
			free(g->argv[i]);
		free(g->argv);
	}
	if ((g->argv = calloc((size_t)argc + 1, sizeof(char *))) == NULL)
		goto fail;
	memcpy(g->argv + 1, argv + 1, (size_t)argc * sizeof(char *));
	return 0;
fail:
	while (--argc >= 1)
		free(argv[argc]);
	return -1;
}

static void
guest_key(struct parser *p, int k, const char *name, const char *value)
{
	struct guest_conf *g = &p->c->guests[p->c->nguests - 1];

	switch (k) {
	case 0: set_string(p, name, value, &g->exec); break;
	case 1: split_args(p, value, g); break;
	case 2:
		if (strcmp(value, "never") == 0)
			g->restart = RESTART_NEVER;
		else if (strcmp(value, "on-failure") == 0)
			g->restart = RESTART_ON_FAILURE;
		else if (strcmp(value, "always") == 0)
			g->restart = RESTART_ALWAYS;
		else
			perr(p, p->line, "restart: '%s' is not always, on-failure or never", value);
		break;
	case 3: parse_u32_key(p, name, value, 0, 1, 1000000, &g->max_deaths); break;
	case 4: parse_duration_key(p, name, value, &g->death_window_ns); break;
	case 5: parse_duration_key(p, name, value, &g->backoff_min_ns); break;
	case 6: parse_duration_key(p, name, value, &g->backoff_max_ns); break;
	case 7: {
		struct passwd *pw = getpwnam(value);

		if (pw == NULL) {
			perr(p, p->line, "user: no user '%s' on this system", value);
			break;
		}
		g->uid = pw->pw_uid;
		if (g->gid < 0)
			g->gid = pw->pw_gid;
		break;
	}
	case 8: g->gid = group_id(p, value); break;
	case 9: {
		uint64_t v;

		if (parse_u64(value, 1, &v) != 0 || v < (1u << 20)) {
			perr(p, p->line, "limit_memory: '%s' is not a size of 1M or more", value);
			break;
		}
		g->limit_memory = v;
		break;
	}
	case 10: {
		uint32_t v;

		if (parse_u32_key(p, name, value, 0, 16, 1u << 20, &v) == 0)
			g->limit_files = v;
		break;
	}
	}
}

static int
handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	const char *const *keys;
	uint64_t *seen;
	int k;

	(void)section;	/* tracked by the reader, which knows the line */
	switch (p->section) {
	case SEC_NONE:
		perr(p, p->line, "'%s' outside of any section", name);
		return 1;
	case SEC_BAD:
		return 1;	/* the section line was reported already */
	case SEC_HUB:
		keys = hub_keys;
		seen = &p->hub_seen;
		break;
	default:
		keys = guest_keys;
		seen = &p->guest_seen;
		break;
	}
	if ((k = key_index(keys, name)) < 0) {
		perr(p, p->line, "unknown key '%s' in [%s]", name,
		     p->section == SEC_HUB ? "hub" : "guest");
		return 1;
	}
	if (*seen & (1ull << k)) {
		perr(p, p->line, "duplicate key '%s'", name);
		return 1;
	}
	*seen |= 1ull << k;
	if (p->section == SEC_HUB)
		hub_key(p, k, name, value);
	else
		guest_key(p, k, name, value);
	return 1;
}

static void
guest_defaults(struct guest_conf *g)
{
	g->restart = RESTART_ON_FAILURE;
	g->max_deaths = 5;
	g->death_window_ns = 60ull * 1000000000;
	g->backoff_min_ns = 100ull * 1000000;
	g->backoff_max_ns = 30ull * 1000000000;
	g->uid = g->gid = -1;
}

static int
valid_guest_name(const char *s, size_t n)
{
	if (n == 0 || n > GUEST_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) == NULL)
			return 0;
	return 1;
}

static void
begin_section(struct parser *p, const char *s, size_t n)
{
	struct hub_conf *c = p->c;
	struct guest_conf *g;

	p->section = SEC_BAD;
	p->guest_seen = 0;
	if (n == 3 && memcmp(s, "hub", 3) == 0) {
		if (p->hub_line != 0) {
			perr(p, p->line, "duplicate [hub] section (first at line %d)", p->hub_line);
			return;
		}
		p->hub_line = p->line;
		p->section = SEC_HUB;
		return;
	}
	if (n < 6 || memcmp(s, "guest", 5) != 0 || !isblank((unsigned char)s[5])) {
		perr(p, p->line, "unknown section [%.*s]: expected [hub] or [guest NAME]", (int)n, s);
		return;
	}
	s += 6, n -= 6;
	while (n > 0 && isblank((unsigned char)*s))
		s++, n--;
	if (!valid_guest_name(s, n)) {
		perr(p, p->line, "bad guest name '%.*s': 1 to %d of A-Z a-z 0-9 _ . -",
		     (int)n, s, GUEST_NAME_MAX);
		return;
	}
	for (uint32_t i = 0; i < c->nguests; i++) {
		if (strlen(c->guests[i].name) == n && memcmp(c->guests[i].name, s, n) == 0) {
			perr(p, p->line, "duplicate guest '%.*s' (first at line %d)",
			     (int)n, s, c->guests[i].line);
			return;
		}
	}
	if (c->nguests == GUESTS_MAX) {
		perr(p, p->line, "more than %u guests", GUESTS_MAX);
		return;
	}
	if ((g = realloc(c->guests, (c->nguests + 1) * sizeof(*g))) == NULL) {
		perr(p, p->line, "out of memory");
		return;
	}
	c->guests = g;
	g = &c->guests[c->nguests++];
	memset(g, 0, sizeof(*g));
	memcpy(g->name, s, n);
	g->line = p->line;
	guest_defaults(g);
	p->section = SEC_GUEST;
}

/* fgets for inih that counts lines, catches overlong ones and section lines. */
static char *
reader(char *str, int num, void *user)
{
	struct parser *p = user;
	char *s, *end;
	size_t len;

	if (fgets(str, num, p->in) == NULL)
		return NULL;
	p->line++;
	len = strlen(str);
	if (len > 0 && str[len - 1] != '\n' && !feof(p->in)) {
		int ch;

		perr(p, p->line, "line longer than %d bytes", num - 2);
		while ((ch = fgetc(p->in)) != EOF && ch != '\n')
			;
		str[0] = '\0';
		return str;
	}
	if (memchr(str, '\0', len) != NULL || strlen(str) != len) {
		perr(p, p->line, "NUL byte in line");
		str[0] = '\0';
		return str;
	}
	for (s = str; isspace((unsigned char)*s); s++)
		;
	if (*s == '\0' || *s == ';' || *s == '#')
		return str;
	if (*s != '[') {
		if (strpbrk(s, "=:") == NULL) {
			perr(p, p->line, "expected 'key = value' or '[section]'");
			str[0] = '\0';
		}
		return str;
	}
	if ((end = strchr(s, ']')) == NULL) {
		perr(p, p->line, "section line without ']'");
		p->section = SEC_BAD;
		str[0] = '\0';
		return str;
	}
	begin_section(p, s + 1, (size_t)(end - s - 1));
	return str;
}

static int
exec_path(struct parser *p, struct guest_conf *g)
{
	char *path, *slash;

	if (g->exec == NULL) {
		perr(p, g->line, "guest '%s' has no exec", g->name);
		return -1;
	}
	/* A relative exec is relative to the config file's directory, so a
	 * config and its guests can move together. */
	if (g->exec[0] != '/' && (slash = strrchr(p->file, '/')) != NULL) {
		if (asprintf(&path, "%.*s/%s", (int)(slash - p->file), p->file, g->exec) < 0)
			return -1;
		free(g->exec);
		g->exec = path;
	}
	if (g->argv == NULL && (g->argv = calloc(2, sizeof(char *))) == NULL)
		return -1;
	g->argv[0] = g->exec;
	return 0;
}

static void
finish(struct parser *p)
{
	struct hub_conf *c = p->c;
	struct hp_geometry geo;
	const char *why = NULL;
	int line = p->hub_line ? p->hub_line : 1;

	if (!p->payload_set && c->params.slot_size >= 64)
		c->params.max_payload_size = c->params.slot_size - HP_SLOT_GEN_SIZE;
	if (hp_geometry_compute(&c->params, &geo, &why) != 0)
		perr(p, line, "[hub]: %s", why ? why : "invalid segment parameters");
	if (c->nguests > c->params.max_guests)
		perr(p, line, "%u guests but max_guests is %u", c->nguests,
		     c->params.max_guests);
	for (uint32_t i = 0; i < c->nguests; i++) {
		struct guest_conf *g = &c->guests[i];

		if (exec_path(p, g) != 0)
			continue;
		if (g->backoff_min_ns > g->backoff_max_ns)
			perr(p, g->line, "guest '%s': backoff_min is above backoff_max", g->name);
		/* another user must be able to map the segment, never everyone */
		if ((g->uid >= 0 || g->gid >= 0) && c->gid < 0)
			perr(p, g->line, "guest '%s' runs as another user or group: set [hub] "
			     "group so that it can map the segment", g->name);
		else if (g->gid >= 0 && g->uid >= 0 && g->gid != c->gid &&
			 g->uid != (int64_t)geteuid())
			perr(p, g->line, "guest '%s': its group is not [hub] group, so it "
			     "could not map the segment", g->name);
	}
}

int
config_load(const char *file, struct hub_conf *c, FILE *errs)
{
	struct parser p = { .c = c, .file = file, .errs = errs };
	int rc;

	memset(c, 0, sizeof(*c));
	hp_params_default(&c->params);
	c->attach_timeout_ns = 10ull * 1000000000;
	c->gid = -1;
	c->stop_grace_ns = 5ull * 1000000000;
	c->goodbye_grace_ns = 100ull * 1000000;
	c->client_timeout_ns = 30ull * 1000000000;
	if ((c->file = strdup(file)) == NULL ||
	    (c->segment_path = strdup("/dev/shm/hub")) == NULL ||
	    (c->control_path = strdup("/run/hub/hubd.sock")) == NULL)
		goto fail;
	if ((p.in = fopen(file, "re")) == NULL) {
		if (errs != NULL)
			fprintf(errs, "%s: %s\n", file, strerror(errno));
		goto fail;
	}
	ini_allow_multiline = 0;	/* continuation lines hide mistakes */
	ini_inline_comment_prefixes = ";#";	/* "key = value  # why" */
	ini_max_line = LINE_MAX_LEN;
	rc = ini_parse_stream(reader, &p, handler, &p);
	fclose(p.in);
	if (rc < 0)
		perr(&p, 0, "cannot parse (%d)", rc);
	else if (rc > 0 && p.errors == 0)
		perr(&p, rc, "syntax error");	/* the reader should have caught it */
	finish(&p);
	if (p.errors == 0)
		return 0;
fail:
	config_free(c);
	return -1;
}

static void
guest_conf_clear(struct guest_conf *g)
{
	if (g->argv != NULL)
		for (int a = 1; g->argv[a] != NULL; a++)
			free(g->argv[a]);
	free(g->argv);
	free(g->exec);
}

void
guest_conf_free(struct guest_conf *g)
{
	if (g == NULL)
		return;
	guest_conf_clear(g);
	free(g);
}

struct guest_conf *
guest_conf_dup(const struct guest_conf *g)
{
	struct guest_conf *d = calloc(1, sizeof(*d));
	int n = 0;

	if (d == NULL)
		return NULL;
	*d = *g;
	d->exec = NULL;
	d->argv = NULL;
	while (g->argv[n] != NULL)
		n++;
	if ((d->exec = strdup(g->exec)) == NULL ||
	    (d->argv = calloc((size_t)n + 1, sizeof(char *))) == NULL)
		goto fail;
	d->argv[0] = d->exec;
	for (int i = 1; i < n; i++)
		if ((d->argv[i] = strdup(g->argv[i])) == NULL)
			goto fail;
	return d;
fail:
	guest_conf_free(d);
	return NULL;
}

int
guest_conf_equal(const struct guest_conf *a, const struct guest_conf *b)
{
	int i;

	if (strcmp(a->name, b->name) != 0 || strcmp(a->exec, b->exec) != 0 ||
	    a->restart != b->restart || a->max_deaths != b->max_deaths ||
	    a->uid != b->uid || a->gid != b->gid || a->limit_memory != b->limit_memory ||
	    a->limit_files != b->limit_files ||
	    a->death_window_ns != b->death_window_ns ||
	    a->backoff_min_ns != b->backoff_min_ns || a->backoff_max_ns != b->backoff_max_ns)
		return 0;
	for (i = 1; a->argv[i] != NULL && b->argv[i] != NULL; i++)
		if (strcmp(a->argv[i], b->argv[i]) != 0)
			return 0;
	return a->argv[i] == NULL && b->argv[i] == NULL;
}

void
config_free(struct hub_conf *c)
{
	for (uint32_t i = 0; i < c->nguests; i++)
		guest_conf_clear(&c->guests[i]);
	free(c->guests);
	free(c->file);
	free(c->segment_path);
	free(c->control_path);
	memset(c, 0, sizeof(*c));
}

const char *
config_restart_name(int restart)
{
	switch (restart) {
	case RESTART_NEVER: return "never";
	case RESTART_ALWAYS: return "always";
	default: return "on-failure";
	}
}
