// SPDX-License-Identifier: GPL-2.0
/*
 * wsched.ko load and unload: repeated cycles, the device node and its
 * mode, the module parameters, the sysfs counters, and that rmmod is
 * refused while /dev/wsched is open or a thread is inside the ioctl, also
 * when opens and unloads race.
 *
 * WSCHED_KMOD_LOAD_CYCLES (default 50) sets the number of cycles;
 * `make stress-guest` raises it.
 */
#include <signal.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "kmod_util.h"

static const char *const stat_names[] = {
	"nr_calls", "nr_version", "nr_yield_to", "nr_accepted", "nr_handoffs",
	"nr_declined", "nr_alone", "nr_fallbacks", "nr_einval", "nr_esrch", "nr_eperm",
	"nr_efault", "nr_enotty",
};

FIXTURE(kmod) {
	int unused;
};

FIXTURE_SETUP(kmod)
{
	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	ASSERT_EQ(0, kmod_ensure_unloaded()) TH_LOG("wsched is loaded and cannot be removed");
}

FIXTURE_TEARDOWN(kmod)
{
	kmod_ensure_unloaded();
}

/* The node devtmpfs made for the misc device, and its permission bits. */
static int dev_mode(void)
{
	struct stat st;

	if (stat(WSCHED_DEV_PATH, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENOTTY;
	return st.st_mode & 07777;
}

TEST_F_TIMEOUT(kmod, load_unload_cycles, 600)
{
	long cycles = kmod_env_long("WSCHED_KMOD_LOAD_CYCLES", 50);
	int bad0 = kmod_klog_bad_lines();
	uint64_t t0 = kmod_now_ns();
	long i;

	for (i = 0; i < cycles; i++) {
		struct wsched_version v;
		int fd, ret;

		ret = kmod_load("");
		ASSERT_EQ(0, ret) TH_LOG("cycle %ld: finit_module: %s", i, strerror(-ret));
		ASSERT_TRUE(kmod_loaded());
		ASSERT_EQ(0666, dev_mode()) TH_LOG("cycle %ld", i);
		fd = kmod_open();
		ASSERT_LE(0, fd) TH_LOG("cycle %ld: open: %s", i, strerror(-fd));
		ASSERT_EQ(0, ioctl(fd, WSCHED_IOC_VERSION, &v));
		ASSERT_EQ(WSCHED_ABI_VERSION, v.abi_version);
		close(fd);
		ret = kmod_unload();
		ASSERT_EQ(0, ret) TH_LOG("cycle %ld: delete_module: %s", i, strerror(-ret));
		ASSERT_FALSE(kmod_loaded());
		ASSERT_EQ(-ENOENT, dev_mode()) TH_LOG("cycle %ld: /dev/wsched left behind", i);
	}
	TH_LOG("%ld cycles in %.2f s", cycles, (kmod_now_ns() - t0) / 1e9);
	EXPECT_EQ(bad0, kmod_klog_bad_lines());
}

TEST_F(kmod, rmmod_refused_while_open)
{
	char refcnt[32];
	struct wsched_version v;
	int fd, fd2;

	ASSERT_EQ(0, kmod_load(""));
	fd = kmod_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, guest_read_line(KMOD_SYSFS "/refcnt", refcnt, sizeof(refcnt)));
	EXPECT_STREQ("1", refcnt);

	EXPECT_EQ(-EWOULDBLOCK, kmod_unload());
	EXPECT_TRUE(kmod_loaded());
	EXPECT_EQ(0, ioctl(fd, WSCHED_IOC_VERSION, &v)) TH_LOG("the open file stopped working");

	/* A duplicate shares the one open file: still one reference. */
	fd2 = dup(fd);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, kmod_unload());
	close(fd2);

	EXPECT_EQ(0, kmod_unload());
	EXPECT_FALSE(kmod_loaded());
}

/* ------------------------------------------------------------------ */

struct spin_ctx {
	int fd;
	atomic_int stop;
	atomic_int peer;	/* the target's tid, published by the target */
	atomic_long calls;
	atomic_long bad;	/* returns other than 0 or 1 */
};

/* The target: publishes its tid and stays runnable, on CPU 0 like the yielder. */
static void *target_spinner(void *arg)
{
	struct spin_ctx *c = arg;

	guest_pin(0);
	atomic_store(&c->peer, kmod_gettid());
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed))
		;
	return NULL;
}

/* Calls YIELD_TO on the target as fast as it can. */
static void *yield_spinner(void *arg)
{
	struct spin_ctx *c = arg;
	pid_t peer = atomic_load(&c->peer);

	guest_pin(0);
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		int ret = kmod_yield_to(c->fd, peer, NULL);

		if (ret != 0 && ret != 1)
			atomic_fetch_add(&c->bad, 1);
		atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
	}
	return NULL;
}

/*
 * A thread is inside the ioctl (yield_to() calls schedule()) again and again
 * while rmmod keeps trying from another CPU: every attempt is refused, the
 * calls keep working, and the module unloads once the file is closed.
 */
TEST_F(kmod, rmmod_refused_during_ioctls)
{
	struct spin_ctx c = { 0 };
	pthread_t yielder, target;
	int tries = 0, refused = 0;
	uint64_t t0;
	long before;

	ASSERT_EQ(0, kmod_load(""));
	c.fd = kmod_open();
	ASSERT_LE(0, c.fd);
	guest_pin(1);
	ASSERT_EQ(0, pthread_create(&target, NULL, target_spinner, &c));
	while (!atomic_load(&c.peer))
		usleep(1000);
	ASSERT_EQ(0, pthread_create(&yielder, NULL, yield_spinner, &c));
	while (atomic_load(&c.calls) < 10)
		usleep(1000);
	/* Keep trying until the yielder has made 20 more calls (10 s at most). */
	before = atomic_load(&c.calls);
	t0 = kmod_now_ns();
	while (atomic_load(&c.calls) < before + 20 && kmod_now_ns() - t0 < 10000000000ull) {
		int ret = kmod_unload();

		tries++;
		if (ret == -EWOULDBLOCK)
			refused++;
		else
			TH_LOG("attempt %d: delete_module returned %d", tries, ret);
	}
	EXPECT_LE(before + 20, atomic_load(&c.calls)) TH_LOG("the ioctls stopped while rmmod ran");
	atomic_store(&c.stop, 1);
	pthread_join(yielder, NULL);
	pthread_join(target, NULL);
	TH_LOG("%ld calls, %lld handed over, rmmod refused %d times", atomic_load(&c.calls),
	       kmod_stat("nr_handoffs"), refused);
	EXPECT_EQ(tries, refused);
	EXPECT_LT(0, tries);
	EXPECT_EQ(0, atomic_load(&c.bad));
	close(c.fd);
	EXPECT_EQ(0, kmod_unload());
}

struct race_ctx {
	atomic_int stop;
	atomic_long opened, open_failed, bad;
};

/*
 * Opens, calls and closes /dev/wsched in a loop while the main thread
 * unloads and reloads the module: an open either fails cleanly (the node
 * or the driver is gone) or yields a file whose ioctls work.
 */
static void *open_racer(void *arg)
{
	struct race_ctx *c = arg;

	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		struct wsched_version v;
		int fd = kmod_open();

		if (fd < 0) {
			if (fd != -ENOENT && fd != -ENODEV && fd != -ENXIO)
				atomic_fetch_add(&c->bad, 1);
			atomic_fetch_add(&c->open_failed, 1);
			continue;
		}
		if (ioctl(fd, WSCHED_IOC_VERSION, &v) || v.abi_version != WSCHED_ABI_VERSION)
			atomic_fetch_add(&c->bad, 1);
		close(fd);
		atomic_fetch_add(&c->opened, 1);
	}
	return NULL;
}

TEST_F_TIMEOUT(kmod, unload_races_open, 600)
{
	long cycles = kmod_env_long("WSCHED_KMOD_LOAD_CYCLES", 50) / 5;
	int bad0 = kmod_klog_bad_lines();
	struct race_ctx c = { 0 };
	pthread_t th[2];
	long i, unloads = 0;

	ASSERT_EQ(0, kmod_load(""));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, open_racer, &c));
	for (i = 0; i < cycles; i++) {
		int ret;

		/* Let the racers get in, then pull the module from under them. */
		usleep(2000);
		ret = kmod_ensure_unloaded();
		if (ret == 0)
			unloads++;
		else
			TH_LOG("cycle %ld: could not unload: %s", i, strerror(-ret));
		usleep(1000);
		ret = kmod_load("");
		ASSERT_EQ(0, ret) TH_LOG("cycle %ld: reload: %s", i, strerror(-ret));
	}
	atomic_store(&c.stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%ld unloads, %ld opens, %ld failed opens", unloads,
	       atomic_load(&c.opened), atomic_load(&c.open_failed));
	EXPECT_EQ(cycles, unloads);
	EXPECT_EQ(0, atomic_load(&c.bad));
	EXPECT_LT(0, atomic_load(&c.opened));
	EXPECT_EQ(0, kmod_ensure_unloaded());
	EXPECT_EQ(bad0, kmod_klog_bad_lines());
}

TEST_F(kmod, parameters)
{
	char buf[32];

	/* Defaults. */
	ASSERT_EQ(0, kmod_load(""));
	ASSERT_EQ(0, guest_read_line(KMOD_SYSFS "/parameters/preempt", buf, sizeof(buf)));
	EXPECT_STREQ("Y", buf);
	ASSERT_EQ(0, guest_read_line(KMOD_SYSFS "/parameters/dev_mode", buf, sizeof(buf)));
	EXPECT_EQ(0666, strtol(buf, NULL, 0));
	EXPECT_EQ(0666, dev_mode());
	ASSERT_EQ(0, kmod_unload());

	/* Set at load time. */
	ASSERT_EQ(0, kmod_load("preempt=N dev_mode=0600"));
	ASSERT_EQ(0, guest_read_line(KMOD_SYSFS "/parameters/preempt", buf, sizeof(buf)));
	EXPECT_STREQ("N", buf);
	EXPECT_EQ(0600, dev_mode());
	ASSERT_EQ(0, kmod_unload());

	/* Out of range: the load fails and leaves nothing behind. */
	EXPECT_EQ(-EINVAL, kmod_load("dev_mode=01777"));
	EXPECT_FALSE(kmod_loaded());
	EXPECT_EQ(-ENOENT, dev_mode());
}

TEST_F(kmod, stats_in_sysfs)
{
	struct wsched_version v;
	char wrong[512] = "";
	long long calls0;
	size_t i;
	int fd;

	ASSERT_EQ(0, kmod_load(""));

	/* Fresh module: every counter there and zero. */
	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++)
		if (kmod_stat(stat_names[i]) != 0)
			snprintf(wrong + strlen(wrong), sizeof(wrong) - strlen(wrong), " %s", stat_names[i]);
	EXPECT_STREQ("", wrong);
	calls0 = kmod_stat("nr_calls");
	fd = kmod_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, WSCHED_IOC_VERSION, &v));
	EXPECT_EQ(-1, ioctl(fd, _IO('x', 1)));
	EXPECT_EQ(calls0 + 2, kmod_stat("nr_calls"));
	EXPECT_EQ(1, kmod_stat("nr_version"));
	EXPECT_EQ(1, kmod_stat("nr_enotty"));
	close(fd);
}

TEST_HARNESS_MAIN
