/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hoarder: a guest that calls and then stops reading its ring (what a
 * plugin stuck in a loop, or a hostile one, does), one way per run:
 *   --act=noread --count=N --size=S [--method=M]
 *		N calls of M (default echo.echo; a str or bytes argument)
 *		with S-byte arguments, then reads nothing; on SIGUSR1 it
 *		reads again and prints "hoarder: N answers" once every
 *		call is answered
 *   --act=relay --count=N [--method=M]
 *		N calls of M (default counter.count) with a huge count and
 *		a channel it opened to receive on, then reads nothing and
 *		grants nothing; prints "hoarder: N calls" once they are out
 *   --act=flood --size=S
 *		calls echo.echo with S-byte arguments for ever, as fast as
 *		its ring takes them, reading nothing
 * It heartbeats, so it is never hung by that measure, and exits when hubd
 * goes. Built on proto: libguest would read its ring. */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "tests/guests/raw.h"

static struct hp_endpoint ep;
static struct hp_peer_view view;
static struct hp_segment seg;
static int doorbell;
static volatile sig_atomic_t reading;

static void
on_usr1(int sig)
{
	(void)sig;
	reading = 1;
}

/* A nap that heartbeats and notices hubd going or saying goodbye
 * (r[shm.goodbye.host]). */
static void
nap(int ms)
{
	raw_heartbeat(&view);
	if (hp_doorbell_wait(doorbell, ms) == -EPIPE ||
	    hp_load_relaxed_u32(&hp_segment_header(&seg)->host_goodbye) != 0)
		exit(0);
	raw_heartbeat(&view);
}

/* One Request; waits (heartbeating) while its ring or pool is full. */
static void
call(uint32_t id, const char *method, const uint8_t *args, size_t len)
{
	uint8_t buf[70000];
	int rc;

	if (len + 1 > sizeof(buf))
		errx(1, "arguments too long");
	buf[0] = 0;	/* no metadata */
	memcpy(buf + 1, args, len);
	while ((rc = hp_endpoint_send(&ep, HP_MSG_REQUEST, id,
				      hp_method_id(method, strlen(method)), buf,
				      (uint32_t)len + 1, 0)) == -EAGAIN)
		nap(1);
	if (rc != 0)
		errx(1, "send: %s", strerror(-rc));
	hp_doorbell_signal(doorbell);
}

/* Waits until method is registered (hub.signature answers Ok): a guest
 * started beside its callee may come up first. Its ring is still read. */
static void
wait_method(const char *method)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	uint8_t args[128];
	struct hp_pc_enc e;
	struct hp_msg_in m;
	const char *rule;
	uint32_t id = 0xF0000000u;
	int rc;

	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, method, strlen(method));
	for (;; id++) {
		struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
		int answered = 0, ok = 0;

		call(id, "hub.signature", args, e.len);
		while (!answered) {
			if ((rc = hp_endpoint_recv(&ep, &m, &rule)) == -EAGAIN) {
				nap(10);
				continue;
			}
			if (rc != 0)
				errx(1, "recv: %s", rule);
			if (m.desc.msg_type == HP_MSG_RESPONSE && m.desc.id == id) {
				answered = 1;
				ok = hp_msg_decode_response(m.payload, m.len, &r) == 0 &&
				    r.result == HP_RESULT_OK;
			}
			hp_endpoint_release(&ep, &m);
		}
		hp_endpoint_notify_consumed(&ep);
		if (ok)
			return;
		nap(20);
	}
}

/* echo.echo's argument: a str of size bytes. */
static size_t
echo_args(uint8_t *buf, size_t cap, size_t size)
{
	struct hp_pc_enc e;
	char *s = malloc(size + 1);

	if (s == NULL)
		errx(1, "out of memory");
	memset(s, 'h', size);
	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_str(&e, s, size);
	free(s);
	if (e.err != 0)
		errx(1, "--size too large");
	return e.len;
}

/* Reads the ring until n Responses came (what else comes is dropped). */
static void
read_answers(uint64_t n)
{
	uint64_t answers = 0;
	struct hp_msg_in m;
	const char *rule;
	int rc;

	while (answers < n) {
		if ((rc = hp_endpoint_recv(&ep, &m, &rule)) == -EAGAIN) {
			hp_endpoint_notify_consumed(&ep);
			nap(10);
			continue;
		}
		if (rc != 0)
			errx(1, "recv: %s", rule);
		answers += m.desc.msg_type == HP_MSG_RESPONSE;
		hp_endpoint_release(&ep, &m);
	}
	hp_endpoint_notify_consumed(&ep);
	printf("hoarder: %llu answers\n", (unsigned long long)answers);
	fflush(stdout);
}

/* --NAME=VALUE's value, or NULL. */
static const char *
opt(int argc, char *argv[], const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}

int
main(int argc, char *argv[])
{
	const char *act = opt(argc, argv, "--act"), *method = opt(argc, argv, "--method");
	const char *n = opt(argc, argv, "--count"), *sz = opt(argc, argv, "--size");
	uint64_t count = n != NULL ? strtoull(n, NULL, 10) : 1;
	uint64_t size = sz != NULL ? strtoull(sz, NULL, 10) : 8;
	struct hp_ticket t;
	uint8_t args[70000];
	size_t len;

	if (act == NULL)
		act = "noread";
	if (method == NULL)
		method = strcmp(act, "relay") == 0 ? "counter.count" : "echo.echo";
	signal(SIGUSR1, on_usr1);
	raw_attach(argc, argv, &t, &seg, &view, &ep, HP_FEAT_ALL);
	doorbell = t.doorbell_fd;
	wait_method(strcmp(act, "flood") == 0 ? "echo.echo" : method);
	if (strcmp(act, "noread") == 0) {
		len = echo_args(args, sizeof(args), size);
		for (uint64_t i = 1; i <= count; i++)
			call((uint32_t)i, method, args, len);
		while (!reading)
			nap(50);
		read_answers(count);
	} else if (strcmp(act, "relay") == 0) {
		for (uint64_t i = 1; i <= count; i++) {
			int64_t chan = hp_chan_open(view.chans, seg.params.max_channels,
						    HP_SIDE_GUEST, seg.params.initial_credit,
						    &(uint32_t){ 0 });
			struct hp_pc_enc e;

			if (chan < 0)
				errx(1, "no channel");
			hp_pc_enc_init(&e, args, sizeof(args));
			hp_pc_put_u64(&e, UINT64_MAX);
			hp_pc_put_u64(&e, (uint64_t)chan);
			call((uint32_t)i, method, args, e.len);
		}
		printf("hoarder: %llu calls\n", (unsigned long long)count);
		fflush(stdout);
	} else if (strcmp(act, "flood") == 0) {
		len = echo_args(args, sizeof(args), size);
		for (uint32_t i = 1;; i = i == UINT32_MAX ? 1 : i + 1)
			call(i, "echo.echo", args, len);
	} else {
		errx(1, "unknown --act %s", act);
	}
	for (;;)
		nap(100);
}
