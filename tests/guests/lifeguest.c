/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* lifeguest: a guest for the supervisor's tests, one behaviour per --mode:
 *   idle	attaches and serves, registering nothing (any number of
 *		them can run side by side)
 *   slowstop	ignores SIGTERM (stop_grace ends it), registers life.ping
 *		and exits 1 if it cannot (a second instance would)
 *   hangup	attaches without ringing, closes its doorbell at once, then
 *		lives on, heartbeating: it cannot be woken any more
 *   forker	forks a child that sleeps (in its process group), prints
 *		"lifeguest child PID" to stderr, then serves
 *   goodbye	breaks a rule (a descriptor with msg_type 9 written straight
 *		into its g2h ring), then runs guest_run: the Goodbye naming
 *		the rule ends it; prints "hub ended me: ..." and exits 3
 *   chatty	writes "lifeguest says hello (pid PID)" to stderr, then
 *		floods: 3000 lines of 200 bytes to stdout, a line of 5000
 *		bytes with control characters, a byte that is not UTF-8,
 *		a C1 control and a two-byte character across byte 1024,
 *		"lifeguest flood done"
 *		to stderr, and "lifeguest serving" to stdout, not flushed
 *		(libguest made stdout line-buffered); then serves
 *   firehose	a thread writes 8 MiB to stdout in lines of 1023 bytes,
 *		then "lifeguest firehose done", while the guest serves
 *   names	registers --count=N names PREFIX.pPID_I (--prefix=PREFIX),
 *		new ones each instance; "lifeguest PID: registered K of N"
 *		on stderr, then serves
 *   claim	a hostile guest: registers each name of --claim=NAME,...
 *		(whosever it is), each answering "HIJACKED", prints
 *		"lifeguest PID: claim NAME: ok" (or EPERM, EEXIST, the
 *		error) for each to stderr, then serves
 *   forger	a hostile guest named h4 whose text would forge a line of
 *		hubd's log ("hubd: guest kv: FAKE") or drive a terminal
 *		(ESC [31m) wherever a guest puts text: it registers
 *		"h4.a\nhubd: guest kv: FAKE" and "h4.b\e[31mred" through
 *		libguest, then through a plain hub.register call as a guest
 *		written from the spec alone would ("lifeguest forger:
 *		register N: EINVAL", "... raw register N: refused: WHY" on
 *		stderr), registers h4.ok (map<str,u64>->str: "lifeguest
 *		forger: h4.ok called" on stderr), logs such a line (hub.log), sends
 *		a Goodbye with one as its reason (behind libguest's back),
 *		then only heartbeats until it is stopped
 * Built on libguest, with proto for what libguest would not do. */
#include <err.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "proto/doorbell.h"
#include "proto/msg.h"
#include "proto/ring.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/ticket.h"
#include "tests/guests/raw.h"

static void
ping(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	guest_reply(c, args, len);
}

static void
hijacked(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint8_t out[16];
	size_t pos = 0;

	(void)args;
	(void)len;
	(void)ctx;
	guest_pc_put_str(out, sizeof(out), &pos, "HIJACKED", 8);
	guest_reply(c, out, pos);
}

/* --claim=NAME,...: each registered, whatever the hub says of it. */
static void
claim(struct guest *g, int argc, char *argv[])
{
	char names[512], *name, *save = NULL;

	names[0] = '\0';
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--claim=", 8) == 0)
			snprintf(names, sizeof(names), "%s", argv[i] + 8);
	for (name = strtok_r(names, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
		int rc = guest_register(g, name, "str->str", hijacked, NULL);

		fprintf(stderr, "lifeguest %d: claim %s: %s\n", (int)getpid(), name,
			rc == 0 ? "ok" : rc == -EPERM ? "EPERM" : rc == -EEXIST ? "EEXIST" :
			strerror(-rc));
	}
}

#define FAKE	"\nhubd: guest kv: FAKE"
#define RED	"\033[31mred"

static void
called(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "lifeguest forger: h4.ok called\n");
	guest_reply(c, args, len);
}

/* --mode=forger: see the top. */
static void
forger(struct guest *g, int argc, char *argv[])
{
	static const char *const names[] = { "h4.a" FAKE, "h4.b" RED };
	const char *line = "log" FAKE RED;
	uint8_t args[128], res[128], bye[HP_INLINE_MAX];
	struct hp_ticket t;
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ring tx;
	struct hp_desc d;
	size_t pos, rlen;
	int64_t n;
	int rc;

	for (size_t i = 0; i < 2; i++) {
		rc = guest_register(g, names[i], "str->str", ping, NULL);
		fprintf(stderr, "lifeguest forger: register %zu: %s\n", i,
			rc == -EINVAL ? "EINVAL" : rc == 0 ? "ok" : strerror(-rc));
		pos = 0;
		guest_pc_put_str(args, sizeof(args), &pos, names[i], strlen(names[i]));
		guest_pc_put_str(args, sizeof(args), &pos, "str->str", 8);
		memset(res, 0, sizeof(res));
		rc = guest_call(g, "hub.register", args, pos, res, sizeof(res) - 1, &rlen, 10000);
		/* a User error's text: the str after its postcard length */
		fprintf(stderr, "lifeguest forger: raw register %zu: %s%s\n", i,
			rc == 0 ? "ok" : "refused: ", rc == 0 ? "" : (const char *)res);
	}
	if ((rc = guest_register(g, "h4.ok", "map<str,u64>->str", called, NULL)) != 0)
		errx(1, "register h4.ok: %s", strerror(-rc));
	pos = 0;
	guest_pc_put_str(args, sizeof(args), &pos, line, strlen(line));
	if ((rc = guest_call(g, "hub.log", args, pos, res, sizeof(res), &rlen, 10000)) != 0)
		errx(1, "hub.log: %s", strerror(-rc));
	/* a Goodbye, inline, in our g2h ring: libguest sends nothing more */
	raw_map(argc, argv, &t, &seg, &v);
	if (hp_ring_init_producer(&tx, &v.entry->g2h_head, &v.entry->g2h_tail, v.g2h,
				  seg.params.ring_size) != 0)
		errx(1, "ring");
	if ((n = hp_msg_encode_goodbye(bye, sizeof(bye), "b" FAKE "\033[31m")) < 0)
		errx(1, "goodbye: %s", strerror((int)-n));
	memset(&d, 0, sizeof(d));
	d.msg_type = HP_MSG_GOODBYE;
	d.payload_slot = HP_SLOT_INLINE;
	d.payload_len = (uint32_t)n;
	memcpy(d.inline_payload, bye, (size_t)n);
	if (hp_ring_enqueue(&tx, &d) != 0)
		errx(1, "enqueue");
	hp_doorbell_signal(t.doorbell_fd);
	fprintf(stderr, "lifeguest forger: done\n");
	for (;;) {	/* alive, not serving, until stopped */
		struct timespec ts = { 0, 50 * 1000000 };

		raw_heartbeat(&v);
		nanosleep(&ts, NULL);
	}
}

/* Attached (Reserved -> Attached), but the host is never rung: it sees
 * the hang-up first, while it still takes us for starting. */
static int
hangup(int argc, char *argv[])
{
	struct hp_ticket t;
	struct hp_segment seg;
	struct hp_peer_view v;
	uint32_t state = HP_PEER_RESERVED;
	pid_t hubd = getppid();

	raw_map(argc, argv, &t, &seg, &v);
	if (!hp_cas_u32(&v.entry->state, &state, HP_PEER_ATTACHED))
		errx(1, "not reserved");
	hp_fetch_add_u32(&v.entry->epoch, 1, memory_order_release);
	raw_heartbeat(&v);
	close(t.doorbell_fd);
	while (getppid() == hubd) {	/* alive and well, but deaf */
		struct timespec ts = { 0, 50 * 1000000 };

		raw_heartbeat(&v);
		nanosleep(&ts, NULL);
	}
	return 0;		/* hubd is gone: no doorbell to tell us */
}

/* Writes a descriptor no host accepts into our own g2h ring, behind
 * libguest's back (it has sent nothing yet), and rings. */
static void
break_a_rule(int argc, char *argv[])
{
	struct hp_ticket t;
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ring tx;
	struct hp_desc d;

	raw_map(argc, argv, &t, &seg, &v);	/* a second mapping */
	if (hp_ring_init_producer(&tx, &v.entry->g2h_head, &v.entry->g2h_tail, v.g2h,
				  seg.params.ring_size) != 0)
		errx(1, "ring");
	memset(&d, 0, sizeof(d));
	d.payload_slot = HP_SLOT_INLINE;
	d.msg_type = 9;		/* r[shm.desc.msg-type]: no such type */
	if (hp_ring_enqueue(&tx, &d) != 0)
		errx(1, "enqueue");
	hp_doorbell_signal(t.doorbell_fd);
}

/* --mode=chatty: some output, then a flood of it. */
static void
chatter(void)
{
	char line[5001];

	fprintf(stderr, "lifeguest says hello (pid %d)\n", (int)getpid());
	memset(line, 'x', 199);
	line[199] = '\0';
	for (int i = 0; i < 3000; i++)
		printf("%04d %s\n", i, line);
	memset(line, 'y', 5000);
	line[10] = '\033';
	line[20] = '\r';
	line[30] = '\377';	/* not UTF-8 */
	memcpy(line + 40, "\302\233", 2);	/* U+009B, a C1 control (CSI) */
	memcpy(line + 1023, "\303\251", 2);	/* an e-acute across the 1024-byte cut */
	line[5000] = '\0';
	printf("%s\n", line);
	fflush(stdout);
	fprintf(stderr, "lifeguest flood done\n");
	printf("lifeguest serving\n");
}

/* --mode=names: see the top. */
static void
names(struct guest *g, int argc, char *argv[])
{
	const char *prefix = "names";
	int n = 0, ok = 0;
	char name[64];

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--prefix=", 9) == 0)
			prefix = argv[i] + 9;
		else if (strncmp(argv[i], "--count=", 8) == 0)
			n = atoi(argv[i] + 8);
	}
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s.p%d_%d", prefix, (int)getpid(), i);
		ok += guest_register(g, name, "str->str", hijacked, NULL) == 0;
	}
	fprintf(stderr, "lifeguest %d: registered %d of %d\n", (int)getpid(), ok, n);
}

/* --mode=firehose: the writer, a thread beside guest_run. */
static void *
firehose(void *arg)
{
	char line[1024];

	(void)arg;
	memset(line, 'f', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 8 * 1024; i++)
		if (fwrite(line, 1, sizeof(line), stdout) != sizeof(line))
			break;
	printf("lifeguest firehose done\n");
	fflush(stdout);
	return NULL;
}

int
main(int argc, char *argv[])
{
	const char *mode = "", *why = NULL;
	struct guest *g;
	int rc;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--mode=", 7) == 0)
			mode = argv[i] + 7;
	if (strcmp(mode, "hangup") == 0)
		return hangup(argc, argv);
	if (guest_attach(argc, argv, &g, &why) < 0)
		errx(1, "%s", why);
	if (strcmp(mode, "idle") == 0) {
		;
	} else if (strcmp(mode, "slowstop") == 0) {
		signal(SIGTERM, SIG_IGN);
		if ((rc = guest_register(g, "life.ping", "str->str", ping, NULL)) != 0)
			errx(1, "register life.ping: %s", strerror(-rc));
	} else if (strcmp(mode, "forker") == 0) {
		pid_t pid = fork();

		if (pid < 0)
			err(1, "fork");
		if (pid == 0) {
			for (;;)
				pause();
		}
		fprintf(stderr, "lifeguest child %d\n", (int)pid);
	} else if (strcmp(mode, "goodbye") == 0) {
		break_a_rule(argc, argv);
	} else if (strcmp(mode, "chatty") == 0) {
		chatter();
	} else if (strcmp(mode, "firehose") == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, firehose, NULL) != 0)
			errx(1, "pthread_create");
		pthread_detach(t);
	} else if (strcmp(mode, "names") == 0) {
		names(g, argc, argv);
	} else if (strcmp(mode, "claim") == 0) {
		claim(g, argc, argv);
	} else if (strcmp(mode, "forger") == 0) {
		forger(g, argc, argv);
	} else {
		errx(1, "unknown mode '%s'", mode);
	}
	rc = guest_run(g);
	if (rc == -ECONNABORTED) {
		fprintf(stderr, "lifeguest: hub ended me: %s\n", guest_goodbye_reason(g));
		guest_detach(g);
		return 3;
	}
	guest_detach(g);
	return rc == 0 ? 0 : 1;
}
