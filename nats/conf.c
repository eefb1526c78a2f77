/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats's config file (doc/nats.md, hub-nats(8)), on libinih: every
 * key checked, an unknown one refused, so a typo is an error and not a
 * default. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>
#include <sodium.h>

#include "nats/hubnats.h"
#include "proto/conffile.h"

struct parse {
	struct br_conf	*c;
	FILE		*f;
	int		line;		/* inih's handler is not told it */
	char		*why;
	size_t		cap;
	int		failed;
};

/* fgets for inih, counting lines. */
static char *
reader(char *str, int num, void *stream)
{
	struct parse *p = stream;
	char *r = fgets(str, num, p->f);

	if (r != NULL)
		p->line++;
	return r;
}

static int
fail(struct parse *p, int line, const char *fmt, const char *a, const char *b)
{
	char msg[256];

	if (!p->failed) {
		snprintf(msg, sizeof(msg), fmt, a, b);
		snprintf(p->why, p->cap, "line %d: %s", line, msg);
	}
	p->failed = 1;
	return 0;
}

/* A hub's name or a prefix: a single NATS subject token of letters,
 * digits, '-' and '_'. */
static int
token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return 0;
	for (const char *q = s; *q != '\0'; q++)
		if (!isalnum((unsigned char)*q) && *q != '-' && *q != '_')
			return 0;
	return 1;
}

/* A method name, or a pattern ("*", "a.*"): dot-separated tokens. */
static int
pattern_ok(const char *s)
{
	size_t n = strlen(s);
	char prev = '.';

	if (strcmp(s, "*") == 0)
		return 1;
	if (n == 0 || n > BR_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '*' && !(i == n - 1 && prev == '.'))
			return 0;
		if (ch == '.' && prev == '.')
			return 0;
		if (ch != '*' && ch != '.' && !isalnum((unsigned char)ch) && ch != '-' && ch != '_')
			return 0;
		prev = ch;
	}
	return prev != '.';
}

int
br_key_decode(const char *text, uint8_t *out, size_t cap, size_t *n)
{
	size_t len = strlen(text);

	if (len == cap * 2 && sodium_hex2bin(out, cap, text, len, NULL, n, NULL) == 0)
		return 0;
	if (sodium_base642bin(out, cap, text, len, NULL, n, NULL,
			      sodium_base64_VARIANT_ORIGINAL) == 0)
		return 0;
	return sodium_base642bin(out, cap, text, len, NULL, n, NULL,
				 sodium_base64_VARIANT_ORIGINAL_NO_PADDING) == 0 ? 0 : -1;
}

int
br_pattern_matches(const char *pattern, const char *name)
{
	size_t n = strlen(pattern);

	if (strcmp(pattern, "*") == 0)
		return 1;
	if (n >= 2 && pattern[n - 1] == '*')
		return strncmp(name, pattern, n - 1) == 0;
	return strcmp(pattern, name) == 0;
}

/* "500ms", "2s", "1m" or "1min" (or bare seconds) into ms, within
 * [lo, hi]. */
static int
duration_ms(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long long v, mul = 1000;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return -1;
	if (strcmp(end, "ms") == 0)
		mul = 1;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mul = 60000;
	else if (strcmp(end, "s") != 0 && *end != '\0')
		return -1;
	if (v > hi / mul || v * mul < lo)
		return -1;
	*out = (uint32_t)(v * mul);
	return 0;
}

static int
yes_no(const char *s, int *out)
{
	if (strcmp(s, "yes") == 0 || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
		*out = 1;
	else if (strcmp(s, "no") == 0 || strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
		*out = 0;
	else
		return -1;
	return 0;
}

/* Words split by spaces or commas into v (each strdup'd); -1 past max. */
static int
words(const char *s, char **v, int *n, int max)
{
	char buf[4096], *save = NULL, *w;

	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	for (w = strtok_r(buf, " \t,", &save); w != NULL; w = strtok_r(NULL, " \t,", &save)) {
		if (*n >= max || (v[*n] = strdup(w)) == NULL)
			return -1;
		(*n)++;
	}
	return 0;
}

static int
set_str(char *dst, size_t cap, const char *v)
{
	if (strlen(v) >= cap)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* An inbox prefix: subject tokens of letters, digits, - and _
 * ("_INBOX.a"), no wildcard. */
static int
inbox_ok(const char *s)
{
	char prev = '.';

	for (; *s != '\0'; prev = *s++)
		if ((*s == '.' && prev == '.') ||
		    (*s != '.' && !isalnum((unsigned char)*s) && *s != '-' && *s != '_'))
			return 0;
	return prev != '.';
}

#define TOO_LONG	"%s: '%s' is too long"

static int
on_nats(struct parse *p, const char *key, const char *v, int line)
{
	struct br_conf *c = p->c;

	if (strcmp(key, "servers") == 0) {
		if (words(v, c->servers, &c->nservers, 16) != 0 || c->nservers == 0)
			return fail(p, line, "servers: one to 16 URLs, e.g. nats://127.0.0.1:4222%s%s", "", "");
		for (int i = 0; i < c->nservers; i++)
			if (strncmp(c->servers[i], "nats://", 7) != 0 &&
			    strncmp(c->servers[i], "tls://", 6) != 0)
				return fail(p, line, "servers: '%s' is not a nats:// or tls:// URL%s",
					    c->servers[i], "");
	} else if (strcmp(key, "name") == 0) {
		if (!token_ok(v, BR_NAME_MAX))
			return fail(p, line, "name: '%s' is not 1 to 63 letters, digits, - or _%s", v, "");
		set_str(c->name, sizeof(c->name), v);
	} else if (strcmp(key, "subject") == 0) {
		if (!token_ok(v, sizeof(c->subject) - 1))
			return fail(p, line, "subject: '%s' is not 1 to 63 letters, digits, - or _%s", v, "");
		set_str(c->subject, sizeof(c->subject), v);
	} else if (strcmp(key, "user") == 0 || strcmp(key, "password") == 0 ||
		   strcmp(key, "token") == 0 || strcmp(key, "creds") == 0 ||
		   strcmp(key, "tls_ca") == 0 || strcmp(key, "tls_cert") == 0 ||
		   strcmp(key, "tls_key") == 0) {
		char *dst = key[0] == 'u' ? c->user : key[0] == 'p' ? c->password :
			    key[1] == 'o' ? c->token : key[1] == 'r' ? c->creds :
			    strcmp(key, "tls_ca") == 0 ? c->tls_ca :
			    strcmp(key, "tls_cert") == 0 ? c->tls_cert : c->tls_key;
		size_t cap = key[0] == 'u' ? sizeof(c->user) : key[0] == 'p' ? sizeof(c->password) :
			     key[1] == 'o' ? sizeof(c->token) : sizeof(c->creds);

		if (set_str(dst, cap, v) != 0)
			return fail(p, line, TOO_LONG, key, "value");
		if (dst != c->user && dst != c->password && dst != c->token &&
		    access(v, R_OK) != 0)
			return fail(p, line, "%s: cannot read '%s'", key, v);
	} else if (strcmp(key, "tls") == 0) {
		if (yes_no(v, &c->tls) != 0)
			return fail(p, line, "tls: '%s' is not yes or no%s", v, "");
	} else if (strcmp(key, "announce") == 0) {
		if (duration_ms(v, 100, 3600000, &c->announce_ms) != 0)
			return fail(p, line, "announce: '%s' is not a duration from 100ms to 1h%s", v, "");
	} else if (strcmp(key, "calls_max") == 0 || strcmp(key, "calls_per_hub") == 0) {
		char *end;
		unsigned long n = strtoul(v, &end, 10);

		if (*v == '\0' || *end != '\0' || n < 1 || n > 65536)
			return fail(p, line, "%s: '%s' is not a number from 1 to 65536", key, v);
		if (key[6] == 'm')
			c->calls_max = (uint32_t)n;
		else
			c->calls_per_hub = (uint32_t)n;
	} else if (strcmp(key, "key") == 0) {
		if (set_str(c->key, sizeof(c->key), v) != 0 || *v == '\0')
			return fail(p, line, "key: '%s' is not a file's path%s", v, "");
	} else if (strcmp(key, "inbox_prefix") == 0) {
		if (strlen(v) >= sizeof(c->inbox_prefix) - 24 || !inbox_ok(v))
			return fail(p, line, "inbox_prefix: '%s' is not 1 to 39 letters, digits, - or _ in tokens between dots%s",
				    v, "");
		set_str(c->inbox_prefix, sizeof(c->inbox_prefix), v);
	} else {
		return fail(p, line, "[nats] has no key '%s'%s", key, "");
	}
	return 1;
}

/* [trust] NAME = KEY: the hub NAME signs with KEY (base64 or hex, as
 * hub-nats --keygen prints it). */
static int
on_trust(struct parse *p, const char *key, const char *v, int line)
{
	struct br_conf *c = p->c;
	struct br_trusted *t;
	size_t n = 0;

	if (!token_ok(key, BR_NAME_MAX))
		return fail(p, line, "[trust]: '%s' is not a hub's name%s", key, "");
	for (int i = 0; i < c->ntrust; i++)
		if (strcmp(c->trust[i].name, key) == 0)
			return fail(p, line, "[trust]: hub %s is named twice%s", key, "");
	if (c->ntrust >= BR_TRUST_MAX)
		return fail(p, line, "[trust]: more than 256 hubs%s%s", "", "");
	t = &c->trust[c->ntrust];
	if (br_key_decode(v, t->pk, sizeof(t->pk), &n) != 0 || n != sizeof(t->pk))
		return fail(p, line, "[trust] %s: '%s' is not a public key (hub-nats --pubkey prints one)",
			    key, v);
	set_str(t->name, sizeof(t->name), key);
	c->ntrust++;
	return 1;
}

static int
on_patterns(struct parse *p, const char *key, const char *v, int line, char **dst, int *n)
{
	if (words(v, dst + *n, n, BR_PATTERNS_MAX - *n) != 0)
		return fail(p, line, "%s: more than 64 patterns%s", key, "");
	for (int i = 0; i < *n; i++)
		if (!pattern_ok(dst[i]))
			return fail(p, line, "%s: '%s' is not a name, NAME.* or *", key, dst[i]);
	return 1;
}

static int
handler(void *user, const char *section, const char *key, const char *v)
{
	struct parse *p = user;
	struct br_conf *c = p->c;
	int line = p->line;

	if (p->failed)
		return 0;
	if (strcmp(section, "nats") == 0)
		return on_nats(p, key, v, line);
	if (strcmp(section, "export") == 0) {
		if (strcmp(key, "methods") == 0)
			return on_patterns(p, key, v, line, c->exports, &c->nexports);
		if (strcmp(key, "topics") == 0)
			return on_patterns(p, key, v, line, c->etopics, &c->netopics);
		if (strcmp(key, "queue") == 0) {
			if (yes_no(v, &c->queue) != 0)
				return fail(p, line, "queue: '%s' is not yes or no%s", v, "");
			return 1;
		}
		return fail(p, line, "[export] has no key '%s'%s", key, "");
	}
	if (strcmp(section, "import") == 0) {
		if (strcmp(key, "methods") == 0)
			return on_patterns(p, key, v, line, c->imports, &c->nimports);
		if (strcmp(key, "topics") == 0)
			return on_patterns(p, key, v, line, c->itopics, &c->nitopics);
		if (strcmp(key, "prefix") == 0) {
			if (*v != '\0' && !token_ok(v, sizeof(c->prefix) - 1))
				return fail(p, line, "prefix: '%s' is not 1 to 31 letters, digits, - or _%s",
					    v, "");
			set_str(c->prefix, sizeof(c->prefix), v);
			return 1;
		}
		if (strcmp(key, "from") == 0) {
			if (*v != '\0' && !token_ok(v, BR_NAME_MAX))
				return fail(p, line, "from: '%s' is not a hub's name%s", v, "");
			set_str(c->from, sizeof(c->from), v);
			return 1;
		}
		if (strcmp(key, "timeout") == 0) {
			if (duration_ms(v, 1, 86400000, &c->timeout_ms) != 0)
				return fail(p, line, "timeout: '%s' is not a duration up to a day%s", v, "");
			return 1;
		}
		if (strcmp(key, "suspect") == 0) {
			if (strcmp(v, "off") == 0)
				c->suspect_ms = 0;
			else if (duration_ms(v, 10, 3600000, &c->suspect_ms) != 0)
				return fail(p, line, "suspect: '%s' is not off or a duration from 10ms to 1h%s",
					    v, "");
			return 1;
		}
		return fail(p, line, "[import] has no key '%s'%s", key, "");
	}
	if (strcmp(section, "trust") == 0)
		return on_trust(p, key, v, line);
	return fail(p, line, "'%s' in [%s]: the sections are [nats], [export], [import] and [trust]",
		    key, section);
}

void
br_default_name(char *name, size_t cap)
{
	char host[BR_NAME_MAX + 1];

	/* the host's name, as a subject token */
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "hub");
	host[sizeof(host) - 1] = '\0';
	for (char *q = host; *q != '\0'; q++)
		if (!isalnum((unsigned char)*q) && *q != '-' && *q != '_')
			*q = '_';
	snprintf(name, cap, "%s", host[0] != '\0' ? host : "hub");
}

int
br_conf_load(struct br_conf *c, const char *path, char *why, size_t cap)
{
	struct parse p = { .c = c, .why = why, .cap = cap };
	FILE *f;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->subject, sizeof(c->subject), "hub");
	c->announce_ms = 2000;
	c->calls_max = 1024;
	snprintf(c->key, sizeof(c->key), "%s", BR_KEY_DEFAULT);
	snprintf(c->inbox_prefix, sizeof(c->inbox_prefix), "_INBOX");
	c->queue = 1;
	c->timeout_ms = 30000;
	c->suspect_ms = 1000;
	/* a regular file: a FIFO or a device would hold hub-nats at its start */
	if ((f = hp_config_open(path, why, cap)) == NULL)
		return -1;
	p.f = f;
	rc = ini_parse_stream(reader, &p, handler, &p);
	fclose(f);
	if (rc > 0 && !p.failed)
		snprintf(why, cap, "line %d: not a key = value line", rc);
	if (rc != 0 || p.failed) {
		br_conf_free(c);
		return -1;
	}
	if (c->nservers == 0 && (c->servers[0] = strdup("nats://127.0.0.1:4222")) != NULL)
		c->nservers = 1;
	if (c->name[0] == '\0')
		br_default_name(c->name, sizeof(c->name));
	if (c->nexports == 0 && c->nimports == 0 && c->netopics == 0 && c->nitopics == 0) {
		snprintf(why, cap, "nothing to do: no [export] or [import] methods or topics");
		br_conf_free(c);
		return -1;
	}
	/* one caller cannot take every call from NATS: half, by default */
	if (c->calls_per_hub == 0)
		c->calls_per_hub = c->calls_max > 1 ? c->calls_max / 2 : 1;
	if ((c->user[0] != '\0') != (c->password[0] != '\0')) {
		snprintf(why, cap, "%s", c->user[0] != '\0' ? "user without password" :
			 "password without user");
		br_conf_free(c);
		return -1;
	}
	if ((c->tls_cert[0] != '\0') != (c->tls_key[0] != '\0')) {
		snprintf(why, cap, "%s", c->tls_cert[0] != '\0' ? "tls_cert without tls_key" :
			 "tls_key without tls_cert");
		br_conf_free(c);
		return -1;
	}
	return 0;
}

void
br_conf_free(struct br_conf *c)
{
	for (int i = 0; i < c->nservers; i++)
		free(c->servers[i]);
	for (int i = 0; i < c->nexports; i++)
		free(c->exports[i]);
	for (int i = 0; i < c->nimports; i++)
		free(c->imports[i]);
	for (int i = 0; i < c->netopics; i++)
		free(c->etopics[i]);
	for (int i = 0; i < c->nitopics; i++)
		free(c->itopics[i]);
	c->nservers = c->nexports = c->nimports = c->netopics = c->nitopics = 0;
}
