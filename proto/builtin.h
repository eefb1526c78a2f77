/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The host's built-in services, callable by every guest (and by hubctl
 * through hubd). Names map to ids with hp_method_id like any method.
 *
 *	hub.ping	bytes -> bytes		echoes its argument
 *	hub.log		str -> unit		a line in hubd's log, tagged with the guest
 *	hub.peers	-> str			one line per peer: "id name state"
 *	hub.register	str,str -> unit		registers method NAME with SIGNATURE
 *						for the calling guest (Err if taken,
 *						or not one of the guest's names:
 *						NAME.* or its config's provides)
 *	hub.sink	rx<bytes> -> u64	receives a stream, answers with its
 *						stream hash when it closes
 *	hub.source	u64,u64 -> u64		sends N bytes on the caller's
 *						channel C (which the caller opened to
 *						receive on), closes it, answers with
 *						their stream hash
 *	hub.signature	str -> str		the signature method NAME was
 *						registered with (host services
 *						included), Err "no such method: NAME"
 *						for a name nobody registered
 *	hub.caller	u64 -> str		who made call ID, a call in flight
 *						to the asking guest (ID: the
 *						Request's id as the host sent it):
 *						a guest's name, "client:UID" for a
 *						control client, "hub" for the host;
 *						Err for an id not in flight to it
 *	hub.methods	str -> list<(str,str)>	the methods that can be called now
 *						(owner up), as (NAME, SIGNATURE),
 *						matching PATTERN ("" or "*" all,
 *						"a.*" those in a., else that
 *						name); neither the host's nor the
 *						asking guest's own
 *	hub.advertise	str,str,bool -> unit	TOPIC, SIGNATURE, RETAIN: the calling
 *						guest publishes TOPIC (one of its
 *						names: NAME.* or its config's
 *						publishes); its memory comes as
 *						HP_MSG_TOPIC WRITE before the answer
 *						(proto/topic.h, doc/events.md)
 *	hub.subscribe	str,str -> u64		TOPIC, POLICY ("block", "drop-oldest",
 *						"latest"): a subscription, its id;
 *						its memory, cursor and bell come as
 *						HP_MSG_TOPIC READ before the answer
 *	hub.unsubscribe	u64 -> unit		ends subscription ID
 *	hub.unregister	str -> unit		METHOD: withdraws a method the calling
 *						guest's instance registered; calls
 *						already sent to it are its to answer
 *	hub.describe	str,str -> unit		METHOD, TEXT: what the calling guest
 *						says of a method it registered (""
 *						for itself: its note), shown by
 *						hubctl methods / peers; TEXT UTF-8,
 *						at most HP_DESCRIBE_MAX bytes, no
 *						control characters, "" clears it;
 *						cleared when the guest detaches
 *	hub.advertised	str -> list<(str,str)>	the topics published now (their
 *						publisher up), as (NAME, SIGNATURE),
 *						matching PATTERN as hub.methods's;
 *						neither the host's nor the asking
 *						guest's own (a bridge never offers
 *						back what it brought in)
 *
 * The stream hash is XXH3-64 (libxxhash) chained over the items in order:
 * h = XXH3_64bits_withSeed(item, item_len, h), from h = 0, each item's
 * payload bytes as they travel (for rx<bytes>, the postcard length
 * prefix included). It depends on where items begin and end, which sender
 * and receiver see alike.
 */
#ifndef HP_BUILTIN_H
#define HP_BUILTIN_H

#include <stddef.h>
#include <stdint.h>

#include "proto/method.h"
#include "proto/postcard.h"

#define HP_SVC_PREFIX		"hub."	/* every hub.* name is the host's */
#define HP_SVC_PING		"hub.ping"
#define HP_SVC_LOG		"hub.log"
#define HP_SVC_PEERS		"hub.peers"
#define HP_SVC_REGISTER		"hub.register"
#define HP_SVC_SINK		"hub.sink"
#define HP_SVC_SOURCE		"hub.source"
#define HP_SVC_SIGNATURE	"hub.signature"
#define HP_SVC_CALLER		"hub.caller"
#define HP_SVC_METHODS		"hub.methods"
#define HP_SVC_DESCRIBE		"hub.describe"
#define HP_SVC_ADVERTISE	"hub.advertise"
#define HP_SVC_SUBSCRIBE	"hub.subscribe"
#define HP_SVC_UNSUBSCRIBE	"hub.unsubscribe"
#define HP_SVC_ADVERTISED	"hub.advertised"
#define HP_SVC_UNREGISTER	"hub.unregister"

#define HP_SVC_SIG_PING		"bytes->bytes"
#define HP_SVC_SIG_LOG		"str->unit"
#define HP_SVC_SIG_PEERS	"->str"
#define HP_SVC_SIG_REGISTER	"str,str->unit"
#define HP_SVC_SIG_SINK		"rx<bytes>->u64"
#define HP_SVC_SIG_SOURCE	"u64,u64->u64"
#define HP_SVC_SIG_SIGNATURE	"str->str"
#define HP_SVC_SIG_CALLER	"u64->str"
#define HP_SVC_SIG_METHODS	"str->list<(str,str)>"
#define HP_SVC_SIG_DESCRIBE	"str,str->unit"
#define HP_SVC_SIG_ADVERTISE	"str,str,bool->unit"
#define HP_SVC_SIG_SUBSCRIBE	"str,str->u64"
#define HP_SVC_SIG_UNSUBSCRIBE	"u64->unit"
#define HP_SVC_SIG_ADVERTISED	"str->list<(str,str)>"
#define HP_SVC_SIG_UNREGISTER	"str->unit"
#define HP_STREAM_HASH_SEED	0

/* hub.register's errors (User(str)), so that a guest can tell them apart. */
#define HP_SVC_REG_TAKEN	"method already registered"
#define HP_SVC_REG_TOO_MANY	"too many methods for one guest"
#define HP_SVC_REG_NOT_YOURS	"not one of this guest's names (NAME.* or provides)"
#define HP_SVC_REG_COLLIDES	"the method's id collides with another method's"
/* and a name that is not one (proto/method.h): HP_METHOD_NAME_BAD and why */

/* hub.signature's error, followed by the name asked for. */
#define HP_SVC_SIG_UNKNOWN	"no such method: "

/* hub.caller's errors: an id not in flight to the asking guest
 * (followed by the id and " in flight to you"), a call whose caller left. */
#define HP_SVC_CALLER_UNKNOWN	"no call "
#define HP_SVC_CALLER_GONE	"the caller left"
#define HP_SVC_CALLER_CLIENT	"client:"	/* followed by the uid */

/* hub.describe: a text's bytes at most (UTF-8, no control characters),
 * and its errors; NOT_YOURS and UNKNOWN (hub.signature's) are followed by
 * the name asked for (cut to 64 bytes). */
#define HP_DESCRIBE_MAX		200
#define HP_SVC_DESC_NOT_YOURS	"not your method: "
#define HP_SVC_DESC_TOO_LONG	"text longer than 200 bytes"
#define HP_SVC_DESC_NOT_UTF8	"text is not UTF-8"
#define HP_SVC_DESC_CONTROL	"text has a control character"
#define HP_SVC_DESC_GUESTS	"only guests describe what they serve"

/* Why hub.describe refuses text (TOO_LONG, NOT_UTF8, CONTROL), NULL if it
 * does not: hubd's rule, which libguest checks before asking. Control
 * characters are C0, DEL, C1 (U+0080..U+009F) and the bidirectional
 * overrides and isolates (U+202A..U+202E, U+2066..U+2069), which
 * reorder what follows: the text is printed to people's terminals. */
static inline const char *
hp_describe_refused(const char *text, size_t n)
{
	const uint8_t *s = (const uint8_t *)text;

	if (n > HP_DESCRIBE_MAX)
		return HP_SVC_DESC_TOO_LONG;
	if (n > 0 && !hp_utf8_valid(s, n))
		return HP_SVC_DESC_NOT_UTF8;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] == 0x7F ||
		    (s[i] == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F) ||
		    (s[i] == 0xE2 && i + 2 < n &&
		     ((s[i + 1] == 0x80 && s[i + 2] >= 0xAA && s[i + 2] <= 0xAE) ||
		      (s[i + 1] == 0x81 && s[i + 2] >= 0xA6 && s[i + 2] <= 0xA9))))
			return HP_SVC_DESC_CONTROL;
	return NULL;
}

/* Metadata key the host adds to an error it makes itself (peer died,
 * busy...), with a human-readable String value. */
#define HP_META_HUB_ERROR	"hub.error"

/* Metadata a guest may put in its own error answer (guest_reply_status),
 * so that an answer forwarded from elsewhere (a bridge to another host)
 * keeps its meaning; hubd passes both on (it strips hub.error alone).
 * HP_META_ERROR_TEXT: a String, the text of an Err(UnknownMethod),
 * Err(InvalidPayload) or Err(Cancelled), which carry none of their own.
 * HP_META_ERROR_KIND: a String beside Err(User(text)) saying what failed
 * on the far side: HP_ERR_KIND_UNREACHABLE (the remote hub could not be
 * reached) or HP_ERR_KIND_TIMEOUT (the remote side timed out); any other
 * value means nothing (a plain User error). */
#define HP_META_ERROR_TEXT	"error.text"
#define HP_META_ERROR_KIND	"error.kind"
#define HP_ERR_KIND_UNREACHABLE	"unreachable"
#define HP_ERR_KIND_TIMEOUT	"timeout"

#endif
