/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one mapping from a method name to its u64 method_id, shared by the
 * host, every guest and hubctl.
 *
 * method_id = SipHash-2-4 of the name's UTF-8 bytes under the 16-byte key
 * HP_METHOD_ID_KEY (its ASCII bytes), the 8 bytes out read little-endian;
 * a result of 0, which marks "not a Request" in a descriptor, becomes 1.
 * Names are case-sensitive and by convention "service.method" (e.g.
 * "hub.ping", "kv.put").
 *
 * A name that can be registered: 1 to HP_METHOD_NAME_MAX bytes of
 * A-Z a-z 0-9 _ . -, in parts between dots none of which is empty (no
 * dot first or last, no two in a row). Names reach logs, terminals and
 * NATS subjects: nothing in them can end a line, drive a terminal or be
 * a subject's wildcard. hubd checks it at hub.register (a guest written
 * from the spec alone may send anything), libguest before asking, the
 * config for provides, hub-nats for the names it carries. */
#ifndef HP_METHOD_H
#define HP_METHOD_H

#include <stddef.h>
#include <stdint.h>

#define HP_METHOD_NAME_MAX	63	/* bytes in a method's name */
#define HP_METHOD_ID_KEY	"hub method id v2"	/* published: no secret */

/* Why a name cannot be registered, as hub.register's error says it (each
 * begins with HP_METHOD_NAME_BAD), or NULL when it can. */
#define HP_METHOD_NAME_BAD	"bad method name: "
#define HP_METHOD_NAME_EMPTY	HP_METHOD_NAME_BAD "empty"
#define HP_METHOD_NAME_LONG	HP_METHOD_NAME_BAD "longer than 63 bytes"
#define HP_METHOD_NAME_CHAR	HP_METHOD_NAME_BAD "a byte not in A-Z a-z 0-9 _ . -"
#define HP_METHOD_NAME_PART	HP_METHOD_NAME_BAD "an empty part between dots"

uint64_t hp_method_id(const char *name, size_t len);
const char *hp_method_name_refused(const char *name, size_t len);

#endif
