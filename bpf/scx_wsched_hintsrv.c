// SPDX-License-Identifier: GPL-2.0
/*
 * The loader's hint server (Documentation/abi.md; the interface is
 * scx_wsched_hintsrv.h): a unix socket through which processes register
 * for hints.
 *
 * For each connection the server takes the peer's pidfd (SO_PEERPIDFD) and
 * tgid (SO_PEERCRED), both the kernel's record of the process that called
 * connect(), creates that process's own mmapable slot array, inserts it at
 * hint_procs[tgid] in the BPF object, and sends the map fd (SCM_RIGHTS)
 * with a struct ws_hint_hello. It keeps the connection and the pidfd; when
 * either says the process is gone, it deletes hint_procs[tgid].
 *
 * Bursts: each poll round takes every waiting connection off the listen
 * queue (the identity and room checks are cheap; junk, connections that
 * end at once, only for HINT_JUNK_SHARE of the loader's time, see there)
 * and acknowledges those that asked (WS_HINT_ASK_ACK), then makes the
 * arrays of up to HINT_ANSWER_BATCH of them (for at most HINT_ANSWER_NS),
 * oldest first, skipping clients that gave up, and inserts their entries
 * in one batch: every update or deletion of a map of maps waits for an
 * RCU grace period, which a batch pays once. Deletions are batched the
 * same way, and always flushed before entries are inserted.
 *
 * A process holds a writable mapping of its own array only (the only
 * descriptor it is sent), and the scheduler reaches an array only through
 * the tgid of the task it schedules.
 *
 * PID reuse: the tgid is a number, valid only while its process lives; a
 * connection can be accepted long after its process exited and was reaped
 * (the socket handed to another process, the loader busy or stopped), when
 * the number may name someone else. So the server refuses a connection
 * whose pidfd cannot be had or already polls readable (the process exited)
 * before it uses the tgid for anything, even to replace an older
 * connection's entry, and checks the pidfd again after inserting the entry
 * (deleting it if the process exited meanwhile). After that the entry goes
 * with the process: a tgid is reused only after its process was reaped,
 * which is after its pidfd became readable; each poll round handles those
 * events before it accepts new connections, so a later registration of the
 * reused number never meets the old entry; and a new connection for a tgid
 * that still has an entry replaces it (closing the old connection), so a
 * late event of the old one cannot delete the new entry. Accepted: between
 * a process's exit and the poll round that sees it, a new process given
 * the same number (pids are handed out cyclically, so only after the whole
 * pid space was used) is described by the old array.
 *
 * Single-threaded: everything runs in the loader's main loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <bpf/bpf.h>
#include <wsched/hint.h>

#include "scx_wsched.h"
#include "scx_wsched_hintsrv.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5, asm-generic/socket.h */
#endif
#ifndef PIDFD_GET_USER_NAMESPACE
#define PIDFD_GET_USER_NAMESPACE _IO(0xFF, 9)	/* Linux 6.11, linux/pidfd.h */
#endif

struct hint_conn {
	int sock;
	int pidfd;		/* -1 without SO_PEERPIDFD */
	int map_fd;		/* the process's slot array */
	/* Its header, mapped read-only: the process's count of threads that
	 * found no slot (written by the process: a hint to report, no more). */
	const struct ws_hint_header *hdr;
	__u32 tgid;
	__u32 uid;		/* the peer's, at connect() */
	__u32 gid;
	bool init_userns;	/* in the initial user namespace (hint_owner_of()) */
	__u64 owner;		/* whose quota it counts against (hint_owner_of()) */
	__u32 map_id;		/* its array's id, to follow it after the connection */
	bool acked;		/* its WS_HINT_ASK_ACK was taken (and answered while it waited) */
};

/*
 * An array whose connection closed: it lives on while a process keeps it
 * mapped (the loader cannot take a mapping back), and counts against its
 * user's quota and the overall bound until it is freed.
 */
struct hint_linger {
	__u32 map_id;
	__u64 owner;
};

/* A refusal looks for freed arrays (up to 1024 lookups) at most this
 * often, however many refusals there are. */
#define HINT_SWEEP_GAP_NS	100000000ll

/*
 * Junk: connections that end as soon as they are accepted, closed by
 * their clients or refused. Clients can make them faster than the one
 * loader thread takes them, so the loader spends at most HINT_JUNK_SHARE
 * of its time on them (HINT_JUNK_BURST_NS at once): beyond that it stops
 * accepting until the time is due; the listen queue fills, and further
 * connect()s wait for room. The queue is short (HINT_BACKLOG), so a
 * registration waits behind at most that many connections of others
 * however long a flood lasts.
 */
#define HINT_JUNK_SHARE		0.05
#define HINT_JUNK_BURST_NS	500000ll
#define HINT_BACKLOG		16

/*
 * The last refusal for room (EDQUOT, EUSERS) of a uid, which answers the
 * uid's next connections at once, before the loader reads anything else
 * of them (a user at its quota connecting in a loop costs little), while
 * no array was freed or dropped since (hs->gen) and for at most
 * HINT_SWEEP_GAP_NS; then a connection takes the whole path again, which
 * also looks for freed arrays. Keyed on the uid: the owner is what was
 * read for the uid's last connection.
 */
#define HINT_REFUSED_CACHE	256

struct hint_refused {
	__u32 uid;
	int reason;		/* 0: none */
	__u64 gen;
	long long t;
};

/*
 * Arrays one owner (not root) may have made for it: HINT_ARRAY_RATE a
 * second, and as many at once as its quota holds. Each costs the loader
 * a map, an RCU grace period and its share of a round, and an array
 * given back is soon counted free again: without it one user connecting,
 * taking its array and closing in a loop would keep the loader busy for
 * as long as it likes.
 * Beyond it a registration is refused with EBUSY.
 */
#define HINT_ARRAY_RATE		10
#define HINT_RATES		256

struct hint_rate {
	__u64 owner;
	double tokens;
	long long t;
};

/* Connections answered per poll round, whose entries go in together, and
 * how long a round may spend making their arrays: the connections that
 * came meanwhile are acknowledged in the next round, within their
 * clients' first wait (1 s), however slow the arrays are to make. */
#define HINT_ANSWER_BATCH	64
#define HINT_ANSWER_NS		50000000ll

struct hint_server {
	int lfd;		/* the listening socket */
	int outer_fd;		/* hint_procs of the loaded object, -1 while none */
	volatile __u32 *live;	/* its hint_procs_live (bss), NULL while none */
	volatile __u32 *buckets; /* its hint_tgid_buckets (bss), NULL while none */
	int execd_fd;		/* its hint_execd, -1 while none */
	volatile __u32 *execd_live, *execd_lost;	/* their counters (bss) */
	char path[HINT_SOCK_PATH_SIZE];
	const char *name;	/* its last component, in path */
	int dfd;		/* its directory (O_PATH), while lfd is open */
	int nr;
	struct hint_conn conns[WS_HINT_MAX_PROCS];
	unsigned long nr_accepted, nr_refused;
	unsigned long threads_refused_gone;	/* nr_refused of processes that left */
	int max_procs;		/* registrations allowed: --hint-max, or what descriptors allow */
	int spare;		/* a descriptor to give up when accept4 hits EMFILE */
	int ep;			/* epoll: the listening socket, every socket and pidfd */
	struct hint_linger linger[WS_HINT_MAX_PROCS];
	int nr_linger;
	int user_max;		/* arrays per owner (root: no quota) */
	dev_t userns_dev;	/* the loader's user namespace, the initial one */
	ino_t userns_ino;
	bool said_owner;	/* the loader said why it cannot tell an owner */
	long long last_sweep;	/* ns: when lingering arrays were last looked for */
	long long last_refusal_sweep;	/* ns: the last look a refusal made */
	long long junk_budget;	/* ns of CPU the loader may spend on junk now */
	long long junk_t;	/* when it was last refilled */
	long long conn_ns;	/* CPU time an accepted connection takes */
	bool listen_paused;	/* out of it: the listening socket not polled */
	/* Counts of arrays only fall when this moves: a refusal that it
	 * has not seen move since still holds. */
	__u64 gen;
	struct hint_refused refused[HINT_REFUSED_CACHE];
	struct hint_rate rates[HINT_RATES];	/* by owner, hashed; see HINT_ARRAY_RATE */
	unsigned long nr_refused_quota;	/* connections refused: the user's quota */
	/* Accepted, waiting for their arrays, oldest first. */
	struct hint_conn pend[WS_HINT_MAX_PROCS];
	int nr_pend;
	/* tgids whose entries are to be deleted, before any insertion. */
	__u32 dels[WS_HINT_MAX_PROCS + HINT_ANSWER_BATCH];
	int nr_dels;
};

_Static_assert(HINT_SOCK_PATH_SIZE == sizeof(((struct sockaddr_un *)0)->sun_path),
	       "HINT_SOCK_PATH_SIZE is not the size of sun_path");

/* epoll data: the listening socket, or a connection's tgid << 1 | is_pidfd
 * (one connection per tgid at a time). */
#define HINT_EP_LISTEN	(~0ULL)

static void hint_ep_add(struct hint_server *hs, int fd, __u64 key, __u32 events)
{
	struct epoll_event ev = { .events = events, .data.u64 = key };

	if (fd >= 0)
		epoll_ctl(hs->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Descriptors per registered process (socket, pidfd, map) and for the
 * loader itself (libbpf's objects, the listening socket, stdio). */
#define HINT_FDS_PER_PROC	3
#define HINT_FDS_RESERVED	128

/*
 * Make room for WS_HINT_MAX_PROCS registrations: raise the soft
 * RLIMIT_NOFILE (a default of 1024 holds a third of them), and the hard one
 * too when it is lower and we may. Returns how many processes fit.
 */
static int hint_fd_room(void)
{
	rlim_t need = (rlim_t)WS_HINT_MAX_PROCS * HINT_FDS_PER_PROC + HINT_FDS_RESERVED;
	struct rlimit rl;
	long n;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < need) {
		struct rlimit want = { need, rl.rlim_max > need ? rl.rlim_max : need };

		if (setrlimit(RLIMIT_NOFILE, &want)) {
			want.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
			want.rlim_max = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &want);
		}
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	n = ((long)rl.rlim_cur - HINT_FDS_RESERVED) / HINT_FDS_PER_PROC;
	return n < 0 ? 0 : n > (long)WS_HINT_MAX_PROCS ? (int)WS_HINT_MAX_PROCS : (int)n;
}

/*
 * Refuse connection @sock with @reason (an errno the library returns):
 * a hello with no descriptor and nr_slots 0 (Documentation/abi.md).
 * Best effort: a client that is gone or whose buffer is full just sees
 * the connection close.
 */
static void hint_refuse(int sock, int reason)
{
	struct ws_hint_hello no = { .abi_version = WS_HINT_ABI_VERSION, .reserved = (__u32)reason };

	send(sock, &no, sizeof(no), MSG_NOSIGNAL | MSG_DONTWAIT);
}

#define HINT_HDR_MAP_LEN	4096	/* the header's page */

/* False once the process behind @pidfd has exited: its pidfd polls
 * readable from the exit on, reaped or not. */
static bool hint_peer_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

/* Threads of registered processes, past and present, that found no slot. */
static unsigned long hint_threads_refused(const struct hint_server *hs)
{
	unsigned long n = hs->threads_refused_gone;
	int i;

	for (i = 0; i < hs->nr; i++)
		if (hs->conns[i].hdr)
			n += hs->conns[i].hdr->nr_refused;
	return n;
}

void hint_server_counts(const struct hint_server *hs, struct hint_server_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!hs)
		return;
	out->nr_procs = hs->nr;
	out->nr_arrays_lingering = hs->nr_linger;
	out->nr_refused_quota = hs->nr_refused_quota;
	out->nr_threads_refused = hint_threads_refused(hs);
}

/*
 * Forget the lingering arrays that were freed (nobody maps them any more):
 * an id that no longer opens is gone for good (ids are not reused until
 * the 31-bit id space wraps).
 */
static void hint_sweep(struct hint_server *hs)
{
	int i = 0, fd;

	while (i < hs->nr_linger) {
		fd = bpf_map_get_fd_by_id(hs->linger[i].map_id);
		if (fd >= 0) {
			close(fd);
			i++;
		} else if (errno == ENOENT) {
			hs->linger[i] = hs->linger[--hs->nr_linger];
			hs->gen++;
		} else {
			i++;	/* cannot tell: keep counting it */
		}
	}
}

static long long hint_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Arrays of @owner: registered and lingering. */
static int hint_arrays_of(const struct hint_server *hs, __u64 owner)
{
	int i, n = 0;

	for (i = 0; i < hs->nr; i++)
		n += hs->conns[i].owner == owner;
	for (i = 0; i < hs->nr_linger; i++)
		n += hs->linger[i].owner == owner;
	for (i = 0; i < hs->nr_pend; i++)
		n += hs->pend[i].owner == owner;
	return n;
}

/*
 * May a process of @owner get an array? 0, or the reason to refuse: EUSERS
 * when the loader serves as many processes as it may, or arrays of closed
 * connections fill the overall bound with them; EDQUOT when @owner (not
 * root) has its quota of arrays. Lingering arrays are looked for again
 * before a refusal, so one freed a moment ago counts as freed.
 */
static int hint_room_for(struct hint_server *hs, __u64 owner)
{
	long long now = hint_now_ns();
	int pass;

	for (pass = 0; pass < 2; pass++) {
		bool full = hs->nr + hs->nr_pend + hs->nr_linger >= hs->max_procs;
		bool quota = owner && hint_arrays_of(hs, owner) >= hs->user_max;

		if (!full && !quota)
			return 0;
		if (pass || !hs->nr_linger || now - hs->last_refusal_sweep < HINT_SWEEP_GAP_NS)
			return full ? EUSERS : EDQUOT;
		hs->last_refusal_sweep = now;
		hint_sweep(hs);
	}
	return 0;
}

/* Quota keys of the namespaces root made: never a uid (uids fit 32 bits). */
#define HINT_OWNER_NS	(1ull << 32)

/* Nesting of user namespaces the kernel allows (MAX_USER_NS_LEVEL). */
#define HINT_USERNS_DEPTH	32

static bool hint_ns_is(int fd, dev_t dev, ino_t ino, ino_t *out)
{
	struct stat st;

	if (fstat(fd, &st))
		return false;
	*out = st.st_ino;
	return st.st_dev == dev && st.st_ino == ino;
}

/*
 * Whose quota a registration of the process behind @pidfd (uid @uid at
 * connect(), in the loader's namespace) counts against, into @owner; 0, or
 * the reason to refuse.
 *
 * A uid names a user only in the initial user namespace. A user with a
 * range in /etc/subuid enters a namespace of its own and appears through
 * it as as many host uids as the range holds; keyed on the uid, each would
 * have a quota of its own, and a few would fill the overall bound for
 * everyone. So a process in a namespace below the initial one counts
 * against the user who made the outermost of them (its owner, whoever
 * created the namespaces inside it): all of a user's namespaces and all
 * the uids they map are that user's. A namespace that root made (a
 * container manager's) is one tenant: its key is the namespace, never
 * root's exemption. Reading a process's namespace takes a ptrace-read
 * check (CAP_SYS_PTRACE for another user's process), which is why the
 * service keeps that capability.
 */
static int hint_owner_of(struct hint_server *hs, int pidfd, __u32 uid, __u64 *owner,
			 bool *init_userns)
{
	int cur = ioctl(pidfd, PIDFD_GET_USER_NAMESPACE, 0), top = -1, depth = 0, err = 0;
	ino_t ino = 0, top_ino = 0;
	uid_t o;

	if (cur < 0) {
		if (errno == EOPNOTSUPP) {	/* no user namespaces: uids are users */
			*owner = uid;
			*init_userns = true;
			return 0;
		}
		if (errno == ESRCH)
			return ESRCH;
		err = errno;
		goto cannot;
	}
	while (!hint_ns_is(cur, hs->userns_dev, hs->userns_ino, &ino)) {
		int parent = ioctl(cur, NS_GET_PARENT);

		if (parent < 0 || ++depth > HINT_USERNS_DEPTH) {
			/* EPERM: not below the loader's namespace. */
			err = parent < 0 ? errno : ELOOP;
			if (parent >= 0)
				close(parent);
			close(cur);
			if (top >= 0)
				close(top);
			goto cannot;
		}
		if (top >= 0)
			close(top);
		top = cur;
		top_ino = ino;
		cur = parent;
	}
	close(cur);
	*init_userns = top < 0;
	if (top < 0) {
		*owner = uid;
		return 0;
	}
	err = ioctl(top, NS_GET_OWNER_UID, &o) ? errno : 0;
	close(top);
	if (err)
		goto cannot;
	*owner = o ? o : HINT_OWNER_NS | (__u64)top_ino;
	return 0;
cannot:
	if (!hs->said_owner) {
		hs->said_owner = true;
		fprintf(stderr, "scx_wsched: hint socket: cannot tell whose quota a process counts "
			"against (its user namespace: %s); refusing such processes\n", strerror(err));
	}
	return EPERM;
}

long hint_parse_group(const char *name)
{
	struct group *g = getgrnam(name);
	char *end;
	long v;

	if (g)
		return g->gr_gid;
	errno = 0;
	v = strtol(name, &end, 10);
	if (!*name || *end || errno || v < 0 || v > 0x7fffffff)
		return -1;
	return v;
}

#define HINT_PID_NS_INIT_INO	0xEFFFFFFCu	/* the kernel's PROC_PID_INIT_INO */

/* The initial namespace's inode number is fixed (PROC_PID_INIT_INO). */
int pid_ns_initial(void)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st))
		return -1;
	return st.st_ino == HINT_PID_NS_INIT_INO;
}

/* bind(2) @fd to @name in the directory @dfd: from inside it (a relative
 * sun_path), so that nothing resolves the directory's path again. */
static int hint_bind_at(int fd, int dfd, const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (cwd < 0)
		return -errno;
	strcpy(addr.sun_path, name);
	if (fchdir(dfd) || bind(fd, (struct sockaddr *)&addr, sizeof(addr)))
		err = -errno;
	if (fchdir(cwd) && !err)
		err = -errno;
	close(cwd);
	return err;
}

/* Whether a loader listens on @name in @dfd (connected as hint_bind_at
 * binds). */
static bool hint_someone_listens(int dfd, const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool yes = false;

	strcpy(addr.sun_path, name);
	if (fd >= 0 && cwd >= 0 && !fchdir(dfd))
		yes = !connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	if (cwd >= 0) {
		if (fchdir(cwd))
			yes = true;	/* lost our way: claim it is taken */
		close(cwd);
	}
	if (fd >= 0)
		close(fd);
	return yes;
}

/*
 * Create the listening socket at @path: mode 0600 root:root, or 0660
 * root:@gid when @gid >= 0. Its directory is created (0755) if missing and
 * must be a root-owned directory nobody else can write to. Every step after
 * the directory is opened works on that descriptor (the checks, the bind,
 * the owner and mode, the unlink at exit), never on the path: whoever can
 * write to one of the path's ancestors could swap the directory, or put a
 * symlink where the socket goes, between a check and a use. Returns 0, or
 * -errno with a one-line reason in @why.
 */
static int hint_listen(struct hint_server *hs, const char *path, long gid,
		       char *why, size_t why_len)
{
	char dir[sizeof(hs->path)], *slash;
	const char *name;
	struct stat st;
	mode_t old_mask;
	int fd = -1, dfd, err;

	if (strlen(path) >= sizeof(hs->path) || path[0] != '/' || path[strlen(path) - 1] == '/') {
		snprintf(why, why_len, "socket path must be absolute, name a file and be shorter than %zu bytes",
			 sizeof(hs->path));
		return -EINVAL;
	}
	/*
	 * SO_PEERCRED gives a client's pid as seen from this process's PID
	 * namespace, and hint_procs is keyed by the kernel's (the initial
	 * namespace's) tgid: elsewhere every entry would name another
	 * process. What cannot be told (no /proc) is refused as well.
	 */
	switch (pid_ns_initial()) {
	case 1:
		break;
	case 0:
		snprintf(why, why_len,
			 "the loader runs in a PID namespace other than the initial one, "
			 "where its clients' process ids are not the kernel's");
		return -EPERM;
	default:
		snprintf(why, why_len,
			 "cannot tell whether the loader runs in the initial PID namespace "
			 "(/proc/self/ns/pid: %s)", strerror(errno));
		return -EPERM;
	}
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	name = path + (slash - dir) + 1;
	if (!dir[0])
		strcpy(dir, "/");
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		snprintf(why, why_len, "cannot create %s: %s", dir, strerror(errno));
		return err;
	}
	dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022)) {
		snprintf(why, why_len, "%s must be a directory owned by root and writable only by root",
			 dir);
		err = -EPERM;
		goto out;
	}
	if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(why, why_len, "%s exists and is not a socket", path);
			err = -EEXIST;
			goto out;
		}
		/* Someone listening: another loader; else left by a killed one. */
		if (hint_someone_listens(dfd, name)) {
			snprintf(why, why_len, "another loader serves %s", path);
			err = -EADDRINUSE;
			goto out;
		}
		unlinkat(dfd, name, 0);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_len, "socket: %s", strerror(errno));
		goto out;
	}
	old_mask = umask(0177);		/* never reachable by others, even briefly */
	err = hint_bind_at(fd, dfd, name);
	umask(old_mask);
	/* The directory is root's alone: the name is still our socket. */
	if (!err && gid >= 0 &&
	    (fchownat(dfd, name, 0, (gid_t)gid, AT_SYMLINK_NOFOLLOW) ||
	     fchmodat(dfd, name, 0660, 0)))
		err = -errno;
	/* Short (see HINT_BACKLOG): a burst beyond it waits in connect(),
	 * up to 1 s in the library, while the loader takes the queue. */
	if (!err && listen(fd, HINT_BACKLOG))
		err = -errno;
	if (!err) {
		hs->ep = epoll_create1(EPOLL_CLOEXEC);
		if (hs->ep < 0)
			err = -errno;
	}
	if (!err) {
		int room = hint_fd_room();

		if (room < hs->max_procs)
			hs->max_procs = room;
		hs->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (err) {
		snprintf(why, why_len, "cannot serve %s: %s", path, strerror(-err));
		unlinkat(dfd, name, 0);
		goto out;
	}
	hs->lfd = fd;
	hs->dfd = dfd;
	hint_ep_add(hs, fd, HINT_EP_LISTEN, EPOLLIN);
	strcpy(hs->path, path);
	hs->name = hs->path + (name - path);
	return 0;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return err;
}

struct hint_server *hint_server_start(const char *path, long gid, int max_procs, int user_max,
				      char *why, size_t why_len)
{
	struct hint_server *hs = calloc(1, sizeof(*hs));
	struct stat st;

	if (!hs) {
		snprintf(why, why_len, "%s", strerror(ENOMEM));
		return NULL;
	}
	hs->user_max = user_max;
	hs->max_procs = max_procs;
	hs->lfd = -1;
	hs->dfd = -1;
	hs->outer_fd = -1;
	hs->execd_fd = -1;
	hs->spare = -1;
	hs->ep = -1;
	if (hint_listen(hs, path, gid, why, why_len)) {
		if (hs->ep >= 0)
			close(hs->ep);
		free(hs);
		return NULL;
	}
	/* Whose quota a process counts against starts from here. */
	if (stat("/proc/self/ns/user", &st)) {
		snprintf(why, why_len, "cannot tell the loader's user namespace (/proc/self/ns/user: %s)",
			 strerror(errno));
		hint_server_stop(hs);
		return NULL;
	}
	hs->userns_dev = st.st_dev;
	hs->userns_ino = st.st_ino;
	return hs;
}

/* Tell the BPF side how many processes hint_procs holds (its gate). */
static void hint_publish(struct hint_server *hs)
{
	if (hs->live)
		__atomic_store_n(hs->live, (__u32)hs->nr, __ATOMIC_RELEASE);
}

/*
 * Count @tgid's entry in its bucket of hint_tgid_buckets (@d = 1) or stop
 * counting it (-1): raised before the entry is inserted, lowered after its
 * deletion returned (the syscalls in between order the stores), so the BPF
 * side never finds a bucket at 0 while an entry of it is in hint_procs.
 */
static void hint_bucket(struct hint_server *hs, __u32 tgid, int d)
{
	if (hs->buckets)
		__atomic_fetch_add(&hs->buckets[tgid & (WSCHED_TGID_BUCKETS - 1)], (__u32)d,
				   __ATOMIC_RELAXED);
}

/*
 * True if connection @c is to be closed: socket hangup, process exit, or
 * anything sent on it after the registration. A client sends one byte,
 * WS_HINT_ASK_ACK, before its answer and nothing after; that byte may
 * arrive after the answer if the server answered first, and is taken
 * once. Anything else is closed on, not drained: the socket's events are
 * level-triggered, so a client writing without pause would otherwise keep
 * the loader reading for as long as it likes.
 */
static bool hint_conn_gone(struct hint_conn *c, short sock_ev, short pid_ev)
{
	unsigned char b[2];
	ssize_t n;

	if (pid_ev & (POLLIN | POLLHUP | POLLERR))
		return true;
	if (sock_ev & (POLLHUP | POLLERR | POLLRDHUP))
		return true;
	if (!(sock_ev & POLLIN))
		return false;
	n = recv(c->sock, b, c->acked ? sizeof(b) : 1, MSG_DONTWAIT);
	if (n < 0)
		return errno != EAGAIN && errno != EINTR;
	if (n == 1 && !c->acked && b[0] == WS_HINT_ASK_ACK) {
		c->acked = true;	/* the late ask: nothing more may come */
		return false;
	}
	return true;
}

/*
 * Delete the entries of hs->dels from hint_procs. One batch: every update
 * or deletion of a map-in-map waits for an (expedited) RCU grace period
 * before it returns, which a batch pays once. A batch stops at its first
 * failure (ENOENT: an entry that was never inserted): that one is tried
 * alone (which also serves a kernel without batches), the rest go on.
 */
static void hint_flush_dels(struct hint_server *hs)
{
	int done = 0;

	while (hs->outer_fd >= 0 && done < hs->nr_dels) {
		__u32 n = hs->nr_dels - done;

		if (!bpf_map_delete_batch(hs->outer_fd, &hs->dels[done], &n, NULL))
			break;
		done += n;
		bpf_map_delete_elem(hs->outer_fd, &hs->dels[done++]);	/* ENOENT: fine */
	}
	for (done = 0; hs->outer_fd >= 0 && done < hs->nr_dels; done++)
		hint_bucket(hs, hs->dels[done], -1);
	hs->nr_dels = 0;
}

/* Delete @tgid's entry with the next hint_flush_dels(), which every path
 * calls before it inserts an entry (a later entry of a reused tgid must
 * not be the one deleted). */
static void hint_del_later(struct hint_server *hs, __u32 tgid)
{
	if (hs->outer_fd < 0)
		return;
	if (hs->nr_dels == (int)(sizeof(hs->dels) / sizeof(hs->dels[0])))
		hint_flush_dels(hs);
	hs->dels[hs->nr_dels++] = tgid;
}

/* Close connection @i; its entry goes with the next hint_flush_dels(). */
static void hint_conn_close(struct hint_server *hs, int i)
{
	struct hint_conn *c = &hs->conns[i];

	hint_del_later(hs, c->tgid);
	epoll_ctl(hs->ep, EPOLL_CTL_DEL, c->sock, NULL);
	if (c->pidfd >= 0)
		epoll_ctl(hs->ep, EPOLL_CTL_DEL, c->pidfd, NULL);
	close(c->sock);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->hdr) {
		hs->threads_refused_gone += c->hdr->nr_refused;
		munmap((void *)c->hdr, HINT_HDR_MAP_LEN);
	}
	close(c->map_fd);
	/* Until seen freed: the process (or one it passed the mapping to)
	 * may keep it. A process that exited frees it at once. */
	if (c->map_id && hs->nr_linger < (int)WS_HINT_MAX_PROCS)
		hs->linger[hs->nr_linger++] = (struct hint_linger){ c->map_id, c->owner };
	hs->conns[i] = hs->conns[--hs->nr];
	hs->gen++;
	hint_publish(hs);
}

/* The index of the connection of @tgid, or -1. */
static int hint_conn_of(const struct hint_server *hs, __u32 tgid)
{
	int i;

	for (i = 0; i < hs->nr; i++)
		if (hs->conns[i].tgid == tgid)
			return i;
	return -1;
}

/*
 * Whether the process of @c still runs with what it connected with: its
 * real, effective and saved uid and gid are the connect()'s, and, unless
 * it is root's or in a user namespace of its own (whose capabilities
 * reach nothing outside it, and where the host's file capabilities and
 * set-uid-root do not apply), it holds no capability. An exec of a set-id
 * program changes the ids, one of a program with file capabilities gives
 * it capabilities; an exec of an ordinary program changes neither, and
 * the user could ptrace that image anyway. (Dumpability would say the
 * same of those execs, but also of every process that dropped privileges,
 * which may register.) Read from /proc/TGID/status, then the pidfd
 * checked alive again: the number was the process's all along.
 */
static bool hint_same_image(const struct hint_conn *c)
{
	unsigned int u[4], g[4];
	unsigned long long cap = ~0ull;
	char path[64], buf[4096], *l;
	bool have_u = false, have_g = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/status", c->tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (l = buf; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (!strncmp(l, "Uid:", 4))
			have_u = sscanf(l + 4, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4;
		else if (!strncmp(l, "Gid:", 4))
			have_g = sscanf(l + 4, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4;
		else if (!strncmp(l, "CapPrm:", 7) && sscanf(l + 7, "%llx", &cap) != 1)
			cap = ~0ull;
	}
	return have_u && have_g && u[0] == c->uid && u[1] == c->uid && u[2] == c->uid &&
	       g[0] == c->gid && g[1] == c->gid && g[2] == c->gid &&
	       (!c->uid || !c->init_userns || !cap) &&
	       hint_peer_alive(c->pidfd);
}

/*
 * Drop the registrations of the processes that exec'd (hint_execd, which
 * the BPF side fills at each exec and reads for every hint until the
 * entry goes): close their connections, delete their entries, then the
 * marks. A connection still waiting for its array is left to its check at
 * the answer (hint_same_image()). If the BPF side lost a mark (hint_execd
 * full: it then reads no array at all), every registration is checked
 * again instead, and the gate opened after.
 */
static void hint_take_execs(struct hint_server *hs)
{
	__u32 keys[256], key, *prev = NULL;
	int n = 0, i;

	if (!hs->execd_live || (!*hs->execd_live && !*hs->execd_lost))
		return;
	while (n < (int)(sizeof(keys) / sizeof(keys[0])) &&
	       !bpf_map_get_next_key(hs->execd_fd, prev, &key)) {
		keys[n] = key;
		prev = &keys[n++];
		i = hint_conn_of(hs, key);
		if (i >= 0)
			hint_conn_close(hs, i);
	}
	if (*hs->execd_lost) {
		__atomic_store_n(hs->execd_lost, 0, __ATOMIC_SEQ_CST);	/* before the checks */
		for (i = 0; i < hs->nr;)
			if (hint_same_image(&hs->conns[i]))
				i++;
			else
				hint_conn_close(hs, i);
	}
	hint_flush_dels(hs);
	for (i = 0; i < n; i++)
		if (!bpf_map_delete_elem(hs->execd_fd, &keys[i]))
			__atomic_fetch_sub(hs->execd_live, 1, __ATOMIC_RELEASE);
}

/* A new BPF object was loaded (first load or a restart): fill its map, then
 * open its gate. A restart takes a while, with no poll round: processes
 * that left meanwhile are let go first, so the new map never holds them
 * (their tgids are numbers that may be reused once they are reaped), and
 * so are those that exec'd a privileged program meanwhile (no exec hook
 * ran). */
void hint_server_attach(struct hint_server *hs, const struct hint_bpf *b)
{
	int i = 0;

	if (!hs)
		return;
	while (i < hs->nr) {
		struct pollfd p[2] = {
			{ .fd = hs->conns[i].sock, .events = POLLIN | POLLRDHUP },
			{ .fd = hs->conns[i].pidfd, .events = POLLIN },
		};

		if ((poll(p, 2, 0) > 0 &&
		     hint_conn_gone(&hs->conns[i], p[0].revents, p[1].revents)) ||
		    !hint_same_image(&hs->conns[i]))
			hint_conn_close(hs, i);
		else
			i++;
	}
	hs->nr_dels = 0;	/* the old map is gone, the new one is empty */
	hs->outer_fd = b->outer_fd;
	hs->live = b->live;
	hs->buckets = b->buckets;
	hs->execd_fd = b->execd_fd;
	hs->execd_live = b->execd_live;
	hs->execd_lost = b->execd_lost;
	for (i = 0; i < hs->nr; i++) {
		hint_bucket(hs, hs->conns[i].tgid, 1);
		bpf_map_update_elem(hs->outer_fd, &hs->conns[i].tgid, &hs->conns[i].map_fd, BPF_ANY);
	}
	hint_publish(hs);
}

void hint_server_detach(struct hint_server *hs)
{
	if (!hs)
		return;
	hint_take_execs(hs);
	hint_flush_dels(hs);
	hs->outer_fd = -1;
	hs->live = NULL;
	hs->buckets = NULL;
	hs->execd_fd = -1;
	hs->execd_live = NULL;
	hs->execd_lost = NULL;
}

/*
 * Take one of @owner's arrays to make (HINT_ARRAY_RATE); false when none
 * is due. An owner that meets another in its slot starts with a full
 * bucket: a user has one owner key (its namespaces are its own), so that
 * only ever lets a user's bucket be refilled by some other tenant.
 */
static bool hint_rate_take(struct hint_server *hs, __u64 owner)
{
	struct hint_rate *r = &hs->rates[(owner * 0x9e3779b97f4a7c15ull) >> 56];
	long long now = hint_now_ns();

	if (r->owner != owner || !r->t) {
		*r = (struct hint_rate){ owner, hs->user_max, now };
	} else {
		r->tokens += (now - r->t) * 1e-9 * HINT_ARRAY_RATE;
		if (r->tokens > hs->user_max)
			r->tokens = hs->user_max;
		r->t = now;
	}
	if (r->tokens < 1)
		return false;
	r->tokens -= 1;
	return true;
}

/* Release what an unanswered connection holds, after refusing it. */
static void hint_refuse_conn(struct hint_server *hs, struct hint_conn *c, int reason)
{
	hint_refuse(c->sock, reason);
	hs->nr_refused++;
	if (c->hdr)
		munmap((void *)c->hdr, HINT_HDR_MAP_LEN);
	if (c->map_fd >= 0)
		close(c->map_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->sock);
}

/* Whether the client of @sock has hung up already (it gave up waiting). */
static bool hint_client_left(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Drop pending connection @i (FIFO order kept). */
static void hint_pend_drop(struct hint_server *hs, int i)
{
	memmove(&hs->pend[i], &hs->pend[i + 1], (hs->nr_pend - i - 1) * sizeof(hs->pend[0]));
	hs->nr_pend--;
	hs->gen++;
}

/*
 * Accept one connection: check who it is and whether there is room for
 * it, then queue it for its array (hint_answer_some()); or refuse it.
 * Cheap, so that a burst of connections is taken off the listen queue, and
 * acknowledged, at once. Returns HINT_NONE when no connection was waiting,
 * HINT_QUEUED, or HINT_JUNK for one that ended there (gone, refused).
 */
enum { HINT_NONE, HINT_QUEUED, HINT_JUNK };

static int hint_accept_one(struct hint_server *hs)
{
	struct hint_conn c = { .pidfd = -1, .map_fd = -1 };
	struct hint_refused *r;
	struct ucred cred;
	socklen_t len;
	int i, reason;

	c.sock = accept4(hs->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c.sock < 0 && (errno == EMFILE || errno == ENFILE) && hs->spare >= 0) {
		/* Out of descriptors: the connection would stay queued and
		 * wake every poll at once. Take it with the spare one and
		 * refuse it, then take the spare back. */
		close(hs->spare);
		c.sock = accept4(hs->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c.sock >= 0) {
			hint_refuse(c.sock, EMFILE);
			close(c.sock);
			hs->nr_refused++;
		}
		hs->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return c.sock >= 0 ? HINT_JUNK : HINT_NONE;
	}
	if (c.sock < 0)
		return HINT_NONE;
	/* Gone already (a client that connects and closes): nothing to
	 * answer, no identity to read. */
	if (hint_client_left(c.sock)) {
		close(c.sock);
		hs->nr_refused++;
		return HINT_JUNK;
	}
	len = sizeof(cred);
	if (getsockopt(c.sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid <= 0) {
		reason = ESRCH;
		goto refuse;
	}
	r = &hs->refused[cred.uid % HINT_REFUSED_CACHE];
	if (r->reason && r->uid == cred.uid && r->gen == hs->gen &&
	    hint_now_ns() - r->t < HINT_SWEEP_GAP_NS) {
		reason = r->reason;
		hs->nr_refused_quota += reason == EDQUOT;
		goto refuse;
	}
	/*
	 * The peer's identity: the pidfd and the pid both come from the
	 * struct pid the kernel recorded at connect(). The pid number is
	 * only the peer's while that process lives, so a peer that is gone
	 * (or whose pidfd cannot be had) is refused before its number is
	 * used for anything, even to replace an entry.
	 */
	len = sizeof(c.pidfd);
	if (getsockopt(c.sock, SOL_SOCKET, SO_PEERPIDFD, &c.pidfd, &len)) {
		c.pidfd = -1;
		reason = errno == ENOPROTOOPT ? EOPNOTSUPP : ESRCH;
		goto refuse;
	}
	if (!hint_peer_alive(c.pidfd)) {
		reason = ESRCH;
		goto refuse;
	}
	c.tgid = (__u32)cred.pid;	/* the connecting process's tgid */
	c.uid = (__u32)cred.uid;
	c.gid = (__u32)cred.gid;
	reason = hint_owner_of(hs, c.pidfd, c.uid, &c.owner, &c.init_userns);
	if (reason)
		goto refuse;
	/* One entry per process: a new connection replaces an old one (its
	 * entry deleted before any insertion), and one still waiting. */
	for (i = 0; i < hs->nr; i++)
		if (hs->conns[i].tgid == c.tgid) {
			hint_conn_close(hs, i);
			break;
		}
	for (i = 0; i < hs->nr_pend; i++)
		if (hs->pend[i].tgid == c.tgid) {
			hint_refuse_conn(hs, &hs->pend[i], EAGAIN);
			hint_pend_drop(hs, i);
			break;
		}
	reason = hs->outer_fd < 0 ? EUSERS : hint_room_for(hs, c.owner);
	if (reason) {
		hs->nr_refused_quota += reason == EDQUOT;
		if (hs->outer_fd >= 0)
			*r = (struct hint_refused){ c.uid, reason, hs->gen, hint_now_ns() };
		goto refuse;
	}
	if (c.owner && !hint_rate_take(hs, c.owner)) {
		reason = EBUSY;
		goto refuse;
	}
	hs->pend[hs->nr_pend++] = c;
	return HINT_QUEUED;
refuse:
	hint_refuse_conn(hs, &c, reason);
	return HINT_JUNK;
}

/*
 * Acknowledge the waiting connections whose clients asked for it
 * (WS_HINT_ASK_ACK), and drop those whose clients gave up: a client that
 * stopped waiting costs no array, and one that knows it was taken waits
 * longer than for a loader that may be stuck.
 */
static void hint_ack_pending(struct hint_server *hs)
{
	struct ws_hint_hello ack = { .abi_version = WS_HINT_ABI_VERSION };
	int i, kept = 0;

	for (i = 0; i < hs->nr_pend; i++) {	/* compacted in place, in order */
		struct hint_conn *c = &hs->pend[i];
		unsigned char b;

		if (hint_client_left(c->sock)) {
			hint_refuse_conn(hs, c, EAGAIN);
			hs->gen++;
			continue;
		}
		if (!c->acked && recv(c->sock, &b, 1, MSG_DONTWAIT) == 1 && b == WS_HINT_ASK_ACK)
			c->acked = send(c->sock, &ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT) ==
				   sizeof(ack);
		if (kept != i)
			hs->pend[kept] = *c;
		kept++;
	}
	hs->nr_pend = kept;
}

/* Make @c's array; 0 or the reason to refuse. */
static int hint_make_array(struct hint_conn *c)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);

	c->map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ws_hint_slots", sizeof(__u32),
				   WS_HINT_SLOT_SIZE, WS_HINT_NR_SLOTS, &opts);
	if (c->map_fd < 0)
		return c->map_fd == -EMFILE || c->map_fd == -ENFILE ? EMFILE : ENOMEM;
	if (!bpf_map_get_info_by_fd(c->map_fd, &info, &info_len))
		c->map_id = info.id;
	if (!c->map_id)
		return ENOMEM;	/* could not be followed once closed */
	c->hdr = mmap(NULL, HINT_HDR_MAP_LEN, PROT_READ, MAP_SHARED, c->map_fd, 0);
	if (c->hdr == MAP_FAILED)
		c->hdr = NULL;	/* only the refusal count is lost */
	return 0;
}

/* Send @c its array: the hello and the map fd. */
static bool hint_send_array(struct hint_conn *c)
{
	struct ws_hint_hello hello = {
		.abi_version = WS_HINT_ABI_VERSION,
		.nr_slots = WS_HINT_NR_SLOTS,
		.slot_size = WS_HINT_SLOT_SIZE,
	};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm;

	memset(&cbuf, 0, sizeof(cbuf));		/* no stack bytes in the cmsg padding */
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &c->map_fd, sizeof(int));
	return sendmsg(c->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(hello);
}

/*
 * Answer up to HINT_ANSWER_BATCH waiting connections, oldest first: make
 * their arrays, insert every entry in one batch (one grace period for them
 * all), then check each process alive again and send it its array. A
 * process that exited meanwhile, or whose hello cannot be sent, has its
 * entry deleted and is refused. The departures' deletions of this round
 * were flushed before (a reused tgid's new entry is never deleted).
 */
static void hint_answer_some(struct hint_server *hs)
{
	struct hint_conn batch[HINT_ANSWER_BATCH];
	__u32 keys[HINT_ANSWER_BATCH];
	int fds[HINT_ANSWER_BATCH];
	bool in[HINT_ANSWER_BATCH];
	long long t0 = hint_now_ns();
	int i, k = 0, nb = 0, done = 0, reason;

	hint_flush_dels(hs);
	while (k < hs->nr_pend && nb < HINT_ANSWER_BATCH &&
	       (!nb || hint_now_ns() - t0 < HINT_ANSWER_NS)) {
		struct hint_conn *c = &hs->pend[k++];

		reason = hint_client_left(c->sock) ? EAGAIN :
			 !hint_peer_alive(c->pidfd) ? ESRCH : hint_make_array(c);
		if (reason) {
			hint_refuse_conn(hs, c, reason);
			hs->gen++;
			continue;
		}
		keys[nb] = c->tgid;
		fds[nb] = c->map_fd;
		in[nb] = false;
		batch[nb++] = *c;
	}
	memmove(&hs->pend[0], &hs->pend[k], (hs->nr_pend - k) * sizeof(hs->pend[0]));
	hs->nr_pend -= k;
	for (i = 0; i < nb; i++)
		hint_bucket(hs, keys[i], 1);
	while (done < nb) {
		__u32 n = nb - done;
		int err = bpf_map_update_batch(hs->outer_fd, &keys[done], &fds[done], &n, NULL);

		while (n--)
			in[done++] = true;
		if (!err)
			break;
		/* The one that failed, alone (also where batches are not
		 * supported); refused below if it fails again. */
		in[done] = !bpf_map_update_elem(hs->outer_fd, &keys[done], &fds[done], BPF_ANY);
		done++;
	}
	/* Open the gate before any of them learns it is registered: a
	 * thread that acts on its array at once (an announcement of a slot
	 * outside its probe window is read only by the yields it makes then)
	 * must find the scheduler looking, not wait for the hint_publish()
	 * below, which comes after every send and a flush of deletions (an
	 * RCU grace period). That one sets the exact count. */
	if (hs->live && nb)
		__atomic_store_n(hs->live, (__u32)(hs->nr + nb), __ATOMIC_RELEASE);
	/* Alive when checked at the accept and still now: the number was
	 * its own all along, so the entry never described another process. */
	for (i = 0; i < nb; i++) {
		struct hint_conn *c = &batch[i];

		reason = in[i] ? 0 : EAGAIN;
		/* Alive, and after its bucket went up the image that connected:
		 * a later exec is the BPF side's to see; one before, this. */
		if (!reason && !hint_same_image(c))
			reason = ESRCH;
		if (!reason && !hint_send_array(c))
			reason = EAGAIN;
		if (reason) {
			if (in[i])
				hint_del_later(hs, c->tgid);	/* and its bucket */
			else
				hint_bucket(hs, c->tgid, -1);
			hint_refuse_conn(hs, c, reason);
			hs->gen++;
			continue;
		}
		hs->conns[hs->nr++] = *c;
		hint_ep_add(hs, c->sock, (__u64)c->tgid << 1, EPOLLIN | EPOLLRDHUP);
		hint_ep_add(hs, c->pidfd, (__u64)c->tgid << 1 | 1, EPOLLIN);
		hs->nr_accepted++;
	}
	hint_flush_dels(hs);
	hint_publish(hs);
}

/* This thread's CPU time, ns. */
static long long hint_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Junk time comes back at HINT_JUNK_SHARE of the time that passes. */
static void hint_junk_refill(struct hint_server *hs)
{
	long long now = hint_now_ns();

	hs->junk_budget += (long long)((now - hs->junk_t) * HINT_JUNK_SHARE);
	if (hs->junk_budget > HINT_JUNK_BURST_NS)
		hs->junk_budget = HINT_JUNK_BURST_NS;
	hs->junk_t = now;
}

/* Stop (or resume) waking for the listening socket, which stays readable
 * while connections wait in its queue. */
static void hint_listen_pause(struct hint_server *hs, bool pause)
{
	struct epoll_event ev = { .events = pause ? 0 : EPOLLIN, .data.u64 = HINT_EP_LISTEN };

	if (pause != hs->listen_paused && !epoll_ctl(hs->ep, EPOLL_CTL_MOD, hs->lfd, &ev))
		hs->listen_paused = pause;
}

/*
 * Accept the waiting connections, up to WS_HINT_MAX_PROCS, while the
 * loader has time for junk: the loop stops when the junk so far, at what
 * a connection cost in the rounds before (hs->conn_ns, a moving average),
 * would use up what is left. Returns the junk, and the other connections
 * in *@queued.
 */
static int hint_accept_some(struct hint_server *hs, int *queued)
{
	int i, r, junk = 0;

	*queued = 0;
	for (i = 0; i < (int)WS_HINT_MAX_PROCS; i++) {
		r = hint_accept_one(hs);
		if (r == HINT_NONE)
			break;
		if (r == HINT_QUEUED)
			(*queued)++;
		else if (hs->junk_budget - ++junk * hs->conn_ns <= 0)
			break;
	}
	return junk;
}

/*
 * Wait up to @timeout_ms for events and handle them (a sleep when off).
 * epoll, not poll: an idle round costs nothing per registered process.
 */
void hint_server_poll(struct hint_server *hs, int timeout_ms)
{
	static struct epoll_event evs[256];
	bool listen_ready = false;
	int i, k, n, junk = 0, queued = 0, work = 0;
	long long c0;

	if (!hs) {
		usleep(timeout_ms * 1000);
		return;
	}
	/* Connections still waiting for arrays: another round at once.
	 * Out of time for junk: back when some is due. */
	if (hs->nr_pend)
		timeout_ms = 0;
	else if (hs->listen_paused) {
		int due = (int)(-hs->junk_budget / HINT_JUNK_SHARE / 1e6) + 1;

		timeout_ms = due < timeout_ms ? due : timeout_ms;
	}
	n = epoll_wait(hs->ep, evs, sizeof(evs) / sizeof(evs[0]), timeout_ms);
	c0 = hint_cpu_ns();
	/* Departures first (see "PID reuse" above). */
	for (k = 0; k < n; k++) {
		__u64 key = evs[k].data.u64;

		if (key == HINT_EP_LISTEN) {
			listen_ready = true;
			continue;
		}
		i = hint_conn_of(hs, (__u32)(key >> 1));
		if (i < 0)
			continue;	/* closed earlier in this round */
		if (key & 1 ? hint_conn_gone(&hs->conns[i], 0, (short)evs[k].events) :
			      hint_conn_gone(&hs->conns[i], (short)evs[k].events, 0))
			hint_conn_close(hs, i);
		work++;
	}
	hint_take_execs(hs);
	if (hs->nr_linger && hint_now_ns() - hs->last_sweep >= 1000000000ll) {
		hint_sweep(hs);
		hs->last_sweep = hint_now_ns();
	}
	hint_flush_dels(hs);
	/* Take every waiting connection off the queue first (bounded by
	 * the room check and the time for junk), acknowledge, then make
	 * some arrays. */
	hint_junk_refill(hs);
	if (hs->listen_paused && hs->junk_budget > 0) {
		hint_listen_pause(hs, false);
		listen_ready = true;	/* not polled: look */
	}
	if (listen_ready && !hs->listen_paused)
		junk = hint_accept_some(hs, &queued);
	work += queued + hs->nr_pend;
	hint_ack_pending(hs);
	if (hs->nr_pend)
		hint_answer_some(hs);
	/* A round of junk alone is charged what it took, and teaches what
	 * junk costs; junk among other work, what it costs. */
	if (junk && !work) {
		long long cost = hint_cpu_ns() - c0;

		hs->conn_ns += (cost / junk - hs->conn_ns) / 4;
		hs->junk_budget -= cost;
	} else if (junk) {
		hs->junk_budget -= junk * hs->conn_ns;
	}
	/* A pause is at most what a burst takes to come back: one costly
	 * refusal (a sweep) must not stop registrations for long. */
	if (hs->junk_budget < -HINT_JUNK_BURST_NS)
		hs->junk_budget = -HINT_JUNK_BURST_NS;
	hint_listen_pause(hs, hs->junk_budget <= 0);
}

void hint_server_stop(struct hint_server *hs)
{
	if (!hs)
		return;
	while (hs->nr)
		hint_conn_close(hs, hs->nr - 1);
	while (hs->nr_pend)
		hint_refuse_conn(hs, &hs->pend[--hs->nr_pend], EAGAIN);
	hint_flush_dels(hs);
	close(hs->lfd);
	unlinkat(hs->dfd, hs->name, 0);
	close(hs->dfd);
	if (hs->spare >= 0)
		close(hs->spare);
	close(hs->ep);
	free(hs);
}

