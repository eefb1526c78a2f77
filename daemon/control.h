/* The control socket: newline-delimited JSON requests and answers. Its
 * commands, and the parser of its requests: request.h. */
#ifndef HUB_CONTROL_H
#define HUB_CONTROL_H

#include <stddef.h>

#include "daemon/request.h"

struct hub;

#define CONTROL_MSG_MAX		65536	/* one request line at most */

/* Control connections at once, by the caller's uid (SO_PEERCRED): in all,
 * of which the last CONTROL_CLIENTS_RESERVED only for root and hubd's own
 * user, and at most CONTROL_CLIENTS_PER_UID for any other user. */
#define CONTROL_CLIENTS_MAX		256
#define CONTROL_CLIENTS_RESERVED	16
#define CONTROL_CLIENTS_PER_UID		16

int	control_init(struct hub *h);
void	control_close(struct hub *h);

#endif
