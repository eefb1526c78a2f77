/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Trust: who speaks for a hub on NATS (doc/nats.md, "Trust"). This
 * hub's Ed25519 key signs its announcements; an announcement is heard
 * only from a hub of [trust] whose key signed it, newer than the last
 * one heard from it and near our clock. An answer carries a MAC under
 * a key only its caller and the answering hub share (X25519 of their
 * keys), a request a commitment to the token that alone cancels it.
 * What is refused is counted, and logged once per hub. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "nats/hubnats.h"

#define SKEW_MS		30000	/* an announcement's clock against ours, at most */
#define LOGGED_MAX	64	/* hubs whose refusal was logged */
#define CALLER_CACHE	64	/* callers' keys, their shared keys kept */

struct caller_key {
	uint8_t		pk[BR_PK_LEN];
	uint8_t		key[BR_MAC_KEY_LEN];
	int		used;
};

struct br_trust {
	uint8_t			sk[crypto_sign_SECRETKEYBYTES];
	uint8_t			pk[BR_PK_LEN];
	uint8_t			xsk[crypto_scalarmult_SCALARBYTES];	/* sk as X25519 */
	char			pk64[BR_PK_TEXT];
	uint8_t			cancel_secret[crypto_generichash_KEYBYTES];
	uint64_t		last_sent;	/* the last announcement's seq */
	struct br_peer		*peers;
	uint32_t		npeers;
	struct caller_key	callers[CALLER_CACHE];
	char			logged[LOGGED_MAX][BR_NAME_MAX + 1];
	uint32_t		nlogged;
};

/* A name a peer gave, fit for a log: letters, digits, - and _ kept. */
static void
safe_name(const char *s, char *out, size_t cap)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < cap && i < BR_NAME_MAX; i++)
		out[i] = br_name_char((unsigned char)s[i]) ? s[i] : '?';
	out[i] = '\0';
}

/* Logs why from hub name, the first time name is refused. */
static void
refused(struct bridge *b, const char *name, const char *why)
{
	struct br_trust *t = b->trust;
	char safe[BR_NAME_MAX + 1];

	safe_name(name, safe, sizeof(safe));
	for (uint32_t i = 0; i < t->nlogged; i++)
		if (strcmp(t->logged[i], safe) == 0)
			return;
	if (t->nlogged == LOGGED_MAX)
		return;
	snprintf(t->logged[t->nlogged++], BR_NAME_MAX + 1, "%s", safe);
	br_log("%s from \"%s\" ignored%s", why, safe,
	       t->nlogged == LOGGED_MAX ? " (no more hubs are logged: hubctl peers counts them)" : "");
}

/* The seed in path: 0, or -1 with why. Refused if others may read it. */
static int
load_seed(const char *path, uint8_t seed[crypto_sign_SEEDBYTES], char *why, size_t cap)
{
	char line[256];
	struct stat st;
	size_t n = 0;
	FILE *f;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			snprintf(why, cap, "%s: no such file: make this hub's key with hub-nats --keygen %s"
				 " (and put the line it prints in the other hubs' [trust])", path, path);
		else
			snprintf(why, cap, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, cap, "%s: not a file", path);
		close(fd);
		return -1;
	}
	if ((st.st_mode & 077) != 0) {
		/* as ssh: a key others can read is no longer this hub's */
		snprintf(why, cap, "%s: mode %03o: others may read this hub's key (chmod 600 %s)",
			 path, (unsigned)(st.st_mode & 0777), path);
		close(fd);
		return -1;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		snprintf(why, cap, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (br_key_decode(line, seed, crypto_sign_SEEDBYTES, &n) != 0 ||
	    n != crypto_sign_SEEDBYTES) {
		sodium_memzero(line, sizeof(line));
		snprintf(why, cap, "%s: not a key (one line: 32 bytes in base64 or hex)", path);
		return -1;
	}
	sodium_memzero(line, sizeof(line));
	return 0;
}

/* The public key as [trust] takes it. */
static void
pk_text(const uint8_t pk[BR_PK_LEN], char out[BR_PK_TEXT])
{
	sodium_bin2base64(out, BR_PK_TEXT, pk, BR_PK_LEN, sodium_base64_VARIANT_ORIGINAL);
}

static void
print_line(const char *name, const uint8_t pk[BR_PK_LEN])
{
	char text[BR_PK_TEXT];

	pk_text(pk, text);
	printf("# for [trust] in the other hubs' nats.conf:\n%s = %s\n", name, text);
}

/* The directory path is in, made (one level): 0 or -1. */
static int
make_dir(const char *path)
{
	char dir[4096];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return -1;
	*slash = '\0';
	return mkdir(dir, 0755);
}

int
br_keygen(const char *path, const char *name)
{
	uint8_t seed[crypto_sign_SEEDBYTES], pk[BR_PK_LEN], sk[crypto_sign_SECRETKEYBYTES];
	char text[sodium_base64_ENCODED_LEN(crypto_sign_SEEDBYTES,
					    sodium_base64_VARIANT_ORIGINAL)];
	int fd;

	if (sodium_init() < 0)
		return fprintf(stderr, "hub-nats: libsodium did not start\n"), 1;
	/* never over a key: other hubs may trust it already; its
	 * directory (/var/lib/hub) made if need be */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == ENOENT && make_dir(path) == 0)
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "hub-nats: %s: %s%s\n", path, strerror(errno),
			errno == EEXIST ? " (a key is kept: hub-nats --pubkey prints it)" : "");
		return 1;
	}
	randombytes_buf(seed, sizeof(seed));
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_bin2base64(text, sizeof(text), seed, sizeof(seed), sodium_base64_VARIANT_ORIGINAL);
	if (dprintf(fd, "%s\n", text) < 0 || fsync(fd) != 0 || close(fd) != 0) {
		fprintf(stderr, "hub-nats: %s: %s\n", path, strerror(errno));
		unlink(path);
		return 1;
	}
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(text, sizeof(text));
	print_line(name, pk);
	return 0;
}

int
br_pubkey(const char *path, const char *name)
{
	uint8_t seed[crypto_sign_SEEDBYTES], pk[BR_PK_LEN], sk[crypto_sign_SECRETKEYBYTES];
	char why[512];

	if (sodium_init() < 0)
		return fprintf(stderr, "hub-nats: libsodium did not start\n"), 1;
	if (load_seed(path, seed, why, sizeof(why)) != 0) {
		fprintf(stderr, "hub-nats: %s\n", why);
		return 1;
	}
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sk, sizeof(sk));
	print_line(name, pk);
	return 0;
}

int
br_trust_start(struct bridge *b, char *why, size_t cap)
{
	struct br_trust *t;
	uint8_t seed[crypto_sign_SEEDBYTES];
	int self = 0;

	if (sodium_init() < 0) {
		snprintf(why, cap, "libsodium did not start");
		return -1;
	}
	if ((t = sodium_malloc(sizeof(*t))) == NULL) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	memset(t, 0, sizeof(*t));
	if (load_seed(b->conf.key, seed, why, cap) != 0) {
		sodium_free(t);
		return -1;
	}
	crypto_sign_seed_keypair(t->pk, t->sk, seed);
	sodium_memzero(seed, sizeof(seed));
	crypto_sign_ed25519_sk_to_curve25519(t->xsk, t->sk);
	pk_text(t->pk, t->pk64);
	randombytes_buf(t->cancel_secret, sizeof(t->cancel_secret));
	/* every hub of [trust], and this one: it trusts its own key */
	if ((t->peers = calloc((size_t)b->conf.ntrust + 1, sizeof(*t->peers))) == NULL) {
		sodium_free(t);
		snprintf(why, cap, "out of memory");
		return -1;
	}
	for (int i = 0; i < b->conf.ntrust; i++) {
		struct br_peer *p = &t->peers[t->npeers++];

		snprintf(p->name, sizeof(p->name), "%s", b->conf.trust[i].name);
		memcpy(p->pk, b->conf.trust[i].pk, BR_PK_LEN);
		if (strcmp(p->name, b->conf.name) == 0) {
			if (memcmp(p->pk, t->pk, BR_PK_LEN) != 0) {
				snprintf(why, cap, "[trust] %s: not the public key of %s (this hub's is %s)",
					 p->name, b->conf.key, t->pk64);
				free(t->peers);
				sodium_free(t);
				return -1;
			}
			self = 1;
		}
	}
	if (!self) {
		struct br_peer *p = &t->peers[t->npeers++];

		snprintf(p->name, sizeof(p->name), "%s", b->conf.name);
		memcpy(p->pk, t->pk, BR_PK_LEN);
	}
	b->trust = t;
	return 0;
}

void
br_trust_stop(struct bridge *b)
{
	if (b->trust == NULL)
		return;
	free(b->trust->peers);
	sodium_free(b->trust);
	b->trust = NULL;
}

struct br_peer *
br_trust_peer(struct bridge *b, const char *name)
{
	struct br_trust *t = b->trust;

	for (uint32_t i = 0; i < t->npeers; i++)
		if (strcmp(t->peers[i].name, name) == 0)
			return &t->peers[i];
	return NULL;
}

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t
br_trust_next_seq(struct bridge *b)
{
	uint64_t now = wall_ms();

	/* the clock's milliseconds, and never the same twice */
	b->trust->last_sent = now > b->trust->last_sent ? now : b->trust->last_sent + 1;
	return b->trust->last_sent;
}

int
br_trust_sign(struct bridge *b, natsMsg *m, const char *body, size_t len)
{
	uint8_t sig[crypto_sign_BYTES];
	char text[sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL)];

	crypto_sign_detached(sig, NULL, (const uint8_t *)body, len, b->trust->sk);
	sodium_bin2base64(text, sizeof(text), sig, sizeof(sig), sodium_base64_VARIANT_ORIGINAL);
	return natsMsgHeader_Set(m, BR_H_AUTH, text) == NATS_OK ? 0 : -1;
}

struct br_peer *
br_trust_announcement(struct bridge *b, natsMsg *m, const char *hub, int64_t seq)
{
	const char *text = NULL;
	uint8_t sig[crypto_sign_BYTES];
	struct br_peer *p;
	uint64_t now = wall_ms();
	size_t n = 0;

	if (natsMsgHeader_Get(m, BR_H_AUTH, &text) != NATS_OK || text == NULL) {
		b->refused_unsigned++;
		refused(b, hub, "an unsigned announcement");
		return NULL;
	}
	if ((p = br_trust_peer(b, hub)) == NULL) {
		b->refused_unknown++;
		refused(b, hub, "an announcement of a hub not in [trust]");
		return NULL;
	}
	if (sodium_base642bin(sig, sizeof(sig), text, strlen(text), NULL, &n, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 || n != sizeof(sig) ||
	    crypto_sign_verify_detached(sig, (const uint8_t *)natsMsg_GetData(m),
					(unsigned long long)natsMsg_GetDataLength(m), p->pk) != 0) {
		b->refused_badsig++;
		refused(b, hub, "an announcement its key did not sign");
		return NULL;
	}
	/* signed, but perhaps an old one sent again: never older than the
	 * last, nor far from our clock */
	if (seq <= 0 || (uint64_t)seq <= p->last_seq ||
	    (uint64_t)seq + SKEW_MS < now || (uint64_t)seq > now + SKEW_MS) {
		b->refused_replay++;
		refused(b, hub, "an old or mistimed announcement (seq against our clock)");
		return NULL;
	}
	p->last_seq = (uint64_t)seq;
	return p;
}

const char *
br_trust_pk_text(struct bridge *b)
{
	return b->trust->pk64;
}

/* The key only this hub and the one of public key pk share. */
static int
shared_key(struct bridge *b, const uint8_t pk[BR_PK_LEN], uint8_t key[BR_MAC_KEY_LEN])
{
	struct br_trust *t = b->trust;
	uint8_t xpk[crypto_scalarmult_BYTES], dh[crypto_scalarmult_BYTES];
	const uint8_t *lo = memcmp(pk, t->pk, BR_PK_LEN) < 0 ? pk : t->pk;
	const uint8_t *hi = lo == pk ? t->pk : pk;
	crypto_generichash_state st;

	if (crypto_sign_ed25519_pk_to_curve25519(xpk, pk) != 0 ||
	    crypto_scalarmult(dh, t->xsk, xpk) != 0)
		return -1;
	/* both sides hash the same: the keys in one order */
	crypto_generichash_init(&st, NULL, 0, BR_MAC_KEY_LEN);
	crypto_generichash_update(&st, dh, sizeof(dh));
	crypto_generichash_update(&st, lo, BR_PK_LEN);
	crypto_generichash_update(&st, hi, BR_PK_LEN);
	crypto_generichash_final(&st, key, BR_MAC_KEY_LEN);
	sodium_memzero(dh, sizeof(dh));
	return 0;
}

int
br_trust_caller_key(struct bridge *b, natsMsg *m, uint8_t key[BR_MAC_KEY_LEN])
{
	struct br_trust *t = b->trust;
	const char *text = NULL;
	uint8_t pk[BR_PK_LEN];
	struct caller_key *c;
	size_t n = 0;

	if (natsMsgHeader_Get(m, BR_H_KEY, &text) != NATS_OK || text == NULL ||
	    sodium_base642bin(pk, sizeof(pk), text, strlen(text), NULL, &n, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 || n != sizeof(pk))
		return -1;
	/* a scalar multiplication is ~50 us: kept per caller */
	c = &t->callers[pk[0] % CALLER_CACHE];
	if (!c->used || memcmp(c->pk, pk, sizeof(pk)) != 0) {
		if (shared_key(b, pk, c->key) != 0) {
			c->used = 0;
			return -1;
		}
		memcpy(c->pk, pk, sizeof(pk));
		c->used = 1;
	}
	memcpy(key, c->key, BR_MAC_KEY_LEN);
	return 0;
}

/* The MAC of an answer on reply: its status and bytes. */
static void
mac(const uint8_t key[BR_MAC_KEY_LEN], const char *reply, const char *word, const void *data,
    size_t len, uint8_t out[BR_MAC_LEN])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, BR_MAC_KEY_LEN, BR_MAC_LEN);
	crypto_generichash_update(&st, (const uint8_t *)reply, strlen(reply) + 1);
	crypto_generichash_update(&st, (const uint8_t *)word, strlen(word) + 1);
	if (len > 0)
		crypto_generichash_update(&st, data, len);
	crypto_generichash_final(&st, out, BR_MAC_LEN);
}

void
br_trust_mac_text(const uint8_t key[BR_MAC_KEY_LEN], const char *reply, const char *word,
		  const void *data, size_t len, char hex[BR_MAC_LEN * 2 + 1])
{
	uint8_t out[BR_MAC_LEN];

	mac(key, reply, word, data, len, out);
	sodium_bin2hex(hex, BR_MAC_LEN * 2 + 1, out, sizeof(out));
}

int
br_trust_answer_ok(struct bridge *b, natsMsg *m)
{
	const char *from = NULL, *word = NULL, *text = NULL;
	uint8_t want[BR_MAC_LEN], got[BR_MAC_LEN];
	struct br_peer *p;
	size_t n = 0;

	/* the server's own: no hub made it */
	if (natsMsg_IsNoResponders(m))
		return 1;
	natsMsgHeader_Get(m, BR_H_FROM, &from);
	natsMsgHeader_Get(m, BR_H_STATUS, &word);
	natsMsgHeader_Get(m, BR_H_MAC, &text);
	if (from == NULL || (p = br_trust_peer(b, from)) == NULL) {
		b->refused_answers++;
		refused(b, from != NULL ? from : "(no name)", "an answer of a hub not in [trust]");
		return 0;
	}
	if (!p->have_key) {
		if (shared_key(b, p->pk, p->key) != 0)
			return 0;
		p->have_key = 1;
	}
	mac(p->key, natsMsg_GetSubject(m), word != NULL ? word : "", natsMsg_GetData(m),
	    (size_t)natsMsg_GetDataLength(m), want);
	if (text == NULL || sodium_hex2bin(got, sizeof(got), text, strlen(text), NULL, &n, NULL) != 0 ||
	    n != sizeof(got) || sodium_memcmp(got, want, sizeof(got)) != 0) {
		b->refused_answers++;
		refused(b, from, "an answer it did not make (no MAC, or a wrong one)");
		return 0;
	}
	return 1;
}

/* The token that cancels the call of reply subject reply: only this
 * bridge can make it. */
static void
cancel_token(struct bridge *b, const char *reply, uint8_t token[BR_MAC_LEN])
{
	crypto_generichash(token, BR_MAC_LEN, (const uint8_t *)reply, strlen(reply),
			   b->trust->cancel_secret, sizeof(b->trust->cancel_secret));
}

void
br_trust_cancel_commit(struct bridge *b, const char *reply, char hex[BR_MAC_LEN * 2 + 1])
{
	uint8_t token[BR_MAC_LEN], commit[BR_MAC_LEN];

	cancel_token(b, reply, token);
	crypto_generichash(commit, sizeof(commit), token, sizeof(token), NULL, 0);
	sodium_bin2hex(hex, BR_MAC_LEN * 2 + 1, commit, sizeof(commit));
}

void
br_trust_cancel_token(struct bridge *b, const char *reply, char hex[BR_MAC_LEN * 2 + 1])
{
	uint8_t token[BR_MAC_LEN];

	cancel_token(b, reply, token);
	sodium_bin2hex(hex, BR_MAC_LEN * 2 + 1, token, sizeof(token));
}

int
br_trust_commit_parse(natsMsg *m, uint8_t commit[BR_MAC_LEN])
{
	const char *text = NULL;
	size_t n = 0;

	return natsMsgHeader_Get(m, BR_H_CANCEL, &text) == NATS_OK && text != NULL &&
	    sodium_hex2bin(commit, BR_MAC_LEN, text, strlen(text), NULL, &n, NULL) == 0 &&
	    n == BR_MAC_LEN ? 0 : -1;
}

int
br_trust_cancel_ok(const uint8_t commit[BR_MAC_LEN], const char *hex, size_t len)
{
	uint8_t token[BR_MAC_LEN], h[BR_MAC_LEN];
	size_t n = 0;

	if (sodium_hex2bin(token, sizeof(token), hex, len, NULL, &n, NULL) != 0 ||
	    n != sizeof(token))
		return 0;
	crypto_generichash(h, sizeof(h), token, sizeof(token), NULL, 0);
	return sodium_memcmp(h, commit, sizeof(h)) == 0;
}

void
br_trust_malformed(struct bridge *b)
{
	/* no name to log it by: once, the rest counted */
	if (b->refused_malformed++ == 0)
		br_log("a malformed announcement ignored (hubctl peers counts the next ones)");
}

void
br_trust_summary(struct bridge *b, char *buf, size_t cap)
{
	uint64_t ann = b->refused_unsigned + b->refused_unknown + b->refused_badsig +
	    b->refused_replay + b->refused_malformed;

	buf[0] = '\0';
	if (ann + b->refused_answers + b->refused_cancels == 0)
		return;
	snprintf(buf, cap, "; ignored: %llu ann (%llu unsigned %llu untrusted %llu badsig %llu old %llu malformed) %llu ans %llu cancel",
		 (unsigned long long)ann, (unsigned long long)b->refused_unsigned,
		 (unsigned long long)b->refused_unknown, (unsigned long long)b->refused_badsig,
		 (unsigned long long)b->refused_replay, (unsigned long long)b->refused_malformed,
		 (unsigned long long)b->refused_answers, (unsigned long long)b->refused_cancels);
}
