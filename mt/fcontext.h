/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Boost.Context's fcontext (libboost_context), C linkage: a context is the
 * stack pointer of a suspended stack; a jump saves ours and returns the
 * one that jumped to us, with its data. Never hidden: they come from
 * libboost_context.so. For the runtime (sched.c) and its benchmark. */
#ifndef MT_FCONTEXT_H
#define MT_FCONTEXT_H

#include <stddef.h>

typedef void *fcontext_t;
typedef struct {
	fcontext_t	fctx;
	void		*data;
} transfer_t;
transfer_t	jump_fcontext(fcontext_t to, void *vp);
fcontext_t	make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));

#endif
