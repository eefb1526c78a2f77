/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* route.c: calls to their targets, answers matched to their calls */
#ifndef ROUTE_H
#define ROUTE_H

#include <stdint.h>
#include "daemon/hub.h"

void		route_request(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		route_response(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		route_cancel(struct hub *h, struct peer *p, struct hp_msg_in *m);

struct ctl_arg;
/* Calls method with text arguments encoded by its signature. 0 when the
 * call is under way (on_done will run), or -errno with *why. A chan<T>
 * argument is a channel the host opens: each item goes to on_item, and
 * the guest gets its credit back only as the caller reports the items
 * taken (route_client_consumed): a slow caller slows the guest down. */
int		route_client_call(struct hub *h, struct ext_call *c, const char *method,
				  const struct ctl_arg *args, int nargs, const char **why);
/* The caller has taken bytes (item payload bytes, as on_item had them)
 * of the call's stream off the host's hands. */
void		route_client_consumed(struct hub *h, struct ext_call *c, uint32_t bytes);
/* The caller went away: on_done will not run; the guest is told
 * (Cancel) and its stream is drained until it ends. */
void		route_client_abandon(struct hub *h, struct ext_call *c);

#endif
