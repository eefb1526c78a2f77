/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A NATS server (Debian's nats-server) for the bridge's tests, on a free
 * loopback port, in the harness's run directory: it stops with the test
 * (even one that failed) and the teardown kills what is left. */
#ifndef HUB_NATSD_H
#define HUB_NATSD_H

#include <sys/types.h>

struct natsd {
	pid_t	pid;
	int	port;		/* clients */
	int	cluster;	/* routes between servers, 0 alone */
	char	routes[256];	/* the other members' cluster URLs */
	char	url[64];	/* nats://127.0.0.1:PORT */
	char	user[32], password[32];	/* "": none */
	char	cert[256], key[256];		/* "": no TLS */
	char	conf[256];	/* its config file, "": none */
};

/* One server alone; asserts it is up. */
void	natsd_start(struct natsd *n);
/* The same, wanting user and password from its clients. */
void	natsd_start_auth(struct natsd *n, const char *user, const char *password);
/* The same, with a config file of conf_text (its authorization, say);
 * port and address from here. */
void	natsd_start_conf(struct natsd *n, const char *conf_text);
/* The same, with TLS only: a certificate for 127.0.0.1 made for it
 * (openssl), its path in n->cert (what a client trusts). */
void	natsd_start_tls(struct natsd *n);
/* n servers in a cluster, each routing to the others; asserts all up. */
void	natsd_cluster(struct natsd *n, int count);
/* Started again on its ports (after natsd_kill). */
void	natsd_restart(struct natsd *n);
/* SIGKILL, reaped. */
void	natsd_kill(struct natsd *n);

#endif
