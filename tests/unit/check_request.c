/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Control requests: the command table and the parser that uses it. Who
 * may run what is the socket's security boundary: pinned here. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "daemon/request.h"

/* Parses line; returns request_parse's result, the command in *cmd and
 * why in *why. */
static int
parse(const char *line, enum ctl_cmd *cmd, const char **why)
{
	struct control_req r;
	int rc;

	*why = NULL;
	rc = request_parse(line, strlen(line), &r, why);
	*cmd = r.cmd;
	if (rc == 0)
		request_free(&r);
	return rc;
}

/* A request every command takes: what any of them may need. */
static void
request_for(const char *name, char *line, size_t len)
{
	snprintf(line, len, "{\"cmd\":\"%s\",\"method\":\"m\",\"name\":\"g\",\"topic\":\"t.x\"}",
		 name);
}

/* Every enum value has a row, says who may run it, and is what its name
 * parses to. */
START_TEST(test_every_command_has_a_row)
{
	char line[256];
	const char *why;
	enum ctl_cmd cmd;

	ck_assert_ptr_null(ctl_commands[CTL_NONE].name);
	for (int i = CTL_NONE + 1; i < CTL_NCMDS; i++) {
		const struct ctl_command *c = &ctl_commands[i];

		ck_assert_msg(c->name != NULL, "command %d has no row", i);
		ck_assert_msg(c->access == CTL_READ || c->access == CTL_CHANGE,
			      "%s: access %d is neither read nor change", c->name, c->access);
		request_for(c->name, line, sizeof(line));
		ck_assert_msg(parse(line, &cmd, &why) == 0, "%s: %s", c->name, why);
		ck_assert_msg((int)cmd == i, "%s parsed as %d, want %d", c->name, cmd, i);
	}
}
END_TEST

/* Reading is for anyone who can open the socket; calls, changes and the
 * guests' memory (domains) only for root and hubd's user
 * (doc/security.md). */
START_TEST(test_who_may_run_what)
{
	static const char *const reads[] = { "peers", "methods", "status", "stats", "pool",
					     "lanes", "version", "calls", "topics", "listen" };
	static const char *const changes[] = { "call", "reload", "restart", "stop", "start",
					       "domains", "logs", "ticket", "emit", "monitor" };
	int n = 0;

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		for (int k = CTL_NONE + 1; k < CTL_NCMDS; k++)
			if (strcmp(ctl_commands[k].name, reads[i]) == 0) {
				ck_assert_msg(ctl_commands[k].access == CTL_READ,
					      "%s is not for everyone", reads[i]);
				n++;
			}
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		for (int k = CTL_NONE + 1; k < CTL_NCMDS; k++)
			if (strcmp(ctl_commands[k].name, changes[i]) == 0) {
				ck_assert_msg(ctl_commands[k].access == CTL_CHANGE,
					      "%s is open to every user", changes[i]);
				n++;
			}
	/* a new command is added here too, with its access */
	ck_assert_msg(n == CTL_NCMDS - 1, "%d of %d commands checked", n, CTL_NCMDS - 1);
}
END_TEST

START_TEST(test_refusals)
{
	const char *why;
	enum ctl_cmd cmd;

	ck_assert_int_eq(parse("{\"cmd\":\"peer\"}", &cmd, &why), -1);
	ck_assert_str_eq(why, "unknown command");
	ck_assert_int_eq(parse("{\"cmd\":\"call\"}", &cmd, &why), -1);
	ck_assert_msg(strstr(why, "\"method\"") != NULL, "got: %s", why);
	ck_assert_int_eq(parse("{\"cmd\":\"stop\"}", &cmd, &why), -1);
	ck_assert_msg(strstr(why, "\"name\"") != NULL, "got: %s", why);
	ck_assert_int_eq(parse("{\"cmd\":\"restart\",\"name\":\"a\\u0000b\"}", &cmd, &why), -1);
	ck_assert_int_eq(parse("[\"peers\"]", &cmd, &why), -1);
	ck_assert_int_eq(parse("{\"cmd\":\"peers\"} x", &cmd, &why), -1);
	ck_assert_int_eq(parse("{\"cmd\":\"peers\"}", &cmd, &why), 0);
	ck_assert_int_eq(cmd, CTL_PEERS);
	ck_assert_int_eq(parse("{\"cmd\":\"pool\",\"validate\":1}", &cmd, &why), -1);
	ck_assert_msg(strstr(why, "\"validate\"") != NULL, "got: %s", why);
	ck_assert_int_eq(parse("{\"cmd\":\"peers\"", &cmd, &why), -1);
	ck_assert_str_eq(why, "a request is one JSON object per line");
	/* JSON, but deeper than the parser goes: said so */
	{
		char deep[128] = "{\"cmd\":\"peers\",\"x\":";
		size_t n = strlen(deep);

		for (int i = 0; i < 40; i++)
			deep[n++] = '[';
		for (int i = 0; i < 40; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		deep[n] = '\0';
		ck_assert_int_eq(parse(deep, &cmd, &why), -1);
		ck_assert_str_eq(why, "a request is nested at most 32 deep");
	}
}
END_TEST

/* pool takes "validate", a boolean, and nothing else does. */
START_TEST(test_pool_validate)
{
	static const struct {
		const char	*line;
		int		validate;
	} cases[] = {
		{ "{\"cmd\":\"pool\"}", 0 },
		{ "{\"cmd\":\"pool\",\"validate\":true}", 1 },
		{ "{\"cmd\":\"pool\",\"validate\":false}", 0 },
		{ "{\"cmd\":\"stats\",\"validate\":true}", 0 },
	};
	struct control_req r;
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(request_parse(cases[i].line, strlen(cases[i].line), &r, &why) == 0,
			      "%s: %s", cases[i].line, why);
		ck_assert_msg(r.validate == cases[i].validate, "%s: validate %d", cases[i].line,
			      r.validate);
		request_free(&r);
	}
}
END_TEST

Suite *suite_request(void);
Suite *
suite_request(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_every_command_has_a_row);
	tcase_add_test(tc, test_who_may_run_what);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_pool_validate);
	suite_add_tcase(s, tc);
	return s;
}
