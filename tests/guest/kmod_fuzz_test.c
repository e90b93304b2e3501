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
#include <dirent.h>
#include <grp.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <sys/wait.h>

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
				idx = WS_HINT_SLOT_IDX(tid, (uint32_t)(r >> 32) % WS_HINT_PROBE);
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

__attribute__((noreturn)) static void slot_writer(void)
{
	struct ws_hint_slot *arr = wt_hint_raw_register();
	pthread_t th;

	if (!arr)
		_exit(2);
	if (pthread_create(&th, NULL, slot_scribbler, arr))
		_exit(3);
	slot_scribbler(arr);
	_exit(0);
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

/* ------------------------------------------------ every attack at once */

/*
 * Every attack on the hint channel and /dev/wsched at once, for
 * WSCHED_ATTACK_SECONDS (make stress-guest: 60; unset: SKIP, it is too
 * long for make check), with scx_wsched loaded. The victims, CPU hogs of
 * another uid, run pinned one per CPU of the upper half of the machine,
 * first alone, then beside:
 *  - YIELD_TO callers on the lower half aiming at a sched_yield() loop of
 *    their own process pinned to a victim's CPU (up to four victims; the
 *    loops run in the victims' first run too, only the calls are new);
 *  - /dev/wsched fuzzing (fuzz_run(), with its rmmod racing);
 *  - hint connections churned by a member of the group who keeps every
 *    array mapped (its quota refuses the rest);
 *  - connections made by children reaped before the loader answers;
 *  - processes registering by the dozen and exiting;
 *  - WRITERS registered processes writing random bytes into their slots;
 *  - a ring of ATK_RING threads of one process, spread over the lower
 *    half, each YIELD_TO-ing the next without pause (a chain of directed
 *    yields: each gives away only the yielder's own claim);
 *  - connections opened and closed at once without pause (churn the
 *    loader must not spend its time on);
 *  - registered connections that keep writing junk after the answer
 *    (closed by the loader, then opened again);
 *  - registered processes that exec (the registration ends with the old
 *    image).
 * The attackers other than the yield targets run on the lower half.
 * Asserts: the scheduler stays enabled (looked at every second) and
 * detaches with status 0, no kernel warning, and the victims get at least
 * 90% of the CPU time they got alone (their involuntary context switches
 * and spins are logged: in the lab's TCG how fast a vCPU executes depends
 * on what the others execute). The threads that ran on the victims' CPUs
 * meanwhile are logged with their CPU time, the most first.
 * WSCHED_ATTACKS (a comma-separated list of atk_names[]; default all)
 * runs only some of the attacks, to tell which one costs the victims what.
 */
#define ATK_VICTIM_UID	65533
#define ATK_HINT_UID	65534
#define ATK_MAX_VICTIMS	64
#define ATK_RING	64	/* threads in the ring of directed yields */

struct atk_victim {
	long cpu_ms, nivcsw;
	unsigned long spins;
	int done;
};

struct atk {
	atomic_int go, stop, attack;
	struct atk_victim v[ATK_MAX_VICTIMS];
	atomic_long churn_mapped, churn_refused, reaped_refused, reaped_other, regs, regs_refused;
	atomic_long yield_calls;
	atomic_long ring_calls, closed_conns, junk_closed, execs;
	atomic_int ring_tids[ATK_RING];
};

static struct atk *atk;

/* The attacks, by the names WSCHED_ATTACKS takes: "yield" is the YIELD_TO
 * callers, "writers" the slot writers, the others the cases of the test's
 * attacker switch in this order from "fuzz". */
static const char *const atk_names[] = {
	"yield", "fuzz", "churn", "reaped", "register", "ring", "closer", "junk", "exec", "writers",
};
#define ATK_N	(int)(sizeof(atk_names) / sizeof(atk_names[0]))

/* atk_names[] joined with ", ", for an error message. */
static const char *atk_all_names(void)
{
	static char all[128];
	size_t n = 0;

	for (int i = 0; i < ATK_N; i++)
		n += snprintf(all + n, sizeof(all) - n, "%s%s", i ? ", " : "", atk_names[i]);
	return all;
}

/* The attacks WSCHED_ATTACKS names, as a mask of atk_names[] bits (all
 * when unset); -1 with *@bad the first name that is none of them. */
static long atk_selected(const char **bad)
{
	static char buf[256];
	const char *e = getenv("WSCHED_ATTACKS");
	char *tok, *save;
	long mask = 0;
	int i;

	if (!e || !*e)
		return (1L << ATK_N) - 1;
	snprintf(buf, sizeof(buf), "%s", e);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ATK_N && strcmp(tok, atk_names[i]); i++)
			;
		if (i == ATK_N) {
			*bad = tok;
			return -1;
		}
		mask |= 1L << i;
	}
	return mask;
}

static bool atk_on(long mask, const char *name)
{
	for (int i = 0; i < ATK_N; i++)
		if (!strcmp(name, atk_names[i]))
			return mask & (1L << i);
	return false;
}

/* A thread's CPU time (clock ticks) and the CPU it last ran on. */
struct atk_thr {
	pid_t tid;
	int cpu;
	unsigned long long ticks;
	char comm[20];
};

#define ATK_THR_MAX	8192

static int atk_thr_cmp(const void *a, const void *b)
{
	const struct atk_thr *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Every thread of the system into @t (at most ATK_THR_MAX), by tid. */
static int atk_threads(struct atk_thr *t)
{
	DIR *pd = opendir("/proc"), *td;
	struct dirent *p, *q;
	int n = 0;

	if (!pd)
		return 0;
	while ((p = readdir(pd)) && n < ATK_THR_MAX) {
		char path[600], buf[1024], *c, *r;
		FILE *f;

		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		td = opendir(path);
		if (!td)
			continue;
		while ((q = readdir(td)) && n < ATK_THR_MAX) {
			unsigned long long ut, st;
			int cpu;

			if (q->d_name[0] < '0' || q->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/stat", p->d_name, q->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			r = fgets(buf, sizeof(buf), f);
			fclose(f);
			c = r ? strchr(buf, '(') : NULL;
			r = r ? strrchr(buf, ')') : NULL;
			/* utime and stime are fields 14 and 15, processor 39. */
			if (!c || !r || sscanf(r + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
					       "%llu %llu %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
					       "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %d",
					       &ut, &st, &cpu) != 3)
				continue;
			t[n].tid = atoi(q->d_name);
			t[n].cpu = cpu;
			t[n].ticks = ut + st;
			snprintf(t[n].comm, sizeof(t[n].comm), "%.*s", (int)(r - c - 1), c + 1);
			n++;
		}
		closedir(td);
	}
	closedir(pd);
	qsort(t, n, sizeof(*t), atk_thr_cmp);
	return n;
}

static int atk_thr_by_ticks(const void *a, const void *b)
{
	const struct atk_thr *x = a, *y = b;

	return (x->ticks < y->ticks) - (x->ticks > y->ticks);
}

/*
 * Log the threads that used CPU time between @t0 (@n0 of them) and @t1
 * (@n1) and were last seen on a CPU of [@first, @first + @n), the most
 * first, and their sum (ms): what ran beside the victims, give or take
 * the threads that moved. @t1 is reordered.
 */
static long atk_others_report(const char *when, struct atk_thr *t0, int n0, struct atk_thr *t1,
			      int n1, int first, int n)
{
	long tick_ms = 1000 / sysconf(_SC_CLK_TCK), sum = 0;
	int i, j = 0, k = 0;

	for (i = 0; i < n1; i++) {
		unsigned long long was = 0;

		while (j < n0 && t0[j].tid < t1[i].tid)
			j++;
		if (j < n0 && t0[j].tid == t1[i].tid)
			was = t0[j].ticks;
		if (t1[i].cpu < first || t1[i].cpu >= first + n || t1[i].ticks <= was)
			continue;
		t1[k] = t1[i];
		t1[k++].ticks -= was;
		sum += (long)(t1[k - 1].ticks * tick_ms);
	}
	qsort(t1, k, sizeof(*t1), atk_thr_by_ticks);
	printf("#   %s: %d threads ran on the victims' CPUs, %ld ms of CPU in all; the most:\n",
	       when, k, sum);
	for (i = 0; i < k && i < 8; i++)
		printf("#     %s (tid %d, CPU %d): %llu ms\n", t1[i].comm, t1[i].tid, t1[i].cpu,
		       t1[i].ticks * tick_ms);
	return sum;
}

static void atk_victim(int idx, int cpu)
{
	struct atk_victim *v = &atk->v[idx];
	struct rusage r0, r1;
	unsigned long n = 0;

	if (setgroups(0, NULL) || setgid(ATK_VICTIM_UID) || setuid(ATK_VICTIM_UID) ||
	    guest_pin(cpu))
		_exit(3);
	while (!atomic_load(&atk->go))
		usleep(1000);
	getrusage(RUSAGE_SELF, &r0);
	while (!atomic_load_explicit(&atk->stop, memory_order_relaxed))
		n++;
	getrusage(RUSAGE_SELF, &r1);
	v->spins = n;
	v->nivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
	v->cpu_ms = wt_rusage_cpu_ms(&r0, &r1);
	v->done = 1;
	_exit(0);
}

/* Run the victims on CPUs [first, first + n) for @secs; their CPU time. */
static long atk_victims_run(int first, int n, double secs, long *nivcsw, unsigned long *spins)
{
	pid_t pid[ATK_MAX_VICTIMS];
	long cpu_ms = 0;
	int i, st;

	memset(atk->v, 0, sizeof(atk->v));
	atomic_store(&atk->go, 0);
	atomic_store(&atk->stop, 0);
	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return -1;
		if (!pid[i])
			atk_victim(i, first + i);
	}
	usleep(200000);
	atomic_store(&atk->go, 1);
	for (double end = wt_now() + secs; wt_now() < end;) {
		if (!wt_enabled())
			break;
		wt_sleep(1);
	}
	atomic_store(&atk->stop, 1);
	*nivcsw = 0;
	*spins = 0;
	for (i = 0; i < n; i++) {
		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) ||
		    !atk->v[i].done)
			return -1;
		cpu_ms += atk->v[i].cpu_ms;
		printf("#   victim on CPU %d: %ld ms of CPU, %ld involuntary switches\n", first + i,
		       atk->v[i].cpu_ms, atk->v[i].nivcsw);
		*nivcsw += atk->v[i].nivcsw;
		*spins += atk->v[i].spins;
	}
	return cpu_ms;
}

/* Pin the calling thread to the CPUs [0, n). */
static void atk_pin_low(int n)
{
	cpu_set_t set;
	int c;

	CPU_ZERO(&set);
	for (c = 0; c < n; c++)
		CPU_SET(c, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void atk_become_hint_user(gid_t users)
{
	if (setgroups(1, &users) || setgid(ATK_HINT_UID) || setuid(ATK_HINT_UID))
		_exit(3);
}

static void *atk_yield_target(void *arg)
{
	atomic_int *tid = arg;

	guest_pin(atomic_load(tid));
	atomic_store(tid, -kmod_gettid());
	for (;;)
		sched_yield();
	return NULL;
}

/* YIELD_TO from CPU @from at a sched_yield() loop of ours on CPU @to. */
__attribute__((noreturn)) static void atk_yielder(int from, int to)
{
	atomic_int tid = to;
	pthread_t th;
	int fd = kmod_open();

	if (fd < 0 || setgroups(0, NULL) || setgid(ATK_HINT_UID) || setuid(ATK_HINT_UID) ||
	    pthread_create(&th, NULL, atk_yield_target, &tid))
		_exit(3);
	while (atomic_load(&tid) >= 0)
		usleep(1000);
	guest_pin(from);
	while (!atomic_load(&atk->attack))
		usleep(10000);
	for (long n = 0;; n++) {
		kmod_yield_to(fd, -atomic_load(&tid), NULL);
		if (!(n & 1023))
			atomic_fetch_add_explicit(&atk->yield_calls, 1024, memory_order_relaxed);
	}
}

/* A connection to the hint socket (retried every 10 ms) and whether its
 * answer carried an array, into *@fd. */
static int atk_hint_ask(int *fd)
{
	struct ws_hint_hello hello;
	int s;

	while ((s = wt_hint_connect()) < 0)
		usleep(10000);
	if (wt_hint_answer(s, &hello, fd) != sizeof(hello) && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return s;
}

/* Connect, map, close, keep the mapping; over and over. */
__attribute__((noreturn)) static void atk_churner(gid_t users)
{
	atk_become_hint_user(users);
	for (;;) {
		int fd, s = atk_hint_ask(&fd);

		if (fd >= 0 && wt_hint_map(fd))
			atomic_fetch_add_explicit(&atk->churn_mapped, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&atk->churn_refused, 1, memory_order_relaxed);
		close(s);
	}
}

/* A socket connected by a child that is reaped before the answer is read. */
__attribute__((noreturn)) static void atk_reaped(gid_t users)
{
	atk_become_hint_user(users);
	for (;;) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX, .sun_path = WS_HINT_SOCK_PATH };
		struct ws_hint_hello hello;
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;
		pid_t kid;

		if (s < 0)
			_exit(2);
		kid = fork();
		if (!kid)
			_exit(connect(s, (struct sockaddr *)&addr, sizeof(addr)) ? 1 : 0);
		waitpid(kid, NULL, 0);
		if (wt_hint_answer(s, &hello, &fd) == sizeof(hello) && fd < 0 &&
		    hello.reserved == ESRCH)
			atomic_fetch_add_explicit(&atk->reaped_refused, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&atk->reaped_other, 1, memory_order_relaxed);
		if (fd >= 0)
			close(fd);
		close(s);
	}
}

/* Processes registering by the dozen, then exiting. */
__attribute__((noreturn)) static void atk_registrars(void)
{
	for (;;) {
		pid_t kid[24];
		int i, st;

		for (i = 0; i < 24; i++) {
			kid[i] = fork();
			if (!kid[i])
				_exit(wt_hint_raw_register() ? 0 : 1);
		}
		for (i = 0; i < 24; i++)
			if (kid[i] > 0 && waitpid(kid[i], &st, 0) == kid[i])
				atomic_fetch_add_explicit(WIFEXITED(st) && !WEXITSTATUS(st) ?
							  &atk->regs : &atk->regs_refused, 1,
							  memory_order_relaxed);
	}
}

/* A member of the ring on CPU (@i mod @arg's lower half): YIELD_TO the next. */
struct atk_ring_arg {
	int i, low, fd;
};

static void *atk_ring_member(void *arg)
{
	struct atk_ring_arg *a = arg;
	long n = 0;

	guest_pin(a->i % a->low);
	atomic_store(&atk->ring_tids[a->i], kmod_gettid());
	for (;; n++) {
		kmod_yield_to(a->fd, atomic_load(&atk->ring_tids[(a->i + 1) % ATK_RING]), NULL);
		if (!(n & 1023))
			atomic_fetch_add_explicit(&atk->ring_calls, 1024, memory_order_relaxed);
	}
	return NULL;
}

__attribute__((noreturn)) static void atk_ring(int low)
{
	static struct atk_ring_arg args[ATK_RING];
	pthread_t th;
	int fd = kmod_open(), i;

	if (fd < 0 || setgroups(0, NULL) || setgid(ATK_HINT_UID) || setuid(ATK_HINT_UID))
		_exit(3);
	for (i = 0; i < ATK_RING; i++) {
		args[i] = (struct atk_ring_arg){ .i = i, .low = low, .fd = fd };
		if (pthread_create(&th, NULL, atk_ring_member, &args[i]))
			_exit(4);
	}
	for (;;)
		pause();
}

/* Connect and close at once, without reading the answer; over and over. */
__attribute__((noreturn)) static void atk_closer(gid_t users)
{
	atk_become_hint_user(users);
	for (;;) {
		int s = wt_hint_connect();	/* waits while the listen queue is full */

		if (s >= 0) {
			close(s);
			atomic_fetch_add_explicit(&atk->closed_conns, 1, memory_order_relaxed);
		} else {
			usleep(1000);
		}
	}
}

/* Register, then write junk on the connection until the loader closes it. */
__attribute__((noreturn)) static void atk_junk(gid_t users)
{
	static const char junk[256] = "junk";

	atk_become_hint_user(users);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int fd, s = atk_hint_ask(&fd);

		if (fd >= 0) {
			close(fd);
			while (write(s, junk, sizeof(junk)) > 0)
				;
			atomic_fetch_add_explicit(&atk->junk_closed, 1, memory_order_relaxed);
		} else {
			usleep(10000);	/* refused (rate or quota) */
		}
		close(s);
	}
}

/* Processes that register and exec /bin/true with the connection open. */
__attribute__((noreturn)) static void atk_execer(gid_t users)
{
	atk_become_hint_user(users);
	for (;;) {
		pid_t kid = fork();

		if (!kid) {
			struct ws_hint_slot *slots = wt_hint_raw_register(), *own;
			uint32_t tid = (uint32_t)kmod_gettid();

			if (!slots)
				_exit(1);
			own = &slots[WS_HINT_SLOT_IDX(tid, 0)];
			own->owner_tid = tid;
			own->abi_version = WS_HINT_ABI_VERSION;
			own->state = WS_HINT_THIEF;
			execl("/bin/true", "true", (char *)NULL);
			_exit(2);
		}
		if (kid > 0 && waitpid(kid, NULL, 0) == kid)
			atomic_fetch_add_explicit(&atk->execs, 1, memory_order_relaxed);
		usleep(10000);	/* as often as the loader lets one user register */
	}
}

TEST_F_TIMEOUT(fuzz, every_attack_at_once_spares_other_users, 1800)
{
	const char *args[] = { "--group", "users", "--stats", "5", "--json", NULL };
	long secs = kmod_env_long("WSCHED_ATTACK_SECONDS", 0), base_ms, atk_ms;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), low = ncpu / 2, nv = ncpu - low;
	long base_sw, atk_sw, loader_ms;
	double loader_s;
	unsigned long base_spins, atk_spins;
	pid_t loader, kids[24];
	int nk = 0, bad0, i, nt0, nt1;
	bool enabled = true;
	const char *bad = NULL;
	long on = atk_selected(&bad);
	static struct atk_thr t0[ATK_THR_MAX], t1[ATK_THR_MAX];
	struct group *g;
	struct stat sb;

	if (!secs)
		SKIP(return, "set WSCHED_ATTACK_SECONDS (make stress-guest runs it for 60 s)");
	ASSERT_LE(0, on) TH_LOG("WSCHED_ATTACKS: no attack '%s' (there are: %s)", bad,
				atk_all_names());
	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	if (stat(wt_bin(), &sb))
		SKIP(return, "no %s", wt_bin());
	if (ncpu < 4)
		SKIP(return, "needs at least 4 CPUs");
	g = getgrnam("users");
	ASSERT_NE(NULL, g) TH_LOG("no group 'users' in this system");
	if (nv > ATK_MAX_VICTIMS)
		nv = ATK_MAX_VICTIMS;
	atk = mmap(NULL, sizeof(*atk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, atk);
	ASSERT_TRUE(wt_wait_state(false, 10)) TH_LOG("a sched_ext scheduler is loaded before the test");
	ASSERT_EQ(0, kmod_ensure_loaded()) TH_LOG("cannot load wsched.ko (built? make all)");
	bad0 = kmod_klog_bad_lines();
	ASSERT_LE(0, bad0);
	loader = wt_start(args, FUZZ_OUT, FUZZ_ERR);
	ASSERT_LT(0, loader) TH_LOG("scx_wsched did not become enabled; see %s", FUZZ_ERR);

	/* The yield targets loop in sched_yield() beside their victims in
	 * both runs: time-sharing a CPU is not the attack, the calls are. */
	for (i = 0; i < 4 && i < nv && i < low && atk_on(on, "yield"); i++) {
		kids[nk] = fork();
		if (!kids[nk])
			atk_yielder(i, low + i);
		nk++;
	}
	nt0 = atk_threads(t0);
	base_ms = atk_victims_run(low, nv, secs, &base_sw, &base_spins);
	nt1 = atk_threads(t1);
	ASSERT_LT(0, base_ms) TH_LOG("a victim did not run to the end");
	atk_others_report("alone", t0, nt0, t1, nt1, low, nv);

	atomic_store(&atk->attack, 1);
	for (i = 0; i < 10; i++) {
		if (!atk_on(on, atk_names[i < 9 ? i + 1 : 9]))
			continue;
		kids[nk] = fork();
		if (!kids[nk]) {
			atk_pin_low(low);
			switch (i) {
			case 0:
				fuzz_run(_metadata, LONG_MAX / 2);
				_exit(0);
			case 1:
				atk_churner(g->gr_gid);
			case 2:
				atk_reaped(g->gr_gid);
			case 3:
				atk_registrars();
			case 4:
				atk_ring(low);
			case 5:
				atk_closer(g->gr_gid);
			case 6:
				atk_junk(g->gr_gid);
			case 7:
				atk_execer(g->gr_gid);
			default:
				slot_writer();
			}
		}
		nk++;
	}
	for (i = 0; i < WRITERS - 2 && atk_on(on, "writers"); i++) {
		kids[nk] = fork();
		if (!kids[nk]) {
			atk_pin_low(low);
			slot_writer();
		}
		nk++;
	}
	wt_sleep(2);	/* let them get going */
	loader_s = wt_proc_cpu_s(loader);
	nt0 = atk_threads(t0);
	atk_ms = atk_victims_run(low, nv, secs, &atk_sw, &atk_spins);
	nt1 = atk_threads(t1);
	loader_ms = (long)((wt_proc_cpu_s(loader) - loader_s) * 1000);
	atk_others_report("attacked", t0, nt0, t1, nt1, low, nv);
	for (i = 0; i < nk; i++) {
		int st;

		EXPECT_EQ(0, waitpid(kids[i], &st, WNOHANG))
			TH_LOG("attacker %d ended early (status %#x)", i, st);
	}
	enabled = wt_enabled();
	for (i = 0; i < nk; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < nk; i++)
		waitpid(kids[i], NULL, 0);
	TH_LOG("%d victims of %ld s, on CPUs %d-%d: alone %ld ms of CPU, %ld involuntary "
	       "switches, %lu spins; attacked %ld ms, %ld, %lu", nv, secs, low, low + nv - 1,
	       base_ms, base_sw, base_spins, atk_ms, atk_sw, atk_spins);
	TH_LOG("attacks: ring %ld YIELD_TO calls; %ld connections closed at once; %ld "
	       "junk-writing connections closed; %ld registered processes exec'd",
	       atomic_load(&atk->ring_calls), atomic_load(&atk->closed_conns),
	       atomic_load(&atk->junk_closed), atomic_load(&atk->execs));
	TH_LOG("attacks: %ld YIELD_TO calls; churn %ld arrays kept mapped, %ld refused; "
	       "reaped children's connections %ld refused ESRCH, %ld otherwise answered; "
	       "registrations %ld, %ld refused; the loader used %ld ms of CPU meanwhile",
	       atomic_load(&atk->yield_calls), atomic_load(&atk->churn_mapped),
	       atomic_load(&atk->churn_refused), atomic_load(&atk->reaped_refused),
	       atomic_load(&atk->reaped_other), atomic_load(&atk->regs),
	       atomic_load(&atk->regs_refused), loader_ms);
	EXPECT_LT(0, atk_ms) TH_LOG("a victim did not run to the end");
	EXPECT_LE(base_ms * 0.9, (double)atk_ms);
	/* Each attack that ran did what it attacks with. */
	EXPECT_TRUE(!atk_on(on, "yield") || atomic_load(&atk->yield_calls));
	EXPECT_TRUE(!atk_on(on, "churn") ||
		    atomic_load(&atk->churn_mapped) + atomic_load(&atk->churn_refused));
	EXPECT_TRUE(!atk_on(on, "register") || atomic_load(&atk->regs));
	EXPECT_TRUE(!atk_on(on, "ring") || atomic_load(&atk->ring_calls));
	EXPECT_TRUE(!atk_on(on, "closer") || atomic_load(&atk->closed_conns));
	EXPECT_TRUE(!atk_on(on, "junk") || atomic_load(&atk->junk_closed));
	EXPECT_TRUE(!atk_on(on, "exec") || atomic_load(&atk->execs));
	EXPECT_TRUE(enabled) TH_LOG("the scheduler was ejected; see %s", FUZZ_ERR);
	EXPECT_EQ(0, wt_stop(loader)) TH_LOG("scx_wsched exit status; see %s", FUZZ_ERR);
	TH_LOG("scx_wsched: nr_yield_to %lld, foreign %lld, malformed slots %lld, "
	       "hint_refused_quota %lld", wt_json_last(FUZZ_OUT, "nr_yield_to"),
	       wt_json_last(FUZZ_OUT, "nr_yield_to_foreign"),
	       wt_json_last(FUZZ_OUT, "nr_hint_malformed"),
	       wt_json_last(FUZZ_OUT, "hint_refused_quota"));
	EXPECT_EQ(0, kmod_ensure_unloaded()) TH_LOG("the module does not unload after the attacks");
	EXPECT_EQ(bad0, kmod_klog_bad_lines()) TH_LOG("the kernel logged BUG/WARNING/Oops; see dmesg");
	munmap(atk, sizeof(*atk));
}

WT_TEST_HARNESS_MAIN
