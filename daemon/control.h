/* The control socket: newline-delimited JSON requests and answers. */
#ifndef HUB_CONTROL_H
#define HUB_CONTROL_H

struct hub;

#define CONTROL_MSG_MAX		65536	/* one request line at most */

int	control_init(struct hub *h);
void	control_close(struct hub *h);

#endif
