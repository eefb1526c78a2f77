/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one mapping from a method name to its u64 method_id, shared by the
 * host, every guest and hubctl.
 *
 * method_id = FNV-1a 64 of the name's UTF-8 bytes (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3); a result of 0, which marks
 * "not a Request" in a descriptor, becomes 1. Names are case-sensitive and
 * by convention "service.method" (e.g. "hub.ping", "kv.put"). */
#ifndef HP_METHOD_H
#define HP_METHOD_H

#include <stddef.h>
#include <stdint.h>

uint64_t hp_method_id(const char *name, size_t len);

#endif
