/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* An intrusive doubly linked list: the element's own prev and next
 * fields, a head pointer and (where the list keeps one) a tail pointer.
 * Macros, so that each element type keeps its own field names' types. */
#ifndef HP_LIST_H
#define HP_LIST_H

#include <stddef.h>

/* e first in the list at *headp (a list without a tail). */
#define HP_LIST_PUSH(headp, e) do {					\
	(e)->prev = NULL;						\
	if (((e)->next = *(headp)) != NULL)				\
		(e)->next->prev = (e);					\
	*(headp) = (e);							\
} while (0)

/* e last in the list at *headp whose last element is *tailp. */
#define HP_LIST_APPEND(headp, tailp, e) do {				\
	(e)->next = NULL;						\
	if (((e)->prev = *(tailp)) != NULL)				\
		(e)->prev->next = (e);					\
	else								\
		*(headp) = (e);						\
	*(tailp) = (e);							\
} while (0)

/* e out of the list at *headp, which keeps no tail; e's links cleared. */
#define HP_LIST_UNLINK(headp, e) do {					\
	if ((e)->prev != NULL)						\
		(e)->prev->next = (e)->next;				\
	else if (*(headp) == (e))					\
		*(headp) = (e)->next;					\
	if ((e)->next != NULL)						\
		(e)->next->prev = (e)->prev;				\
	(e)->prev = (e)->next = NULL;					\
} while (0)

/* e out of the list at *headp whose last element is *tailp. */
#define HP_LIST_UNLINK_TAIL(headp, tailp, e) do {			\
	if ((e)->next == NULL)						\
		*(tailp) = (e)->prev;					\
	HP_LIST_UNLINK(headp, e);					\
} while (0)

#endif
