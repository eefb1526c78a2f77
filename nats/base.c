/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What every part of hub-nats shares: the answer kinds on NATS
 * (Hub-Status), the clock, the log, hubd's (name, sig) lists. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nats/hubnats.h"
#include "proto/method.h"

static const struct {
	const char	*word;
	int		status;
} statuses[] = {
	{ "ok", 0 },
	{ "error", -EREMOTEIO },		/* the callee's own */
	{ "no-method", -ENOSYS },
	{ "bad-payload", -EBADMSG },
	{ "cancelled", -ECANCELED },
	{ "refused", -ECONNREFUSED },	/* the remote hub's: the callee never saw it */
	{ "timeout", -ETIMEDOUT },
	{ "unreachable", -EHOSTUNREACH },
};

const char *
br_status_word(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].word;
	return "error";
}

int
br_status_of(const char *word)
{
	for (size_t i = 0; word != NULL && i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (strcmp(statuses[i].word, word) == 0)
			return statuses[i].status;
	return 1;	/* none: the answer is malformed */
}

uint64_t
br_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
br_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

size_t
br_payload_budget(const struct bridge *b)
{
	if (b->max_payload <= 0)
		return 1u << 20;	/* not known yet: NATS's default */
	return b->max_payload > 2048 ? (size_t)b->max_payload - 1024 : (size_t)b->max_payload / 2;
}

void
br_log(const char *fmt, ...)
{
	va_list ap;

	fputs("hub-nats: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
br_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_';
}

int
br_subject_part_ok(const char *s, size_t n, int dots)
{
	/* a method's name: the one rule hubd registers by */
	if (dots)
		return hp_method_name_refused(s, n) == NULL;
	/* a hub's name: as [nats] name, so that what a NATS client says
	 * there is plain ASCII wherever it is shown (logs, hubctl calls,
	 * GUEST.stats' postcard strings, which must be UTF-8) */
	if (n == 0 || n > BR_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!br_name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

void
br_refresh_answer(struct bridge *b, const char *svc, int status, const uint8_t *res,
		  size_t len, void (*fn)(struct bridge *, const char *, const char *))
{
	const char *name, *sig;
	char nbuf[BR_NAME_MAX + 1], sbuf[HP_SIG_MAX_LEN + 1];
	size_t count = 0, pos = 0, nn, sn;

	b->refreshing--;
	if (status != 0) {
		b->refresh_failed = 1;
		br_log("%s: %.*s", svc, (int)len, res != NULL ? (const char *)res : "");
		return;
	}
	if (guest_pc_get_len(res, len, &pos, &count) != 0)
		return;
	for (size_t i = 0; i < count; i++) {
		if (guest_pc_get_str(res, len, &pos, &name, &nn) != 0 ||
		    guest_pc_get_str(res, len, &pos, &sig, &sn) != 0)
			return;
		if (!br_subject_part_ok(name, nn, 1) || sn > HP_SIG_MAX_LEN)
			continue;
		snprintf(nbuf, sizeof(nbuf), "%.*s", (int)nn, name);
		snprintf(sbuf, sizeof(sbuf), "%.*s", (int)sn, sig);
		fn(b, nbuf, sbuf);
	}
}
