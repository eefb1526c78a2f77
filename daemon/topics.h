/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics (topics.c, proto/topic.h, doc/events.md): hubd makes each
 * topic's memory and every subscription's cursor and bell, hands them to
 * the publisher and the subscribers, tells the publisher who reads and
 * how, and writes the hub.* discovery topics and the operator's emits
 * itself. It never carries a guest's events. */
#ifndef TOPICS_H
#define TOPICS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "daemon/hub.h"
#include "proto/topic.h"

#define TOPICS_MAX		4096	/* topics at once */
#define TOPICS_SUBS_PER_GUEST	64	/* subscriptions of one guest */
#define TOPICS_PER_GUEST	64	/* topics one guest (by name) advertised
					 * and hubd keeps */
#define TOPICS_SUBS_MAX		256	/* subscribers of one topic: their
					 * descriptors fit a guest's queue
					 * (HP_FDQ_MAX) when it advertises */

/* The discovery topics, their signature, and their words. */
#define TOPIC_GUESTS		"hub.guests"	/* guest, state, reason */
#define TOPIC_METHODS		"hub.methods"	/* method, registered|gone, signature */
#define TOPIC_TOPICS		"hub.topics"	/* topic, what, who */
#define TOPIC_HUB_SIG		"str,str,str"

struct topic;

/* A subscription; a control client's (hubctl listen) is told through
 * tell (a JSON line: signature changes, the end). */
struct topic_sub {
	struct topic_sub	*next;
	struct topic		*t;
	uint32_t		id;
	uint32_t		policy;
	uint32_t		peer, epoch;	/* the subscribing guest, 0: a client */
	uid_t			uid;		/* a client's */
	void			*client;
	void			(*tell)(void *client, json_object *line);
	int			cursor_ro;	/* handed to each publisher instance, with
						 * its bell's end A (hubd's writer's) */
	int			bell_a;		/* until hubd's writer takes it */
	uint64_t		rate_ns;	/* the figures at the last look */
	uint64_t		rate_received;
	double			rate;		/* events/s between the last two looks */
};

struct topic {
	struct topic		*next;
	uint32_t		id;
	char			name[HP_TOPIC_NAME_MAX + 1];
	char			sig[HP_SIG_MAX_LEN + 1];
	int			has_sig;	/* advertised at least once */
	struct hp_sig		psig;		/* sig's arguments, parsed */
	uint32_t		flags;		/* HP_TOPIC_RETAIN */
	struct hp_topic_geom	geom;
	uint32_t		block_ms;
	int			fd;		/* the memory, read-write */
	struct hp_topic_writer	w;		/* hubd's own writes */
	uint32_t		publisher;	/* peer id, 0: none (or the host's) */
	uint32_t		pub_epoch;
	int			host_owned;	/* hub.*: hubd publishes it */
	char			owner[CONFIG_GUEST_NAME_MAX + 1];	/* the guest
						 * that advertised it last, "" */
	struct topic_sub	*subs;
	uint32_t		nsubs;
	uint64_t		emitted;	/* events hubd wrote */
};

int	topics_init(struct hub *h);
void	topics_free(struct hub *h);
/* Guest name left the config (a reload removed it, and it is down): the
 * topics it advertised no longer keep their retained event for it, and
 * go once nobody reads them. */
void	topics_forget(struct hub *h, const char *name);

/* The guests' built-ins (services.c): 0 or -errno with *why for the
 * caller. hub.subscribe answers the subscription's id. */
int	topics_advertise(struct hub *h, struct peer *p, const char *name, const char *sig,
			 int retain, const char **why);
int64_t	topics_subscribe(struct hub *h, struct peer *p, const char *name, uint32_t policy,
			 const char **why);
int	topics_unsubscribe(struct hub *h, struct peer *p, uint64_t id, const char **why);
/* The peer id of t's publisher if it is up as the instance that
 * advertised t, else 0 (hub.advertised). */
uint32_t	topics_publisher(struct hub *h, const struct topic *t);

/* A control client's subscription (hubctl listen): fds[3] (topic memory
 * read-only, cursor, bell end B) for it to take, and *sp; 0 or -errno
 * with *why. Ended by topics_drop (the client went). */
int	topics_listen(struct hub *h, const char *name, uint32_t policy, uid_t uid,
		      int privileged, void *client,
		      void (*tell)(void *client, json_object *line), int fds[3],
		      struct topic_sub **sp, const char **why);
void	topics_drop(struct hub *h, struct topic_sub *s);

/* The topic name, NULL if there is none yet. */
struct topic *topics_find(struct hub *h, const char *name);
/* Writes one event as the host (the operator's emit): its sequence, or
 * -errno with *why. */
int64_t	topics_emit(struct topic *t, const uint8_t *ev, size_t len, const char **why);
/* Every topic, for hubctl topics. */
json_object *topics_json(struct hub *h);

/* An event of three strings, each cut to 300 bytes, on the hub topic
 * named (hubd's own; discovery.c's), if anybody ever subscribed to it. */
void	topics_discover(struct hub *h, const char *topic, const char *a, const char *b,
			const char *c);

#endif
