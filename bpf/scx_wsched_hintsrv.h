/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's hint server (scx_wsched_hintsrv.c, whose top comment is its
 * design; Documentation/abi.md is the protocol): a unix socket through
 * which processes register for hints, each given its own slot array, which
 * the server keeps in the BPF object's hint_procs while the process lives.
 *
 * The loader calls hint_server_start() once, then for every BPF object it
 * loads hint_server_attach() after the load and hint_server_detach() before
 * destroying it, hint_server_poll() in its main loop in between, and
 * hint_server_stop() at the end. Every function takes NULL (hints off):
 * poll then only sleeps, the counters read zero. Single-threaded: all of it
 * runs in the loader's main loop.
 */
#ifndef __SCX_WSCHED_HINTSRV_H
#define __SCX_WSCHED_HINTSRV_H

#include <stddef.h>
#include <linux/types.h>

/* Arrays (registered or lingering) one user other than root may have;
 * --hint-user-max. */
#define HINT_USER_MAX_DFL	128

/* The size of a socket path, its terminating NUL included (sun_path). */
#define HINT_SOCK_PATH_SIZE	108

struct hint_server;

struct hint_server_counts {
	int nr_procs;			/* processes registered now */
	int nr_arrays_lingering;	/* arrays mapped after their connection closed */
	unsigned long nr_refused_quota;	/* connections refused by the user's quota */
	/* Threads of registered processes, past and present, that found no
	 * free slot (as the processes say). */
	unsigned long nr_threads_refused;
};

/* Whether this process runs in the kernel's initial PID namespace, where
 * its process ids are the kernel's: 1 yes, 0 no, -1 cannot tell (no
 * /proc). */
int pid_ns_initial(void);

/* Group name or number -> gid; -1 if unknown. */
long hint_parse_group(const char *name);

/*
 * Serve the socket @path: mode 0600 root:root, or 0660 root:@gid when
 * @gid >= 0; at most @max_procs arrays in all (fewer if the descriptor
 * limit holds fewer), @user_max per user other than root (a user's
 * quota also holds the processes of the user namespaces it made).
 * Returns the server, or NULL with a one-line reason in @why.
 */
struct hint_server *hint_server_start(const char *path, long gid, int max_procs, int user_max,
				      char *why, size_t why_len);

/* What the server uses of a loaded BPF object (scx_wsched_hint.bpf.h). */
struct hint_bpf {
	int outer_fd;			/* hint_procs */
	volatile __u32 *live;		/* hint_procs_live (bss) */
	volatile __u32 *buckets;	/* hint_tgid_buckets (bss, WSCHED_TGID_BUCKETS) */
	int execd_fd;			/* hint_execd */
	volatile __u32 *execd_live;	/* hint_execd_live (bss) */
	volatile __u32 *execd_lost;	/* hint_execd_lost (bss) */
};

/* A BPF object was loaded: @b says where its maps and counters are. */
void hint_server_attach(struct hint_server *hs, const struct hint_bpf *b);

/* The BPF object is about to go. */
void hint_server_detach(struct hint_server *hs);

/* Wait up to @timeout_ms for registrations and departures and handle them. */
void hint_server_poll(struct hint_server *hs, int timeout_ms);

void hint_server_counts(const struct hint_server *hs, struct hint_server_counts *out);

/* Close every connection, remove the socket and free @hs. */
void hint_server_stop(struct hint_server *hs);

#endif /* __SCX_WSCHED_HINTSRV_H */
