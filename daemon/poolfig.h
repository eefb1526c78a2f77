/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* One size class of the shared pool as JSON: what hubctl pool shows of a
 * live hub and hubctl inspect of a file, the same keys in both. */
#ifndef HUB_POOLFIG_H
#define HUB_POOLFIG_H

#include <json-c/json.h>

#include "proto/varpool.h"

/* Its figures; the host's own diagnostics too when vp is the host's. */
json_object *pool_class_json(struct hp_varpool *vp, uint32_t c);

#endif
