/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The methods a guest serves, registered with the hub (hub.register) or
 * withdrawn (hub.unregister), and their descriptions (hub.describe);
 * on_request (call_in.c) finds each Request's handler in the table this
 * file keeps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "proto/method.h"
#include "proto/postcard.h"
#include "proto/builtin.h"

/* hub.register's refusal, by the shared error strings (services.h). */
static int
register_error(const char *why)
{
	if (strcmp(why, HP_SVC_REG_TAKEN) == 0 || strcmp(why, HP_SVC_REG_COLLIDES) == 0)
		return -EEXIST;
	if (strcmp(why, HP_SVC_REG_TOO_MANY) == 0)
		return -ENOSPC;
	if (strcmp(why, HP_SVC_REG_NOT_YOURS) == 0)
		return -EPERM;
	if (strncmp(why, HP_METHOD_NAME_BAD, strlen(HP_METHOD_NAME_BAD)) == 0)
		return -EINVAL;
	return -EREMOTEIO;
}

static int
register_method(struct guest *g, const char *name, const char *signature,
		guest_handler fn, void *ctx)
{
	uint8_t args[512], res[128];
	struct hp_pc_enc e;
	struct hp_sig sig;
	struct method *m;
	const char *why;
	size_t n, rlen = 0;
	uint64_t id;
	int rc;

	/* what the host would refuse anyway, without asking it */
	if (name == NULL || fn == NULL || (n = strlen(name)) == 0)
		return -EINVAL;
	if (n > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	if (hp_method_name_refused(name, n) != NULL)
		return -EINVAL;
	if (hp_sig_parse(signature, &sig, &why) != 0) {
		char text[256];

		/* -EINVAL alone leaves the author guessing: what and where, on
		 * stderr (hubctl logs, hub-run's terminal); the name is one */
		hp_sig_explain(signature, text, sizeof(text));
		fprintf(stderr, "libguest: guest_register %s: %s\n", name, text);
		return -EINVAL;
	}
	id = hp_method_id(name, n);
	for (uint32_t i = 0; i < g->nmethods; i++)
		if (g->methods[i].id == id)
			return -EEXIST;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, name, n);
	hp_pc_put_str(&e, signature, strlen(signature));
	if (e.err != 0)
		return -ENAMETOOLONG;
	/* Known locally first: a call may arrive right after the host agrees. */
	if ((m = realloc(g->methods, (g->nmethods + 1) * sizeof(*m))) == NULL)
		return -ENOMEM;
	g->methods = m;
	m = &g->methods[g->nmethods];
	*m = (struct method){ .id = id, .fn = fn, .ctx = ctx, .sig = sig };
	if ((m->name = strdup(name)) == NULL)
		return -ENOMEM;
	g->nmethods++;
	for (uint8_t i = 0; i < sig.nargs; i++)
		if (hp_sig_arg_type(&sig, i) == HP_T_CHAN)
			m->chans = 1;
		else if (hp_sig_arg_type(&sig, i) == HP_T_RX)
			m->rx = 1;
	g->holding++;
	rc = guest_call_with(g, HP_SVC_REGISTER, args, e.len, res, sizeof(res), &rlen,
			    10000, &lg_own_call);
	g->holding--;
	/* A host with no method registry (one written from the spec alone)
	 * does not know hub.register: it calls us by method id, which we
	 * serve all the same. */
	if (rc == -ENOSYS)
		return 0;
	if (rc != 0) {
		/* a handler run meanwhile may have registered more: find ours */
		for (uint32_t i = 0; i < g->nmethods; i++) {
			if (g->methods[i].id == id) {
				free(g->methods[i].name);
				g->methods[i] = g->methods[--g->nmethods];
				break;
			}
		}
		if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
			rc = register_error((const char *)res);
		return rc;
	}
	return 0;
}

int
guest_register(struct guest *g, const char *name, const char *signature,
	       guest_handler fn, void *ctx)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	rc = register_method(g, name, signature, fn, ctx);
	g->rt->unlock(g);
	return rc;
}

int
guest_describe(struct guest *g, const char *method, const char *text)
{
	uint8_t args[HP_METHOD_NAME_MAX + HP_DESCRIBE_MAX + 16], res[128] = "";
	size_t n, tn, rlen = 0;
	struct hp_pc_enc e;
	const char *why;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	method = method != NULL ? method : "";
	text = text != NULL ? text : "";
	if ((n = strlen(method)) > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	/* what the host refuses anyway, without asking it */
	if ((why = hp_describe_refused(text, tn = strlen(text))) != NULL)
		return strcmp(why, HP_SVC_DESC_TOO_LONG) == 0 ? -EMSGSIZE :
		    strcmp(why, HP_SVC_DESC_NOT_UTF8) == 0 ? -EILSEQ : -EINVAL;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, method, n);
	hp_pc_put_str(&e, text, tn);
	if (e.err != 0)
		return -EMSGSIZE;
	g->rt->lock(g);
	g->holding++;
	rc = guest_call_with(g, HP_SVC_DESCRIBE, args, e.len, res, sizeof(res), &rlen,
			    10000, &lg_own_call);
	g->holding--;
	g->rt->unlock(g);
	if (rc != -EREMOTEIO && rc != -ECONNREFUSED)
		return rc;	/* 0; -ENOSYS: a host without hub.describe; ... */
	if (strncmp((const char *)res, HP_SVC_DESC_NOT_YOURS, strlen(HP_SVC_DESC_NOT_YOURS)) == 0)
		return -EPERM;
	if (strncmp((const char *)res, HP_SVC_SIG_UNKNOWN, strlen(HP_SVC_SIG_UNKNOWN)) == 0)
		return -ENOENT;
	return -EREMOTEIO;
}

int
guest_unregister(struct guest *g, const char *method)
{
	uint8_t args[HP_METHOD_NAME_MAX + 8], res[128] = "";
	struct hp_pc_enc e;
	size_t n, rlen = 0;
	uint64_t id;
	uint32_t i;
	char **grown;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (method == NULL || (n = strlen(method)) == 0 || n > HP_METHOD_NAME_MAX)
		return -ENOENT;
	id = hp_method_id(method, n);
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, method, n);
	g->rt->lock(g);
	for (i = 0; i < g->nmethods && g->methods[i].id != id; i++)
		;
	if (i == g->nmethods || strcmp(g->methods[i].name, method) != 0) {
		g->rt->unlock(g);
		return -ENOENT;
	}
	if ((grown = realloc(g->retired, (g->nretired + 1) * sizeof(*grown))) == NULL) {
		g->rt->unlock(g);
		return -ENOMEM;
	}
	g->retired = grown;
	g->holding++;
	rc = guest_call_with(g, HP_SVC_UNREGISTER, args, e.len, res, sizeof(res), &rlen,
			    10000, &lg_own_call);
	g->holding--;
	if (rc == 0 || rc == -ENOSYS) {
		/* found again: nothing ran meanwhile (holding), but be sure */
		for (i = 0; i < g->nmethods && g->methods[i].id != id; i++)
			;
		if (i < g->nmethods) {
			/* a call being handled may point to its name */
			g->retired[g->nretired++] = g->methods[i].name;
			g->methods[i] = g->methods[--g->nmethods];
		}
		g->rt->unlock(g);
		return rc;
	}
	g->rt->unlock(g);
	if (rc != -EREMOTEIO && rc != -ECONNREFUSED)
		return rc;
	if (strncmp((const char *)res, HP_SVC_DESC_NOT_YOURS, strlen(HP_SVC_DESC_NOT_YOURS)) == 0)
		return -EPERM;
	if (strncmp((const char *)res, HP_SVC_SIG_UNKNOWN, strlen(HP_SVC_SIG_UNKNOWN)) == 0)
		return -ENOENT;
	return -EREMOTEIO;
}
