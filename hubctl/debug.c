/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's commands for debugging a guest: the calls hubd waits on
 * (calls), a guest's last lines of output (logs) and the command line
 * that starts one by hand (ticket). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

/* hubctl calls: the calls routed through hubd and not answered yet, the
 * oldest first within each guest; WHERE: for a NATS bridge's, where on
 * NATS, and after them the bridge's calls over lanes, that hubd never
 * sees (remotes.c). */
int
hubctl_calls(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *cs;
	char age[32], left[32], id[24];
	int wr, we, wm;

	(void)argc;
	(void)argv;
	if ((a = client_cmd(ctl, "calls")) == NULL)
		client_no_answer(ctl, "");
	if (client_failed(ctl, a))
		return 1;
	cs = js_list(a, "calls");
	bridges_where(ctl, cs);
	if (ctl->json)
		return js_print(a);
	/* as wide as the longest name, as peers and methods are */
	wr = js_width(cs, "caller", 24);
	we = js_width(cs, "callee", 16);
	wm = js_width(cs, "method", 32);
	printf("%-*s %-*s %-*s %10s %12s %12s %-32s %s\n", wr, "CALLER", we, "CALLEE", wm,
	       "METHOD", "ID", "AGE", "LEFT", "TRACE", "WHERE");
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		json_object *c = json_object_array_get_idx(cs, i);

		/* LEFT: time to the call's deadline; TRACE: its trace-id */
		if (js_get(c, "left_s") != NULL)
			duration_text(left, sizeof(left), js_ns(js_get(c, "left_s"), HP_NS_PER_S));
		else
			snprintf(left, sizeof(left), "-");
		/* none: a bridge's call over a lane, that hubd never saw */
		if (js_get(c, "id") != NULL)
			snprintf(id, sizeof(id), "%" PRIu64, js_u64(c, "id"));
		else
			snprintf(id, sizeof(id), "-");
		printf("%-*s %-*s %-*s %10s %12s %12s %-32s %s\n", wr, js_text(c, "caller"),
		       we, js_text(c, "callee"), wm, js_text(c, "method"), id,
		       duration_text(age, sizeof(age), js_ns(js_get(c, "age_s"), HP_NS_PER_S)),
		       left, js_get(c, "trace") != NULL ? js_text(c, "trace") : "-",
		       js_get(c, "where") != NULL ? js_text(c, "where") : "-");
	}
	if (json_object_array_length(cs) == 0)
		printf("(no call in flight through hubd)\n");
	json_object_put(a);
	return 0;
}

/* hubctl logs NAME: the guest's last lines of stdout and stderr, as hubd
 * keeps them. */
int
hubctl_logs(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *ls;
	int rc;

	(void)argc;
	if ((a = client_ask_about(ctl, "logs", argv[0], &rc)) == NULL)
		return rc;
	ls = js_list(a, "lines");
	for (size_t i = 0; i < json_object_array_length(ls); i++)
		printf("%s\n", js_shown(json_object_array_get_idx(ls, i)));
	json_object_put(a);
	return 0;
}

/* One word for sh: as it is when it is safe, else in single quotes. */
static void
put_word(const char *w)
{
	if (*w != '\0' && w[strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				  "0123456789_@%+=:,./-")] == '\0') {
		fputs(w, stdout);
		return;
	}
	putchar('\'');
	for (; *w != '\0'; w++) {
		if (*w == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*w);
	}
	putchar('\'');
}

/* The words of the array at key, each after a blank (none first if
 * first). */
static void
put_words(json_object *a, const char *key, int *first)
{
	json_object *ws = js_list(a, key);

	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		if (!*first)
			putchar(' ');
		*first = 0;
		put_word(json_object_get_string(json_object_array_get_idx(ws, i)));
	}
}

/* Whether path names a Python interpreter: python, python3, python3.11. */
static int
is_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b != NULL ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 && b[6 + strspn(b + 6, "0123456789.")] == '\0';
}

/* The interpreter that runs path when it is a script in Python, into buf:
 * its #! line's (through env), else python3 for a name ending in .py.
 * 0: not a Python script (or not readable by us: gdb it is). */
static int
python_script(const char *path, char *buf, size_t len)
{
	char line[256], *w, *save;
	size_t n = strlen(path);
	FILE *f;
	int found = 0;

	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(line, sizeof(line), f) != NULL && strncmp(line, "#!", 2) == 0 &&
		    (w = strtok_r(line + 2, " \t\r\n", &save)) != NULL) {
			/* #!/usr/bin/env [-S] python3 */
			if (strcmp(w, "env") == 0 || (strlen(w) > 4 &&
			    strcmp(w + strlen(w) - 4, "/env") == 0))
				while ((w = strtok_r(NULL, " \t\r\n", &save)) != NULL &&
				       (w[0] == '-' || strchr(w, '=') != NULL))
					;
			if (w != NULL && is_python(w) && strlen(w) < len) {
				snprintf(buf, len, "%s", w);
				found = 1;
			}
		}
		fclose(f);
	}
	if (!found && n > 3 && strcmp(path + n - 3, ".py") == 0) {
		snprintf(buf, len, "python3");
		found = 1;
	}
	return found;
}

/* One command line: AS [env ENV...] [DEBUGGER] ARGV. The debugger of
 * the guest's kind: python3 -m pdb for a script in Python (after its
 * interpreter when that is the exec), else gdb --args. */
static void
put_line(json_object *a, int debug)
{
	json_object *argv = js_list(a, "argv");
	const char *exe = json_object_array_length(argv) > 0 ?
	    json_object_get_string(json_object_array_get_idx(argv, 0)) : "";
	char interp[256];
	int first = 1;

	put_words(a, "as", &first);
	if (json_object_array_length(js_list(a, "env")) > 0) {
		fputs(first ? "env" : " env", stdout);
		first = 0;
		put_words(a, "env", &first);
	}
	if (debug && is_python(exe)) {
		if (!first)
			putchar(' ');
		put_word(exe);
		fputs(" -m pdb", stdout);
		for (size_t i = 1; i < json_object_array_length(argv); i++) {
			putchar(' ');
			put_word(json_object_get_string(json_object_array_get_idx(argv, i)));
		}
		putchar('\n');
		return;
	}
	if (debug && python_script(exe, interp, sizeof(interp))) {
		if (!first)
			putchar(' ');
		put_word(interp);
		fputs(" -m pdb", stdout);
		first = 0;
	} else if (debug) {
		fputs(first ? "gdb --args" : " gdb --args", stdout);
		first = 0;
	}
	put_words(a, "argv", &first);
	putchar('\n');
}

/* hubctl ticket NAME: the command that starts a guest of start = manual
 * by hand, and the same under gdb (pdb for a script in Python). */
int
hubctl_ticket(struct ctl *ctl, int argc, char **argv)
{
	json_object *a;
	int rc;

	(void)argc;
	if ((a = client_ask_about(ctl, "ticket", argv[0], &rc)) == NULL)
		return rc;
	put_line(a, 0);
	printf("# or under a debugger:\n# ");
	put_line(a, 1);
	printf("# the ticket is good once; guest %s waits for it (hubctl peers)\n",
	       js_text(a, "name"));
	json_object_put(a);
	return 0;
}
