/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control commands' table (commands.c; the handlers: cmd.h): what
 * serves the control socket's requests, for hubd.c to hand to
 * control_init. */
#ifndef HUB_COMMANDS_H
#define HUB_COMMANDS_H

#include "daemon/control.h"

extern const struct control_ops commands_ops;

#endif
