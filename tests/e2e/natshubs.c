/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Hubs joined by hub-nats, for the nats suites (natshubs.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/natshubs.h"

/* The hubs the nats suites start: each gets a key, and every bridge
 * trusts them all. */
static const char *const hubs[] = { "a", "b", "b1", "b2", "c", "d" };

const char *
nh_key_path(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s", harness_path("nats-"));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s.key", name);
	return path;
}

const char *
nh_pubkey(const char *name)
{
	static char pk[128];
	char cmd[512], line[256];
	const char *path = nh_key_path(name);
	int made = access(path, F_OK) != 0;
	FILE *p;

	pk[0] = '\0';
	snprintf(cmd, sizeof(cmd), "%s --%s %s", bin("hub-nats"), made ? "keygen" : "pubkey", path);
	ck_assert_ptr_nonnull(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p) != NULL)
		if (line[0] != '#' && strstr(line, " = ") != NULL)
			snprintf(pk, sizeof(pk), "%s", strstr(line, " = ") + 3);
	ck_assert_int_eq(pclose(p), 0);
	pk[strcspn(pk, "\n")] = '\0';
	ck_assert_msg(pk[0] != '\0', "%s printed no public key", cmd);
	/* the bridges run as nobody: the key is theirs alone, as it
	 * should be (hub-nats refuses a key others may read) */
	if (made)
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
	return pk;
}

char *
nh_bridge(const char *name, const char *servers, const char *provides, const char *extra)
{
	char path[256], *section = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s", harness_path("nats-"));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s.conf", name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "[nats]\nservers = %s\nname = %s\nannounce = 300ms\nkey = %s\n", servers,
		name, nh_key_path(name));
	nh_pubkey(name);	/* made now if new */
	/* extra's sections, then [trust]: a key = line is [trust]'s */
	fprintf(f, "%s\n[trust]\n", extra);
	for (size_t i = 0; i < sizeof(hubs) / sizeof(hubs[0]); i++)
		fprintf(f, "%s = %s\n", hubs[i], nh_pubkey(hubs[i]));
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_gt(asprintf(&section, "[guest nats]\nexec = @/hub-nats\nargs = --config %s\n"
				  "user = nobody\n%s%s%s",
				  path, provides ? "provides = " : "", provides ? provides : "",
				  provides ? "\n" : ""), 0);
	return section;
}

/* hub B: kv, and a bridge exporting kv.* and the sleeper's methods. */
void
nh_start_b(struct hub_proc *h, const char *name, const char *servers)
{
	char *nats = nh_bridge(name, servers, NULL, "[export]\nmethods = kv.* sl.*\n"), guests[1024];

	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%s", nats);
	hub_start_up(h, NULL, guests, "kv,sl,nats");
	free(nats);
}

/* hub A: a caller guest, and a bridge importing kv.* and sl.*. */
void
nh_start_a(struct hub_proc *h, const char *servers, const char *extra)
{
	char imp[512], *nats, guests[1024];

	snprintf(imp, sizeof(imp), "[import]\nmethods = kv.* sl.*\n%s", extra ? extra : "");
	nats = nh_bridge("a", servers, "kv.*, sl.*", imp);
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	hub_start_up(h, NULL, guests, "cl,nats");
	free(nats);
}

/* hubctl call on h: status and first line (malloc'd). */
int
nh_ctl(struct hub_proc *h, char **line, const char *method, const char *a1, const char *a2)
{
	char *nl;
	int rc = hubctl(h, line, "-t", "30", "call", method, a1, a2, (char *)NULL);

	if ((nl = strchr(*line, '\n')) != NULL)
		*nl = '\0';
	return rc;
}

void
nh_expect_ok(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2)
{
	char *out = NULL;
	int rc = nh_ctl(h, &out, method, a1, a2);

	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s %s: status %d, '%s', want '%s'; %s",
		      method, a1 ? a1 : "", rc, out, want, hub_log_tail(h));
	free(out);
}

/* hubctl call fails on h, its error output containing want. */
void
nh_expect_err(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2)
{
	char *err = NULL;
	int rc = hubctl_err(h, &err, "-t", "30", "call", method, a1, a2, (char *)NULL);

	ck_assert_msg(rc != 0 && strstr(err, want) != NULL, "%s %s: status %d, '%s', want '%s'; %s",
		      method, a1 ? a1 : "", rc, err, want, hub_log_tail(h));
	free(err);
}

/* Polls hubctl call on h until it answers want (the network settling),
 * then asserts it did. */
void
nh_wait_ok(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2)
{
	char *out = NULL;
	int rc = 1;

	for (int i = 0; i < 100; i++) {
		free(out);
		out = NULL;
		if ((rc = nh_ctl(h, &out, method, a1, a2)) == 0 && strcmp(out, want) == 0)
			break;
		sleep_ms(100);
	}
	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s: status %d, '%s', want '%s'; %s",
		      method, rc, out, want, hub_log_tail(h));
	free(out);
}

/* cl.load METHOD N on hub A, in a child (a hub can be killed meanwhile):
 * its pid; the answer comes on *rfd. */
pid_t
nh_load_in_child(struct hub_proc *h, const char *method, const char *n, int *rfd)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		char *out = NULL, *err = NULL;

		close(p[0]);
		if (nh_ctl(h, &out, "cl.load", method, n) != 0) {
			hubctl_err(h, &err, "peers", (char *)NULL);
			dprintf(p[1], "failed: %s; %s", out != NULL ? out : "", hub_log_tail(h));
		} else {
			dprintf(p[1], "%s", out);
		}
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

char *
nh_child_answer(pid_t pid, int rfd)
{
	static char buf[4096];
	ssize_t n = read(rfd, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = '\0';
	close(rfd);
	waitpid(pid, NULL, 0);
	return buf;
}

/* The count after key= in a cl.load answer, 0 if absent. */
unsigned
nh_load_count(const char *answer, const char *key)
{
	const char *p = strstr(answer, key);

	return p != NULL ? (unsigned)strtoul(p + strlen(key), NULL, 10) : 0;
}

/* Every one of n calls ended: answered, or an error; none lost. */
void
nh_all_ended(const char *answer, unsigned n)
{
	unsigned ended = nh_load_count(answer, "ok=");
	const char *p = answer;

	ck_assert_msg(strncmp(answer, "ok=", 3) == 0 && strstr(answer, "unanswered") == NULL,
		      "load: %s", answer);
	while ((p = strstr(p, " e")) != NULL) {
		p = strchr(p, '=');
		ended += (unsigned)strtoul(p + 1, NULL, 10);
	}
	ck_assert_msg(ended == n, "load: %s: %u of %u ended", answer, ended, n);
}

/* The "where" hubctl methods shows for method on h, "" if none
 * (static). */
const char *
nh_where(struct hub_proc *h, const char *method)
{
	static char buf[256];
	json_object *a = hub_request(h, "{\"cmd\":\"methods\"}", NULL), *ms;

	buf[0] = '\0';
	ck_assert(a != NULL && json_object_object_get_ex(a, "methods", &ms));
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		if (strcmp(json_object_get_string(json_get(m, "name")), method) == 0 &&
		    json_get(m, "where") != NULL)
			snprintf(buf, sizeof(buf), "%s", json_object_get_string(json_get(m, "where")));
	}
	json_object_put(a);
	return buf;
}

/* The note hubctl peers shows for guest name on h, "" if none (static). */
const char *
nh_note_of(struct hub_proc *h, const char *name)
{
	static char buf[256];
	json_object *p = hub_peer(h, name);

	snprintf(buf, sizeof(buf), "%s", p != NULL && json_get(p, "note") != NULL ?
		 json_object_get_string(json_get(p, "note")) : "");
	json_object_put(p);
	return buf;
}

/* Waits until method's "where" on h is want. */
void
nh_wait_where(struct hub_proc *h, const char *method, const char *want)
{
	for (int i = 0; i < 100 && strcmp(nh_where(h, method), want) != 0; i++)
		sleep_ms(50);
	ck_assert_msg(strcmp(nh_where(h, method), want) == 0, "%s is served at '%s', want '%s'",
		      method, nh_where(h, method), want);
}

