/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* services.c: the built-in hub.* services */
#ifndef SERVICES_H
#define SERVICES_H

#include <stddef.h>
#include <stdint.h>
#include "daemon/hub.h"

int		services_init(struct hub *h);
void		services_call(struct hub *h, struct peer *p, const struct method *m,
			      const struct origin *o, const uint8_t *args, size_t len);
/* hub.source: sends what credit and room allow; how many messages. */
int		services_source_pump(struct hub *h, struct peer *p);
/* Whether a hub.source stream of p could send now. */
int		services_source_ready(struct hub *h, struct peer *p);

#endif
