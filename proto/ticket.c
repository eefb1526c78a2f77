/* Spawn ticket parsing (ticket.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "proto/ticket.h"

/* Strict decimal in [min, max]. */
static int
number(const char *s, long min, long max, long *out)
{
	long v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (LONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The value of --name=V or --name V at argv[*i], else NULL. */
static const char *
option(int argc, char *const argv[], int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int
bad(const char **why, const char *msg)
{
	if (why != NULL)
		*why = msg;
	return -EINVAL;
}

int
hp_ticket_parse(int argc, char *const argv[], struct hp_ticket *t, const char **why)
{
	const char *v;
	long n;
	int have_id = 0, have_fd = 0;

	t->hub_path = NULL;
	/* r[shm.spawn.args] */
	for (int i = 1; i < argc; i++) {
		if ((v = option(argc, argv, &i, "--hub-path")) != NULL) {
			if (*v == '\0')
				return bad(why, "--hub-path is empty");
			t->hub_path = v;
		} else if ((v = option(argc, argv, &i, "--peer-id")) != NULL) {
			if (number(v, 1, 255, &n) != 0)
				return bad(why, "--peer-id must be a number from 1 to 255");
			t->peer_id = (uint32_t)n;
			have_id = 1;
		} else if ((v = option(argc, argv, &i, "--doorbell-fd")) != NULL) {
			if (number(v, 0, INT_MAX, &n) != 0)
				return bad(why, "--doorbell-fd must be a file descriptor number");
			if (fcntl((int)n, F_GETFD) < 0)
				return bad(why, "--doorbell-fd is not an open file descriptor");
			t->doorbell_fd = (int)n;
			have_fd = 1;
		}
	}
	if (t->hub_path == NULL || !have_id || !have_fd)
		return bad(why, "no spawn ticket (--hub-path, --peer-id, --doorbell-fd): "
			   "this program is a hub guest and must be started by hubd");
	return 0;
}
