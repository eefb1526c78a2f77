/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd.conf: an INI file with one [hub] section, one [guest NAME]
 * section per guest and [topic NAME] sections. See conf/hubd.conf for
 * every key and its default. */
#ifndef HUB_CONFIG_H
#define HUB_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "proto/segment.h"

/* [hub] control's default, hubctl's too; make install under a prefix of
 * its own builds hubd and hubctl again with one inside it. */
#ifndef HUB_CONTROL_DEFAULT
#define HUB_CONTROL_DEFAULT	"/run/hub/hubd.sock"
#endif

/* A guest's restart = */
enum restart_policy {
	RESTART_NEVER,
	RESTART_ON_FAILURE,	/* not after exit 0 */
	RESTART_ALWAYS,
	RESTART_NPOLICIES
};

#define CONFIG_GUEST_NAME_MAX	32

/* [hub] guest_uids: the uids guests without user = get one each from
 * (first 0: guest_uids = no, they run as hubd's user). The default lies
 * above systemd's container ranges (524288-1879048191) and below its
 * foreign range (from 2147352576) and 2^31: no range systemd or Debian
 * hands out. */
struct config_uids {
	uint32_t	first;
	uint32_t	last;
};
#define CONFIG_GUEST_UIDS_FIRST	0x70010000u	/* 1879113728 */
#define CONFIG_GUEST_UIDS_LAST	0x7001ffffu	/* 1879179263 */

/* Whom a guest runs as (users.c decides it when hubd takes the guest's
 * settings): a uid of its own, its user =, or hubd's user. */
enum guest_runs {
	GUEST_RUNS_HUBD,
	GUEST_RUNS_OWN,
	GUEST_RUNS_USER,
};

/* [guest] lanes = yes | no | NAME, ...: with whom a guest may have
 * direct lanes (lanes.c); a pair gets one only when each allows the other. */
enum config_lanes {
	LANES_NONE,
	LANES_ANY,
	LANES_WITH,
};
#define CONFIG_LANES_WITH_MAX	512
#define CONFIG_HEARTBEAT_HUB	UINT64_MAX	/* a guest's heartbeat: the hub's */

struct config_guest {
	char		name[CONFIG_GUEST_NAME_MAX + 1];
	char		*exec;		/* path of the executable */
	char		**argv;		/* argv[0] = exec, then args; NULL-terminated */
	enum restart_policy restart;
	uint32_t	max_deaths;	/* deaths within death_window before failed */
	uint64_t	death_window_ns;
	uint64_t	backoff_min_ns;	/* first restart delay, doubled each death */
	uint64_t	backoff_max_ns;
	int		line;		/* where its section starts */
	int64_t		uid;		/* user = NAME: run as it; -1: hubd's */
	int64_t		gid;		/* group = NAME, or the user's; -1: hubd's */
	uint64_t	limit_memory;	/* RLIMIT_AS in bytes, 0: unchanged */
	uint64_t	limit_files;	/* RLIMIT_NOFILE, 0: unchanged */
	int		shared_pool;	/* may use the shared variable pool */
	int		seccomp;	/* started with filter.c's system call filter */
	int		lanes;		/* LANES_*: direct lanes to other guests */
	char		lanes_with[CONFIG_LANES_WITH_MAX]; /* LANES_WITH: " a b " */
	char		zone[CONFIG_GUEST_NAME_MAX + 1];	/* whose pool it shares;
						 * "": its own (config_zone) */
	uint32_t	processors;	/* HUB_PROCESSORS for guest_run_mt, 0: unset */
	uint64_t	heartbeat_ns;	/* heartbeat =: its domain's interval, 0: off,
					 * CONFIG_HEARTBEAT_HUB: heartbeat_interval's */
	uint64_t	pool_quota;	/* shared pool bytes it may hold, 0: [pool] quota */
	uint32_t	pool_quota_slots; /* and slots, 0: [pool] quota_slots */
	char		**provides;	/* method names it may register besides
					 * NAME.*: "a.b" exact, "a.*" a prefix;
					 * NULL-terminated, NULL: none */
	int		provides_line;	/* where provides = is */
	int		backoff_line;	/* where the later of backoff_min and _max is */
	char		**publishes;	/* topics it may publish besides NAME.*,
					 * patterns as provides' (topics.c) */
	char		**env;		/* env = NAME=VALUE ...: set in its
					 * environment; NULL-terminated, NULL: none */
	int		start_manual;	/* start = manual: started by hand (manual.c) */
	struct config_uids uids;	/* [hub] guest_uids, without user =; else 0 */
	/* Not settings of the file (config_guest_equal ignores them): */
	uint32_t	own_uid;	/* its number in uids (users_number), 0: none */
	enum guest_runs	runs;		/* whom it runs as (users_take) */
	int64_t		run_uid;	/* setuid to it, -1: hubd's */
	int64_t		run_gid;	/* setgid to it, -1: hubd's */
	char		run_user[40];	/* run_uid's name, "" if it has none */
	char		run_why[320];	/* GUEST_RUNS_HUBD: why not its own */
};

/* hang_stack =: what hubd does before it kills a hung guest. */
enum {
	HANG_STACK_AUTO,	/* eu-stack or gdb if installed, else SIGABRT */
	HANG_STACK_OFF,		/* SIGKILL at once */
};

/* [topic NAME]: a topic's settings (topics.c, doc/events.md); a topic
 * without a section gets the defaults. */
#define CONFIG_TOPIC_SLOTS	64u
#define CONFIG_TOPIC_EVENT_MAX	4096u
#define CONFIG_TOPIC_BLOCK_NS	(1000ull * 1000 * 1000)
struct config_topic {
	char		name[65];	/* HP_TOPIC_NAME_MAX */
	int		line;
	char		**subscribers;	/* guests that may subscribe; NULL: all */
	uint32_t	slots;		/* events it keeps, a power of two */
	uint32_t	event_max;	/* bytes of one event at most */
	uint64_t	block_ns;	/* block_timeout: a publisher waits so long
					 * for a block subscriber, then overruns it */
};

struct hub_conf {
	char			*file;
	char			*control_path;
	int			control_line;	/* where control = is (the [hub] line if unset) */
	struct hp_params	params;
	int64_t			gid;		/* group = NAME: the socket 0660 for it */
	struct config_uids	guest_uids;	/* guests' own uids; first 0: no */
	uint64_t		attach_timeout_ns;	/* Reserved too long: recovered */
	uint64_t		stop_grace_ns;		/* drain time before SIGKILL */
	uint64_t		goodbye_grace_ns;	/* a Goodbye's time to be read before SIGKILL */
	uint64_t		client_timeout_ns;	/* a control client silent or not reading */
	uint32_t		calls_in_flight;	/* a guest's calls to guests routed at once */
	uint32_t		channels_per_caller;	/* streams hubd opens in a guest's table
							 * for one caller at once */
	uint32_t		lanes_per_guest;	/* lanes one guest may have open */
	uint32_t		lane_slots;		/* each side's payload slots in a lane */
	uint64_t		lane_ban_ns;		/* no lane for a pair (by name) this
							 * long after one of theirs closed
							 * over a broken rule (0: none) */
	int			hang_stack;		/* HANG_STACK_*: a hung guest's stack */
	uint64_t		pool_sweep_ns;		/* [pool] sweep_interval: the sweeper's period */
	uint64_t		pool_stuck_ns;		/* [pool] stuck_after: a slot held this long is reported (0: never) */
	uint64_t		pool_release_ns;	/* [pool] release_after: a class none took a slot of this long gives its grown extents' memory back (0: never) */
	uint64_t		pool_quota;		/* [pool] quota: bytes one guest may hold (0: default) */
	uint32_t		pool_quota_slots;	/* [pool] quota_slots: slots one guest may hold (0: default) */
	struct config_guest	*guests;
	uint32_t		nguests;
	struct config_topic	*topics;
	uint32_t		ntopics;
};

/* Reads file into c. Every problem found is written to errs as
 * "file:line: message" (all of them, not only the first); returns 0, or -1
 * when there was any, leaving c empty. */
int config_load(const char *file, struct hub_conf *c, FILE *errs);
/* config_load for a reload of the hub running: what must hold of the
 * values it keeps until it restarts (max_guests, max_channels) is checked
 * against running's, so that a reload takes no file hubd would refuse to
 * start with under those values. */
int config_load_over(const char *file, struct hub_conf *c, FILE *errs,
		     const struct hub_conf *running);
void config_free(struct hub_conf *c);

/* Each [hub] and [pool] key (section "hub" or "pool") whose value in n,
 * a new file, is not was's: fn is told its name, both values as the file
 * writes them, and whether now (the hub's settings after a reload) took
 * n's. Only those keys' values are read: was may be a shallow copy. */
typedef void config_change_fn(void *arg, const char *section, const char *key,
			      const char *was, const char *n, int taken);
void config_hub_changes(const struct hub_conf *was, const struct hub_conf *now,
			const struct hub_conf *n, config_change_fn *fn, void *arg);

/* A guest's settings on their own (a running guest owns a copy, so a
 * reload can replace the config under it). */
struct config_guest *config_guest_dup(const struct config_guest *g);
void config_guest_free(struct config_guest *g);
int config_guest_equal(const struct config_guest *a, const struct config_guest *b);
/* Whether b differs from a only in keys the instance running takes at
 * once, without a restart: restart, max_deaths, death_window,
 * backoff_min, backoff_max, pool_quota, pool_quota_slots. */
int config_guest_differs_live(const struct config_guest *a, const struct config_guest *b);
/* Those keys of from into to; their names that changed, ", "-separated,
 * into names (len 0: not wanted); how many changed. */
int config_guest_take_live(struct config_guest *to, const struct config_guest *from,
			   char *names, size_t len);

/* Whether g allows a lane with the guest named name. */
int config_lanes_allow(const struct config_guest *g, const char *name);

/* Whether g may register method: one of its own names (NAME.*, NAME its
 * section's) or one its provides lists. config_load sees to it that no
 * two guests of a file, and no guest and the host (hub.*), share a name. */
int config_guest_covers(const struct config_guest *g, const char *method);
/* Whether g may publish topic: NAME.* or one its publishes lists. */
int config_guest_publishes(const struct config_guest *g, const char *topic);
/* Topic name's settings: its [topic] section's, or the defaults in *def. */
const struct config_topic *config_topic_of(const struct hub_conf *c, const char *name,
					   struct config_topic *def);
/* Whether the topic's settings let guest subscribe (NULL: a control
 * client, not root nor hubd's user: only to a topic open to all). */
int config_topic_allows(const struct config_topic *t, const char *guest);
/* Whether two [topic] sections say the same (subscribers in any order),
 * or name the same subscribers. */
int config_topic_equal(const struct config_topic *a, const struct config_topic *b);
int config_topic_subscribers_equal(const struct config_topic *a, const struct config_topic *b);
/* from's [topic] sections into to, whose own are freed; from keeps none
 * (a reload's: topics hold no pointer into them, each copies what it
 * needs when it is made, and subscriptions ask at the time). */
void config_topics_take(struct hub_conf *to, struct hub_conf *from);

#endif
