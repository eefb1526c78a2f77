/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Opening a config file (conffile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/conffile.h"

/* What a file that is not one is. */
static const char *
file_kind(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" :
	       S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" :
	       S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* Whether fd is a config to read: 0, or -1 with why said. */
static int
config_file_ok(int fd, char *why, size_t cap)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		snprintf(why, cap, "%s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, cap, "cannot read: it is %s, not a file of settings",
			 file_kind(st.st_mode));
		return -1;
	}
	if ((unsigned long long)st.st_size > HP_CONFIG_MAX) {
		snprintf(why, cap, "cannot read: it is %lld bytes, and a config is at most "
			 "%u (%s)", (long long)st.st_size, HP_CONFIG_MAX, HP_CONFIG_MAX_TEXT);
		return -1;
	}
	return 0;
}

FILE *
hp_config_open(const char *path, char *why, size_t cap)
{
	FILE *f;
	int fd;

	/* O_NONBLOCK: the open of a FIFO returns, to be refused */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0) {
		snprintf(why, cap, "%s", strerror(errno));
		return NULL;
	}
	if (config_file_ok(fd, why, cap) != 0) {
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		snprintf(why, cap, "%s", strerror(errno));
		close(fd);
	}
	return f;
}
