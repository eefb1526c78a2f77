/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* filter.c: the system calls no guest needs and none may make (seccomp). */
#ifndef FILTER_H
#define FILTER_H

/* Builds the filter, once, in hubd (not in a child: it allocates). 0, or
 * -errno when the kernel or libseccomp cannot (then guests run without
 * one, and hubd says so). */
int	filter_init(void);
/* In a guest's child, after setuid and no_new_privs, before exec: the
 * filter loaded. 0 (also when there is none: filter_init said so), or
 * -errno. */
int	filter_apply(void);
/* Whether guests get the filter. */
int	filter_ready(void);
void	filter_free(void);

#endif
