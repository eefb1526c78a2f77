/* The checksum hub.sink and hub.source report for a stream: FNV-1a 64 in
 * four lanes over each item's 8-byte words (native order), its tail bytes
 * in the first lane, the lanes folded together. Word-wise and in lanes so
 * that checking a stream runs near memory speed. Chain it: start from
 * HP_CHECKSUM_INIT and feed every item in order. */
#ifndef HP_CHECKSUM_H
#define HP_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define HP_CHECKSUM_INIT	0xcbf29ce484222325ull

uint64_t hp_checksum(uint64_t h, const void *p, size_t n);

#endif
