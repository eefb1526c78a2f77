/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A live hub's memory for hubctl inspect and dump: hubd's "domains"
 * answer with an fd for every guest's domain and every zone's pool
 * (SCM_RIGHTS, proto/fdpass.h), checked before use; and hubctl dump,
 * which copies each into a directory for inspection after the hub is
 * gone. Part of hubctl (hubctl.h). */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/fdpass.h"
#include "proto/segment.h"

/* The answer is a line of a few hundred bytes per domain; this bounds
 * what a peer that is not hubd can make hubctl hold. */
#define DOMAINS_ANSWER_MAX	(1u << 20)
/* hubctl inspect and dump give up on a hung hubd after this without -t */
#define DOMAINS_TIMEOUT_S	10

int
domain_name_ok(const char *s)
{
	size_t n = strlen(s);

	/* hubd's config takes these (config_valid_name); with a suffix
	 * after it, never "." or "..", never a slash */
	if (n == 0 || n > 64)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

void
domains_free(struct domains *d)
{
	for (uint32_t i = 0; i < d->nfds; i++)
		if (d->fds[i] >= 0)
			close(d->fds[i]);
	d->nfds = 0;
	json_object_put(d->answer);
	d->answer = NULL;
	d->list = NULL;
}

/* Gives up on d: the message (its words may be the answer's: made
 * first), every fd closed, exit 2. */
static void __attribute__((noreturn, format(printf, 2, 3)))
domains_fail(struct domains *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	domains_free(d);
	errx(2, "%s", msg);
}

/* Each entry of the list: a kind hubctl knows and a name it can use as a
 * file name; the guests first, as hubd lists them. */
static void
domains_check(struct domains *d)
{
	int pools = 0;

	for (size_t i = 0; i < json_object_array_length(d->list); i++) {
		json_object *e = json_object_array_get_idx(d->list, i);
		const char *kind = js_text(e, "kind"), *name = js_text(e, "name");
		int pool = strcmp(kind, "pool") == 0;

		if (!pool && strcmp(kind, "guest") != 0)
			domains_fail(d, "hubd's domains answer: entry %zu is of kind '%s'", i, kind);
		if (!domain_name_ok(name))
			domains_fail(d, "hubd's domains answer: entry %zu has a name hubctl will not "
				     "use: '%.64s'", i, name);
		if (!pool && (js_u64(e, "peer") < 1 || js_u64(e, "peer") > d->max_guests))
			domains_fail(d, "hubd's domains answer: guest %s has peer id %" PRIu64,
				     name, js_u64(e, "peer"));
		if (!pool && pools)
			domains_fail(d, "hubd's domains answer: guest %s listed after the pools", name);
		pools |= pool;
	}
}

void
domains_fetch(struct ctl *ctl, struct domains *d)
{
	static char buf[DOMAINS_ANSWER_MAX + 1];
	json_object *req = json_object_new_object(), *detail;
	size_t len = 0;
	int64_t mg;

	memset(d, 0, sizeof(*d));
	if (ctl->timeout_s == 0)
		ctl->timeout_s = DOMAINS_TIMEOUT_S;
	ctl->fd = client_connect(ctl);
	json_object_object_add(req, "cmd", json_object_new_string("domains"));
	client_send(ctl, req);
	/* the answer's first bytes carry the fds, maybe in several messages:
	 * whatever comes with any read is kept until the newline */
	while (memchr(buf, '\n', len) == NULL) {
		ssize_t n;

		if (len == DOMAINS_ANSWER_MAX)
			domains_fail(d, "hubd's domains answer is longer than %u bytes",
				     DOMAINS_ANSWER_MAX);
		n = hp_fdpass_recv(ctl->fd, buf + len, DOMAINS_ANSWER_MAX - len, d->fds,
				   DOMAINS_MAX, &d->nfds);
		if (n == -EAGAIN)
			domains_fail(d, "no answer from hubd within %d s (-t): is it hung? a dump "
				     "taken before reads offline (hubctl inspect DIR/*)",
				     ctl->timeout_s);
		if (n < 0)
			domains_fail(d, "reading hubd's answer: %s", strerror((int)-n));
		if (n == 0) {
			if (ctl->write_errno != 0)
				domains_fail(d, "hubd closed the connection: %s",
					     strerror(ctl->write_errno));
			domains_fail(d, "hubd closed the connection");
		}
		len += (size_t)n;
	}
	/* the line alone (a NUL in it ends it sooner: no JSON then) */
	*(char *)memchr(buf, '\n', len) = '\0';
	if ((d->answer = json_tokener_parse(buf)) == NULL ||
	    !json_object_is_type(d->answer, json_type_object))
		domains_fail(d, "hubd sent something that is not a JSON object");
	if (!json_object_get_boolean(js_get(d->answer, "ok"))) {
		detail = js_get(d->answer, "detail");
		domains_fail(d, "hubd refused the domains: %s%s%s",
			     js_get(d->answer, "error") != NULL ? js_text(d->answer, "error") :
			     "without a reason", detail ? ": " : "",
			     detail ? js_shown(detail) : "");
	}
	d->list = js_get(d->answer, "domains");
	mg = json_object_get_int64(js_get(d->answer, "max_guests"));
	if (!json_object_is_type(d->list, json_type_array) ||
	    !json_object_is_type(js_get(d->answer, "max_guests"), json_type_int) || mg < 1 || mg > 255)
		domains_fail(d, "hubd's domains answer has no \"domains\" list or max_guests");
	d->max_guests = (uint32_t)mg;
	/* in the list's order, one each */
	if (json_object_array_length(d->list) != d->nfds)
		domains_fail(d, "hubd's domains answer lists %zu domains but came with %u fds",
			     json_object_array_length(d->list), d->nfds);
	domains_check(d);
}

/* -- hubctl dump --------------------------------------------------------- */

/* The files dump made so far, to take back if it cannot finish. */
struct made {
	int	dir;
	int	made_dir;
	char	names[DOMAINS_MAX + 1][80];
	uint32_t n;
};

/* Whether dir (open) holds anything. */
static int
dir_empty(int dir)
{
	int fd = dup(dir);
	DIR *ds = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int empty = 1;

	if (ds == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((e = readdir(ds)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(ds);
	return empty;
}

/* A new file name in the dump's directory: 0600, never one that is
 * there (O_EXCL), never through a link. */
static int
made_open(struct made *m, const char *name)
{
	int fd = openat(m->dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd >= 0)
		snprintf(m->names[m->n++], sizeof(m->names[0]), "%s", name);
	return fd;
}

/* A snapshot of src's size bytes into out; the blocks of zeros are
 * skipped, so a domain's untouched areas take no room on disk. pread:
 * the fd's offset is hubd's and its guest's too. 0 or -errno. */
static int
copy_out(int src, int out, uint64_t size)
{
	static uint8_t block[1 << 16];
	static const uint8_t zero[1 << 16];

	for (uint64_t off = 0; off < size;) {
		size_t want = size - off < sizeof(block) ? (size_t)(size - off) : sizeof(block);
		ssize_t n = pread(src, block, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -EIO : -errno;
		if (memcmp(block, zero, (size_t)n) != 0) {
			for (size_t w = 0; w < (size_t)n;) {
				ssize_t k = pwrite(out, block + w, (size_t)n - w, (off_t)(off + w));

				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0)
					return k == 0 ? -EIO : -errno;
				w += (size_t)k;
			}
		}
		off += (uint64_t)n;
	}
	return ftruncate(out, (off_t)size) == 0 ? 0 : -errno;
}

/* All of len bytes of buf into fd; 0 or -errno. */
static int
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t k = write(fd, buf, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? -EIO : -errno;
		buf += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Takes back what dump wrote, then the message and exit 2. */
static void __attribute__((noreturn, format(printf, 4, 5)))
dump_fail(struct made *m, const char *dirname, struct domains *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (uint32_t i = 0; i < m->n; i++)
		unlinkat(m->dir, m->names[i], 0);
	close(m->dir);
	if (m->made_dir)
		rmdir(dirname);
	domains_free(d);
	errx(2, "%s", msg);
}

/* hubctl dump DIR: every domain and pool of the live hub copied into
 * DIR (made 0700 if it is not there; refused if it holds anything), with
 * hubd's answer as DIR/domains.json. */
int
hubctl_dump(struct ctl *ctl, int argc, char **argv)
{
	static struct made m;
	struct domains d;
	json_object *files = json_object_new_array(), *o;
	const char *dirname = argv[0], *s;
	char name[80], size[24];
	int fd, rc;

	(void)argc;
	m.n = 0;
	/* DIR checked before hubd is asked, made once it has answered */
	if ((m.dir = open(dirname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		rc = dir_empty(m.dir);
		close(m.dir);
		if (rc < 0)
			err(2, "%s", dirname);
		if (rc == 0)
			errx(2, "%s is not empty: dump writes into a new or empty directory",
			     dirname);
	} else if (errno != ENOENT) {
		err(2, "%s", dirname);
	}
	domains_fetch(ctl, &d);
	m.made_dir = mkdir(dirname, 0700) == 0;
	if ((!m.made_dir && errno != EEXIST) ||
	    (m.dir = open(dirname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = errno;
		domains_free(&d);
		errx(2, "%s: %s", dirname, strerror(rc));
	}
	/* made meanwhile by someone else: O_EXCL below still overwrites nothing */
	for (uint32_t i = 0; i < d.nfds; i++) {
		json_object *e = json_object_array_get_idx(d.list, i), *f;
		int pool = strcmp(js_text(e, "kind"), "pool") == 0;
		struct stat st, out;

		snprintf(name, sizeof(name), "%s.%s", js_text(e, "name"), pool ? "pool" : "domain");
		if (fstat(d.fds[i], &st) != 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size > HP_SEGMENT_MAX)
			dump_fail(&m, dirname, &d, "%s %s: hubd passed something that is not a "
				  "domain's memory", js_text(e, "kind"), js_text(e, "name"));
		if ((fd = made_open(&m, name)) < 0)
			dump_fail(&m, dirname, &d, "%s/%s: %s", dirname, name, strerror(errno));
		rc = copy_out(d.fds[i], fd, (uint64_t)st.st_size);
		/* what the copy took on disk: a pool reserves far more than it grew */
		if (rc == 0 && fstat(fd, &out) != 0)
			rc = -errno;
		if (close(fd) != 0 && rc == 0)
			rc = -errno;
		if (rc != 0)
			dump_fail(&m, dirname, &d, "%s/%s: %s", dirname, name, strerror(-rc));
		close(d.fds[i]);
		d.fds[i] = -1;
		f = json_object_new_object();
		json_object_object_add(f, "kind", json_object_new_string(js_text(e, "kind")));
		json_object_object_add(f, "name", json_object_new_string(js_text(e, "name")));
		json_object_object_add(f, "file", json_object_new_string(name));
		json_object_object_add(f, "bytes", json_object_new_uint64((uint64_t)st.st_size));
		json_object_object_add(f, "disk_bytes",
				       json_object_new_uint64((uint64_t)out.st_blocks * 512));
		json_object_array_add(files, f);
	}
	/* hubd's answer beside them: max_guests, which a pool file needs */
	s = json_object_to_json_string_ext(d.answer, JSON_OUT_FLAGS);
	if ((fd = made_open(&m, "domains.json")) < 0)
		dump_fail(&m, dirname, &d, "%s/domains.json: %s", dirname, strerror(errno));
	if ((rc = write_all(fd, s, strlen(s))) == 0)
		rc = write_all(fd, "\n", 1);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc != 0)
		dump_fail(&m, dirname, &d, "%s/domains.json: %s", dirname, strerror(-rc));
	if (fsync(m.dir) != 0 && errno != EINVAL)
		dump_fail(&m, dirname, &d, "%s: %s", dirname, strerror(errno));
	close(m.dir);
	domains_free(&d);
	if (ctl->json) {
		o = json_object_new_object();
		json_object_object_add(o, "ok", json_object_new_boolean(1));
		json_object_object_add(o, "dir", json_object_new_string(dirname));
		json_object_object_add(o, "files", files);
		return js_print(o);
	}
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		json_object *f = json_object_array_get_idx(files, i);

		printf("%s/%s: %s %s, %s", dirname, js_text(f, "file"), js_text(f, "kind"),
		       js_text(f, "name"), size_iec(size, sizeof(size), js_u64(f, "bytes")));
		printf(" (%s on disk, its zeros left as holes)\n",
		       size_iec(size, sizeof(size), js_u64(f, "disk_bytes")));
	}
	printf("%s/domains.json: hubd's answer\n", dirname);
	json_object_put(files);
	return 0;
}
