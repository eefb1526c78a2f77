/* The checksum hub.sink and hub.source report for a stream: FNV-1a 64
 * over each item's whole 8-byte words (native order), then its tail bytes.
 * Word-wise so that checking a stream runs near memory speed. Chain it:
 * start from HP_CHECKSUM_INIT and feed every item in order. */
#ifndef HP_CHECKSUM_H
#define HP_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define HP_CHECKSUM_INIT	0xcbf29ce484222325ull

uint64_t hp_checksum(uint64_t h, const void *p, size_t n);

#endif
