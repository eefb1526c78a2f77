/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The batch wire (doc/nats.md, "Batches"): many requests, or many
 * answers, as one NATS message with Hub-Batch: N. Its body is N
 * entries, each a u32 header-block length and a u32 payload length
 * (little endian), the header block ("Name: value\r\n" each, as NATS
 * writes a message's headers; Hub-Reply the entry's reply subject), then
 * the payload. Built from what would have been a message alone (struct
 * br_out: no natsMsg is made for an entry), and parsed back into
 * messages. What is parsed came from anyone on
 * NATS: every length is checked against what is left, every header
 * against the syntax, and a batch with one bad byte is refused whole.
 * And the pack wire's check (doc/nats.md, "Streams"): a stream's items
 * of one loop pass as one message, Hub-Pack: N, checked the same way. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

void
br_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t
br_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* A header block's bytes, at most (a request's headers take about 600). */
#define HDR_MAX		8192

static int
name_ok(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == ':')
			return 0;
	return 1;
}

/* A value: no control byte but a tab (no CR or LF: one line). */
static int
value_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch < ' ' && ch != '\t') || ch == 0x7f)
			return 0;
	}
	return 1;
}

/* A subject to publish on: tokens of visible bytes, no wildcard (a
 * blank would split the protocol line). */
int
br_subject_ok(const char *s, size_t n)
{
	if (n == 0 || n >= BR_SUBJECT_MAX || s[0] == '.' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch <= ' ' || ch == 0x7f || ch == '*' || ch == '>' ||
		    (ch == '.' && s[i + 1] == '.'))
			return 0;
	}
	return 1;
}

/* Appends "name: value\r\n" at out + *pos (out NULL: only counts). */
static void
put_line(uint8_t *out, size_t *pos, const char *name, const char *value)
{
	size_t nn = strlen(name), nv = strlen(value);

	if (out != NULL) {
		memcpy(out + *pos, name, nn);
		memcpy(out + *pos + nn, ": ", 2);
		memcpy(out + *pos + nn + 2, value, nv);
		memcpy(out + *pos + nn + 2 + nv, "\r\n", 2);
	}
	*pos += nn + nv + 4;
}

natsStatus
br_out_header(struct br_out *o, const char *name, const char *value)
{
	if (o->nh == BR_OUT_HDRS)
		return NATS_INSUFFICIENT_BUFFER;
	o->name[o->nh] = name;
	o->value[o->nh++] = value;
	return NATS_OK;
}

natsStatus
br_out_msg(const struct br_out *o, natsMsg **mp)
{
	natsStatus s = natsMsg_Create(mp, o->subject, o->reply, o->data, (int)o->len);

	for (uint32_t i = 0; s == NATS_OK && i < o->nh; i++)
		s = natsMsgHeader_Add(*mp, o->name[i], o->value[i]);
	if (s != NATS_OK) {
		natsMsg_Destroy(*mp);
		*mp = NULL;
	}
	return s;
}

size_t
br_batch_put(const struct br_out *o, int answer, uint8_t *out)
{
	const char *reply = answer ? o->subject : o->reply;
	size_t pos = 8, hdr;

	if (reply == NULL || !br_subject_ok(reply, strlen(reply)) || o->len > INT32_MAX)
		return 0;
	put_line(out, &pos, BR_H_REPLY, reply);
	for (uint32_t i = 0; i < o->nh; i++) {
		if (strcmp(o->name[i], BR_H_REPLY) == 0)
			continue;
		if (!name_ok(o->name[i], strlen(o->name[i])) ||
		    !value_ok(o->value[i], strlen(o->value[i])))
			return 0;
		put_line(out, &pos, o->name[i], o->value[i]);
	}
	hdr = pos - 8;
	if (hdr > HDR_MAX)
		return 0;
	if (out != NULL) {
		br_put32(out, (uint32_t)hdr);
		br_put32(out + 4, (uint32_t)o->len);
		if (o->len > 0)
			memcpy(out + pos, o->data, o->len);
	}
	return pos + o->len;
}

/* One entry's header block, checked and split in place (buf holds a
 * copy, NUL-terminated pieces): the Hub-Reply's value in *reply, the
 * others' names and values in name[], value[]; the count, or -1. */
static int
split(char *buf, size_t n, const char **reply, const char **name, const char **value, int cap)
{
	int count = 0;
	size_t pos = 0;

	*reply = NULL;
	while (pos < n) {
		char *line = buf + pos, *colon, *end, *v;
		size_t left = n - pos;

		if ((end = memchr(line, '\r', left)) == NULL || (size_t)(end - line) + 1 >= left ||
		    end[1] != '\n')
			return -1;
		if ((colon = memchr(line, ':', (size_t)(end - line))) == NULL ||
		    !name_ok(line, (size_t)(colon - line)))
			return -1;
		v = colon + 1;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		if (!value_ok(v, (size_t)(end - v)))
			return -1;
		*colon = '\0';
		*end = '\0';
		pos = (size_t)(end - buf) + 2;
		if (strcmp(line, BR_H_REPLY) == 0) {
			if (*reply != NULL || !br_subject_ok(v, strlen(v)))
				return -1;
			*reply = v;
			continue;
		}
		if (count == cap)
			return -1;
		name[count] = line;
		value[count++] = v;
	}
	return *reply != NULL ? count : -1;
}

/* Walks the body: every entry checked; with out, each made a message.
 * 0, or -1 (nothing made). */
static int
walk(const uint8_t *data, size_t len, uint32_t n, const char *subject, int answer,
     natsMsg **out)
{
	char buf[HDR_MAX + 1];
	const char *name[HDR_MAX / 4], *value[HDR_MAX / 4], *reply;
	size_t pos = 0;
	uint32_t i;
	int nh;

	for (i = 0; i < n; i++) {
		uint32_t hlen, dlen;
		natsStatus s;

		if (len - pos < 8)
			goto fail;
		hlen = br_get32(data + pos);
		dlen = br_get32(data + pos + 4);
		pos += 8;
		if (hlen > HDR_MAX || hlen > len - pos || dlen > len - pos - hlen ||
		    dlen > INT32_MAX)
			goto fail;
		memcpy(buf, data + pos, hlen);
		buf[hlen] = '\0';
		if ((nh = split(buf, hlen, &reply, name, value, HDR_MAX / 4)) < 0)
			goto fail;
		pos += hlen;
		if (out != NULL) {
			s = answer ? natsMsg_Create(&out[i], reply, NULL, (const char *)data + pos,
						    (int)dlen)
			    : natsMsg_Create(&out[i], subject, reply, (const char *)data + pos,
					     (int)dlen);
			for (int k = 0; s == NATS_OK && k < nh; k++)
				s = natsMsgHeader_Add(out[i], name[k], value[k]);
			if (s != NATS_OK) {
				natsMsg_Destroy(out[i]);
				goto fail;
			}
		}
		pos += dlen;
	}
	if (pos != len)
		goto fail;	/* bytes past the N entries */
	return 0;
fail:
	if (out != NULL)
		while (i-- > 0)
			natsMsg_Destroy(out[i]);
	return -1;
}

int
br_batch_parse(const uint8_t *data, size_t len, const char *count, const char *subject,
	       int answer, natsMsg **out, uint32_t *n)
{
	char *end;
	unsigned long v;

	if (count == NULL || *count < '1' || *count > '9')
		return -1;
	v = strtoul(count, &end, 10);
	if (*end != '\0' || v < 2 || v > BR_BATCH_MAX || (!answer && subject == NULL))
		return -1;
	if (data == NULL)
		len = 0;
	/* checked whole first: a bad entry anywhere, and none is made */
	if (walk(data, len, (uint32_t)v, subject, answer, NULL) != 0 ||
	    walk(data, len, (uint32_t)v, subject, answer, out) != 0)
		return -1;
	*n = (uint32_t)v;
	return 0;
}

int
br_batch_entry(const uint8_t *entry, size_t len, const char *subject, int answer, natsMsg **out)
{
	return walk(entry, len, 1, subject, answer, out);
}

/* A pack's body, checked whole against its count (Hub-Pack: N, 1 to
 * BR_PACK_MAX): each item a u32 length (little endian) and its bytes,
 * nothing after the last. Its items' bytes (their count in *items), or
 * -1: malformed. */
int64_t
br_pack_check(const uint8_t *p, size_t len, const char *count, uint32_t *items)
{
	char *stop;
	unsigned long n = strtoul(count, &stop, 10);
	size_t off = 0;
	int64_t bytes = 0;

	if (*count < '1' || *count > '9' || *stop != '\0' || n > BR_PACK_MAX)
		return -1;
	*items = (uint32_t)n;
	for (; n > 0; n--) {
		uint32_t ilen;

		if (len - off < 4 || (ilen = br_get32(p + off)) > len - off - 4)
			return -1;
		off += 4 + (size_t)ilen;
		bytes += ilen;
	}
	return off == len ? bytes : -1;
}

int
br_pack_fits(const struct br_pack *pk, size_t budget, size_t len)
{
	if (4 + len > budget)
		return -1;
	return pk->n < BR_PACK_MAX && pk->len + 4 + len <= budget;
}

int
br_pack_put(struct br_pack *pk, const void *item, size_t len)
{
	if (pk->len + 4 + len > pk->cap) {
		size_t cap = pk->cap ? pk->cap : 16 * 1024;
		uint8_t *p;

		while (cap < pk->len + 4 + len)
			cap *= 2;
		if ((p = realloc(pk->buf, cap)) == NULL)
			return -1;
		pk->buf = p;
		pk->cap = cap;
	}
	br_put32(pk->buf + pk->len, (uint32_t)len);
	if (len > 0)
		memcpy(pk->buf + pk->len + 4, item, len);
	pk->len += 4 + len;
	pk->n++;
	return 0;
}

const char *
br_pack_count(const struct br_pack *pk, char *buf)
{
	snprintf(buf, 24, "%" PRIu32, pk->n);
	return buf;
}
