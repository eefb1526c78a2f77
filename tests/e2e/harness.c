/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/fdpass.h"
#include "tests/e2e/harness.h"

#ifndef BUILD_DIR
#error "BUILD_DIR: the absolute build directory"
#endif

static char run_dir[128];	/* /tmp/hub-e2e-PID */
static char shm_prefix[128];	/* /dev/shm/hub-e2e-PID- */
static int hub_count;
static int hubd_verbose;	/* hubd -v */

/* dir then name in one of 32 static buffers, taken in turn. */
static const char *
path_join(const char *dir, const char *name)
{
	static char path[32][512];
	static int next;
	char *p = path[next++ % 32];

	snprintf(p, 512, "%s%s", dir, name);
	return p;
}

const char *
bin(const char *name)
{
	return path_join(BUILD_DIR "/", name);
}

const char *
harness_dir(void)
{
	return run_dir;
}

const char *
harness_path(const char *name)
{
	char dir[160];

	snprintf(dir, sizeof(dir), "%s/", run_dir);
	return path_join(dir, name);
}

const char *
harness_shm_path(const char *name)
{
	char dir[160];

	snprintf(dir, sizeof(dir), "/dev/shm/%s", shm_prefix);
	return path_join(dir, name);
}

void
harness_hubd_verbose(int on)
{
	hubd_verbose = on;
}

void
harness_setup(void)
{
	hubd_verbose = 0;
	snprintf(run_dir, sizeof(run_dir), "/tmp/hub-e2e-%d", (int)getpid());
	snprintf(shm_prefix, sizeof(shm_prefix), "hub-e2e-%d-", (int)getpid());
	mkdir(run_dir, 0711);	/* others may reach a socket inside, not list */
}

/* Removes dir and what is in it, unmounting what a test mounted there
 * (a small tmpfs, say) first. */
static void
remove_tree(const char *dir)
{
	DIR *d;
	struct dirent *e;
	char path[512];

	umount2(dir, MNT_DETACH);
	if ((d = opendir(dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (e->d_type == DT_DIR)
				remove_tree(path);
			else
				unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* The pid of the hubd whose lock file path is, while it runs (a zombie
 * or a pid reused by another program is not it); 0 if none. */
static int
locker(const char *path)
{
	char stat[128] = "", *end;
	size_t n = strlen(path);
	FILE *f;
	int pid = 0;

	if (n <= 5 || strcmp(path + n - 5, ".lock") != 0 || (f = fopen(path, "r")) == NULL)
		return 0;
	if (fscanf(f, "%d", &pid) != 1 || pid <= 1)
		pid = 0;
	fclose(f);
	if (pid == 0)
		return 0;
	snprintf(stat, sizeof(stat), "/proc/%d/stat", pid);
	if ((f = fopen(stat, "r")) == NULL)
		return 0;
	if (fgets(stat, sizeof(stat), f) == NULL)
		stat[0] = '\0';
	fclose(f);
	/* "pid (comm) state ..." */
	if (strncmp(strchrnul(stat, '('), "(hubd) ", 7) != 0 ||
	    (end = strrchr(stat, ')')) == NULL || end[2] == 'Z')
		return 0;
	return pid;
}

/* Kills the hubd whose lock file path is, if it names one. */
static void
kill_locker(const char *path)
{
	int pid = locker(path);

	if (pid > 0)
		kill(pid, SIGKILL);
}

/* Kills any hubd a failed test left (its pid is in the lock beside its
 * control socket, in this run's directory; its guests follow it through
 * their doorbells), then removes files. */
void
harness_teardown(void)
{
	DIR *d;
	struct dirent *e;
	char path[512];

	if ((d = opendir(run_dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			snprintf(path, sizeof(path), "%s/%s", run_dir, e->d_name);
			kill_locker(path);
		}
		closedir(d);
	}
	if ((d = opendir("/dev/shm")) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, shm_prefix, strlen(shm_prefix)) != 0)
				continue;
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	remove_tree(run_dir);
}

/* A client of the socket at path, reads timing out after timeout_s; -1
 * with errno set when it cannot connect. */
static int
connect_sock(const char *path, int timeout_s)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { timeout_s, 0 };
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

int
hub_client(struct hub_proc *h, int timeout_s)
{
	int fd = connect_sock(h->sock, timeout_s);

	ck_assert_msg(fd >= 0, "connect to %s: %s", h->sock, strerror(errno));
	return fd;
}

double
now_s(void)
{
	return (double)hp_now_ns() / 1e9;
}

void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A zombie is dead: its parent (init, after hubd died) may reap it late. */
int
alive(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	if ((p = strrchr(buf, ')')) == NULL || p[1] == '\0')
		return 0;
	return p[2] != 'Z' && p[2] != 'X';
}

static struct rlimit next_nofile;
static int next_without_setid;
static char next_terminal[sizeof(((struct hub_proc *)0)->terminal)];

void
hub_next_nofile(rlim_t soft, rlim_t hard)
{
	next_nofile = (struct rlimit){ soft, hard };
}

void
hub_next_without_setid(void)
{
	next_without_setid = 1;
}

void
hub_next_terminal(const char *path)
{
	snprintf(next_terminal, sizeof(next_terminal), "%s", path);
}

int
hub_prepare(struct hub_proc *h, const char *hub_keys, const char *guests)
{
	const char *s;

	memset(h, 0, sizeof(*h));
	h->nofile = next_nofile;
	next_nofile = (struct rlimit){ 0, 0 };
	h->without_setid = next_without_setid;
	next_without_setid = 0;
	memcpy(h->terminal, next_terminal, sizeof(h->terminal));
	next_terminal[0] = '\0';
	h->n = hub_count++;
	snprintf(h->conf, sizeof(h->conf), "%s/hub%d.conf", run_dir, h->n);
	snprintf(h->log, sizeof(h->log), "%s/hub%d.log", run_dir, h->n);
	snprintf(h->sock, sizeof(h->sock), "%s/hub%d.sock", run_dir, h->n);
	if (hub_keys == NULL)
		hub_keys = "";
	/* the test's own control path replaces ours */
	if ((s = strstr(hub_keys, "control = ")) != NULL)
		snprintf(h->sock, sizeof(h->sock), "%.*s", (int)strcspn(s + 10, "\n"), s + 10);
	unlink(h->log);		/* this hub's alone: an earlier test's may be there */
	return hub_write_conf(h, hub_keys, guests);
}

int
hub_start(struct hub_proc *h, const char *hub_keys, const char *guests)
{
	return hub_prepare(h, hub_keys, guests) == 0 ? hub_restart(h) : -1;
}

int
hub_write_conf(struct hub_proc *h, const char *hub_keys, const char *guests)
{
	const char *s;
	FILE *f;

	if (hub_keys == NULL)
		hub_keys = "";
	if ((f = fopen(h->conf, "w")) == NULL)
		return -1;
	fprintf(f, "[hub]\n");
	if (strstr(hub_keys, "control = ") == NULL)
		fprintf(f, "control = %s\n", h->sock);
	fprintf(f, "%s\n", hub_keys);
	for (s = guests ? guests : ""; *s != '\0'; s++) {
		if (*s == '@')
			fputs(BUILD_DIR, f);
		else
			fputc(*s, f);
	}
	return fclose(f) == 0 ? 0 : -1;
}

int
hub_reload(struct hub_proc *h, char *msgs, size_t cap)
{
	json_object *a = hub_request(h, "{\"cmd\":\"reload\"}", NULL), *lines;
	int ok;

	ck_assert_msg(a != NULL, "hubd gave no answer to reload; log: %s", hub_log_tail(h));
	ok = json_object_get_boolean(json_get(a, "ok"));
	msgs[0] = '\0';
	if ((lines = json_get(a, "messages")) != NULL)
		for (size_t i = 0; i < json_object_array_length(lines); i++)
			snprintf(msgs + strlen(msgs), cap - strlen(msgs), "%s\n",
				 json_object_get_string(json_object_array_get_idx(lines, i)));
	json_object_put(a);
	return ok;
}

json_object *
hub_stats(struct hub_proc *h)
{
	json_object *o = hub_request(h, "{\"cmd\":\"stats\"}", NULL);

	ck_assert_msg(o != NULL, "no stats: %s", hub_log_tail(h));
	return o;
}

/* A spinning hubd polls its rings hundreds of thousands of times a
 * second; a sleeping one only when its timers or a request wake it. */
#define QUIET_POLLS	2000
#define QUIET_ITERS	500

void
hub_assert_asleep(struct hub_proc *h, const char *while_)
{
	json_object *a = hub_stats(h), *b;
	unsigned long long polls, iters;

	sleep_ms(1000);
	b = hub_stats(h);
	polls = json_u64(b, "loop", "polls", NULL) - json_u64(a, "loop", "polls", NULL);
	iters = json_u64(b, "loop", "iterations", NULL) - json_u64(a, "loop", "iterations", NULL);
	json_object_put(a);
	json_object_put(b);
	ck_assert_msg(polls < QUIET_POLLS && iters < QUIET_ITERS,
		      "%s: hubd polled its rings %llu times and ran its loop %llu times "
		      "in a second", while_, polls, iters);
}

unsigned long long
json_u64(json_object *o, const char *a, const char *b, const char *c)
{
	json_object *v = json_get(o, a);

	if (b != NULL)
		v = json_get(v, b);
	if (c != NULL)
		v = json_get(v, c);
	ck_assert_msg(v != NULL, "no %s.%s.%s in %s", a, b ? b : "", c ? c : "",
		      json_object_to_json_string(o));
	return (unsigned long long)json_object_get_uint64(v);
}

int
hub_restart(struct hub_proc *h)
{
	char lock[sizeof(h->sock) + 8];
	int fd, left;

	/* A hubd an earlier test of this case left on the same socket (it
	 * failed before its hub_stop; its SIGTERM shutdown takes a while)
	 * would answer in place of ours and fail this test too. */
	snprintf(lock, sizeof(lock), "%s.lock", h->sock);
	if ((left = locker(lock)) > 0) {
		fprintf(stderr, "harness: killing hubd %d, left by an earlier test on %s\n",
			left, h->sock);
		kill(left, SIGKILL);
		for (int i = 0; i < 1000 && locker(lock) == left; i++)
			sleep_ms(10);
	}

	if ((h->pid = fork()) < 0)
		return -1;
	if (h->pid == 0) {
		/* hubd stops with the test, even one that failed */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (h->nofile.rlim_cur != 0 && setrlimit(RLIMIT_NOFILE, &h->nofile) != 0)
			_exit(126);
		/* out of the bounding set: root's exec of hubd gets neither */
		if (h->without_setid && (prctl(PR_CAPBSET_DROP, CAP_SETUID, 0, 0, 0) != 0 ||
					 prctl(PR_CAPBSET_DROP, CAP_SETGID, 0, 0, 0) != 0))
			_exit(126);
		/* a session of its own whose controlling terminal it opens */
		if (h->terminal[0] != '\0') {
			if (setsid() < 0 || (fd = open(h->terminal, O_RDWR)) < 0 ||
			    dup2(fd, 0) != 0)
				_exit(126);
			if (fd != 0)
				close(fd);
		}
		fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		if (hubd_verbose)
			execl(bin("hubd"), "hubd", "-v", "-f", h->conf, (char *)NULL);
		else
			execl(bin("hubd"), "hubd", "-f", h->conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if ((fd = connect_sock(h->sock, 30)) >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(h->pid, NULL, WNOHANG) == h->pid) {
			h->pid = 0;
			return -1;
		}
		sleep_ms(10);
	}
	return -1;
}

int
hub_stop(struct hub_proc *h)
{
	int status;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, SIGTERM);
	for (int i = 0; i < 1500; i++) {
		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			h->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		sleep_ms(10);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &status, 0);
	h->pid = 0;
	return -1;
}

json_object *
hub_request(struct hub_proc *h, const char *line, int *items)
{
	static char buf[1 << 20];
	size_t len = 0;
	int fd = connect_sock(h->sock, 30);	/* no test waits forever on hubd */
	json_object *o = NULL;

	if (items != NULL)
		*items = 0;
	if (fd < 0)
		return NULL;
	if (write(fd, line, strlen(line)) < 0 || write(fd, "\n", 1) != 1)
		goto out;
	for (;;) {
		char *nl = memchr(buf, '\n', len);
		ssize_t n;

		if (nl != NULL) {
			json_object *a, *item;

			*nl = '\0';
			a = json_tokener_parse(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
			if (a != NULL && json_object_object_get_ex(a, "item", &item)) {
				if (items != NULL)
					(*items)++;
				json_object_put(a);
				continue;
			}
			o = a;
			break;
		}
		if (len == sizeof(buf) || (n = read(fd, buf + len, sizeof(buf) - len)) <= 0)
			break;
		len += (size_t)n;
	}
out:
	close(fd);
	return o;
}

int
hub_domain_fd(struct hub_proc *h, const char *kind, const char *name)
{
	static char buf[1 << 16];
	int fds[512], fd = connect_sock(h->sock, 30), found = -1;
	uint32_t nfds = 0;
	size_t len = 0;
	json_object *a = NULL, *list;
	const char *line = "{\"cmd\":\"domains\"}\n";

	if (fd < 0)
		return -1;
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		goto out;
	while (memchr(buf, '\n', len) == NULL && len < sizeof(buf) - 1) {
		ssize_t n = hp_fdpass_recv(fd, buf + len, sizeof(buf) - 1 - len, fds, 512, &nfds);

		if (n <= 0)
			goto out;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if ((a = json_tokener_parse(buf)) == NULL ||
	    !json_object_object_get_ex(a, "domains", &list))
		goto out;
	/* the fds come in the list's order */
	for (size_t i = 0; i < json_object_array_length(list) && i < nfds; i++) {
		json_object *e = json_object_array_get_idx(list, i);

		if (strcmp(json_object_get_string(json_get(e, "kind")), kind) == 0 &&
		    strcmp(json_object_get_string(json_get(e, "name")), name) == 0) {
			found = fds[i];
			fds[i] = -1;
			break;
		}
	}
out:
	for (uint32_t i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	json_object_put(a);
	close(fd);
	return found;
}

json_object *
hub_peer(struct hub_proc *h, const char *name)
{
	json_object *a = hub_request(h, "{\"cmd\":\"peers\"}", NULL), *peers, *res = NULL;

	if (a == NULL || !json_object_object_get_ex(a, "peers", &peers)) {
		json_object_put(a);
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *p = json_object_array_get_idx(peers, i), *n;

		if (json_object_object_get_ex(p, "name", &n) &&
		    strcmp(json_object_get_string(n), name) == 0)
			res = json_object_get(p);
	}
	json_object_put(a);
	return res;
}

static const char *
state_of(json_object *p)
{
	json_object *s;

	return p != NULL && json_object_object_get_ex(p, "state", &s) ?
	    json_object_get_string(s) : "?";
}

void
hub_start_up(struct hub_proc *h, const char *hub_keys, const char *guests, const char *names)
{
	ck_assert_msg(hub_start(h, hub_keys, guests) == 0, "hubd did not start: %s",
		      hub_log_tail(h));
	ck_assert_msg(names == NULL || hub_wait_up(h, names, 10000) == 0,
		      "guests %s not up: %s", names, hub_log_tail(h));
}

int
hub_wait_ignores_term(struct hub_proc *h, const char *name)
{
	double end = now_s() + 30;
	int pid = 0;

	while (now_s() < end) {
		char path[64], line[128];
		unsigned long long mask = 0;
		FILE *f;

		if ((pid = hub_peer_int(h, name, "pid")) > 0) {
			snprintf(path, sizeof(path), "/proc/%d/status", pid);
			if ((f = fopen(path, "re")) != NULL) {
				while (fgets(line, sizeof(line), f) != NULL)
					if (sscanf(line, "SigIgn: %llx", &mask) == 1)
						break;
				fclose(f);
			}
			if (mask >> (SIGTERM - 1) & 1)
				return pid;
		}
		sleep_ms(10);
	}
	ck_abort_msg("%s never came to ignore SIGTERM; log: %s", name, hub_log_tail(h));
	return pid;
}

int
hub_peer_int(struct hub_proc *h, const char *name, const char *key)
{
	json_object *p = hub_peer(h, name), *v;
	int n = -1;

	if (p != NULL && json_object_object_get_ex(p, key, &v))
		n = json_object_get_int(v);
	json_object_put(p);
	return n;
}

const char *
hub_peer_state(struct hub_proc *h, const char *name)
{
	static char state[32];
	json_object *p = hub_peer(h, name);

	snprintf(state, sizeof(state), "%s", state_of(p));
	json_object_put(p);
	return state;
}

int
hub_wait_new_pid(struct hub_proc *h, const char *name, int old, double timeout)
{
	double end = now_s() + timeout;
	int pid;

	while (now_s() < end) {
		pid = hub_peer_int(h, name, "pid");
		if (pid > 0 && pid != old && strcmp(hub_peer_state(h, name), "up") == 0)
			return pid;
		sleep_ms(1);
	}
	return -1;
}

int
hub_wait_up(struct hub_proc *h, const char *names, int timeout_ms)
{
	char list[512], *save, *name;
	int up;

	for (int t = 0; t <= timeout_ms; t += 20) {
		snprintf(list, sizeof(list), "%s", names);
		up = 1;
		for (name = strtok_r(list, ",", &save); name != NULL;
		     name = strtok_r(NULL, ",", &save)) {
			json_object *p = hub_peer(h, name);

			if (strcmp(state_of(p), "up") != 0)
				up = 0;
			json_object_put(p);
		}
		if (up)
			return 0;
		sleep_ms(20);
	}
	return -1;
}

/* hubctl -s SOCK args...: what it writes to fd (1 or 2) in *out, the
 * other to /dev/null; its exit status. */
static char last_err[1000];	/* hubctl's stderr, the last hubctl() */

static int
vhubctl(struct hub_proc *h, int fd, char **out, va_list ap)
{
	char *argv[32];
	int argc = 0, pipefd[2], status;
	size_t len = 0, cap = 4096;
	char errname[64];
	pid_t pid;
	ssize_t n;

	/* per process: a test's children may run hubctl at once */
	snprintf(errname, sizeof(errname), "hubctl.err.%d", (int)getpid());
	argv[argc++] = "hubctl";
	argv[argc++] = "-s";
	argv[argc++] = h->sock;
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	argv[argc] = NULL;
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -1;
	if ((pid = fork()) == 0) {
		/* the other stream: stderr kept for failure messages
		 * (hubctl_stderr), stdout dropped */
		int other = fd == 1 ? open(harness_path(errname),
					   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) :
		    open("/dev/null", O_WRONLY | O_CLOEXEC);

		dup2(other, fd == 1 ? 2 : 1);
		dup2(pipefd[1], fd);
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	close(pipefd[1]);
	*out = malloc(cap);
	while (*out != NULL && (n = read(pipefd[0], *out + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap)
			*out = realloc(*out, cap *= 2);
	}
	if (*out != NULL)
		(*out)[len] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	last_err[0] = '\0';
	if (fd == 1) {
		int e = open(harness_path(errname), O_RDONLY | O_CLOEXEC);

		if (e >= 0 && (n = read(e, last_err, sizeof(last_err) - 1)) > 0)
			last_err[n] = '\0';
		if (e >= 0)
			close(e);
		unlink(harness_path(errname));
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *
hubctl_stderr(void)
{
	return last_err;
}

int
hubctl(struct hub_proc *h, char **out, ...)
{
	va_list ap;
	int rc;

	va_start(ap, out);
	rc = vhubctl(h, 1, out, ap);
	va_end(ap);
	return rc;
}

int
hubctl_err(struct hub_proc *h, char **err, ...)
{
	va_list ap;
	int rc;

	va_start(ap, err);
	rc = vhubctl(h, 2, err, ap);
	va_end(ap);
	return rc;
}

/* Appends what fd gives to the buffer b (len, cap); 0 at its end. Out
 * of memory, the rest is read and dropped: the writer never stalls. */
static int
take(int fd, char **b, size_t *len, size_t *cap)
{
	char *nb, drop[4096];
	ssize_t n;

	if (*len + 1 >= *cap && (nb = realloc(*b, *cap * 2)) != NULL) {
		*b = nb;
		*cap *= 2;
	}
	if (*len + 1 >= *cap) {
		n = read(fd, drop, sizeof(drop));
		return n > 0 || (n < 0 && errno == EINTR);
	}
	n = read(fd, *b + *len, *cap - *len - 1);
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;
	*len += (size_t)n;
	(*b)[*len] = '\0';
	return 1;
}

/* The last len bytes of s at most (for a failure message). */
static const char *
last(const char *s, size_t len)
{
	size_t n = strlen(s);

	return n > len ? s + n - len : s;
}

void
hubctl_ok(struct hub_proc *h, char **out, ...)
{
	char *argv[32], *o = calloc(1, 4096), *e = calloc(1, 4096), cmd[512] = "hubctl";
	size_t olen = 0, elen = 0, ocap = 4096, ecap = 4096, n = strlen(cmd);
	int argc = 0, po[2], pe[2], status, rc;
	struct pollfd pf[2];
	va_list ap;
	pid_t pid;

	ck_assert_msg(o != NULL && e != NULL, "hubctl: out of memory");
	argv[argc++] = "hubctl";
	argv[argc++] = "-s";
	argv[argc++] = h->sock;
	va_start(ap, out);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL) {
		if (n < sizeof(cmd))
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " %s", argv[argc]);
		argc++;
	}
	va_end(ap);
	argv[argc] = NULL;
	ck_assert_msg(pipe2(po, O_CLOEXEC) == 0 && pipe2(pe, O_CLOEXEC) == 0, "%s: pipe: %s",
		      cmd, strerror(errno));
	if ((pid = fork()) == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* both at once: one that fills its pipe must not stall the other */
	pf[0] = (struct pollfd){ po[0], POLLIN, 0 };
	pf[1] = (struct pollfd){ pe[0], POLLIN, 0 };
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents != 0 && !take(po[0], &o, &olen, &ocap))
			pf[0].fd = -1;
		if (pf[1].revents != 0 && !take(pe[0], &e, &elen, &ecap))
			pf[1].fd = -1;
	}
	close(po[0]);
	close(pe[0]);
	ck_assert_msg(pid > 0 && waitpid(pid, &status, 0) == pid, "%s: fork: %s", cmd,
		      strerror(errno));
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	/* Check refuses long messages: the ends of each */
	ck_assert_msg(rc == 0, "%s: exit %d\nstdout: %s\nstderr: %s\nhubd's log: %s", cmd, rc,
		      last(o, 800), last(e, 800), last(hub_log_tail(h), 1500));
	free(e);
	if (out != NULL)
		*out = o;
	else
		free(o);
}

char *
hub_log(struct hub_proc *h)
{
	FILE *f = fopen(h->log, "r");
	char *buf = NULL;
	long n = 0;

	/* all of it: what a test looks for may come after megabytes */
	if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) < 0)
		n = 0;
	if ((buf = calloc(1, (size_t)n + 1)) != NULL && f != NULL) {
		rewind(f);
		buf[fread(buf, 1, (size_t)n, f)] = '\0';
	}
	if (f != NULL)
		fclose(f);
	return buf;
}

int
hub_log_wait(struct hub_proc *h, const char *text, int timeout_ms)
{
	for (double end = now_s() + timeout_ms / 1000.0;; sleep_ms(20)) {
		char *log = hub_log(h);
		int found = log != NULL && strstr(log, text) != NULL;

		free(log);
		if (found || now_s() > end)
			return found;
	}
}

const char *
hub_log_tail(struct hub_proc *h)
{
	static char buf[3000];
	char *log = hub_log(h);
	size_t n = log != NULL ? strlen(log) : 0, o = 0, room;

	/* what the last hubctl said on stderr first: a failed call's why */
	if (last_err[0] != '\0')
		o = (size_t)snprintf(buf, sizeof(buf), "hubctl said: %.1000s; log: ", last_err);
	room = sizeof(buf) - o;
	snprintf(buf + o, room, "%s", log == NULL ? "" :
		 n < room ? log : log + n - (room - 1));
	free(log);
	return buf;
}

/* Whether the methods answer a lists a method called name. */
static int
lists_method(json_object *a, const char *name)
{
	json_object *ms = json_get(a, "methods");

	for (size_t i = 0; i < json_object_array_length(ms); i++)
		if (strcmp(json_object_get_string(json_get(json_object_array_get_idx(ms, i),
							   "name")), name) == 0)
			return 1;
	return 0;
}

int
hub_wait_method(struct hub_proc *h, const char *methods)
{
	char list[512], *save, *name;

	for (int i = 0; i < 1000; i++) {
		json_object *a = hub_request(h, "{\"cmd\":\"methods\"}", NULL);
		int all = a != NULL;

		snprintf(list, sizeof(list), "%s", methods);
		for (name = strtok_r(list, ",", &save); name != NULL && all;
		     name = strtok_r(NULL, ",", &save))
			all = lists_method(a, name);
		json_object_put(a);
		if (all)
			return 0;
		sleep_ms(10);
	}
	return -1;
}

int
hub_wait_in_flight(struct hub_proc *h, const char *method)
{
	char quoted[256];

	snprintf(quoted, sizeof(quoted), "\"%s\"", method);
	for (int i = 0; i < 800; i++) {
		json_object *a = hub_request(h, "{\"cmd\":\"calls\"}", NULL);
		int there = a != NULL && strstr(json_object_to_json_string(a), quoted) != NULL;

		json_object_put(a);
		if (there)
			return 0;
		sleep_ms(25);
	}
	return -1;
}

json_object *
json_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}
