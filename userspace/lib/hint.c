// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * Thread registration with scx_wsched (Documentation/abi.md).
 *
 * Once per process: connect to the loader's unix socket, receive the map fd
 * of this process's own slot array (SCM_RIGHTS) and its geometry, mmap it
 * shared, keep the connection open (its hangup tells the loader the process
 * is gone). Per thread: claim a free slot with a CAS on owner_tid, from its
 * probe window if it can, else anywhere, announcing that one to the
 * scheduler (wsched/hint.h), and point _ws_hint_self at it.
 *
 * Concurrency contract: the process state (proc_slots, proc_sock) is set up
 * under proc_lock and never torn down while the process lives (except in a
 * fork child, which has one thread); after setup it is read-only, and
 * threads read proc_slots with an acquire load pairing with the release
 * store that published it. Slots: owner_tid is claimed by a CAS from 0
 * (acq_rel: the acquire side orders the claimer's resets after the previous
 * owner's release store of 0), every other field has one writer, the owner.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "wsched/thread.h"
#include "hint_internal.h"

__thread struct ws_hint_slot *_ws_hint_self __attribute__((tls_model("initial-exec")));
__thread struct ws_hint_slot _ws_hint_local __attribute__((tls_model("initial-exec")));

static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ws_hint_slot *proc_slots;		/* the mapped array, or NULL */
static int proc_sock = -1;
static pthread_key_t exit_key;
static int exit_key_err;		/* pthread_key_create's error, 0: the key exists */
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static const size_t map_len = (size_t)WS_HINT_NR_SLOTS * WS_HINT_SLOT_SIZE;

/* A fork child has no mapping (MADV_DONTFORK) and must not keep the
 * parent's connection: it starts unregistered, and may register itself. */
static void atfork_child(void)
{
	_ws_hint_self = NULL;
	proc_slots = NULL;
	if (proc_sock >= 0)
		close(proc_sock);
	proc_sock = -1;
	pthread_mutex_init(&proc_lock, NULL);
}

static void atfork_setup(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static void thread_exit(void *arg)
{
	(void)arg;
	ws_thread_unregister();
}

static void exit_key_setup(void)
{
	exit_key_err = pthread_key_create(&exit_key, thread_exit);
}

/* One "name:\tvalue" line of an fdinfo file; true if found. */
static bool fdinfo_value(const char *info, const char *name, unsigned long *out)
{
	size_t len = strlen(name);
	const char *p;

	for (p = info; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ':') {
			*out = strtoul(p + len + 1, NULL, 0);
			return true;
		}
	return false;
}

/*
 * Whether @fd is what the loader sends: a BPF array of the hello's
 * geometry that can be mapped. The descriptor comes from whoever listens
 * at the socket path; the mapping is written inside critical sections, so
 * it must be memory that stays: an anonymous inode (no file type in
 * st_mode), which cannot be truncated, unlike a memfd or a file whose
 * shrinking would turn a later store into SIGBUS. Where /proc is mounted,
 * its fdinfo must also say: an mmapable array of u32 keys and slot-sized
 * values, one per slot.
 */
static bool is_slot_array(int fd)
{
	unsigned long type, key, value, entries, flags;
	char path[64], info[1024];
	struct stat st;
	ssize_t n;
	int pfd;

	if (fstat(fd, &st) || (st.st_mode & S_IFMT))
		return false;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	pfd = open(path, O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return true;	/* no /proc: the inode check stands alone */
	n = read(pfd, info, sizeof(info) - 1);
	close(pfd);
	if (n <= 0)
		return false;
	info[n] = '\0';
	return fdinfo_value(info, "map_type", &type) && type == BPF_MAP_TYPE_ARRAY &&
	       fdinfo_value(info, "key_size", &key) && key == sizeof(uint32_t) &&
	       fdinfo_value(info, "value_size", &value) && value == WS_HINT_SLOT_SIZE &&
	       fdinfo_value(info, "max_entries", &entries) && entries == WS_HINT_NR_SLOTS &&
	       fdinfo_value(info, "map_flags", &flags) && (flags & BPF_F_MMAPABLE);
}

/* Receive the hello and the map fd; returns the fd or -errno. */
static int recv_map(int sock)
{
	struct ws_hint_hello hello;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { &hello, sizeof(hello) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	int fd = -1;
	ssize_t n;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (n == 0)
		return -ECONNRESET;	/* closed without a word */
	/* The acknowledgement of WS_HINT_ASK_ACK: the answer follows. */
	if (fd < 0 && n == sizeof(hello) && hello.abi_version == WS_HINT_ABI_VERSION &&
	    !hello.nr_slots && !hello.slot_size && !hello.reserved)
		return -EINPROGRESS;
	/* A refusal: a hello without a descriptor, nr_slots 0 and the
	 * reason (an errno) in reserved. */
	if (fd < 0 && n == sizeof(hello) && !hello.nr_slots && hello.reserved &&
	    hello.reserved < 4096)
		return -(int)hello.reserved;
	if (fd < 0)
		return -EPROTO;
	if (n != sizeof(hello) || hello.abi_version != WS_HINT_ABI_VERSION ||
	    hello.nr_slots != WS_HINT_NR_SLOTS || hello.slot_size != WS_HINT_SLOT_SIZE ||
	    !is_slot_array(fd)) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

/*
 * How long to wait for the loader: to take the connection (1 s; longer
 * means it is stopped or stuck), and once it acknowledged it, for the
 * array (in a burst of registrations each waits for the arrays of those
 * before it, which the loader makes at a bounded rate).
 */
#define WAIT_TAKEN_S	1
#define WAIT_ACKED_S	10

/* Connect and map once per process; returns 0 or -errno. Under proc_lock. */
static int proc_connect(void)
{
	/* secure_getenv: a set-id program must not be pointed at another
	 * socket by whoever started it. */
	const char *path = secure_getenv("WSCHED_HINT_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval timeout = { .tv_sec = WAIT_TAKEN_S };
	unsigned char ask = WS_HINT_ASK_ACK;
	void *m;
	int sock, fd, err;

	if (!path || !*path)
		path = WS_HINT_SOCK_PATH;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	/* A stopped or stuck loader must not hang pool creation: bound the
	 * connect (full backlog) and the wait for the hello. */
	setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		goto out_sock;
	}
	/* Best effort: a loader that answered and closed at once leaves
	 * its answer to read all the same. */
	(void)send(sock, &ask, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	fd = recv_map(sock);
	if (fd == -EINPROGRESS) {
		timeout.tv_sec = WAIT_ACKED_S;
		setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
		fd = recv_map(sock);
		if (fd == -EINPROGRESS)
			fd = -EPROTO;	/* acknowledged twice */
	}
	if (fd < 0) {
		err = fd;
		goto out_sock;
	}
	m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = m == MAP_FAILED ? -errno : 0;
	close(fd);		/* the mapping keeps the map alive */
	if (err)
		goto out_sock;
	madvise(m, map_len, MADV_DONTFORK);	/* best effort; atfork_child resets */
	proc_sock = sock;
	/* release: pairs with the acquire load in ws_thread_register. */
	__atomic_store_n(&proc_slots, (struct ws_hint_slot *)m, __ATOMIC_RELEASE);
	return 0;
out_sock:
	close(sock);
	return err;
}

/*
 * proc_connect() for every thread that asks at about the same time: the
 * threads that waited for proc_lock while an attempt ran take its result
 * instead of making their own, so a burst of registrations (a pool's
 * workers starting) meeting a slow or stuck loader waits for one attempt
 * (at most its timeouts), not for one per thread in turn. A thread
 * that asks after an attempt ended makes a new one. proc_attempts counts
 * the attempts made; it is written under proc_lock and read before taking
 * it (relaxed: only whether it changed while we waited for the lock
 * matters, and the lock orders everything else).
 */
static unsigned long proc_attempts;
static int proc_last_err;	/* the last attempt's result, under proc_lock */

static int proc_connect_shared(void)
{
	unsigned long seen = __atomic_load_n(&proc_attempts, __ATOMIC_RELAXED);
	int err;

	pthread_mutex_lock(&proc_lock);
	if (proc_slots) {
		err = 0;
	} else if (proc_attempts != seen) {
		err = proc_last_err;
	} else {
		err = proc_connect();
		proc_last_err = err;
		__atomic_store_n(&proc_attempts, proc_attempts + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&proc_lock);
	return err;
}

/* Connect the process (map its slot array) without registering the calling
 * thread: 0 if scx_wsched serves hints to this process, else -errno. For
 * ws_pool_create's choice of yield path (yield.c). */
int _ws_hint_connect(void)
{
	pthread_once(&atfork_once, atfork_setup);
	/* acquire: pairs with the release store in proc_connect. */
	if (__atomic_load_n(&proc_slots, __ATOMIC_ACQUIRE))
		return 0;
	return proc_connect_shared();
}

/* Claim @s for @tid if it is free; true if claimed. */
static bool claim(struct ws_hint_slot *s, uint32_t tid)
{
	uint32_t zero = 0;

	if (__atomic_load_n(&s->owner_tid, __ATOMIC_RELAXED))
		return false;
	/* acq_rel: acquire orders our resets after the previous owner's
	 * release of the slot; release is not needed by the other claimers
	 * (they only compare owner_tid). */
	return __atomic_compare_exchange_n(&s->owner_tid, &zero, tid, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

#define ANNOUNCE_TRIES	16	/* yields before a thread stops announcing */

/*
 * Tell the scheduler where the slot of a thread outside its probe window is
 * (struct ws_hint_header): store the word, yield so that ops.yield sees
 * it, and look for the scheduler's acknowledgement. The header is written
 * by every announcing thread of the process (last writer wins) and by the
 * scheduler; all relaxed: a lost word is announced again.
 */
static void announce(struct ws_hint_slot *slots, uint32_t tid, uint32_t idx)
{
	struct ws_hint_header *h = (struct ws_hint_header *)slots;
	uint64_t word = (uint64_t)tid << 32 | idx;
	int i;

	for (i = 0; i < ANNOUNCE_TRIES; i++) {
		__atomic_store_n(&h->announce, word, __ATOMIC_RELAXED);
		syscall(SYS_sched_yield);
		if (__atomic_load_n(&h->announce_ack, __ATOMIC_RELAXED) == word)
			break;
	}
	/* Leave no stale word for the next announcer to compete with. */
	__atomic_compare_exchange_n(&h->announce, &word, 0, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

int ws_thread_register(void)
{
	struct ws_hint_slot *slots, *s = NULL, *local = &_ws_hint_local;
	uint32_t tid, i, idx = 0;
	bool outside = false;
	int err;

	if (_ws_hint_self)
		return 0;
	pthread_once(&atfork_once, atfork_setup);
	/* acquire: pairs with the release store in proc_connect. */
	slots = __atomic_load_n(&proc_slots, __ATOMIC_ACQUIRE);
	if (!slots) {
		err = proc_connect_shared();
		if (err)
			return err;
		/* acquire: as above (set by now, and never unset). */
		slots = __atomic_load_n(&proc_slots, __ATOMIC_ACQUIRE);
	}
	/* Without the key a slot would never be released at thread exit:
	 * stay unregistered instead. */
	pthread_once(&exit_key_once, exit_key_setup);
	if (exit_key_err)
		return -exit_key_err;
	tid = (uint32_t)syscall(SYS_gettid);
	/* The probe window first... */
	for (i = 0; i < WS_HINT_PROBE; i++) {
		idx = WS_HINT_SLOT_IDX(tid, i);
		if (claim(&slots[idx], tid)) {
			s = &slots[idx];
			break;
		}
	}
	/* ...then any free slot after it, which the scheduler must be told
	 * about: the NR_THREAD_SLOTS - PROBE indices outside the window. */
	for (i = 0; !s && i < WS_HINT_NR_THREAD_SLOTS - WS_HINT_PROBE; i++) {
		idx = WS_HINT_SLOT_IDX(tid, WS_HINT_PROBE + i);
		if (claim(&slots[idx], tid)) {
			s = &slots[idx];
			outside = true;
		}
	}
	if (!s) {
		__atomic_add_fetch(&((struct ws_hint_header *)slots)->nr_refused, 1,
				   __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	/* Carry over what the private slot holds (we may be inside a section). */
	__atomic_store_n(&s->state, local->state, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cs_depth, local->cs_depth, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cs_count, local->cs_count, __ATOMIC_RELAXED);
	__atomic_store_n(&s->nr_stealable, local->nr_stealable, __ATOMIC_RELAXED);
	__atomic_store_n(&s->flags, local->flags, __ATOMIC_RELAXED);
	__atomic_store_n(&s->yield_to_tid, 0, __ATOMIC_RELAXED);
	/* A grace of the previous owner is not ours to end. */
	__atomic_store_n(&s->grace_pending, 0, __ATOMIC_RELAXED);
	memset(s->reserved, 0, sizeof(s->reserved));
	/* The scheduler reads without ordering; the version goes last only so
	 * that a same-CPU reader never sees a half-reset slot as valid. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->abi_version, WS_HINT_ABI_VERSION, __ATOMIC_RELAXED);
	if (outside)
		announce(slots, tid, idx);
	_ws_hint_self = s;
	pthread_setspecific(exit_key, s);
	return 0;
}

void ws_thread_unregister(void)
{
	struct ws_hint_slot *s = _ws_hint_self, *local = &_ws_hint_local;

	if (!s)
		return;
	/* Keep counting privately from where the slot was. */
	local->state = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
	local->cs_depth = __atomic_load_n(&s->cs_depth, __ATOMIC_RELAXED);
	local->cs_count = __atomic_load_n(&s->cs_count, __ATOMIC_RELAXED);
	local->nr_stealable = __atomic_load_n(&s->nr_stealable, __ATOMIC_RELAXED);
	local->flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
	_ws_hint_self = NULL;
	__atomic_store_n(&s->abi_version, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->cs_depth, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, WS_HINT_OTHER, __ATOMIC_RELAXED);
	__atomic_store_n(&s->flags, 0, __ATOMIC_RELAXED);
	/* release: our writes to the slot happen before the next claimer's
	 * (pairs with the acquire of its CAS). */
	__atomic_store_n(&s->owner_tid, 0, __ATOMIC_RELEASE);
	pthread_setspecific(exit_key, NULL);	/* set up: we registered */
}

/* Out of line: the common exit path stays one load and a branch. */
void _ws_grace_yield(struct ws_hint_slot *s)
{
	int e = errno;	/* an unlock must not change what the program sees */

	__atomic_store_n(&s->grace_pending, 0, __ATOMIC_RELAXED);
	sched_yield();
	errno = e;
}

const struct ws_hint_slot *ws_thread_slot(void)
{
	return _ws_hint_slot();
}
