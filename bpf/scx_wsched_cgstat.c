// SPDX-License-Identifier: GPL-2.0
/*
 * The loader's per-cgroup figures (the interface: scx_wsched_cgstat.h).
 *
 * Every sample reads all WSCHED_MAX_CGROUPS slots (the loader does not
 * know which are in use: one batch lookup of 144 KiB) and keeps each
 * slot's id, CPU time and throttled time for the next. A slot whose id
 * changed since holds another cgroup: its interval counts from zero.
 * Paths are looked up by walking the cgroup2 mount only when a row's id
 * is not in the cache, once per sample at most.
 */
#include <errno.h>
#include <ftw.h>
#include <mntent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "scx_wsched_cgstat.h"

struct cg_seen {
	__u64 id;
	__u64 usage_ns;
	__u64 throttled_ns;
	char path[CG_PATH_MAX];	/* "" until looked up */
};

struct cg_report {
	char root[CG_PATH_MAX];
	double last;			/* the previous sample's time; 0: none */
	struct cg_seen seen[WSCHED_MAX_CGROUPS];
	struct wsched_cgroup slots[WSCHED_MAX_CGROUPS];
};

/* Where cgroup2 is mounted: the first such mount, or /sys/fs/cgroup. */
static void cgroup2_mount(char *buf, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;

	snprintf(buf, len, "/sys/fs/cgroup");
	while (f && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(buf, len, "%s", m->mnt_dir);
			break;
		}
	if (f)
		endmntent(f);
}

struct cg_report *cg_report_new(const char *root, double since)
{
	struct cg_report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (root)
		snprintf(r->root, sizeof(r->root), "%s", root);
	else
		cgroup2_mount(r->root, sizeof(r->root));
	r->last = since;
	return r;
}

void cg_report_free(struct cg_report *r)
{
	free(r);
}

/* nftw() has no argument for its callback: the walk's state. */
static struct cg_report *walk_r;
static struct cg_row *walk_rows;
static int walk_nr, walk_left;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t rl = strlen(walk_r->root);
	int i;

	(void)ftw;
	if (type != FTW_D)
		return 0;
	for (i = 0; i < walk_nr; i++) {
		if (walk_rows[i].path[0] || walk_rows[i].id != (__u64)st->st_ino)
			continue;
		snprintf(walk_rows[i].path, CG_PATH_MAX, "%s", path[rl] ? path + rl : "/");
		walk_left--;
	}
	return walk_left > 0 ? FTW_CONTINUE : FTW_STOP;
}

/* The rows' paths: from the cache, else from one walk of the mount. */
static void resolve_paths(struct cg_report *r, struct cg_row *rows, int nr)
{
	int i, missing = 0;

	for (i = 0; i < nr; i++) {
		struct cg_seen *s = &r->seen[rows[i].slot];

		rows[i].path[0] = '\0';
		if (s->path[0])
			memcpy(rows[i].path, s->path, CG_PATH_MAX);
		else
			missing++;
	}
	if (missing) {
		walk_r = r;
		walk_rows = rows;
		walk_nr = nr;
		walk_left = missing;
		nftw(r->root, walk_one, 16, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);
	}
	for (i = 0; i < nr; i++) {
		struct cg_seen *s = &r->seen[rows[i].slot];

		if (!rows[i].path[0])	/* removed since: not cached, may come back */
			snprintf(rows[i].path, CG_PATH_MAX, "#%llu", (unsigned long long)rows[i].id);
		else if (!s->path[0])
			memcpy(s->path, rows[i].path, CG_PATH_MAX);
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct cg_row *x = a, *y = b;

	if (x->cpus != y->cpus)
		return x->cpus < y->cpus ? 1 : -1;
	if (x->throttled != y->throttled)
		return x->throttled < y->throttled ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int cg_report_slots(struct cg_report *r, const struct wsched_cgroup *slots, size_t nr,
		    double now, struct cg_row *rows, size_t max)
{
	static struct cg_row all[WSCHED_MAX_CGROUPS];
	double dt = r->last ? now - r->last : 0;
	size_t s, n = 0;

	if (nr > WSCHED_MAX_CGROUPS)
		nr = WSCHED_MAX_CGROUPS;
	for (s = 1; s < nr; s++) {	/* not the root: it holds everything */
		const struct wsched_cgroup *cg = &slots[s];
		struct cg_seen *seen = &r->seen[s];
		__u64 used, thr;

		if (seen->id != cg->id) {
			memset(seen, 0, sizeof(*seen));
			seen->id = cg->id;
		}
		if (!cg->id)
			continue;
		used = cg->usage_ns > seen->usage_ns ? cg->usage_ns - seen->usage_ns : 0;
		thr = cg->throttled_ns > seen->throttled_ns ? cg->throttled_ns - seen->throttled_ns : 0;
		seen->usage_ns = cg->usage_ns;
		seen->throttled_ns = cg->throttled_ns;
		if (dt <= 0 || (!used && !thr))
			continue;
		all[n].id = cg->id;
		all[n].slot = (int)s;
		all[n].cpus = used / 1e9 / dt;
		all[n].throttled = thr / 1e9 / dt > 1 ? 1 : thr / 1e9 / dt;
		all[n].cg = *cg;
		n++;
	}
	r->last = now;
	qsort(all, n, sizeof(all[0]), row_cmp);
	if (n > max)
		n = max;
	memcpy(rows, all, n * sizeof(all[0]));
	resolve_paths(r, rows, (int)n);
	return (int)n;
}

int cg_report_sample(struct cg_report *r, int fd, double now, struct cg_row *rows, size_t max)
{
	static __u32 keys[WSCHED_MAX_CGROUPS];
	__u32 s, n = WSCHED_MAX_CGROUPS, out;
	int err;

	/* one system call for all the slots; one per slot where the kernel
	 * has no batch lookup for arrays */
	err = bpf_map_lookup_batch(fd, NULL, &out, keys, r->slots, &n, NULL);
	if ((err && errno != ENOENT) || n != WSCHED_MAX_CGROUPS) {
		for (s = 0; s < WSCHED_MAX_CGROUPS; s++)
			if (bpf_map_lookup_elem(fd, &s, &r->slots[s]))
				return -1;
	}
	return cg_report_slots(r, r->slots, WSCHED_MAX_CGROUPS, now, rows, max);
}

/* A JSON string: the path, escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void cg_report_json(FILE *f, const struct cg_row *rows, int nr)
{
	int i;

	fprintf(f, ",\"cgroups\":[");
	for (i = 0; i < nr; i++) {
		const struct wsched_cgroup *cg = &rows[i].cg;

		fprintf(f, "%s{\"path\":", i ? "," : "");
		json_str(f, rows[i].path);
		fprintf(f, ",\"id\":%llu,\"slot\":%d,\"cpus\":%.3f,\"usage_us\":%llu,\"weight\":%u,\"idle\":%s,",
			(unsigned long long)cg->id, rows[i].slot, rows[i].cpus,
			(unsigned long long)(cg->usage_ns / 1000), cg->weight,
			cg->idle ? "true" : "false");
		if (cg->quota_ns)
			fprintf(f, "\"quota_us\":%llu,", (unsigned long long)(cg->quota_ns / 1000));
		else
			fprintf(f, "\"quota_us\":null,");
		fprintf(f, "\"period_us\":%llu,\"burst_us\":%llu,\"throttled\":%.3f,"
			"\"throttled_now\":%s,\"throttled_ms\":%llu,\"nr_throttled\":%llu}",
			(unsigned long long)(cg->period_ns / 1000),
			(unsigned long long)(cg->burst_ns / 1000), rows[i].throttled,
			cg->throttled_at ? "true" : "false",
			(unsigned long long)(cg->throttled_ns / 1000000),
			(unsigned long long)cg->nr_throttled);
	}
	fprintf(f, "]");
}

/* cpu.max as the file says it: "max" or "QUOTA PERIOD" (us). */
static void max_str(char *buf, size_t len, const struct wsched_cgroup *cg)
{
	if (cg->quota_ns)
		snprintf(buf, len, "%llu/%llu", (unsigned long long)(cg->quota_ns / 1000),
			 (unsigned long long)(cg->period_ns / 1000));
	else
		snprintf(buf, len, "max");
}

void cg_report_pairs(FILE *f, const struct cg_row *rows, int nr)
{
	char max[48];
	int i;

	for (i = 0; i < nr; i++) {
		const struct wsched_cgroup *cg = &rows[i].cg;

		max_str(max, sizeof(max), cg);
		fprintf(f, "  cgroup=%s cpus=%.3f weight=%u%s max=%s throttled=%.3f"
			" throttled_ms=%llu nr_throttled=%llu\n", rows[i].path, rows[i].cpus,
			cg->weight, cg->idle ? " idle" : "", max, rows[i].throttled,
			(unsigned long long)(cg->throttled_ns / 1000000),
			(unsigned long long)cg->nr_throttled);
	}
}

void cg_report_table(FILE *f, const struct cg_row *rows, int nr)
{
	char max[48], w[16];
	int i;

	if (!nr)
		return;
	fprintf(f, "%8s %6s %6s %15s %6s %8s  %s\n", "", "cpus", "weight", "cpu.max", "thr%",
		"nr_thr", "cgroup");
	for (i = 0; i < nr; i++) {
		const struct wsched_cgroup *cg = &rows[i].cg;

		max_str(max, sizeof(max), cg);
		if (cg->idle)
			snprintf(w, sizeof(w), "idle");
		else
			snprintf(w, sizeof(w), "%u", cg->weight);
		fprintf(f, "%8s %6.2f %6s %15s %6.1f %8llu  %s\n", "", rows[i].cpus, w, max,
			100 * rows[i].throttled, (unsigned long long)cg->nr_throttled, rows[i].path);
	}
}
