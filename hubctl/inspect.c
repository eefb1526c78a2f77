/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect: each guest's domain and each zone's pool, read-only,
 * with their invariants checked: those of a live hub (their fds from
 * hubd, domains.c), or files (what hubctl dump wrote, or any segment the
 * spec allows). This file is what to read and the verdict: each domain
 * is read by inspect_domain.c, each pool by inspect_pool.c, the answer
 * printed by inspect_print.c (inspector.h). Part of hubctl, not of hubd. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hubctl/hubctl.h"
#include "hubctl/inspector.h"
#include "proto/segment.h"

/* What inspect found, for the answer: each domain's object, each pool's,
 * and every problem named with the domain or pool it is in. */
struct found {
	json_object	*domains, *pools, *problems;
};

/* o's problems into the answer's, each after prefix ("guest echo"). */
static void
found_add(struct found *f, json_object *list, json_object *o, const char *prefix)
{
	json_object *ps = js_get(o, "problems");

	json_object_array_add(list, o);
	for (size_t i = 0; i < json_object_array_length(ps); i++)
		inspect_problem(f->problems, "%s: %s", prefix,
			json_object_get_string(json_object_array_get_idx(ps, i)));
}

/* -- live: the fds hubd passes ----------------------------------------- */

static void
inspect_live(struct ctl *ctl, struct found *f, json_object *o)
{
	struct domains d;
	char path[40], label[96];

	domains_fetch(ctl, &d);
	json_object_object_add(o, "control", json_object_new_string(ctl->sock));
	json_object_object_add(o, "max_guests", json_object_new_int((int)d.max_guests));
	for (uint32_t i = 0; i < d.nfds; i++) {
		json_object *e = json_object_array_get_idx(d.list, i), *j;
		const char *name = js_text(e, "name"), *why = NULL;
		int rc;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", d.fds[i]);
		if (strcmp(js_text(e, "kind"), "pool") == 0) {
			struct pool_map pm;

			if ((rc = pool_map_open(&pm, path, d.max_guests, &why)) != 0) {
				snprintf(label, sizeof(label), "pool %s", name);
				domains_free(&d);
				errx(2, "%s: %s (%s)", label, why, strerror(-rc));
			}
			j = inspect_pool(&pm.vp, name, NULL, 1);
			pool_map_close(&pm);
			snprintf(label, sizeof(label), "pool %s", name);
			found_add(f, f->pools, j, label);
		} else {
			struct hp_segment seg;

			if ((rc = hp_segment_attach(&seg, path, HP_ATTACH_RDONLY, &why)) != 0) {
				snprintf(label, sizeof(label), "guest %s", name);
				domains_free(&d);
				errx(2, "%s: %s", label, why ? why : strerror(-rc));
			}
			j = inspect_domain(&seg, name, (uint32_t)js_u64(e, "peer"),
					   js_get(e, "zone") ? js_text(e, "zone") : NULL, NULL);
			hp_segment_close(&seg);
			found_add(f, f->domains, j, inspect_domain_label(label, sizeof(label), j));
		}
		/* mapped or copied: hubctl holds none of the hub's fds longer */
		close(d.fds[i]);
		d.fds[i] = -1;
	}
	domains_free(&d);
}

/* -- files: a dump's, or any segment ------------------------------------ */

/* The file's name without its directory and without suffix. */
static void
file_label(char *buf, size_t len, const char *path, const char *suffix)
{
	char copy[4096];
	const char *base;
	size_t n, s = strlen(suffix);

	snprintf(copy, sizeof(copy), "%s", path);
	base = basename(copy);
	n = strlen(base);
	if (n > s && strcmp(base + n - s, suffix) == 0)
		n -= s;
	snprintf(buf, len, "%.*s", (int)n, base);
}

/* max_guests as hubctl dump's domains.json beside path says; 0 when
 * there is none; exit 2 when it is there but says no such thing. */
static uint32_t
dump_max_guests(const char *path)
{
	static char buf[1 << 20];
	char copy[4096], js[4200];
	json_object *a;
	int64_t mg;
	ssize_t n;
	int fd;

	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(js, sizeof(js), "%s/domains.json", dirname(copy));
	if ((fd = open(js, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	a = json_tokener_parse(buf);
	mg = json_object_get_int64(js_get(a, "max_guests"));
	if (!json_object_is_type(js_get(a, "max_guests"), json_type_int) || mg < 1 || mg > 255)
		errx(2, "%s: not hubctl dump's answer (no max_guests from 1 to 255)", js);
	json_object_put(a);
	return (uint32_t)mg;
}

/* What path holds: 1 a segment (its magic first), 0 anything else, to be
 * read as a pool; exit 2 when it is no regular file. */
static int
is_segment(const char *path)
{
	uint8_t magic[HP_MAGIC_LEN];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), seg;

	if (fd < 0)
		err(2, "%s", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errx(2, "%s: not a regular file (a domain, pool or segment file is)", path);
	}
	seg = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	      memcmp(magic, HP_MAGIC, HP_MAGIC_LEN) == 0;
	close(fd);
	return seg;
}

/* Whether path is a dump's domains.json: read for max_guests, not a
 * file to inspect (so that a shell's glob of a dump's directory reads). */
static int
is_answer(const char *path)
{
	size_t n = strlen(path);

	return strcmp(path, "domains.json") == 0 ||
	       (n > 13 && strcmp(path + n - 13, "/domains.json") == 0);
}

static void
inspect_files(int argc, char **argv, struct found *f)
{
	uint32_t max_guests = 0;
	char name[80], label[96];
	int n = 0;

	/* the answers out */
	for (int i = 0; i < argc; i++)
		if (!is_answer(argv[i]))
			argv[n++] = argv[i];
	if ((argc = n) == 0)
		errx(2, "inspect: no domain, pool or segment file among the files");

	/* the segments first: a pool file takes their max_guests when no
	 * domains.json is beside it */
	for (int i = 0; i < argc; i++) {
		struct hp_segment seg;
		const char *why = NULL;
		json_object *j;
		int rc;

		if (!is_segment(argv[i]))
			continue;
		if ((rc = hp_segment_attach(&seg, argv[i], HP_ATTACH_RDONLY, &why)) != 0)
			errx(2, "%s: %s", argv[i], why ? why : strerror(-rc));
		if (max_guests == 0)
			max_guests = seg.params.max_guests;
		file_label(name, sizeof(name), argv[i], ".domain");
		j = inspect_domain(&seg, name, 0, NULL, argv[i]);
		hp_segment_close(&seg);
		found_add(f, f->domains, j, inspect_domain_label(label, sizeof(label), j));
	}
	for (int i = 0; i < argc; i++) {
		struct pool_map pm;
		uint32_t mg;
		const char *why = NULL;
		int rc;

		if (is_segment(argv[i]))
			continue;
		if ((mg = dump_max_guests(argv[i])) == 0 && (mg = max_guests) == 0) {
			/* one guest at most reads the fewest bytes: is it a pool at all? */
			if (pool_map_open(&pm, argv[i], 1, &why) != 0)
				errx(2, "%s: neither a domain (no segment magic) nor a pool: %s",
				     argv[i], why);
			pool_map_close(&pm);
			errx(2, "%s: no segment magic, so a pool file; reading one needs its hub's "
			     "max_guests: hubctl dump's domains.json beside it, or a domain file "
			     "of the same hub among the files", argv[i]);
		}
		if ((rc = pool_map_open(&pm, argv[i], mg, &why)) != 0)
			errx(2, "%s: neither a domain (no segment magic) nor a pool: %s", argv[i],
			     why);
		file_label(name, sizeof(name), argv[i], ".pool");
		snprintf(label, sizeof(label), "pool %s", name);
		found_add(f, f->pools, inspect_pool(&pm.vp, name, argv[i], 0), label);
		pool_map_close(&pm);
	}
}

/* hubctl inspect [FILE...]: without files, every domain and pool of the
 * live hub (their fds from hubd); with, those files. Exit 0 when every
 * invariant holds, 1 when one does not, 2 when there is nothing to read. */
int
hubctl_inspect(struct ctl *ctl, int argc, char **argv)
{
	json_object *o = json_object_new_object();
	struct found f = { json_object_new_array(), json_object_new_array(),
			   json_object_new_array() };
	int rc;

	if (argc == 0)
		inspect_live(ctl, &f, o);
	else
		inspect_files(argc, argv, &f);
	json_object_object_add(o, "domains", f.domains);
	json_object_object_add(o, "pools", f.pools);
	json_object_object_add(o, "problems", f.problems);
	rc = json_object_array_length(f.problems) == 0 ? 0 : 1;
	json_object_object_add(o, "valid", json_object_new_boolean(rc == 0));
	if (ctl->json) {
		js_print(o);
		return rc;
	}
	if (argc == 0)
		printf("hub at %s: %zu guests' domains, %zu pools, %d guests at most\n",
		       js_text(o, "control"), json_object_array_length(f.domains),
		       json_object_array_length(f.pools), json_object_get_int(js_get(o, "max_guests")));
	for (size_t i = 0; i < json_object_array_length(f.domains); i++) {
		if (i > 0 || argc == 0)
			printf("\n");
		inspect_print_domain(json_object_array_get_idx(f.domains, i));
	}
	for (size_t i = 0; i < json_object_array_length(f.pools); i++) {
		printf("\n");
		inspect_print_pool(json_object_array_get_idx(f.pools, i));
	}
	if (json_object_array_length(f.domains) + json_object_array_length(f.pools) > 0)
		printf("\n");
	for (size_t i = 0; i < json_object_array_length(f.problems); i++)
		printf("PROBLEM: %s\n", js_shown(json_object_array_get_idx(f.problems, i)));
	printf("invariants: %s\n", rc == 0 ? "ok" : "broken");
	json_object_put(o);
	return rc;
}
