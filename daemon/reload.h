/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* reload.c: re-read the config; 0 applied, -1 nothing changed. What it
 * did and refused goes to msgs, one line each. A guest added while every
 * entry is taken waits and starts as soon as one is free. */
#ifndef RELOAD_H
#define RELOAD_H

#include <stdio.h>
#include "daemon/hub.h"

int		reload_config(struct hub *h, FILE *msgs);
void		reload_start_waiting(struct hub *h);
void		reload_free(struct hub *h);

#endif
