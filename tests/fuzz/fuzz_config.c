/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: hubd.conf parsing. Whatever the file, a clear failure or a
 * config that passes the same checks hubd -n makes; never a crash or a
 * leak (the config is freed either way). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct hub_conf c;
	FILE *devnull = fopen("/dev/null", "w");

	if (fd < 0) {
		fd = memfd_create("hubd.conf", 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	if (config_load(path, &c, devnull) == 0)
		config_free(&c);
	fclose(devnull);
	return 0;
}
