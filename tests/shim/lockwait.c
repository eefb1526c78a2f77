/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* LD_PRELOAD for a hubd under test: its first flock waits, having made the
 * file $LOCKWAIT_AT, until the file $LOCKWAIT_GO exists (30 s at most), so
 * that a test can act between hubd's open of its lock file and its lock. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int
flock(int fd, int op)
{
	static int waited;
	int (*real)(int, int);
	const char *at = getenv("LOCKWAIT_AT"), *go = getenv("LOCKWAIT_GO");
	struct timespec ms = { 0, 1000000 };
	int made;

	*(void **)&real = dlsym(RTLD_NEXT, "flock");
	if (!waited && at != NULL && go != NULL) {
		waited = 1;
		if ((made = open(at, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0)
			close(made);
		for (int i = 0; i < 30000 && access(go, F_OK) != 0; i++)
			nanosleep(&ms, NULL);
	}
	return real(fd, op);
}
