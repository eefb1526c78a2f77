/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Reading hubd.conf, on libinih: our own line reader feeds inih so that
 * every message carries file:line, overlong lines are caught instead of
 * split, and sections are seen even when they hold no key; the sections,
 * [hub] and [guest NAME] with its defaults; the checks across keys once
 * the file is read (whose method names are whose among them); and the
 * config's lifetime (free, a guest's copy and comparison). What each key
 * means and which values it takes is config_keys.c's. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "daemon/config.h"
#include "daemon/config_parser.h"
#include "daemon/size.h"
#include "proto/builtin.h"
#include "proto/conffile.h"
#include "proto/lane.h"
#include "proto/topic.h"

#define GUESTS_MAX	HP_MAX_GUESTS
#define TOPICS_MAX	1024u	/* [topic NAME] sections */

static void
config_guest_defaults(struct config_guest *g)
{
	g->restart = RESTART_ON_FAILURE;
	g->max_deaths = 5;
	g->death_window_ns = 60ull * 1000000000;
	g->backoff_min_ns = 100ull * 1000000;
	g->backoff_max_ns = 30ull * 1000000000;
	g->heartbeat_ns = CONFIG_HEARTBEAT_HUB;
	g->uid = g->gid = -1;
	g->run_uid = g->run_gid = -1;
	g->shared_pool = 1;
	g->seccomp = 1;
	g->lanes = LANES_ANY;
}

int
config_lanes_allow(const struct config_guest *g, const char *name)
{
	char word[CONFIG_GUEST_NAME_MAX + 3];

	if (g->lanes != LANES_WITH)
		return g->lanes == LANES_ANY;
	snprintf(word, sizeof(word), " %s ", name);
	return strstr(g->lanes_with, word) != NULL;
}

/* [topic NAME]: a topic's settings, its name one a method could have. */
static void
begin_topic(struct parser *p, const char *s, size_t n)
{
	struct hub_conf *c = p->c;
	struct config_topic *t;
	const char *why;

	while (n > 0 && isblank((unsigned char)*s))
		s++, n--;
	if (n >= sizeof(t->name) || (why = hp_method_name_refused(s, n)) != NULL) {
		config_perr(p, p->line, "bad topic name '%.*s': %s", (int)n, s,
			    n >= sizeof(t->name) ? "longer than 64 bytes" : why);
		return;
	}
	for (uint32_t i = 0; i < c->ntopics; i++)
		if (strlen(c->topics[i].name) == n && memcmp(c->topics[i].name, s, n) == 0) {
			config_perr(p, p->line, "duplicate topic '%.*s' (first at line %d)",
				    (int)n, s, c->topics[i].line);
			return;
		}
	if (c->ntopics == TOPICS_MAX) {
		config_perr(p, p->line, "more than %u topic sections", TOPICS_MAX);
		return;
	}
	if ((t = realloc(c->topics, (c->ntopics + 1) * sizeof(*t))) == NULL) {
		config_perr(p, p->line, "out of memory");
		return;
	}
	c->topics = t;
	t = &c->topics[c->ntopics++];
	memset(t, 0, sizeof(*t));
	t->slots = CONFIG_TOPIC_SLOTS;
	t->event_max = CONFIG_TOPIC_EVENT_MAX;
	t->block_ns = CONFIG_TOPIC_BLOCK_NS;
	memcpy(t->name, s, n);
	t->name[n] = '\0';
	t->line = p->line;
	p->topic_seen = 0;
	p->section = SEC_TOPIC;
}

static void
begin_section(struct parser *p, const char *s, size_t n)
{
	struct hub_conf *c = p->c;
	struct config_guest *g;

	p->section = SEC_BAD;
	p->guest_seen = 0;
	if (n == 3 && memcmp(s, "hub", 3) == 0) {
		if (p->hub_line != 0) {
			config_perr(p, p->line, "duplicate [hub] section (first at line %d)",
				    p->hub_line);
			return;
		}
		p->hub_line = p->line;
		p->section = SEC_HUB;
		return;
	}
	if (n == 4 && memcmp(s, "pool", 4) == 0) {
		if (p->pool_line != 0) {
			config_perr(p, p->line, "duplicate [pool] section (first at line %d)",
				    p->pool_line);
			return;
		}
		p->pool_line = p->line;
		p->section = SEC_POOL;
		return;
	}
	if (n > 6 && memcmp(s, "topic", 5) == 0 && isblank((unsigned char)s[5])) {
		begin_topic(p, s + 6, n - 6);
		return;
	}
	if (n < 6 || memcmp(s, "guest", 5) != 0 || !isblank((unsigned char)s[5])) {
		config_perr(p, p->line, "unknown section [%.*s]: expected [hub], [pool], "
			    "[guest NAME] or [topic NAME]", (int)n, s);
		return;
	}
	s += 6, n -= 6;
	while (n > 0 && isblank((unsigned char)*s))
		s++, n--;
	if (!config_valid_name(s, n)) {
		config_perr(p, p->line, "bad guest name '%.*s': 1 to %d of A-Z a-z 0-9 _ . -",
			    (int)n, s, CONFIG_GUEST_NAME_MAX);
		return;
	}
	for (uint32_t i = 0; i < c->nguests; i++) {
		if (strlen(c->guests[i].name) == n && memcmp(c->guests[i].name, s, n) == 0) {
			config_perr(p, p->line, "duplicate guest '%.*s' (first at line %d)",
				    (int)n, s, c->guests[i].line);
			return;
		}
	}
	if (c->nguests == GUESTS_MAX) {
		/* once, not for every section past it */
		if (!p->too_many)
			config_perr(p, p->line, "more than %u guests: this one and those after it",
				    GUESTS_MAX);
		p->too_many = 1;
		p->section = SEC_BAD;	/* its keys are no other guest's */
		return;
	}
	if ((g = realloc(c->guests, (c->nguests + 1) * sizeof(*g))) == NULL) {
		config_perr(p, p->line, "out of memory");
		return;
	}
	c->guests = g;
	g = &c->guests[c->nguests++];
	memset(g, 0, sizeof(*g));
	memcpy(g->name, s, n);
	g->line = p->line;
	config_guest_defaults(g);
	p->section = SEC_GUEST;
}

/* fgets for inih that counts lines, catches overlong ones, NUL bytes,
 * read errors and section lines. */
static char *
reader(char *str, int num, void *user)
{
	struct parser *p = user;
	char *s, *end, *rest;
	size_t len;

	/* fgets' own NUL is then the last in str, past any the line holds */
	memset(str, '\n', (size_t)num);
	errno = 0;
	if (fgets(str, num, p->in) == NULL) {
		/* a read error (EIO) is no end of file: taken
		 * for one, a reload of what was read would drop the rest */
		if (ferror(p->in))
			config_perr(p, p->line + 1, "cannot read: %s",
				    strerror(errno != 0 ? errno : EIO));
		return NULL;
	}
	p->line++;
	len = (size_t)((char *)memrchr(str, '\0', (size_t)num) - str);
	/* a UTF-8 byte order mark, as some editors write: not the file's */
	if (p->line == 1 && len >= 3 && memcmp(str, "\xEF\xBB\xBF", 3) == 0) {
		memmove(str, str + 3, len - 2);
		len -= 3;
	}
	if (len > 0 && str[len - 1] != '\n' && !feof(p->in)) {
		int ch;

		config_perr(p, p->line, "line longer than %d bytes", num - 2);
		while ((ch = fgetc(p->in)) != EOF && ch != '\n')
			;
		str[0] = '\0';
		return str;
	}
	if (strlen(str) != len) {
		config_perr(p, p->line, "a NUL byte in the line");
		str[0] = '\0';
		return str;
	}
	for (s = str; isspace((unsigned char)*s); s++)
		;
	if (*s == '\0' || *s == ';' || *s == '#')
		return str;
	if (*s != '[') {
		if (strpbrk(s, "=:") == NULL) {
			config_perr(p, p->line, "expected 'key = value' or '[section]'");
			str[0] = '\0';
		}
		return str;
	}
	if ((end = strchr(s, ']')) == NULL) {
		config_perr(p, p->line, "section line without ']'");
		p->section = SEC_BAD;
		str[0] = '\0';
		return str;
	}
	/* after it a comment at most: "[hub] x" is no [hub] */
	rest = end + 1 + strspn(end + 1, " \t\r\n");
	if (*rest != '\0' && *rest != ';' && *rest != '#') {
		config_perr(p, p->line, "text after the section's ']'");
		p->section = SEC_BAD;
		str[0] = '\0';
		return str;
	}
	begin_section(p, s + 1, (size_t)(end - s - 1));
	return str;
}

static int
exec_path(struct parser *p, struct config_guest *g)
{
	char *path, *slash;

	if (g->exec == NULL) {
		config_perr(p, g->line, "guest '%s' has no exec", g->name);
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

/* What a reload says of a value the hub keeps until it restarts. */
static const char *
kept(const struct parser *p, uint32_t file, uint32_t running)
{
	return p->running != NULL && file != running ?
	    ": the running one, kept until hubd restarts" : "";
}

/* 0 (unset) is a quarter of the ids, worked out where it is used
 * (streams_caller_full): against the max_channels the hub runs with, a
 * reload's being kept. */
static void
channels_per_caller(struct parser *p, int line)
{
	struct hub_conf *c = p->c;
	uint32_t max = p->running != NULL ? p->running->params.max_channels :
	    c->params.max_channels;
	uint32_t ids = (max - 1) / 2;

	if (c->channels_per_caller > ids && max >= 2)
		config_perr(p, line, "channels_per_caller is %u, but hubd opens at most %u "
			    "channels in a guest's table (max_channels %u%s)",
			    c->channels_per_caller, ids, max,
			    kept(p, c->params.max_channels, max));
}

/* More guests than entries: they could never all run. A reload keeps the
 * running max_guests; its error is at the first guest past it. */
static void
guests_fit(struct parser *p, int line)
{
	struct hub_conf *c = p->c;
	uint32_t max = p->running != NULL ? p->running->params.max_guests :
	    c->params.max_guests;

	if (c->nguests > c->params.max_guests)
		config_perr(p, line, "%u guests but max_guests is %u", c->nguests,
			    c->params.max_guests);
	else if (c->nguests > max)
		config_perr(p, c->guests[max].line, "guest '%s': %u guests but max_guests is "
			    "%u%s", c->guests[max].name, c->nguests, max,
			    kept(p, c->params.max_guests, max));
}

/* -- whose names are whose --------------------------------------------- */

int
config_guest_publishes(const struct config_guest *g, const char *topic)
{
	size_t n = strlen(g->name);

	if (strncmp(topic, g->name, n) == 0 && topic[n] == '.' && topic[n + 1] != '\0')
		return 1;
	for (char **q = g->publishes; q != NULL && *q != NULL; q++)
		if (config_pattern_match(*q, topic))
			return 1;
	return 0;
}

const struct config_topic *
config_topic_of(const struct hub_conf *c, const char *name, struct config_topic *def)
{
	for (uint32_t i = 0; i < c->ntopics; i++)
		if (strcmp(c->topics[i].name, name) == 0)
			return &c->topics[i];
	memset(def, 0, sizeof(*def));
	snprintf(def->name, sizeof(def->name), "%s", name);
	def->slots = CONFIG_TOPIC_SLOTS;
	def->event_max = CONFIG_TOPIC_EVENT_MAX;
	def->block_ns = CONFIG_TOPIC_BLOCK_NS;
	return def;
}

int
config_topic_allows(const struct config_topic *t, const char *guest)
{
	if (t->subscribers == NULL)
		return 1;
	if (guest == NULL)
		return 0;
	for (char **q = t->subscribers; *q != NULL; q++)
		if (strcmp(*q, guest) == 0)
			return 1;
	return 0;
}

int
config_guest_covers(const struct config_guest *g, const char *method)
{
	size_t n = strlen(g->name);

	if (strncmp(method, g->name, n) == 0 && method[n] == '.' && method[n + 1] != '\0')
		return 1;
	for (char **q = g->provides; q != NULL && *q != NULL; q++)
		if (config_pattern_match(*q, method))
			return 1;
	return 0;
}

/* A name belongs to one guest (doc/security.md): a guest may register
 * its own NAME.* and what its provides lists, so no two guests may be
 * able to register the same name, and none a name of the host's. A guest
 * named hub would own hub.*, the host's services: refused by name. Each
 * overlap is reported once, where the later of the two is written. */
static void
check_names(struct parser *p)
{
	static const char host[] = HP_SVC_PREFIX "*";
	struct hub_conf *c = p->c;
	char own[CONFIG_GUEST_NAME_MAX + 3], other[CONFIG_GUEST_NAME_MAX + 3];

	for (uint32_t i = 0; i < c->nguests; i++) {
		const struct config_guest *g = &c->guests[i];

		snprintf(own, sizeof(own), "%s.*", g->name);
		if (strcmp(g->name, "hub") == 0)
			config_perr(p, g->line, "guest 'hub': a guest's names are NAME.*, and "
				    "hub.* are the host's services: choose another name");
		else if (config_patterns_overlap(own, host))
			config_perr(p, g->line, "guest '%s': its names %s are the host's (%s)",
				    g->name, own, host);
		for (char **q = g->provides; q != NULL && *q != NULL; q++)
			if (config_patterns_overlap(*q, host))
				config_perr(p, g->provides_line, "guest '%s': provides '%s' "
					    "covers names of the host's (%s)", g->name, *q, host);
		for (uint32_t j = 0; j < i; j++) {
			const struct config_guest *o = &c->guests[j];

			snprintf(other, sizeof(other), "%s.*", o->name);
			if (config_patterns_overlap(own, other))
				config_perr(p, g->line, "guest '%s': its names %s overlap %s, "
					    "guest '%s''s (line %d)", g->name, own, other,
					    o->name, o->line);
			for (char **q = g->provides; q != NULL && *q != NULL; q++)
				if (config_patterns_overlap(*q, other))
					config_perr(p, g->provides_line, "guest '%s': provides "
						    "'%s' overlaps %s, the names of guest '%s' "
						    "(line %d)", g->name, *q, other, o->name,
						    o->line);
			for (char **r = o->provides; r != NULL && *r != NULL; r++)
				if (config_patterns_overlap(*r, own))
					config_perr(p, o->provides_line, "guest '%s': provides "
						    "'%s' overlaps %s, the names of guest '%s' "
						    "(line %d)", o->name, *r, own, g->name,
						    g->line);
			for (char **q = g->provides; q != NULL && *q != NULL; q++)
				for (char **r = o->provides; r != NULL && *r != NULL; r++)
					if (config_patterns_overlap(*q, *r))
						config_perr(p, g->provides_line, "guest '%s': "
							    "provides '%s' overlaps '%s', which "
							    "guest '%s' provides (line %d)",
							    g->name, *q, *r, o->name,
							    o->provides_line);
		}
	}
}

/* The line of a problem with the segment's terms: the key its text
 * begins with ("slot_size must be..."), max_payload_size's
 * at slot_size's when only that is set; else the [hub] line. */
static int
geometry_line(const struct parser *p, const char *why)
{
	char key[32] = "";

	if (why != NULL)
		snprintf(key, sizeof(key), "%.*s", (int)strcspn(why, " "), why);
	if (strcmp(key, "max_payload_size") == 0 && !p->payload_set)
		return config_hub_line(p, "slot_size");
	return config_hub_line(p, key);
}

static void
finish(struct parser *p)
{
	struct hub_conf *c = p->c;
	struct hp_geometry geo;
	const char *why = NULL;
	int line = p->hub_line ? p->hub_line : 1;
	uint32_t own = 0;	/* guests that get a uid of their own */

	if (!p->payload_set && c->params.slot_size >= 64)
		c->params.max_payload_size = c->params.slot_size - HP_SLOT_GEN_SIZE;
	/* the pool's terms are checked on their own first: its errors name [pool] */
	if (hp_var_conf_check(&c->params.var, &why) != 0)
		config_perr(p, p->pool_line ? p->pool_line : line, "[pool]: %s", why);
	else if (hp_var_max_size(&c->params.var, c->params.max_guests) > HP_SEGMENT_MAX)
		config_perr(p, p->pool_line ? p->pool_line : line,
			    "[pool]: a pool grown to max_extents would be larger than 64 GiB");
	else if (hp_geometry_compute(&c->params, &geo, &why) != 0)
		config_perr(p, geometry_line(p, why), "[hub]: %s",
			    why ? why : "invalid segment parameters");
	c->control_line = config_hub_line(p, "control");
	guests_fit(p, line);
	channels_per_caller(p, config_hub_line(p, "channels_per_caller"));
	for (uint32_t i = 0; i < c->nguests; i++) {
		struct config_guest *g = &c->guests[i];

		/* a uid of its own, unless it names a user; a change of the
		 * range is a change of its settings (a reload restarts it) */
		if (g->uid < 0) {
			g->uids = c->guest_uids;
			own += c->guest_uids.first != 0;
		}
		if (exec_path(p, g) != 0)
			continue;
		if (g->backoff_min_ns > g->backoff_max_ns) {
			char lo[32], hi[32];

			/* either may be the default: both said */
			config_perr(p, g->backoff_line ? g->backoff_line : g->line,
				    "guest '%s': backoff_min (%s) is above backoff_max (%s)",
				    g->name, duration_text(lo, sizeof(lo), g->backoff_min_ns),
				    duration_text(hi, sizeof(hi), g->backoff_max_ns));
		}
	}
	if (own > 0 && (uint64_t)c->guest_uids.last - c->guest_uids.first + 1 < own)
		config_perr(p, p->hub_line ? p->hub_line : line, "guest_uids: %u uid(s) for "
			    "%u guests without user =",
			    c->guest_uids.last - c->guest_uids.first + 1, own);
	for (uint32_t i = 0; i < c->ntopics; i++) {
		struct hp_topic_geom tg = { c->topics[i].slots, c->topics[i].event_max };

		if (hp_topic_geom_check(&tg, &why) != 0)
			config_perr(p, c->topics[i].line, "topic '%s': %s", c->topics[i].name, why);
	}
	check_names(p);
}

/* The config, a regular file (hp_config_open): neither a FIFO nor a
 * device could be read again by a reload. NULL: told why on errs. */
static FILE *
open_file(const char *file, FILE *errs)
{
	char why[160];
	FILE *f = hp_config_open(file, why, sizeof(why));

	if (f == NULL && errs != NULL)
		fprintf(errs, "%s: %s\n", file, why);
	return f;
}

int
config_load(const char *file, struct hub_conf *c, FILE *errs)
{
	return config_load_over(file, c, errs, NULL);
}

int
config_load_over(const char *file, struct hub_conf *c, FILE *errs,
		 const struct hub_conf *running)
{
	struct parser p = { .c = c, .file = file, .errs = errs, .running = running };
	int rc;

	memset(c, 0, sizeof(*c));
	hp_params_default(&c->params);
	c->attach_timeout_ns = 10ull * 1000000000;
	c->gid = -1;
	c->guest_uids = (struct config_uids){ CONFIG_GUEST_UIDS_FIRST, CONFIG_GUEST_UIDS_LAST };
	c->stop_grace_ns = 5ull * 1000000000;
	c->goodbye_grace_ns = 100ull * 1000000;
	c->client_timeout_ns = 30ull * 1000000000;
	c->calls_in_flight = 1024;
	c->lanes_per_guest = 16;
	c->lane_slots = HP_LANE_SLOTS;
	c->lane_ban_ns = 600ull * 1000000000;
	c->pool_sweep_ns = 250ull * 1000000;
	c->pool_stuck_ns = 30ull * 1000000000;
	c->pool_release_ns = 60ull * 1000000000;
	if ((c->file = strdup(file)) == NULL ||
	    (c->control_path = strdup(HUB_CONTROL_DEFAULT)) == NULL)
		goto fail;
	if ((p.in = open_file(file, errs)) == NULL)
		goto fail;
	ini_allow_multiline = 0;	/* continuation lines hide mistakes */
	ini_inline_comment_prefixes = ";#";	/* "key = value  # why" */
	ini_max_line = LINE_MAX_LEN;
	rc = ini_parse_stream(reader, &p, config_handler, &p);
	fclose(p.in);
	if (rc < 0)
		config_perr(&p, 0, "cannot parse (%d)", rc);
	else if (rc > 0 && p.errors == 0)
		config_perr(&p, rc, "syntax error");	/* the reader should have caught it */
	finish(&p);
	if (p.errors == 0)
		return 0;
fail:
	config_free(c);
	return -1;
}

static void
strv_free(char **v)
{
	if (v != NULL)
		for (int i = 0; v[i] != NULL; i++)
			free(v[i]);
	free(v);
}

static void
config_guest_clear(struct config_guest *g)
{
	if (g->argv != NULL)
		for (int a = 1; g->argv[a] != NULL; a++)
			free(g->argv[a]);
	free(g->argv);
	free(g->exec);
	strv_free(g->provides);
	strv_free(g->publishes);
	strv_free(g->env);
}

void
config_guest_free(struct config_guest *g)
{
	if (g == NULL)
		return;
	config_guest_clear(g);
	free(g);
}

/* A copy of v (NULL: none) in *d; -ENOMEM with *d freed. */
static int
strv_dup(char *const *v, char ***d)
{
	size_t n = 0;

	*d = NULL;
	if (v == NULL)
		return 0;
	while (v[n] != NULL)
		n++;
	if ((*d = calloc(n + 1, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (((*d)[i] = strdup(v[i])) == NULL) {
			strv_free(*d);
			*d = NULL;
			return -ENOMEM;
		}
	return 0;
}

struct config_guest *
config_guest_dup(const struct config_guest *g)
{
	struct config_guest *d = calloc(1, sizeof(*d));
	int n = 0;

	if (d == NULL)
		return NULL;
	*d = *g;
	d->exec = NULL;
	d->argv = NULL;
	d->provides = NULL;
	d->publishes = NULL;
	d->env = NULL;
	while (g->argv[n] != NULL)
		n++;
	if ((d->exec = strdup(g->exec)) == NULL ||
	    (d->argv = calloc((size_t)n + 1, sizeof(char *))) == NULL)
		goto fail;
	d->argv[0] = d->exec;
	for (int i = 1; i < n; i++)
		if ((d->argv[i] = strdup(g->argv[i])) == NULL)
			goto fail;
	if (strv_dup(g->provides, &d->provides) != 0 ||
	    strv_dup(g->publishes, &d->publishes) != 0 || strv_dup(g->env, &d->env) != 0)
		goto fail;
	return d;
fail:
	config_guest_free(d);
	return NULL;
}

/* Whether every pattern of a is one of b's (NULL: none). */
static int
strv_within(char *const *a, char *const *b)
{
	for (; a != NULL && *a != NULL; a++) {
		char *const *q = b;

		while (q != NULL && *q != NULL && strcmp(*q, *a) != 0)
			q++;
		if (q == NULL || *q == NULL)
			return 0;
	}
	return 1;
}

int
config_guest_equal(const struct config_guest *a, const struct config_guest *b)
{
	int i;

	/* the same names in another order are the same rights */
	if (!strv_within(a->provides, b->provides) || !strv_within(b->provides, a->provides))
		return 0;
	if (!strv_within(a->publishes, b->publishes) ||
	    !strv_within(b->publishes, a->publishes))
		return 0;
	/* and so is the same environment: each name is there once */
	if (!strv_within(a->env, b->env) || !strv_within(b->env, a->env))
		return 0;

	if (strcmp(a->name, b->name) != 0 || strcmp(a->exec, b->exec) != 0 ||
	    a->restart != b->restart || a->max_deaths != b->max_deaths ||
	    a->uid != b->uid || a->gid != b->gid || a->limit_memory != b->limit_memory ||
	    a->limit_files != b->limit_files || a->shared_pool != b->shared_pool ||
	    a->seccomp != b->seccomp || a->lanes != b->lanes ||
	    strcmp(a->lanes_with, b->lanes_with) != 0 ||
	    strcmp(a->zone, b->zone) != 0 ||
	    a->processors != b->processors || a->pool_quota != b->pool_quota ||
	    a->pool_quota_slots != b->pool_quota_slots ||
	    a->uids.first != b->uids.first || a->uids.last != b->uids.last ||
	    a->death_window_ns != b->death_window_ns ||
	    a->backoff_min_ns != b->backoff_min_ns || a->backoff_max_ns != b->backoff_max_ns ||
	    a->heartbeat_ns != b->heartbeat_ns || a->start_manual != b->start_manual)
		return 0;
	for (i = 1; a->argv[i] != NULL && b->argv[i] != NULL; i++)
		if (strcmp(a->argv[i], b->argv[i]) != 0)
			return 0;
	return a->argv[i] == NULL && b->argv[i] == NULL;
}

/* The keys of a guest's section that apply to the instance running: what
 * follows its deaths (lifecycle.c reads them at each) and its share of
 * its zone's pool (pool.c, at each sweep and send). */
#define LIVE(key, f)	{ key, offsetof(struct config_guest, f), \
			  sizeof(((struct config_guest *)0)->f) }
static const struct {
	const char	*name;
	size_t		off;
	size_t		size;
} live_keys[] = {
	LIVE("restart", restart),
	LIVE("max_deaths", max_deaths),
	LIVE("death_window", death_window_ns),
	LIVE("backoff_min", backoff_min_ns),
	LIVE("backoff_max", backoff_max_ns),
	LIVE("pool_quota", pool_quota),
	LIVE("pool_quota_slots", pool_quota_slots),
};
#undef LIVE

int
config_guest_take_live(struct config_guest *to, const struct config_guest *from,
		       char *names, size_t len)
{
	int n = 0;

	if (len > 0)
		names[0] = '\0';
	for (size_t i = 0; i < sizeof(live_keys) / sizeof(live_keys[0]); i++) {
		char *t = (char *)to + live_keys[i].off;
		const char *f = (const char *)from + live_keys[i].off;
		size_t used = len > 0 ? strlen(names) : 0;

		if (memcmp(t, f, live_keys[i].size) == 0)
			continue;
		memcpy(t, f, live_keys[i].size);
		if (len > used)
			snprintf(names + used, len - used, "%s%s", n > 0 ? ", " : "",
				 live_keys[i].name);
		n++;
	}
	return n;
}

int
config_guest_differs_live(const struct config_guest *a, const struct config_guest *b)
{
	struct config_guest t = *a;	/* shallow: compared, never freed */

	return config_guest_take_live(&t, b, NULL, 0) > 0 && config_guest_equal(&t, b);
}

int
config_topic_subscribers_equal(const struct config_topic *a, const struct config_topic *b)
{
	/* the same names in another order are the same rights; none (NULL)
	 * is every guest */
	return (a->subscribers == NULL) == (b->subscribers == NULL) &&
	    strv_within(a->subscribers, b->subscribers) &&
	    strv_within(b->subscribers, a->subscribers);
}

int
config_topic_equal(const struct config_topic *a, const struct config_topic *b)
{
	return strcmp(a->name, b->name) == 0 && a->slots == b->slots &&
	    a->event_max == b->event_max && a->block_ns == b->block_ns &&
	    config_topic_subscribers_equal(a, b);
}

static void
topics_clear(struct hub_conf *c)
{
	for (uint32_t i = 0; i < c->ntopics; i++)
		strv_free(c->topics[i].subscribers);
	free(c->topics);
	c->topics = NULL;
	c->ntopics = 0;
}

void
config_topics_take(struct hub_conf *to, struct hub_conf *from)
{
	topics_clear(to);
	to->topics = from->topics;
	to->ntopics = from->ntopics;
	from->topics = NULL;
	from->ntopics = 0;
}

void
config_free(struct hub_conf *c)
{
	for (uint32_t i = 0; i < c->nguests; i++)
		config_guest_clear(&c->guests[i]);
	free(c->guests);
	topics_clear(c);
	free(c->file);
	free(c->control_path);
	memset(c, 0, sizeof(*c));
}
