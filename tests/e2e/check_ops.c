/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The operator's hub: hubctl's commands and JSON, the control socket
 * against bad clients, reload, inspect, systemd's notify protocol and unit. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define GUESTS "[guest echo]\nexec = @/guests/echo\n[guest kv]\nexec = @/guests/kv\n"

static struct hub_proc hub;

static json_object *
ctl_json(int want, const char *a, const char *b)
{
	char *out = NULL;
	json_object *o;
	int rc = hubctl(&hub, &out, "--json", a, b, (char *)NULL);

	ck_assert_msg(rc == want, "hubctl --json %s: %d", a, rc);
	o = json_tokener_parse(out);
	ck_assert_msg(o != NULL, "not JSON: %s", out);
	free(out);
	return o;
}


START_TEST(test_json_output_parses)
{
	json_object *o;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse,kv.put,kv.get,kv.delete,kv.list") == 0);
	o = ctl_json(0, "status", NULL);
	ck_assert(json_object_get_boolean(json_get(o, "ok")));
	ck_assert_int_eq(json_object_get_int(json_get(o, "guests")), 2);
	ck_assert_str_eq(json_object_get_string(json_get(o, "control")), hub.sock);
	json_object_put(o);
	o = ctl_json(0, "peers", NULL);
	ck_assert_int_eq(json_object_array_length(json_get(o, "peers")), 2);
	json_object *p = json_object_array_get_idx(json_get(o, "peers"), 0);
	ck_assert_str_eq(json_object_get_string(json_get(p, "state")), "up");
	ck_assert_int_gt(json_object_get_int(json_get(p, "pid")), 0);
	ck_assert_int_eq(json_object_get_int(json_get(p, "slots_used")), 0);
	json_object_put(o);
	o = ctl_json(1, "call", "echo.echo");	/* missing argument */
	ck_assert(!json_object_get_boolean(json_get(o, "ok")));
	json_object_put(o);
	o = ctl_json(0, "methods", NULL);
	ck_assert_int_ge(json_object_array_length(json_get(o, "methods")), 6 + 6);
	json_object_put(o);
	o = ctl_json(0, "stats", NULL);
	ck_assert_ptr_nonnull(json_get(json_get(json_get(o, "guests"), "echo"), "calls_in"));
	ck_assert_ptr_nonnull(json_get(json_get(o, "total"), "wakes"));
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Sends text, returns the first answer line (static) or "" on close. */
static const char *
exchange(int fd, const char *text, size_t len)
{
	static char buf[4096];
	size_t n = 0;
	ssize_t r;

	if (len > 0)
		ck_assert_int_eq(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, 1)) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
	return buf;
}

START_TEST(test_bad_control_clients)
{
	static char big[70000];
	int fd, idle[200];

	hub_start_up(&hub, NULL, GUESTS, "echo");
	/* garbage, wrong shapes, unknown commands: an error each, the
	 * connection stays usable */
	fd = hub_client(&hub, 10);
	ck_assert_ptr_nonnull(strstr(exchange(fd, "hello\n", strlen("hello\n")), "\"ok\":false"));
	ck_assert_ptr_nonnull(strstr(exchange(fd, "[1,2]\n", strlen("[1,2]\n")), "\"ok\":false"));
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":42}\n", strlen("{\"cmd\":42}\n")), "\"ok\":false"));
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":\"nope\"}\n", strlen("{\"cmd\":\"nope\"}\n")), "unknown command"));
	const char *nonstring = "{\"cmd\":\"call\",\"method\":\"echo.echo\",\"args\":[1]}\n";

	ck_assert_ptr_nonnull(strstr(exchange(fd, nonstring, strlen(nonstring)), "\"ok\":false"));
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":\"status\"}\n", strlen("{\"cmd\":\"status\"}\n")), "\"ok\":true"));
	/* a request sent in pieces is put together */
	ck_assert_int_eq(send(fd, "{\"cmd\":", 7, 0), 7);
	usleep(20000);
	ck_assert_ptr_nonnull(strstr(exchange(fd, "\"status\"}\n", strlen("\"status\"}\n")), "\"ok\":true"));
	close(fd);
	/* oversized: refused and dropped */
	fd = hub_client(&hub, 10);
	memset(big, 'x', sizeof(big));
	send(fd, big, sizeof(big), MSG_NOSIGNAL);
	ck_assert_ptr_nonnull(strstr(exchange(fd, NULL, 0), "longer than"));
	ck_assert_str_eq(exchange(fd, NULL, 0), "");
	close(fd);
	/* clients that connect and say nothing do not hold anyone up */
	for (int i = 0; i < 200; i++)
		idle[i] = hub_client(&hub, 10);
	fd = hub_client(&hub, 10);
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":\"peers\"}\n", strlen("{\"cmd\":\"peers\"}\n")), "\"ok\":true"));
	close(fd);
	for (int i = 0; i < 200; i++)
		close(idle[i]);
	/* a thousand at once: those past the limit are turned away, the
	 * hub answers the next one */
	struct rlimit rl = { 4096, 4096 };
	int many[1000], n = 0;

	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < 1000; i++) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		memcpy(sun.sun_path, hub.sock, strlen(hub.sock) + 1);
		if (c >= 0 && connect(c, (struct sockaddr *)&sun, sizeof(sun)) == 0)
			many[n++] = c;
		else if (c >= 0)
			close(c);
	}
	ck_assert_int_gt(n, 0);
	fd = hub_client(&hub, 10);
	usleep(100000);
	for (int i = 0; i < n; i++)
		close(many[i]);
	close(fd);
	usleep(100000);
	fd = hub_client(&hub, 10);
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":\"peers\"}\n", strlen("{\"cmd\":\"peers\"}\n")), "\"ok\":true"));
	close(fd);
	/* a client that sends many requests and never reads is dropped,
	 * and the hub goes on */
	fd = hub_client(&hub, 10);
	for (int i = 0; i < 20000; i++)
		if (send(fd, "{\"cmd\":\"methods\"}\n", 18, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			break;
	usleep(200000);
	close(fd);
	fd = hub_client(&hub, 10);
	ck_assert_ptr_nonnull(strstr(exchange(fd, "{\"cmd\":\"status\"}\n", strlen("{\"cmd\":\"status\"}\n")), "\"ok\":true"));
	close(fd);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* SO_PEERCRED: reading is for whoever can connect, changing state is for
 * root and the hub's user. */
START_TEST(test_other_user_reads_but_cannot_change)
{
	int status;
	pid_t pid;

	if (geteuid() != 0)
		return;		/* needs root to become somebody else */
	hub_start_up(&hub, NULL, GUESTS, "echo");
	/* the socket is 0660: let nobody's group in */
	ck_assert_int_eq(chown(hub.sock, 0, 65534), 0);
	chmod(hub.sock, 0660);
	if ((pid = fork()) == 0) {
		int fd, ok;

		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		fd = hub_client(&hub, 10);
		ok = strstr(exchange(fd, "{\"cmd\":\"peers\"}\n", strlen("{\"cmd\":\"peers\"}\n")), "\"ok\":true") != NULL;
		ok &= strstr(exchange(fd, "{\"cmd\":\"call\",\"method\":\"echo.echo\",\"args\":[\"x\"]}\n", strlen("{\"cmd\":\"call\",\"method\":\"echo.echo\",\"args\":[\"x\"]}\n")), "permission denied") != NULL;
		ok &= strstr(exchange(fd, "{\"cmd\":\"restart\",\"name\":\"echo\"}\n", strlen("{\"cmd\":\"restart\",\"name\":\"echo\"}\n")),
			     "permission denied") != NULL;
		ok &= strstr(exchange(fd, "{\"cmd\":\"reload\"}\n", strlen("{\"cmd\":\"reload\"}\n")), "permission denied") != NULL;
		_exit(ok ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "other user: %d", status);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

static const char *
state_of(const char *name)
{
	static char s[32];
	json_object *p = hub_peer(&hub, name);

	snprintf(s, sizeof(s), "%s", p ? json_object_get_string(json_get(p, "state")) : "(none)");
	json_object_put(p);
	return s;
}

static void
rewrite_conf(const char *guests)
{
	FILE *f = fopen(hub.conf, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "[hub]\ncontrol = %s\n", hub.sock);
	for (const char *s = guests; *s; s++) {
		if (*s == '@')
			fputs(bin(""), f);
		else
			fputc(*s, f);
	}
	fclose(f);
}

static long
proc_field(int pid, const char *file, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key) + strspn(line + strlen(key), " \t:"), NULL, 10);
	fclose(f);
	return v;
}

/* A guest as another user, with limits; its memory handed to it as an
 * fd, the socket its group's. */
START_TEST(test_guest_user_group_limits)
{
	struct stat st;
	json_object *p;
	int pid;

	if (geteuid() != 0)
		return;		/* needs root to run a guest as somebody else */
#ifdef __SANITIZE_ADDRESS__
	/* ASan reserves terabytes of address space: no RLIMIT_AS for it */
	const char *memory = "", *want_as = NULL;
#else
	const char *memory = "limit_memory = 1G\n", *want_as = "";
#endif
	char guests[512];

	snprintf(guests, sizeof(guests), "[guest echo]\nexec = @/guests/echo\nuser = nobody\n"
		 "group = nogroup\nlimit_files = 64\n%s", memory);
	hub_start_up(&hub, "group = nogroup\n", guests, "echo");
	ck_assert_int_eq(stat(hub.sock, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0660);
	p = hub_peer(&hub, "echo");
	pid = json_object_get_int(json_get(p, "pid"));
	json_object_put(p);
	ck_assert_int_eq(proc_field(pid, "status", "Uid:"), 65534);
	ck_assert_int_eq(proc_field(pid, "status", "Gid:"), 65534);
	ck_assert_int_eq(proc_field(pid, "status", "NoNewPrivs:"), 1);
	ck_assert_int_eq(proc_field(pid, "limits", "Max open files"), 64);
	if (want_as != NULL)
		ck_assert_int_eq(proc_field(pid, "limits", "Max address space"), 1 << 30);
	/* and it works as any guest does */
	char *out = NULL;

	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	hubctl_ok(&hub, &out, "call", "echo.echo", "as nobody", (char *)NULL);
	ck_assert_str_eq(out, "as nobody\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubd holds several fds per guest: started under a soft limit of open
 * files too low for its guests (as a shell's or systemd's 1024 was for
 * 144), it raises it to the hard limit and starts them all, each guest
 * with the soft limit hubd was started with; under a hard limit too low
 * for max_guests it says so at start. */
START_TEST(test_open_files_limit)
{
	struct rlimit was;
	char guests[16384], names[2048], *log;
	size_t gl = 0, nl = 0;
	const int n = 24;	/* about 7 fds each: past 128 */
	int pid;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
	if (was.rlim_max < 1024)
		return;		/* no room to raise it into */
	for (int i = 0; i < n; i++) {
		gl += (size_t)snprintf(guests + gl, sizeof(guests) - gl,
				       "[guest p%d]\nexec = @/tests/guests/prober\n"
				       "args = --prefix p%d\n", i, i);
		nl += (size_t)snprintf(names + nl, sizeof(names) - nl, "%sp%d", i ? "," : "", i);
	}
	hub_next_nofile(128, was.rlim_max);
	hub_start_up(&hub, "max_guests = 32\n", guests, names);
	ck_assert_int_eq(proc_field(hub.pid, "limits", "Max open files"), (long)was.rlim_max);
	pid = hub_peer_int(&hub, "p23", "pid");
	ck_assert_int_eq(proc_field(pid, "limits", "Max open files"), 128);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "needs about") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);

	/* no room: a warning, and the guests that fit run */
	hub_next_nofile(128, 128);
	hub_start_up(&hub, "max_guests = 64\n", GUESTS, "echo,kv");
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "max_guests = 64 needs about 576 open files, but hubd may "
			      "open 128") != NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* What /proc/PID/fd/N of a guest links to. */
static const char *
fd_link(int pid, int fd)
{
	static char target[256];
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	n = readlink(path, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	return target;
}

/* r[shm.spawn.fd-inheritance]: a guest has its doorbell, its own domain
 * and its own pool, memfds with no name in any filesystem, and nothing
 * else of hubd's (its pipe to hubd is gone with the exec); what it opened
 * itself since (libguest maps its domain and pool through their paths)
 * is one of those again. */
START_TEST(test_guest_memory_is_its_own)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int pid, seen = 0;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	pid = hub_peer_int(&hub, "echo", "pid");
	ck_assert_int_gt(pid, 1);
	ck_assert_msg(strncmp(fd_link(pid, 3), "socket:", 7) == 0, "%s", fd_link(pid, 3));
	ck_assert_msg(strncmp(fd_link(pid, 5), "/memfd:hub:echo ", 16) == 0, "%s", fd_link(pid, 5));
	ck_assert_msg(strncmp(fd_link(pid, 6), "/memfd:hub-pool:echo ", 21) == 0, "%s",
		      fd_link(pid, 6));
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		const char *l;

		if (e->d_name[0] == '.' || fd <= 2)
			continue;
		l = fd_link(pid, fd);
		ck_assert_msg(strncmp(l, "socket:", 7) == 0 || strncmp(l, "/memfd:hub:echo ", 16) == 0 ||
			      strncmp(l, "/memfd:hub-pool:echo ", 21) == 0 ||
			      strncmp(l, "anon_inode:", 11) == 0 || strncmp(l, "pipe:", 5) == 0,
			      "echo's fd %d is %s", fd, l);
		seen++;
	}
	closedir(d);
	ck_assert_int_ge(seen, 3);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

START_TEST(test_reload)
{
	char *out = NULL;
	int kv_pid, echo_pid;
	json_object *p;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	p = hub_peer(&hub, "kv");
	kv_pid = json_object_get_int(json_get(p, "pid"));
	json_object_put(p);
	p = hub_peer(&hub, "echo");
	echo_pid = json_object_get_int(json_get(p, "pid"));
	json_object_put(p);
	/* kv changed, echo gone, counter new, and a segment change refused */
	rewrite_conf("[guest kv]\nexec = @/guests/kv\nargs = --changed\n"
		     "[guest counter]\nexec = @/guests/counter\n");
	FILE *f = fopen(hub.conf, "a");
	fprintf(f, "[hub]\n");	/* a second [hub] makes it broken: check first */
	fclose(f);
	ck_assert_int_eq(hubctl(&hub, &out, "reload", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "nothing changed") != NULL, "%s", out);
	free(out);
	ck_assert_str_eq(state_of("echo"), "up");
	/* the file is now a directory: no empty config, nothing changed */
	ck_assert_int_eq(unlink(hub.conf), 0);
	ck_assert_int_eq(mkdir(hub.conf, 0700), 0);
	ck_assert_int_eq(hubctl(&hub, &out, "reload", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "cannot read: it is a directory") != NULL &&
		      strstr(out, "nothing changed") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(rmdir(hub.conf), 0);
	/* why, in hubd's log too, as for a SIGHUP's reload */
	{
		char *log = hub_log(&hub);

		ck_assert_msg(strstr(log, "hubd: reload: ") != NULL &&
			      strstr(log, "cannot read: it is a directory") != NULL, "%s",
			      hub_log_tail(&hub));
		free(log);
	}
	ck_assert_str_eq(state_of("echo"), "up");
	ck_assert_str_eq(state_of("kv"), "up");
	rewrite_conf("[guest kv]\nexec = @/guests/kv\nargs = --changed\n"
		     "[guest counter]\nexec = @/guests/counter\n");
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	ck_assert_msg(strstr(out, "kv: changed") && strstr(out, "echo: removed") &&
		      strstr(out, "counter: added"), "%s", out);
	free(out);
	ck_assert(hub_wait_up(&hub, "kv,counter", 10000) == 0);
	/* counter took an entry past the ones started with hubd (echo's
	 * was not free yet): hubd's rounds over the guests reach it */
	ck_assert(hub_wait_method(&hub, "counter.count") == 0);
	hubctl_ok(&hub, &out, "call", "counter.count", "3", (char *)NULL);
	ck_assert_str_eq(out, "1\n2\n3\n3\n");
	free(out);
	for (double end = now_s() + 30; strcmp(state_of("echo"), "(none)") != 0 && now_s() < end;)
		sleep_ms(10);
	ck_assert_str_eq(state_of("echo"), "(none)");
	ck_assert(!alive(echo_pid));
	ck_assert(!alive(kv_pid));
	/* the same file again: said (it printed nothing) */
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	ck_assert_msg(strstr(out, ": nothing changed\n") != NULL && strstr(out, "guest") == NULL,
		      "%s", out);
	free(out);
	/* a guest added that cannot start: warned of, as hubd -n does */
	rewrite_conf("[guest kv]\nexec = @/guests/kv\nargs = --changed\n"
		     "[guest counter]\nexec = @/guests/counter\n"
		     "[guest missing]\nexec = /nonexistent/missing\n");
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	ck_assert_msg(strstr(out, "guest missing: added, starting; warning: exec "
			     "/nonexistent/missing: No such file or directory: it will not "
			     "start\n") != NULL, "%s", out);
	free(out);
	/* segment parameters cannot change live */
	char *conf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&conf, &n);

	fprintf(m, "[hub]\ncontrol = %s\nring_size = 64\n"
		"[guest kv]\nexec = %s/guests/kv\nargs = --changed\n"
		"[guest counter]\nexec = %s/guests/counter\n", hub.sock,
		bin(""), bin(""));
	fclose(m);
	f = fopen(hub.conf, "w");
	fputs(conf, f);
	fclose(f);
	free(conf);
	/* by SIGHUP this time */
	kill(hub.pid, SIGHUP);
	for (double end = now_s() + 30; now_s() < end;) {
		char *log = hub_log(&hub);
		int seen = strstr(log, "ring_size: cannot change without a restart: kept 256") !=
		    NULL;

		free(log);
		if (seen)
			break;
		sleep_ms(10);
	}
	json_object *st = ctl_json(0, "status", NULL);

	ck_assert_int_eq(json_object_get_int(json_get(st, "ring_size")), 256);	/* kept */
	json_object_put(st);
	ck_assert_str_eq(state_of("kv"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* out must hold line, a whole line. */
static void
has_line(const char *out, const char *line)
{
	const char *s = out;
	size_t n = strlen(line);

	while ((s = strstr(s, line)) != NULL && ((s != out && s[-1] != '\n') || s[n] != '\n'))
		s++;
	ck_assert_msg(s != NULL, "no line '%s' in:\n%s", line, out);
}

/* Every [hub] and [pool] key a reload changes is said by name: those
 * that can change under running guests taken from then on, the others
 * kept with their running values until hubd restarts. */
START_TEST(test_reload_hub_keys)
{
	struct group *gr = getgrnam("nogroup");
	char *out = NULL;
	json_object *st;
	struct stat sb;

	hub_start_up(&hub, "calls_in_flight = 64\nlanes_per_guest = 4\n", GUESTS, "echo,kv");
	ck_assert_int_eq(hub_write_conf(&hub, "calls_in_flight = 128\nlanes_per_guest = 8\n"
					"ring_size = 64\nheartbeat_interval = 500ms\n"
					"[pool]\nclasses = 1K x 128\nsweep_interval = 100ms\n",
					GUESTS), 0);
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	has_line(out, "calls_in_flight: now 128 (was 64)");
	has_line(out, "lanes_per_guest: now 8 (was 4)");
	has_line(out, "ring_size: cannot change without a restart: kept 256");
	has_line(out, "heartbeat_interval: cannot change without a restart: kept 1s");
	has_line(out, "[pool] classes: cannot change without a restart: kept "
		 "1K x 256, 16K x 64, 256K x 16, 4M x 2, 32M x 1");
	has_line(out, "[pool] sweep_interval: now 100ms (was 250ms)");
	ck_assert_msg(strstr(out, "max_extents") == NULL && strstr(out, "echo") == NULL, "%s",
		      out);
	free(out);
	st = ctl_json(0, "status", NULL);
	ck_assert_int_eq(json_object_get_int(json_get(st, "ring_size")), 256);
	json_object_put(st);
	/* taken: said once; kept: said again while the file differs */
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	ck_assert_msg(strstr(out, "calls_in_flight") == NULL && strstr(out, "lanes_per_guest") ==
		      NULL && strstr(out, "sweep_interval") == NULL, "%s", out);
	has_line(out, "ring_size: cannot change without a restart: kept 256");
	free(out);
	ck_assert_str_eq(state_of("echo"), "up");
	/* the control socket's group, for its new members (root's to give) */
	if (geteuid() == 0 && gr != NULL) {
		ck_assert_int_eq(hub_write_conf(&hub, "group = nogroup\n", GUESTS), 0);
		hubctl_ok(&hub, &out, "reload", (char *)NULL);
		has_line(out, "group: now nogroup (was unset)");
		free(out);
		ck_assert_int_eq(stat(hub.sock, &sb), 0);
		ck_assert_int_eq(sb.st_gid, gr->gr_gid);
		ck_assert_int_eq(hub_write_conf(&hub, NULL, GUESTS), 0);
		hubctl_ok(&hub, &out, "reload", (char *)NULL);
		has_line(out, "group: now unset (was nogroup)");
		free(out);
		ck_assert_int_eq(stat(hub.sock, &sb), 0);
		ck_assert_int_ne(sb.st_gid, gr->gr_gid);
	}
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A reload that changes only what follows a guest's deaths (restart,
 * max_deaths, death_window, backoff_min, backoff_max) or its pool quota
 * takes it without a restart: the guest runs on, by the new values from
 * its next death (it was restarted, its calls cancelled, for a new
 * backoff_max). Any other key of its section restarts it, and only it. */
START_TEST(test_reload_guest_live_keys)
{
	const char *live = "[guest echo]\nexec = @/guests/echo\n[guest kv]\nexec = @/guests/kv\n"
			   "restart = always\nbackoff_max = 10s\npool_quota = 64M\n";
	char *out = NULL, *args = NULL;
	int kv_pid, echo_pid;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	kv_pid = hub_peer_int(&hub, "kv", "pid");
	echo_pid = hub_peer_int(&hub, "echo", "pid");
	ck_assert_int_eq(hub_write_conf(&hub, NULL, live), 0);
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	has_line(out, "guest kv: restart, backoff_max, pool_quota changed: taken without a restart");
	free(out);
	ck_assert_int_eq(hub_peer_int(&hub, "kv", "pid"), kv_pid);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), echo_pid);
	hubctl_ok(&hub, &out, "-j", "peers", "kv", (char *)NULL);
	ck_assert_msg(strstr(out, "\"pool_quota\":67108864") != NULL, "%s", out);
	free(out);
	/* restart = always from now on: an exit 0 (SIGTERM: libguest
	 * detaches) restarts it, where on-failure left it down */
	ck_assert_int_eq(kill(kv_pid, SIGTERM), 0);
	kv_pid = hub_wait_new_pid(&hub, "kv", kv_pid, 30);
	ck_assert_msg(kv_pid > 0, "kv not restarted: %s", hub_log_tail(&hub));
	/* args: a new instance, echo left alone */
	ck_assert_int_ne(asprintf(&args, "%sargs = --changed\n", live), -1);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, args), 0);
	free(args);
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	has_line(out, "guest kv: changed, restarting");
	free(out);
	ck_assert_int_gt(hub_wait_new_pid(&hub, "kv", kv_pid, 30), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), echo_pid);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A reload is checked against the values hubd keeps until it restarts:
 * channels_per_caller against the running max_channels, as at start (it
 * took 200 with max_channels 64 kept, which start refuses: one caller
 * could hold every channel id of a guest). */
START_TEST(test_reload_checks_kept_values)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	ck_assert_int_eq(hub_write_conf(&hub, "max_channels = 1024\nchannels_per_caller = 200\n",
					GUESTS), 0);
	ck_assert_int_eq(hubctl(&hub, &out, "reload", (char *)NULL), 1);
	ck_assert_msg(strstr(out, ": channels_per_caller is 200, but hubd opens at most 31 "
			     "channels in a guest's table (max_channels 64: the running one, kept "
			     "until hubd restarts)") != NULL && strstr(out, "nothing changed") != NULL,
		      "%s", out);
	free(out);
	/* nothing taken: the next reload finds channels_per_caller unset */
	ck_assert_int_eq(hub_write_conf(&hub, "channels_per_caller = 5\n", GUESTS), 0);
	hubctl_ok(&hub, &out, "reload", (char *)NULL);
	has_line(out, "channels_per_caller: now 5 (was default)");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A reload while hubd stops changes nothing: what it added started after
 * the stop had asked every guest to go, nobody asked it to stop, and
 * hubd waited for it for ever. A guest that never attaches and ignores
 * SIGTERM keeps the hub stopping while the reload is asked for. */
START_TEST(test_reload_while_stopping_refused)
{
	const char *stub = harness_path("stubborn.sh");
	char guests[512], msgs[1024];
	int pid, status = 0;
	FILE *f;

	ck_assert_ptr_nonnull(f = fopen(stub, "w"));
	fputs("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(stub, 0755), 0);
	snprintf(guests, sizeof(guests), "[guest stub]\nexec = %s\n", stub);
	ck_assert_int_eq(hub_start(&hub, "stop_grace = 60s\nattach_timeout = 60s\n", guests), 0);
	/* its trap set: a SIGTERM before would end it, and the stop with it */
	pid = hub_wait_ignores_term(&hub, "stub");
	kill(hub.pid, SIGTERM);
	for (int i = 0; i < 1000 && strcmp(hub_peer_state(&hub, "stub"), "stopping") != 0; i++)
		sleep_ms(10);
	ck_assert_str_eq(hub_peer_state(&hub, "stub"), "stopping");
	snprintf(guests, sizeof(guests), "[guest stub]\nexec = %s\n"
		 "[guest echo]\nexec = @/guests/echo\n", stub);
	ck_assert_int_eq(hub_write_conf(&hub, "stop_grace = 60s\nattach_timeout = 60s\n",
					guests), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 0 &&
		      strstr(msgs, "hubd is stopping") != NULL, "reload: %s", msgs);
	ck_assert_int_lt(hub_peer_int(&hub, "echo", "pid"), 0);
	/* the stubborn guest gone, the stop is over */
	kill(-pid, SIGKILL);
	for (int i = 0; i < 3000 && waitpid(hub.pid, &status, WNOHANG) == 0; i++)
		sleep_ms(10);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hubd: status %#x, %s",
		      status, hub_log_tail(&hub));
	hub.pid = 0;
}
END_TEST

/* r[shm.file.attach]: inspect reads the live hub's memory read-only
 * through the fds hubd passes; with hubd stopped dead (SIGSTOP) it gives
 * up within -t and says so, while a dump taken before reads offline, as
 * it does with the hub gone. */
START_TEST(test_inspect)
{
	const char *dir = harness_path("ops-dump");
	char *out = NULL, *err = NULL, echo_dom[512], kv_dom[512], echo_pool[512];
	json_object *o, *doms;
	double t0, took;
	int rc;

	snprintf(echo_dom, sizeof(echo_dom), "%s/echo.domain", dir);
	snprintf(kv_dom, sizeof(kv_dom), "%s/kv.domain", dir);
	snprintf(echo_pool, sizeof(echo_pool), "%s/echo.pool", dir);
	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	hubctl_ok(&hub, &out, "inspect", (char *)NULL);
	ck_assert_msg(strstr(out, "invariants: ok") && strstr(out, "attached") &&
		      strstr(out, "\nguest echo (peer ") && strstr(out, "\nguest kv (peer ") &&
		      strstr(out, "\npool echo: ") && strstr(out, "\npool kv: "), "%s", out);
	free(out);
	o = ctl_json(0, "inspect", NULL);
	ck_assert_int_eq(json_object_array_length(json_get(o, "problems")), 0);
	doms = json_get(o, "domains");
	ck_assert_int_eq(json_object_array_length(doms), 2);
	for (size_t i = 0; i < 2; i++) {
		json_object *peers = json_get(json_object_array_get_idx(doms, i), "peers");

		ck_assert_int_eq(json_object_array_length(peers), 1);
		ck_assert_str_eq(json_object_get_string(json_get(json_object_array_get_idx(peers, 0),
								 "state")), "attached");
	}
	ck_assert_int_eq(json_object_array_length(json_get(o, "pools")), 2);
	json_object_put(o);
	hubctl_ok(&hub, &out, "dump", dir, (char *)NULL);
	free(out);

	ck_assert_int_eq(kill(hub.pid, SIGSTOP), 0);
	t0 = now_s();
	rc = hubctl_err(&hub, &err, "-t", "1", "inspect", (char *)NULL);
	took = now_s() - t0;
	ck_assert_msg(rc == 2 && strstr(err, "hubctl: no answer from hubd within 1 s (-t)") != NULL,
		      "exit %d: %s", rc, err);
	/* -t waited for (a bound above would be the load's, not hubctl's:
	 * one that never gave up would never end) */
	ck_assert_msg(took > 0.9, "gave up after %.1f s", took);
	free(err);
	/* the dump needs no hubd */
	rc = hubctl(&hub, &out, "inspect", echo_dom, kv_dom, echo_pool, (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "invariants: ok") != NULL, "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(kill(hub.pid, SIGCONT), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);

	/* the hub gone: no live inspect, the dump as before */
	rc = hubctl_err(&hub, &err, "inspect", (char *)NULL);
	ck_assert_msg(rc == 2 && strstr(err, "cannot reach hubd at ") != NULL, "exit %d: %s", rc,
		      err);
	free(err);
	/* a dump with no hub makes no directory */
	rc = hubctl_err(&hub, &err, "dump", harness_path("ops-dump2"), (char *)NULL);
	ck_assert_msg(rc == 2 && strstr(err, "cannot reach hubd at ") != NULL, "exit %d: %s", rc,
		      err);
	free(err);
	ck_assert_int_ne(access(harness_path("ops-dump2"), F_OK), 0);
	o = ctl_json(0, "inspect", echo_dom);
	ck_assert_int_eq(json_object_array_length(json_get(o, "domains")), 1);
	ck_assert_str_eq(json_object_get_string(json_get(json_object_array_get_idx(
		json_get(o, "domains"), 0), "name")), "echo");
	json_object_put(o);
	ck_assert_int_eq(hubctl(&hub, &out, "inspect", "/dev/null", (char *)NULL), 2);
	free(out);
}
END_TEST

START_TEST(test_help_and_usage)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS, "echo");
	hubctl_ok(&hub, &out, "help", (char *)NULL);
	ck_assert_ptr_nonnull(strstr(out, "inspect [FILE...]"));
	ck_assert_ptr_nonnull(strstr(out, "dump DIR"));
	free(out);
	hubctl_ok(&hub, &out, "call", "-h", (char *)NULL);
	ck_assert_ptr_nonnull(strstr(out, "signature"));
	/* every kind of argument said, not only the scalars and hub.sink */
	ck_assert_msg(strstr(out, "map<K,V> as JSON") != NULL &&
		      strstr(out, "An rx<T> argument") != NULL && strstr(out, "f64") != NULL,
		      "%s", out);
	free(out);
	/* help of help is the usage; of no command, an error as for the
	 * command itself (it was the usage on stdout, and exit 2) */
	hubctl_ok(&hub, &out, "help", "--help", (char *)NULL);
	ck_assert_ptr_nonnull(strstr(out, "inspect [FILE...]"));
	free(out);
	ck_assert_int_eq(hubctl(&hub, &out, "help", "nosuch", (char *)NULL), 2);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(hubctl_stderr(), "hubctl: unknown command 'nosuch'\n"));
	free(out);
	ck_assert_int_eq(hubctl(&hub, &out, "restart", (char *)NULL), 2);
	free(out);
	ck_assert_int_eq(hubctl(&hub, &out, "restart", "nobody", (char *)NULL), 1);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* sd_notify(3) against a socket standing in for systemd. */
START_TEST(test_systemd_notify)
{
	char buf[512], seen[4096] = "";
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 0, 100000 };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int watchdogs = 0;
	ssize_t n;

	/* in the run's directory: harness_teardown removes it, pass or fail */
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", harness_path("notify.sock"));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setenv("NOTIFY_SOCKET", sun.sun_path, 1);
	setenv("WATCHDOG_USEC", "200000", 1);
	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	for (int i = 0; i < 30; i++) {
		if ((n = recv(fd, buf, sizeof(buf) - 1, 0)) <= 0)
			continue;
		buf[n] = '\0';
		watchdogs += strcmp(buf, "WATCHDOG=1") == 0;
		strncat(seen, buf, sizeof(seen) - strlen(seen) - 2);
		strcat(seen, "|");
	}
	ck_assert_msg(strstr(seen, "READY=1") != NULL, "%s", seen);
	ck_assert_msg(strstr(seen, "STATUS=2 of 2 guests up") != NULL, "%s", seen);
	ck_assert_msg(watchdogs >= 3, "%d watchdog pings in 3 s: %s", watchdogs, seen);
	kill(hub.pid, SIGTERM);
	for (int i = 0; i < 30; i++) {
		if ((n = recv(fd, buf, sizeof(buf) - 1, 0)) <= 0)
			continue;
		buf[n] = '\0';
		if (strcmp(buf, "STOPPING=1") == 0)
			break;
	}
	ck_assert_str_eq(buf, "STOPPING=1");
	ck_assert_int_eq(hub_stop(&hub), 0);
	close(fd);
}
END_TEST

START_TEST(test_systemd_unit_verifies)
{
	char cmd[1024];
	int rc;

	if (system("command -v systemd-analyze >/dev/null 2>&1") != 0)
		return;		/* not on this machine: nothing to verify with */
	/* the unit names the installed hubd: point it at this build */
	snprintf(cmd, sizeof(cmd), "sed 's|/usr/local/sbin/hubd|%s|g' %s"
		 " > /tmp/hub-e2e-%d-hubd.service && systemd-analyze verify"
		 " /tmp/hub-e2e-%d-hubd.service; rc=$?; rm -f /tmp/hub-e2e-%d-hubd.service; exit $rc",
		 bin("hubd"), bin("../systemd/hubd.service"), (int)getpid(), (int)getpid(),
		 (int)getpid());
	rc = system(cmd);
	ck_assert_msg(rc == 0, "systemd-analyze verify: %d", rc);
}
END_TEST

/* systemctl reload as the unit says it: each ExecReload= in turn, this
 * build's hubd and h's config for the installed ones, until one fails;
 * the shell's status. */
static int
unit_reload(struct hub_proc *h)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "sed -n 's/^ExecReload=//p' %s | sed -e 's|/usr/local/sbin/hubd|%s|g'"
		 " -e 's|/etc/hub/hubd.conf|%s|g' -e 's|\\$MAINPID|%d|g' |"
		 " while read -r line; do sh -c \"$line\" || exit 1; done",
		 bin("../systemd/hubd.service"), bin("hubd"), h->conf, (int)h->pid);
	return system(cmd);
}

/* systemctl reload of a file with an error fails, and hubd does not read
 * it; of a good one, hubd reloads. */
START_TEST(test_systemd_reload_checks_first)
{
	char *log = NULL;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv");
	rewrite_conf(GUESTS "[hub]\n");	/* a second [hub]: broken */
	ck_assert_int_ne(unit_reload(&hub), 0);
	rewrite_conf(GUESTS);
	ck_assert_int_eq(unit_reload(&hub), 0);
	for (double end = now_s() + 30; now_s() < end;) {
		free(log);
		log = hub_log(&hub);
		if (strstr(log, "SIGHUP: reloading") != NULL)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(strstr(log, "SIGHUP: reloading") != NULL, "%s", hub_log_tail(&hub));
	/* once only: the broken file never reached hubd */
	ck_assert_msg(strstr(strstr(log, "SIGHUP: reloading") + 1, "SIGHUP: reloading") == NULL &&
		      strstr(log, "is broken") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_ops(void);
Suite *
suite_ops(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("operator");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_json_output_parses);
	tcase_add_test(tc, test_bad_control_clients);
	tcase_add_test(tc, test_other_user_reads_but_cannot_change);
	tcase_add_test(tc, test_guest_user_group_limits);
	tcase_add_test(tc, test_open_files_limit);
	tcase_add_test(tc, test_guest_memory_is_its_own);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_reload_hub_keys);
	tcase_add_test(tc, test_reload_guest_live_keys);
	tcase_add_test(tc, test_reload_checks_kept_values);
	tcase_add_test(tc, test_reload_while_stopping_refused);
	tcase_add_test(tc, test_inspect);
	tcase_add_test(tc, test_help_and_usage);
	tcase_add_test(tc, test_systemd_notify);
	tcase_add_test(tc, test_systemd_unit_verifies);
	tcase_add_test(tc, test_systemd_reload_checks_first);
	suite_add_tcase(s, tc);
	return s;
}
