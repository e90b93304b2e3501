// SPDX-License-Identifier: GPL-2.0
/*
 * The loader's per-cgroup figures (bpf/scx_wsched_cgstat.c) from slots as
 * the map wsched_cgroups holds them: an interval's CPUs and throttled
 * fraction, the busiest first and at most N, the root and idle cgroups
 * left out, a slot taken by another cgroup counted afresh, paths found by
 * inode under a directory standing in for the cgroup2 mount.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scx_wsched_cgstat.h"
#include "kselftest_harness.h"

#define MS	(1000 * 1000ULL)

static struct wsched_cgroup slots[8];

FIXTURE(cgstat) {
	char root[64];
	__u64 ino_a, ino_b;
	struct cg_report *r;
	struct cg_row rows[8];
};

static __u64 ino_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

FIXTURE_SETUP(cgstat)
{
	char p[128];

	snprintf(self->root, sizeof(self->root), "/tmp/cgstat_test.XXXXXX");
	ASSERT_TRUE(mkdtemp(self->root) != NULL);
	snprintf(p, sizeof(p), "%s/a", self->root);
	ASSERT_EQ(0, mkdir(p, 0755));
	self->ino_a = ino_of(p);
	snprintf(p, sizeof(p), "%s/a/b", self->root);
	ASSERT_EQ(0, mkdir(p, 0755));
	self->ino_b = ino_of(p);
	memset(slots, 0, sizeof(slots));
	slots[0].id = 1;		/* the root: never a row */
	slots[2].id = self->ino_a;
	slots[2].weight = 100;
	slots[5].id = self->ino_b;
	slots[5].weight = 300;
	slots[5].quota_ns = 50 * MS;
	slots[5].period_ns = 100 * MS;
	slots[7].id = 999999999;	/* not under the root any more */
	slots[7].weight = 100;
	self->r = cg_report_new(self->root, 0);
	ASSERT_TRUE(self->r != NULL);
	/* the baseline: no rows without an interval */
	slots[0].usage_ns = slots[2].usage_ns = slots[5].usage_ns = 5000 * MS;
	EXPECT_EQ(0, cg_report_slots(self->r, slots, 8, 10.0, self->rows, 8));
}

FIXTURE_TEARDOWN(cgstat)
{
	char p[128];

	cg_report_free(self->r);
	snprintf(p, sizeof(p), "%s/a/b", self->root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/a", self->root);
	rmdir(p);
	rmdir(self->root);
}

TEST_F(cgstat, busiest_first_with_rates_and_paths)
{
	int n;

	slots[0].usage_ns += 4000 * MS;
	slots[2].usage_ns += 1500 * MS;	/* a: over 2 s, 0.75 CPUs */
	slots[5].usage_ns += 1000 * MS;	/* a/b: 0.5 CPUs, throttled half */
	slots[5].throttled_ns += 1000 * MS;
	slots[5].nr_throttled = 10;
	slots[7].usage_ns += 100 * MS;
	n = cg_report_slots(self->r, slots, 8, 12.0, self->rows, 8);
	ASSERT_EQ(3, n);
	EXPECT_EQ(2, self->rows[0].slot);
	EXPECT_STREQ("/a", self->rows[0].path);
	EXPECT_GT(1e-9, self->rows[0].cpus - 0.75);
	EXPECT_LT(-1e-9, self->rows[0].cpus - 0.75);
	EXPECT_STREQ("/a/b", self->rows[1].path);
	EXPECT_GT(1e-9, self->rows[1].cpus - 0.5);
	EXPECT_GT(1e-9, self->rows[1].throttled - 0.5);
	EXPECT_LT(-1e-9, self->rows[1].throttled - 0.5);
	EXPECT_EQ(300, self->rows[1].cg.weight);
	EXPECT_STREQ("#999999999", self->rows[2].path);
	/* at most N: the busiest */
	slots[2].usage_ns += 100 * MS;
	slots[5].usage_ns += 300 * MS;
	slots[7].usage_ns += 200 * MS;
	n = cg_report_slots(self->r, slots, 8, 13.0, self->rows, 2);
	ASSERT_EQ(2, n);
	EXPECT_EQ(5, self->rows[0].slot);
	EXPECT_EQ(7, self->rows[1].slot);
}

/* Nothing ran: no rows; a throttled cgroup that could not run is one. */
TEST_F(cgstat, idle_cgroups_are_left_out_but_throttled_ones_are_not)
{
	slots[5].throttled_ns += 500 * MS;
	ASSERT_EQ(1, cg_report_slots(self->r, slots, 8, 11.0, self->rows, 8));
	EXPECT_EQ(5, self->rows[0].slot);
	EXPECT_EQ(0, self->rows[0].cpus);
	ASSERT_EQ(0, cg_report_slots(self->r, slots, 8, 12.0, self->rows, 8));
}

/* A slot freed and taken by another cgroup: its CPU time counts from 0,
 * not as the difference from the old one's. */
TEST_F(cgstat, a_slot_taken_again_counts_afresh)
{
	slots[2].id = self->ino_b + 1000;
	slots[2].usage_ns = 200 * MS;
	ASSERT_EQ(1, cg_report_slots(self->r, slots, 8, 11.0, self->rows, 8));
	EXPECT_GT(1e-9, self->rows[0].cpus - 0.2);
	EXPECT_LT(-1e-9, self->rows[0].cpus - 0.2);
	EXPECT_EQ('#', self->rows[0].path[0]) TH_LOG("a path for an id not in the tree");
}

/* The JSON array and the text forms carry what an operator reads. */
TEST_F(cgstat, json_and_text_name_path_share_limits)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	slots[5].usage_ns += 500 * MS;
	slots[5].throttled_ns += 250 * MS;
	slots[5].nr_throttled = 3;
	slots[5].throttled_at = 1;
	n = cg_report_slots(self->r, slots, 8, 11.0, self->rows, 8);
	ASSERT_EQ(1, n);
	f = open_memstream(&buf, &len);
	ASSERT_TRUE(f != NULL);
	cg_report_json(f, self->rows, n);
	fclose(f);
	EXPECT_TRUE(strstr(buf, ",\"cgroups\":[{\"path\":\"/a/b\",") == buf) TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "\"cpus\":0.500,") != NULL) TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "\"weight\":300,") != NULL) TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "\"quota_us\":50000,\"period_us\":100000,") != NULL)
		TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "\"throttled\":0.250,\"throttled_now\":true,") != NULL)
		TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "\"nr_throttled\":3}]") != NULL) TH_LOG("%s", buf);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	ASSERT_TRUE(f != NULL);
	cg_report_table(f, self->rows, n);
	fclose(f);
	EXPECT_TRUE(strstr(buf, "50000/100000") != NULL) TH_LOG("%s", buf);
	EXPECT_TRUE(strstr(buf, "  /a/b\n") != NULL) TH_LOG("%s", buf);
	free(buf);
}

TEST_HARNESS_MAIN
