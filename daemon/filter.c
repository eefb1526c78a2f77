/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The system calls no guest needs and none may make, as a seccomp filter
 * every guest is started with ([guest] seccomp = no: none): reaching into
 * other processes (ptrace, process_vm_*), the kernel's and the machine's
 * state (modules, kexec, reboot, swap, clocks, mounts, namespaces, keys,
 * BPF, perf), and files by handle. Each fails with EPERM: a plugin that
 * tries learns it may not, and nothing else changes. Everything else is
 * allowed: the filter narrows what a guest's uid could do anyway, it is
 * not the isolation itself (doc/security.md). */
#include <errno.h>
#include <stddef.h>

#include <seccomp.h>

#include "daemon/filter.h"

static scmp_filter_ctx filter;

static const char *const denied[] = {
#ifndef __SANITIZE_ADDRESS__
	/* LeakSanitizer stops a process's threads with ptrace: an ASan
	 * build (make check-asan) lets its guests have it */
	"ptrace",
#endif
	"process_vm_readv", "process_vm_writev", "kcmp",
	"init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"mount", "umount2", "pivot_root", "chroot", "setns", "unshare",
	"fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree",
	"mount_setattr",
	"open_by_handle_at", "name_to_handle_at",
	"add_key", "request_key", "keyctl",
	"bpf", "perf_event_open", "userfaultfd",
	"iopl", "ioperm", "acct", "quotactl", "syslog", "vhangup",
};

int
filter_init(void)
{
	int rc;

	if ((filter = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);

		if (nr == __NR_SCMP_ERROR)
			continue;	/* not on this architecture */
		if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), nr, 0)) != 0) {
			filter_free();
			return rc;
		}
	}
	return 0;
}

int
filter_ready(void)
{
	return filter != NULL;
}

int
filter_apply(void)
{
	return filter == NULL ? 0 : seccomp_load(filter);
}

void
filter_free(void)
{
	if (filter != NULL)
		seccomp_release(filter);
	filter = NULL;
}
