// SPDX-License-Identifier: GPL-2.0
/*
 * What every integration test assumes of the machine it runs on (the lab
 * guest, or a host with its own sched_ext kernel): sched_ext is built in and
 * no scheduler is loaded, the kernel exposes its BTF, bpffs is mounted, and
 * kernel modules can be loaded and unloaded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "guest_util.h"
#include "kselftest_harness.h"

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(sched_ext_present_and_disabled)
{
	char state[64];

	ASSERT_EQ(0, guest_read_line("/sys/kernel/sched_ext/state", state, sizeof(state)))
		TH_LOG("no /sys/kernel/sched_ext/state: kernel without CONFIG_SCHED_CLASS_EXT");
	EXPECT_STREQ("disabled", state)
		TH_LOG("a sched_ext scheduler is already loaded: %s", state);
}

TEST(kernel_btf_present)
{
	unsigned char magic[2];
	int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY);

	ASSERT_LE(0, fd) TH_LOG("no /sys/kernel/btf/vmlinux: kernel without CONFIG_DEBUG_INFO_BTF");
	ASSERT_EQ(2, read(fd, magic, 2));
	close(fd);
	/* BTF_MAGIC 0xeB9F, stored in the host's (little-endian) order. */
	EXPECT_EQ(0x9f, magic[0]);
	EXPECT_EQ(0xeb, magic[1]);
}

TEST(bpffs_mounted)
{
	struct statfs st;

	ASSERT_EQ(0, statfs("/sys/fs/bpf", &st));
	EXPECT_EQ(BPF_FS_MAGIC, (unsigned long)st.f_type)
		TH_LOG("/sys/fs/bpf is not a bpf filesystem (f_type %#lx)", (unsigned long)st.f_type);
}

/*
 * Loads and unloads a module that ships with the running kernel's image.
 * "dummy" (a network driver with no hardware) is a module in every Debian
 * flavour, and nothing else loads it.
 */
TEST(kernel_module_load_unload)
{
	const char *mod = "dummy";
	char path[PATH_MAX];
	struct stat st;

	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	snprintf(path, sizeof(path), "/sys/module/%s", mod);
	if (stat(path, &st) == 0)
		ASSERT_EQ(0, run("modprobe -r dummy")) TH_LOG("dummy was loaded and cannot be removed");
	ASSERT_NE(0, stat(path, &st));

	ASSERT_EQ(0, run("modprobe dummy numdummies=0"));
	EXPECT_EQ(0, stat(path, &st)) TH_LOG("%s missing after modprobe", path);
	ASSERT_EQ(0, run("modprobe -r dummy"));
	EXPECT_NE(0, stat(path, &st)) TH_LOG("%s still there after modprobe -r", path);
}

TEST_HARNESS_MAIN
