// SPDX-License-Identifier: GPL-2.0
/*
 * Random ioctls on /dev/wsched from several threads at once: no oops, no
 * warning, every return one the ABI allows, every call counted, rmmod
 * refused all along and the module unloading afterwards.
 *
 * The commands are drawn from three pools: our two commands with random
 * arguments (half of them well-formed, naming one of the fuzzing threads,
 * so yield_to() really runs and races itself), our type with random
 * number, direction and size, and any 32-bit value except the generic
 * commands the VFS answers itself (FIOCLEX, FS_IOC_SETFLAGS, ...: they
 * never reach the module and some would change the device node). Arguments
 * point to valid memory with random contents, NULL, an unmapped page, the
 * end of a page before an unmapped one, a read-only page, kernel addresses
 * or random values.
 *
 * WSCHED_KMOD_FUZZ_CALLS (default 100000) is the total number of calls;
 * WSCHED_KMOD_FUZZ_SEED fixes the seed (logged, to replay a failure).
 *
 * The second case fuzzes again with scx_wsched loaded, while registered
 * processes write random bytes into their hint slots (its callbacks read
 * them on every yield and tick); it SKIPs while build/bin/scx_wsched does
 * not exist.
 */
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "kmod_util.h"
#include "scx_wsched_util.h"
#include "kselftest_harness.h"
#include "hint_client.h"

#define FUZZ_OUT "/tmp/kmod_fuzz_test.out"
#define FUZZ_ERR "/tmp/kmod_fuzz_test.err"

#define THREADS	6

struct fuzz {
	long calls_per_thread;
	uint64_t seed;
	char *page_rw;		/* random bytes, rewritten per call */
	char *page_ro;
	char *page_gap;		/* unmapped */
	atomic_int tids[THREADS];
	atomic_int ready;
	atomic_int stop_rmmod;
	atomic_long done;
	atomic_long bad;	/* unexpected returns */
	atomic_long handed_over;
	atomic_long rmmod_tries, rmmod_refused;
	int shared_fd;
	char bad_msg[256];
};

static struct fuzz fz;

static uint64_t rnd(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Commands the VFS handles before the driver (fs/ioctl.c do_vfs_ioctl, 7.3). */
static bool vfs_cmd(unsigned int cmd)
{
	static const unsigned int vfs[] = {
		FIOCLEX, FIONCLEX, FIONBIO, FIOASYNC, FIOQSIZE, FIFREEZE, FITHAW,
		FS_IOC_FIEMAP, FIGETBSZ, FICLONE, FICLONERANGE, FIDEDUPERANGE, FIONREAD,
		FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR,
		FS_IOC_GETFSUUID, FS_IOC_GETFSSYSFSPATH,
	};
	size_t i;

	for (i = 0; i < sizeof(vfs) / sizeof(vfs[0]); i++)
		if (cmd == vfs[i])
			return true;
	/* FS_IOC_GETFLAGS and friends also exist in 32-bit encodings. */
	return _IOC_TYPE(cmd) == 'f' || _IOC_TYPE(cmd) == 'X' || _IOC_TYPE(cmd) == 0x94 ||
	       _IOC_TYPE(cmd) == 0x15 || cmd == 0x5421 || cmd == 0x5450 || cmd == 0x5451 ||
	       cmd == 0x5452 || cmd == 0x5460;
}

static unsigned int random_cmd(uint64_t *s)
{
	uint64_t r = rnd(s);

	switch (r % 8) {
	case 0: case 1: case 2:
		return WSCHED_IOC_YIELD_TO;
	case 3:
		return WSCHED_IOC_VERSION;
	case 4: case 5:
		return _IOC((r >> 8) & 3, WSCHED_IOC_MAGIC, (r >> 16) & (r & 0x100 ? 0xff : 3),
			    (r >> 24) & (r & 0x200 ? _IOC_SIZEMASK : 63));
	default: {
		unsigned int cmd;

		do
			cmd = (unsigned int)rnd(s);
		while (vfs_cmd(cmd));
		return cmd;
	}
	}
}

static void *random_arg(uint64_t *s, int self)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t r = rnd(s);
	char *rw = fz.page_rw + self * 256;
	struct wsched_yield_to *a = (void *)rw;
	size_t i;

	switch (r % 12) {
	case 0: case 1: case 2: case 3: case 4:
		/* Well-formed, or nearly: one field off at random. */
		for (i = 0; i < 256; i += 8)
			*(uint64_t *)(rw + i) = rnd(s);
		*a = (struct wsched_yield_to){ .version = WSCHED_ABI_VERSION };
		a->tid = atomic_load_explicit(&fz.tids[(r >> 8) % THREADS], memory_order_relaxed);
		switch ((r >> 16) % 8) {
		case 0: a->tid = (uint32_t)rnd(s); break;
		case 1: a->version = (uint32_t)rnd(s) % 4; break;
		case 2: a->flags = 1u << ((r >> 20) % 32); break;
		case 3: a->reserved[(r >> 20) & 1] = rnd(s) | 1; break;
		case 4: a->tid = 1 + (r >> 20) % 2000; break;
		}
		return a;
	case 5: case 6:
		for (i = 0; i < 256; i += 8)
			*(uint64_t *)(rw + i) = rnd(s);
		return rw + (r >> 8) % 64;
	case 7:
		return NULL;
	case 8:
		return fz.page_gap + (r >> 8) % page;
	case 9:
		/* The last bytes of a readable page, then the hole. */
		return fz.page_ro + page - 1 - (r >> 8) % 40;
	case 10:
		return fz.page_ro + (r >> 8) % 256;
	default:
		return (r & 0x100) ? (void *)(0xffff800000000000ull | rnd(s)) : (void *)(uintptr_t)rnd(s);
	}
}

static void record_bad(unsigned int cmd, int ret)
{
	if (atomic_fetch_add(&fz.bad, 1) == 0)
		snprintf(fz.bad_msg, sizeof(fz.bad_msg), "cmd %#x returned %d (%s)", cmd, ret,
			 ret < 0 ? strerror(-ret) : "");
}

static void *fuzz_thread(void *arg)
{
	int self = (int)(long)arg;
	uint64_t s = fz.seed + (uint64_t)self * 0x100000001ull;
	int own_fd = kmod_open();
	long i;

	atomic_store(&fz.tids[self], kmod_gettid());
	atomic_fetch_add(&fz.ready, 1);
	while (atomic_load(&fz.ready) < THREADS)
		;
	for (i = 0; i < fz.calls_per_thread; i++) {
		int fd = (i & 1) || own_fd < 0 ? fz.shared_fd : own_fd;
		unsigned int cmd = random_cmd(&s);
		void *p = random_arg(&s, self);
		int ret = ioctl(fd, cmd, p);

		ret = ret < 0 ? -errno : ret;
		if (ret == 1 && cmd == WSCHED_IOC_YIELD_TO)
			atomic_fetch_add_explicit(&fz.handed_over, 1, memory_order_relaxed);
		else if (ret == 0 && (cmd == WSCHED_IOC_YIELD_TO || cmd == WSCHED_IOC_VERSION))
			;
		else if (ret >= 0 || (ret != -EINVAL && ret != -ESRCH && ret != -EPERM &&
				      ret != -EFAULT && ret != -ENOTTY))
			record_bad(cmd, ret);
	}
	if (own_fd >= 0)
		close(own_fd);
	atomic_fetch_add(&fz.done, 1);
	return NULL;
}

/* Tries to unload the module the whole time: always refused. */
static void *rmmod_thread(void *arg)
{
	while (!atomic_load(&fz.stop_rmmod)) {
		int ret = kmod_unload();

		atomic_fetch_add(&fz.rmmod_tries, 1);
		if (ret == -EWOULDBLOCK)
			atomic_fetch_add(&fz.rmmod_refused, 1);
		usleep(5000);
	}
	return NULL;
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

/*
 * @total random ioctls from THREADS threads, an rmmod racing them the
 * whole time: every return one the ABI allows, every call counted, rmmod
 * always refused. The module is loaded.
 */
static void fuzz_run(struct __test_metadata *_metadata, long total)
{
	long page = sysconf(_SC_PAGESIZE);
	pthread_t th[THREADS], rm;
	long long calls0;
	uint64_t t0;
	char *map;
	int i;

	memset(&fz, 0, sizeof(fz));
	fz.seed = kmod_env_long("WSCHED_KMOD_FUZZ_SEED", 0);
	if (!fz.seed)
		fz.seed = kmod_now_ns();
	fz.calls_per_thread = (total + THREADS - 1) / THREADS;
	TH_LOG("seed %llu (WSCHED_KMOD_FUZZ_SEED), %ld calls per thread, %d threads",
	       (unsigned long long)fz.seed, fz.calls_per_thread, THREADS);

	/* rw page, unmapped gap, read-only page, unmapped gap */
	map = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	fz.page_rw = map;
	fz.page_gap = map + page;
	fz.page_ro = map + 2 * page;
	ASSERT_EQ(0, munmap(fz.page_gap, page));
	ASSERT_EQ(0, munmap(map + 3 * page, page));
	ASSERT_EQ(0, mprotect(fz.page_ro, page, PROT_READ));

	fz.shared_fd = kmod_open();
	ASSERT_LE(0, fz.shared_fd);
	calls0 = kmod_stat("nr_calls");
	t0 = kmod_now_ns();

	ASSERT_EQ(0, pthread_create(&rm, NULL, rmmod_thread, NULL));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fuzz_thread, (void *)(long)i));
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&fz.stop_rmmod, 1);
	pthread_join(rm, NULL);

	TH_LOG("%ld calls in %.2f s, %ld handed over, rmmod refused %ld of %ld",
	       fz.calls_per_thread * THREADS, (kmod_now_ns() - t0) / 1e9,
	       atomic_load(&fz.handed_over), atomic_load(&fz.rmmod_refused),
	       atomic_load(&fz.rmmod_tries));
	EXPECT_EQ(0, atomic_load(&fz.bad)) TH_LOG("first unexpected return: %s", fz.bad_msg);
	EXPECT_EQ(THREADS, atomic_load(&fz.done));
	EXPECT_EQ(atomic_load(&fz.rmmod_tries), atomic_load(&fz.rmmod_refused));
	EXPECT_EQ(calls0 + fz.calls_per_thread * THREADS, kmod_stat("nr_calls"))
		TH_LOG("every call reaches the module once");

	close(fz.shared_fd);
	munmap(fz.page_rw, page);
	munmap(fz.page_ro, page);
}

TEST_F_TIMEOUT(fuzz, random_ioctls_from_threads, 900)
{
	int bad0;

	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	ASSERT_EQ(0, kmod_ensure_loaded()) TH_LOG("cannot load wsched.ko (built? make all)");
	bad0 = kmod_klog_bad_lines();
	ASSERT_LE(0, bad0);
	fuzz_run(_metadata, kmod_env_long("WSCHED_KMOD_FUZZ_CALLS", 100000));
	EXPECT_EQ(0, kmod_ensure_unloaded()) TH_LOG("the module does not unload after the fuzzing");
	EXPECT_FALSE(kmod_loaded());
	EXPECT_EQ(bad0, kmod_klog_bad_lines()) TH_LOG("the kernel logged BUG/WARNING/Oops; see dmesg");
}

/* ------------------------------------------------ with scx_wsched */

#define WRITERS		3	/* processes writing their slots */

/*
 * A registered process that writes random bytes into its own slot array
 * (header included) from two threads, over and over, sometimes with its
 * own thread ids and the right version in the slots the scheduler looks
 * at first, and yields after each round so that ops.yield reads them.
 */
static void *slot_scribbler(void *arg)
{
	struct ws_hint_slot *arr = arg;
	uint64_t s = kmod_now_ns() ^ (uint64_t)kmod_gettid() << 32;
	uint32_t tid = kmod_gettid();

	for (;;) {
		int i;

		for (i = 0; i < 64; i++) {
			uint64_t r = rnd(&s);
			uint32_t idx = (uint32_t)r % WS_HINT_NR_SLOTS;
			uint64_t *w;
			int k;

			if (r >> 62 == 0)	/* one of its own probe window */
				idx = (tid + (uint32_t)(r >> 32) % WS_HINT_PROBE) % WS_HINT_NR_SLOTS;
			w = (uint64_t *)&arr[idx];
			for (k = 0; k < WS_HINT_SLOT_SIZE / 8; k++)
				w[k] = rnd(&s);
			if (r >> 62 == 0 && idx) {
				arr[idx].owner_tid = tid;
				if (r & 1)
					arr[idx].abi_version = WS_HINT_ABI_VERSION;
			}
		}
		sched_yield();
	}
	return NULL;
}

static void slot_writer(void)
{
	struct ws_hint_slot *arr = wt_hint_raw_register();
	pthread_t th;

	if (!arr)
		_exit(2);
	if (pthread_create(&th, NULL, slot_scribbler, arr))
		_exit(3);
	slot_scribbler(arr);
}

/*
 * The same fuzzing with scx_wsched loaded (its ops.yield now runs for
 * every YIELD_TO that reaches yield_to()), while WRITERS registered
 * processes write random bytes into their slot arrays: no oops, no
 * warning, the ioctls behave as under EEVDF, and the scheduler is still
 * enabled at the end and detaches cleanly. WSCHED_KMOD_FUZZ_SCX_CALLS
 * calls (default 300000, a few seconds; make stress-guest: 10,000,000).
 */
TEST_F_TIMEOUT(fuzz, random_ioctls_and_slot_bytes_under_scx_wsched, 900)
{
	const char *args[] = { "--stats", "3600", "--json", NULL };
	pid_t loader, w[WRITERS];
	int bad0, i, st;
	struct stat sb;

	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	if (stat(wt_bin(), &sb))
		SKIP(return, "no %s", wt_bin());
	ASSERT_TRUE(wt_wait_state(false, 10)) TH_LOG("a sched_ext scheduler is loaded before the test");
	ASSERT_EQ(0, kmod_ensure_loaded()) TH_LOG("cannot load wsched.ko (built? make all)");
	bad0 = kmod_klog_bad_lines();
	ASSERT_LE(0, bad0);
	loader = wt_start(args, FUZZ_OUT, FUZZ_ERR);
	ASSERT_LT(0, loader) TH_LOG("scx_wsched did not become enabled; see %s", FUZZ_ERR);
	for (i = 0; i < WRITERS; i++) {
		w[i] = fork();
		ASSERT_LE(0, w[i]);
		if (!w[i])
			slot_writer();
	}
	fuzz_run(_metadata, kmod_env_long("WSCHED_KMOD_FUZZ_SCX_CALLS", 300000));
	for (i = 0; i < WRITERS; i++) {
		ASSERT_EQ(0, waitpid(w[i], &st, WNOHANG))
			TH_LOG("writer %d ended early (status %#x)", i, st);
		kill(w[i], SIGKILL);
		waitpid(w[i], NULL, 0);
	}
	EXPECT_TRUE(wt_enabled()) TH_LOG("the scheduler was ejected; see %s", FUZZ_ERR);
	EXPECT_EQ(0, wt_stop(loader)) TH_LOG("scx_wsched exit status; see %s", FUZZ_ERR);
	TH_LOG("scx_wsched: nr_yield_to %lld, malformed slots seen %lld",
	       wt_json_last(FUZZ_OUT, "nr_yield_to"), wt_json_last(FUZZ_OUT, "nr_hint_malformed"));
	EXPECT_EQ(0, kmod_ensure_unloaded()) TH_LOG("the module does not unload after the fuzzing");
	EXPECT_EQ(bad0, kmod_klog_bad_lines()) TH_LOG("the kernel logged BUG/WARNING/Oops; see dmesg");
}

WS_TEST_HARNESS_MAIN
