/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What config.c (the file: lines, sections, checks across keys) and
 * config_keys.c (each key: its row and its value's syntax) share while
 * they read one hubd.conf. Private to those two. */
#ifndef HUB_CONFIG_PARSER_H
#define HUB_CONFIG_PARSER_H

#include <stdint.h>
#include <stdio.h>

#include "daemon/config.h"

#define LINE_MAX_LEN	1024

enum { SEC_NONE, SEC_HUB, SEC_POOL, SEC_GUEST, SEC_TOPIC, SEC_BAD };

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
	int		hub_key_line[64];	/* where each hub key is, by its bit */
	int		pool_line;
	uint64_t	pool_seen;	/* bit per pool key */
	uint64_t	guest_seen;	/* bit per guest key, current guest */
	uint64_t	topic_seen;	/* bit per topic key, current topic */
	int		payload_set;	/* max_payload_size given explicitly */
	int		too_many;	/* more guests than may be: said once */
	const struct hub_conf *running;	/* a reload's: the hub's, whose memory's
					 * parameters it keeps; NULL at start */
};

/* config_keys.c: a problem at line: counted, and written to errs if any. */
void	config_perr(struct parser *p, int line, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* config_keys.c: the line of [hub]'s key name, for a problem
 * found across keys; the [hub] line if the file does not set it (1 if
 * there is none). */
int	config_hub_line(const struct parser *p, const char *name);

/* config_keys.c: whether s (n bytes) is a guest's or a zone's name. */
int	config_valid_name(const char *s, size_t n);

/* config_keys.c: whether name matches pat (provides, publishes: "a.b"
 * that name, "a.*" each name that begins with "a." and goes on); whether
 * some name matches both a and b. */
int	config_pattern_match(const char *pat, const char *name);
int	config_patterns_overlap(const char *a, const char *b);

/* config_keys.c: inih's handler, one key = value of the current section
 * (p->section) into its field; always 1 (inih goes on), problems through
 * config_perr. */
int	config_handler(void *user, const char *section, const char *name, const char *value);

#endif
