/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Runs a real hubd with real guests on private paths for end-to-end tests,
 * and cleans up after them even when a test fails. */
#ifndef HUB_HARNESS_H
#define HUB_HARNESS_H

#include <sys/resource.h>
#include <sys/types.h>

#include <json-c/json.h>

struct hub_proc {
	pid_t	pid;
	int	n;			/* which hub of this test run */
	char	conf[256];
	char	log[256];
	char	sock[256];
	struct rlimit nofile;		/* hubd's limit of open files; 0: ours */
	char	terminal[64];		/* hubd's controlling terminal and stdin; "": ours */
	int	without_setid;		/* hubd without CAP_SETUID and CAP_SETGID */
};

/* Unchecked fixture: a private directory and path prefix for this run;
 * the teardown kills whatever hubd is left and removes every file. */
void harness_setup(void);
void harness_teardown(void);

/* This run's private directory, removed by harness_teardown (with
 * anything a test mounted on a directory inside it). */
const char *harness_dir(void);
/* A path in it (static: the last 32 paths of this file's functions stay
 * valid). */
const char *harness_path(const char *name);

/* A path in /dev/shm that harness_teardown removes. */
const char *harness_shm_path(const char *name);

/* Path of a built program, e.g. bin("hubd"), bin("guests/echo") (static, as
 * harness_path's). */
const char *bin(const char *name);

/* Whether the hubs started from now on run with -v (debug lines in their
 * logs): not unless a test says so; harness_setup says no again. */
void harness_hubd_verbose(int on);

/* Writes a config: [hub] with the private socket (unless hub_keys has
 * its own "control = ") plus
 * hub_keys, then guests (sections as text, "@" replaced by the build
 * directory), starts hubd and waits until its control socket answers.
 * Returns 0 or -1. */
int hub_start(struct hub_proc *h, const char *hub_keys, const char *guests);
/* hub_start's paths and config alone, for a test that runs hubd itself
 * (hub.conf, hub.log, hub.sock). 0 or -1. */
int hub_prepare(struct hub_proc *h, const char *hub_keys, const char *guests);
/* Writes h's config anew, as hub_start does, for a reload; 0 or -1. */
int hub_write_conf(struct hub_proc *h, const char *hub_keys, const char *guests);
/* hubctl reload as JSON: ok (1 or 0), and its messages joined in msgs. */
int hub_reload(struct hub_proc *h, char *msgs, size_t cap);
/* hubd's stats answer (a new reference), asserting (Check) there is one. */
json_object *hub_stats(struct hub_proc *h);
/* o.a.b.c (b, c: NULL for fewer levels) as a number, asserting (Check) it
 * is there. */
unsigned long long json_u64(json_object *o, const char *a, const char *b, const char *c);
/* Asserts (Check) that h's hubd sleeps through a second in which nothing
 * should happen: its loop's counts, not times; while_ says when. */
void hub_assert_asleep(struct hub_proc *h, const char *while_);
/* hubd's fd for a guest's domain (kind "guest") or a zone's pool ("pool")
 * named name, received as hubctl inspect receives it (SCM_RIGHTS); the
 * caller closes it. -1 when there is none. */
int hub_domain_fd(struct hub_proc *h, const char *kind, const char *name);
/* The limit of open files (soft, hard) the next hub_start's hubd starts
 * with, set in its process alone before exec (the test's own stays as it
 * is, so a test needs no root to put it back); its hub_restarts keep it. */
void hub_next_nofile(rlim_t soft, rlim_t hard);
/* The next hub_start's hubd runs in a session of its own with the
 * terminal at path (a pty's) as its controlling terminal and its stdin,
 * as hubd started by hand from a shell; its hub_restarts keep it. */
void hub_next_terminal(const char *path);
/* The next hub_start's hubd (run by root) without CAP_SETUID and
 * CAP_SETGID, out of its bounding set as a container's or a unit's
 * CapabilityBoundingSet= takes them; its hub_restarts keep it. */
void hub_next_without_setid(void);
/* Starts hubd again on the same config and paths. */
int hub_restart(struct hub_proc *h);
/* SIGTERM, wait up to 15 s; returns hubd's exit status, or -1 if it had to
 * be killed. */
int hub_stop(struct hub_proc *h);

/* One request line; the final answer (items before it are counted in
 * *items when not NULL). NULL if hubd did not answer. */
json_object *hub_request(struct hub_proc *h, const char *line, int *items);
/* hub_start, then hub_wait_up(names) unless NULL: asserts both (Check),
 * with the log's end when it fails. */
void hub_start_up(struct hub_proc *h, const char *hub_keys, const char *guests,
		  const char *names);
/* An integer of a guest's peers entry (-1: none); its state ("?": none,
 * static). */
int hub_peer_int(struct hub_proc *h, const char *name, const char *key);
const char *hub_peer_state(struct hub_proc *h, const char *name);
/* The pid of guest name's instance once it ignores SIGTERM (a guest that
 * does so when set up, a shell script's trap): a stop before that would
 * end it at once, not leave it stopping. Asserts it comes within 30 s. */
int hub_wait_ignores_term(struct hub_proc *h, const char *name);
/* CLOCK_MONOTONIC in seconds; a sleep. */
double now_s(void);
void sleep_ms(int ms);

/* Waits until every named guest (comma-separated) is up; 0 or -1. */
int hub_wait_up(struct hub_proc *h, const char *names, int timeout_ms);
/* Waits until name is up with a pid other than old (0: any), timeout in
 * seconds; its pid, or -1. */
int hub_wait_new_pid(struct hub_proc *h, const char *name, int old, double timeout);
/* The peers array entry of name (a new reference) or NULL. */
json_object *hub_peer(struct hub_proc *h, const char *name);

/* A raw client of h's control socket whose reads time out after
 * timeout_s; asserts (Check) that it connects. */
int hub_client(struct hub_proc *h, int timeout_s);

/* Runs hubctl -s SOCK args...; stdout into *out (malloc'd); exit status. */
int hubctl(struct hub_proc *h, char **out, ...) __attribute__((sentinel));
/* The same with its stderr into *err (stdout dropped). */
int hubctl_err(struct hub_proc *h, char **err, ...) __attribute__((sentinel));
/* hubctl -s SOCK args... that must succeed: asserts (Check) exit 0, else
 * fails with the command, its status, what it wrote to stdout and stderr
 * and the end of hubd's log. Its stdout into *out (malloc'd) unless out
 * is NULL. */
void hubctl_ok(struct hub_proc *h, char **out, ...) __attribute__((sentinel));

/* What the last hubctl() printed on stderr (static; "" if nothing). */
const char *hubctl_stderr(void);
/* The hub's log so far (malloc'd), for assertions. */
char *hub_log(struct hub_proc *h);
/* Whether the hub's log (its guests' output too) has text, waited for
 * up to timeout_ms. */
int hub_log_wait(struct hub_proc *h, const char *text, int timeout_ms);
/* Its last bytes, after what the last hubctl() printed on stderr, 3000
 * in all (static), for failure messages: Check refuses long ones. */
const char *hub_log_tail(struct hub_proc *h);

/* Waits until every method named (comma-separated) can be called: a guest
 * is up before it has registered its methods (10 s); 0 or -1. */
int hub_wait_method(struct hub_proc *h, const char *methods);
/* Waits until hubctl calls lists a call of method in flight (20 s, under
 * a sanitizer and load too: 800 looks 25 ms apart); 0 or -1. */
int hub_wait_in_flight(struct hub_proc *h, const char *method);

/* o[key], or NULL. */
json_object *json_get(json_object *o, const char *key);

/* Whether a process exists. */
int alive(pid_t pid);

#endif
