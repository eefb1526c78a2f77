/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The system calls no guest needs and none may make, as a seccomp filter
 * every guest is started with ([guest] seccomp = no: none): reaching into
 * other processes (ptrace, process_vm_*, pidfd_getfd), the kernel's and
 * the machine's state (modules, kexec, reboot, swap, clocks, host name,
 * mounts, namespaces, keys, BPF, perf, fanotify, userfaultfd, also by
 * /dev/userfaultfd), io_uring (whose
 * operations pass no system call filter), files by handle, leaving the
 * guest's process group, and a personality other than Linux's own. Each fails with EPERM: a plugin
 * that tries learns it may not, and nothing else changes; clone3 alone
 * fails with ENOSYS, so that libc falls back to clone, whose flags the
 * filter can see. A system call of another ABI (i386's int 0x80, x32)
 * ends the process. Everything else is allowed: the filter narrows what
 * a guest's uid could do anyway, it is not the isolation itself
 * (doc/security.md compares it with Docker's and systemd's). */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <seccomp.h>

#include "daemon/filter.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP	0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK	40
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW	_IO(0xAA, 0x00)	/* linux/userfaultfd.h, Linux 6.1 */
#endif

static scmp_filter_ctx filter;

/* Refused whatever their arguments. */
static const char *const denied[] = {
#ifndef __SANITIZE_ADDRESS__
	/* LeakSanitizer stops a process's threads with ptrace: an ASan
	 * build (make check-asan) lets its guests have it */
	"ptrace",
#endif
	"process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"process_madvise",
	"init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname",
	"mount", "umount2", "pivot_root", "chroot", "setns", "unshare",
	"fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree",
	"mount_setattr", "open_tree_attr",
	"open_by_handle_at", "name_to_handle_at",
	"add_key", "request_key", "keyctl",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"iopl", "ioperm", "acct", "quotactl", "quotactl_fd", "syslog",
	"vhangup", "lookup_dcookie", "uselib",
	/* a child in a session or process group of its own would outlive
	 * the guest, whose group hubd ends whole, and hubd */
	"setsid", "setpgid",
};

/* Calls newer than the libseccomp we may be built with, by number: since
 * Linux 5.1 a new call has one number on every architecture but alpha,
 * ia64 and mips. */
static const struct {
	const char	*name;
	int		 nr;
} late[] = {
	{ "open_tree_attr", 467 },	/* Linux 6.15 */
};

/* What a clone flag may not ask for: a namespace of any kind (but time,
 * whose bit clone does not have: it is part of the exit signal there). */
static const uint64_t clone_new[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
	CLONE_NEWNET, CLONE_NEWCGROUP,
};

#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS	1	/* s390 swaps clone's first two arguments */
#else
#define CLONE_FLAGS	0
#endif

static int
syscall_nr(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

#if !defined(__alpha__) && !defined(__ia64__) && !defined(__mips__)
	for (size_t i = 0; nr == __NR_SCMP_ERROR && i < sizeof(late) / sizeof(late[0]); i++)
		if (strcmp(late[i].name, name) == 0)
			nr = late[i].nr;
#endif
	return nr;
}

/* clone's flags, personality, socket's family and an ioctl: the rules
 * that look at an argument. */
static int
filter_args(void)
{
	int rc;

	/* any flag's bit, whatever the others (the kernel reads the low
	 * 32 bits: the mask has none above) */
	for (size_t i = 0; i < sizeof(clone_new) / sizeof(clone_new[0]); i++)
		if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_CMP(CLONE_FLAGS, SCMP_CMP_MASKED_EQ, clone_new[i], clone_new[i]))) != 0)
			return rc;
	/* its flags are in memory, where a filter cannot look: ENOSYS, as
	 * from a kernel before 5.3, and libc uses clone */
	if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) != 0)
		return rc;
	/* PER_LINUX and the query (0xffffffff) only: the rest weaken the
	 * memory's protection (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, ...) or
	 * lie about the machine. A rule compares an argument once, so: past
	 * 32 bits, then any low word with a set bit followed by a clear one
	 * (which every low word but 0 and 0xffffffff has) */
	if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
	    SCMP_A0(SCMP_CMP_GT, 0xffffffffULL))) != 0)
		return rc;
	for (unsigned b = 0; b < 32; b++) {
		uint64_t set = 1ULL << b, clear = 1ULL << ((b + 1) % 32);

		if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, set | clear, set))) != 0)
			return rc;
	}
	/* userfaultfd by /dev/userfaultfd (root's, mode 0600), which a
	 * guest running as root opens: the call refused by another way.
	 * The request is an unsigned int: past its 32 bits, whatever */
	if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
	    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, USERFAULTFD_IOC_NEW))) != 0)
		return rc;
	/* the hypervisor's sockets, which Docker refuses too; the family
	 * is an int: whatever the register holds past its 32 bits */
	return seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, AF_VSOCK));
}

int
filter_init(void)
{
	int rc;

	if ((filter = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return -ENOMEM;
	/* Only the native ABI is allowed (libseccomp's default; on x86_64
	 * that excludes x32 too): the whole process ends, not only the
	 * thread that tried, where the kernel can (4.14) */
	(void)seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		int nr = syscall_nr(denied[i]);

		if (nr == __NR_SCMP_ERROR)
			continue;	/* not on this architecture */
		if ((rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), nr, 0)) != 0)
			goto fail;
	}
	if ((rc = filter_args()) != 0)
		goto fail;
	return 0;
fail:
	filter_free();
	return rc;
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
