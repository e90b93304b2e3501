// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched loader: reads the CPU topology, loads and attaches the BPF
 * scheduler (scx_wsched.bpf.c and its fragments, whose top comments
 * explain the policy), prints its counters, detaches on SIGINT/SIGTERM and
 * reports the exit reason the kernel recorded. When the kernel ejects the
 * scheduler with a restart request (CPU hotplug), it loads it again. While
 * it runs it serves the hint socket (scx_wsched_hintsrv.c,
 * Documentation/abi.md).
 *
 * Exit statuses (one line on stderr says why):
 *   0  detached on request        3  not root
 *   1  load/attach failure, or    4  kernel without sched_ext
 *      the hint socket failed
 *   2  usage, out-of-range arg    5  another sched_ext scheduler is loaded
 *   6  the kernel ejected the scheduler (error, stall, sysrq-S, ...)
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <scx/common.h>
#include <wsched/hint.h>	/* before the skeleton, which uses its types */

#include "llc_internal.h"	/* userspace/lib/: ws_cpu_llc() */
#include "scx_wsched.h"
#include "scx_wsched_cgstat.h"
#include "scx_wsched_hintsrv.h"
#include "scx_wsched.skel.h"

enum {
	EX_OK		= 0,
	EX_LOAD		= 1,
	EX_USAGE	= 2,
	EX_NOT_ROOT	= 3,
	EX_NO_SCX	= 4,
	EX_BUSY		= 5,
	EX_EJECTED	= 6,
};

/* The counters' names, indexed as struct wsched_stats. */
static const char *const stat_names[] = {
#define WSCHED_STAT_NAME(name) #name,
	WSCHED_STATS(WSCHED_STAT_NAME)
#undef WSCHED_STAT_NAME
};
_Static_assert(sizeof(stat_names) / sizeof(stat_names[0]) == WSCHED_NR_STATS,
	       "stat_names[] out of sync with struct wsched_stats");

static const char usage_fmt[] =
"Usage: %s [--slice-us N] [--slice-min-us N] [--slice-lat-us N] [--grace-us N]\n"
"       [--group NAME]\n"
"       [--hint-socket PATH] [--hint-max N] [--hint-user-max N]\n"
"       [--no-hints | --hints-observe] [--stats SECONDS] [--json] [--cgroups N]\n"
"       [--verbose] [--experimental LIST] [--version] [--help]\n"
"       %s --monitor SECONDS [--json] [--cgroups N]\n"
"\n"
"Load scx_wsched, a sched_ext scheduler with per-CPU dispatch deques and\n"
"idle-CPU work stealing; run until SIGINT/SIGTERM, then detach. The design\n"
"(policy, invariants, limits) is the comment at the top of bpf/scx_wsched.bpf.c\n"
"and of the fragments it lists, and Documentation/scheduler.md.\n"
"\n"
"What an operator tunes: the slices (--slice-us, --slice-min-us; both 20000\n"
"for throughput: slices never cut), the cut near tasks that wait for time\n"
"(--slice-lat-us) and the grace of critical sections (--grace-us); who may\n"
"register for hints (--group, --hint-socket, --hint-max, --hint-user-max,\n"
"--no-hints; --hints-observe to count what hints would change).\n"
"--experimental holds the switches kept for A/B measurements.\n"
"\n"
"  --slice-us N       base time slice in microseconds (%d..%d, default %d)\n"
"  --slice-min-us N   the minimum slice, what the base slice is cut down to\n"
"                     on a crowded CPU (%d..the base slice; default 1/4 of\n"
"                     it, at least 100); equal to --slice-us: never cut\n"
"  --slice-lat-us N   what a crowded CPU cuts slices down to instead while\n"
"                     a task woken from an interrupt (a timer, a device) was\n"
"                     queued there within the last base slice (%d..the\n"
"                     minimum slice; default %d, or the minimum slice if\n"
"                     that is less or is the base slice; equal to the\n"
"                     minimum slice: no such cut)\n"
"  --grace-us N       grace slice for a task whose slice ends inside a critical\n"
"                     section (0..%d, default %d; 0: none; Documentation/abi.md)\n"
"  --group NAME       let members of group NAME register for hints (socket mode\n"
"                     0660 root:NAME); default: root only (0600)\n"
"  --hint-socket PATH where processes register for hints (default %s)\n"
"  --hint-max N       slot arrays in all: registered processes, and arrays\n"
"                     still mapped after their connection closed (1..%d,\n"
"                     default %d, 256 KiB each); then -EUSERS\n"
"  --hint-user-max N  slot arrays one user other than root may have (1..%d,\n"
"                     default %d); then -EDQUOT. A user's processes in user\n"
"                     namespaces it made count as its own; a namespace root\n"
"                     made counts as one user\n"
"  --no-hints         serve no hint socket\n"
"  --hints-observe    serve the hint socket, but read the slots only to count\n"
"                     (cs_preempted, cs_yielded) and act on no hint: no grace,\n"
"                     thief demotion, worker preference or hint-slot yield\n"
"                     (the hints-off baseline of the same counts)\n"
"  --stats SECONDS    print the counters every SECONDS (1..3600), and once more\n"
"                     on exit; totals since load; hint_procs: processes\n"
"                     registered for hints now; hint_arrays_lingering: arrays\n"
"                     still mapped after their connection closed;\n"
"                     hint_refused_quota: connections refused by the user's\n"
"                     quota; hint_threads_refused: the registered processes'\n"
"                     threads that found no free slot (as the processes say)\n"
"  --monitor SECONDS  load nothing: print the counters of the scx_wsched that\n"
"                     is running every SECONDS (1..3600), as a table of rates\n"
"                     per second, or with --json as --stats prints them\n"
"                     (totals since its load); until SIGINT/SIGTERM or until\n"
"                     that scheduler is gone\n"
"  --json             print the counters as one JSON object per line\n"
"  --cgroups N        with --stats and --monitor: also the N cgroups that used\n"
"                     the most CPU time since the line before (0..%d, default\n"
"                     %d; 0: none), each with its CPU time in CPUs, cpu.weight,\n"
"                     cpu.max, the fraction of the interval it was throttled\n"
"                     and how often it was; as the array \"cgroups\" with --json\n"
"  --verbose          libbpf debug output and load details on stderr\n"
"  --version          print the version and exit\n"
"  --help             print this help and exit\n"
"  --experimental LIST  switches for A/B measurements, not for tuning: a\n"
"                     comma-separated list of\n"
"                     no-slice-timer: end a slice on a crowded CPU at the\n"
"                       tick after it ran out, not on time by a timer armed\n"
"                       at the tick before (armed while a task woken from an\n"
"                       interrupt is recent)\n"
"                     wake-preempt-us=N: how long a task runs before a task\n"
"                       woken from an interrupt (a timer, a device) that is\n"
"                       earlier in vtime may preempt it (0..%d, default %d;\n"
"                       0: no wakeup preemption at all); a CPU-bound task\n"
"                       also yields, once it ran 1 ms, to one woken from\n"
"                       another CPU after sleeping 30 us or more; a CPU is\n"
"                       preempted so at most 4 times in a row and once a\n"
"                       millisecond on average; never a registered\n"
"                       process's threads\n"
"                     (the old spellings --no-slice-timer and\n"
"                     --wake-preempt-us are refused with a line that says so)\n"
"\n"
"Exit status: 0 detached on request (--monitor: stopped, or the scheduler it\n"
"read is gone), 1 load failure (--monitor: no scx_wsched running), 2 bad usage, 3 not root,\n"
"4 no sched_ext in this kernel, 5 another sched_ext scheduler is loaded,\n"
"6 the kernel ejected the scheduler (its recorded reason is printed).\n";

static volatile sig_atomic_t exit_req;
static struct hint_server *hint_srv;	/* NULL: --no-hints */
static bool verbose;
static const char *prog = "scx_wsched";

static void on_signal(int sig)
{
	exit_req = 1;
}

/* SIGINT and SIGTERM ask the main loop to stop (exit_req). */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see --help)\n");
	exit(EX_USAGE);
}

/* Strict decimal in [lo, hi]; anything else is a usage error. */
static unsigned long parse_ulong(const char *opt, const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+')
		goto bad;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		goto bad;
	return v;
bad:
	fprintf(stderr, "%s: %s must be an integer in %lu..%lu, not '%s'\n",
		prog, opt, lo, hi, s ? s : "");
	exit(EX_USAGE);
}

static int read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static long read_long(const char *path)
{
	char buf[64];

	if (read_str(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * The key of @cpu's LLC, the same for every CPU that shares it:
 * ws_cpu_llc(), the first CPU of the highest-level cache's shared_cpu_list;
 * without cache information, the physical package (past every CPU number);
 * without that, one LLC for all.
 */
static long cpu_llc_key(int cpu)
{
	char path[256];
	long key = ws_cpu_llc(cpu);

	if (key >= 0)
		return key;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
	key = read_long(path);
	return key >= 0 ? key + 100000 : 0;
}

static int setup_topology(struct scx_wsched *skel, int nr_cpus)
{
	static long keys[WSCHED_MAX_LLCS];
	int cpu, llc, nr_llcs = 0, slot = 0;

	for (cpu = 0; cpu < nr_cpus; cpu++) {
		long key = cpu_llc_key(cpu);

		for (llc = 0; llc < nr_llcs; llc++)
			if (keys[llc] == key)
				break;
		if (llc == nr_llcs)
			keys[nr_llcs++] = key;
		skel->rodata->cpu_llc[cpu] = llc;
	}
	for (llc = 0; llc < nr_llcs; llc++) {
		skel->rodata->llc_start[llc] = slot;
		for (cpu = 0; cpu < nr_cpus; cpu++)
			if ((int)skel->rodata->cpu_llc[cpu] == llc)
				skel->rodata->llc_cpus[slot++] = cpu;
		skel->rodata->llc_len[llc] = slot - skel->rodata->llc_start[llc];
	}
	skel->rodata->nr_llcs = nr_llcs;
	return nr_llcs;
}

/* The counters of the stats map @fd summed over @nr_cpus CPUs (zeros if
 * it cannot be read); -1 once the map is gone. */
static int read_stats(int fd, int nr_cpus, __u64 *out)
{
	struct wsched_stats vals[nr_cpus];
	__u32 zero = 0;
	int cpu;
	size_t i;

	memset(out, 0, sizeof(__u64) * WSCHED_NR_STATS);
	if (bpf_map_lookup_elem(fd, &zero, vals))
		return -1;
	for (cpu = 0; cpu < nr_cpus; cpu++)
		for (i = 0; i < WSCHED_NR_STATS; i++)
			out[i] += ((__u64 *)&vals[cpu])[i];
	return 0;
}

static double now_s(void);

/* The --cgroups rows of @rep from map @fd now (none with @max 0, or if
 * the map cannot be read). */
static int cgroup_rows(struct cg_report *rep, int fd, struct cg_row *rows, size_t max)
{
	int n;

	if (!rep || !max || fd < 0)
		return 0;
	n = cg_report_sample(rep, fd, now_s(), rows, max);
	return n > 0 ? n : 0;
}

static void print_stats(struct scx_wsched *skel, int nr_cpus, bool json, size_t cgroups,
			struct cg_report *rep, double secs)
{
	static struct cg_row rows[WSCHED_MAX_CGROUPS];
	__u64 v[WSCHED_NR_STATS];
	struct hint_server_counts hc;
	size_t i;
	int nr;

	read_stats(bpf_map__fd(skel->maps.wsched_stats), nr_cpus, v);
	hint_server_counts(hint_srv, &hc);
	nr = cgroup_rows(rep, bpf_map__fd(skel->maps.wsched_cgroups), rows, cgroups);
	if (json) {
		printf("{\"time_s\":%.1f", secs);
		for (i = 0; i < WSCHED_NR_STATS; i++)
			printf(",\"%s\":%llu", stat_names[i], (unsigned long long)v[i]);
		printf(",\"hint_procs\":%d,\"hint_arrays_lingering\":%d,\"hint_refused_quota\":%lu,"
		       "\"hint_threads_refused\":%lu", hc.nr_procs, hc.nr_arrays_lingering,
		       hc.nr_refused_quota, hc.nr_threads_refused);
		if (cgroups)
			cg_report_json(stdout, rows, nr);
		printf("}\n");
	} else {
		printf("%7.1fs", secs);
		for (i = 0; i < WSCHED_NR_STATS; i++)
			printf(" %s=%llu", stat_names[i] + 3, (unsigned long long)v[i]);
		printf(" hint_procs=%d hint_arrays_lingering=%d hint_refused_quota=%lu"
		       " hint_threads_refused=%lu\n", hc.nr_procs, hc.nr_arrays_lingering,
		       hc.nr_refused_quota, hc.nr_threads_refused);
		cg_report_pairs(stdout, rows, nr);
	}
	fflush(stdout);
}

/*
 * The kernel's enum scx_exit_kind (the values of its ABI; the enum itself
 * is in vmlinux.h, which only the BPF side includes). Kinds from
 * EXIT_ERROR up are errors.
 */
enum exit_kind {
	EXIT_NONE		= 0,
	EXIT_DONE		= 1,
	EXIT_UNREG		= 64,	/* user space unregistered us (our own exit) */
	EXIT_UNREG_BPF		= 65,
	EXIT_UNREG_KERN		= 66,
	EXIT_SYSRQ		= 67,
	EXIT_ERROR		= 1024,
	EXIT_ERROR_BPF		= 1025,
	EXIT_ERROR_STALL	= 1026,
};

static const char *exit_kind_name(int kind)
{
	switch (kind) {
	case EXIT_NONE:		return "none";
	case EXIT_DONE:		return "done";
	case EXIT_UNREG:	return "unregistered";
	case EXIT_UNREG_BPF:	return "unregistered by BPF";
	case EXIT_UNREG_KERN:	return "unregistered by the kernel";
	case EXIT_SYSRQ:	return "sysrq-S";
	case EXIT_ERROR:	return "error";
	case EXIT_ERROR_BPF:	return "BPF error";
	case EXIT_ERROR_STALL:	return "stall";
	default:		return kind >= EXIT_ERROR ? "error" : "other";
	}
}

/* --verbose: what the verifier processed for each program; a load's time
 * grows with this count. */
static void print_verified(struct bpf_object *obj)
{
	struct bpf_program *p;
	unsigned long long sum = 0;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len))
			continue;
		fprintf(stderr, "%s: verified %s: %u instructions processed, %u in the program\n",
			prog, bpf_program__name(p), info.verified_insns, info.xlated_prog_len / (__u32)sizeof(struct bpf_insn));
		sum += info.verified_insns;
	}
	fprintf(stderr, "%s: verified: %llu instructions processed in all\n", prog, sum);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep @s seconds, or until a signal's handler runs (nanosleep() is never
 * restarted after one). */
static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* The fd of the newest BPF map named @name (the last loaded) of @type with
 * values of @size, or -1. */
static int map_fd_by_name(const char *name, __u32 type, __u32 size)
{
	__u32 id = 0, best = 0;
	int fd;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0)
			continue;
		if (!bpf_map_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, name) &&
		    info.type == type && info.value_size == size)
			best = id;
		close(fd);
	}
	return best ? bpf_map_get_fd_by_id(best) : -1;
}

/* The index of counter @field in struct wsched_stats read as an array. */
#define STAT_IDX(field) (offsetof(struct wsched_stats, field) / sizeof(__u64))

/* What --monitor's table shows: the counters a user reads most. */
static const struct {
	const char *head;
	size_t idx;
} monitor_cols[] = {
	{ "enqueue", STAT_IDX(nr_enqueued) },	{ "direct", STAT_IDX(nr_direct_dispatch) },
	{ "local", STAT_IDX(nr_dispatched_local) }, { "steals", STAT_IDX(nr_steals) },
	{ "kicks", STAT_IDX(nr_kicks) },	{ "keep", STAT_IDX(nr_keep_running) },
	{ "short", STAT_IDX(nr_short_slices) },	{ "idle", STAT_IDX(nr_dispatch_idle) },
	{ "yields", STAT_IDX(nr_yield_all) },	{ "yieldto", STAT_IDX(nr_yield_to) },
	{ "graces", STAT_IDX(nr_grace_granted) }, { "cs_pre", STAT_IDX(nr_cs_preempted) },
};

/*
 * --monitor: read the counters of the scx_wsched that runs (loaded by
 * another loader, a service say) every @secs seconds. Nothing is loaded,
 * so this may run beside that loader; it needs the privilege to read BPF
 * maps (root).
 */
static int monitor(unsigned long secs, bool json, size_t cgroups, const char *scx_sysfs)
{
	static struct cg_row rows[WSCHED_MAX_CGROUPS];
	size_t cols = sizeof(monitor_cols) / sizeof(monitor_cols[0]), c, i;
	__u64 prev[WSCHED_NR_STATS], cur[WSCHED_NR_STATS];
	char path[512], state[64] = "?", ops[128] = "?";
	int nr_cpus = libbpf_num_possible_cpus(), fd, cg_fd = -1, lines = 0, nr;
	double t0 = now_s(), t_prev = t0, t, left;
	struct cg_report *rep = NULL;

	if (geteuid() != 0) {
		fprintf(stderr, "%s: must run as root to read the scheduler's counters\n", prog);
		return EX_NOT_ROOT;
	}
	catch_signals();
	snprintf(path, sizeof(path), "%s/state", scx_sysfs);
	if (read_str(path, state, sizeof(state))) {
		fprintf(stderr, "%s: this kernel has no sched_ext (%s missing)\n", prog, path);
		return EX_NO_SCX;
	}
	snprintf(path, sizeof(path), "%s/root/ops", scx_sysfs);
	read_str(path, ops, sizeof(ops));
	if (strcmp(state, "enabled") || strcmp(ops, "wsched")) {
		fprintf(stderr, "%s: no scx_wsched is running (sched_ext state %s, ops %s)\n",
			prog, state, ops);
		return EX_LOAD;
	}
	fd = nr_cpus > 0 ? map_fd_by_name("wsched_stats", BPF_MAP_TYPE_PERCPU_ARRAY,
					  sizeof(struct wsched_stats)) : -1;
	if (fd < 0 || read_stats(fd, nr_cpus, prev)) {
		fprintf(stderr, "%s: cannot read the running scheduler's counters (%s)\n", prog,
			errno == EPERM ? "not allowed: run as root" : "map wsched_stats not found");
		return EX_LOAD;
	}
	if (cgroups) {
		cg_fd = map_fd_by_name("wsched_cgroups", BPF_MAP_TYPE_ARRAY,
				       sizeof(struct wsched_cgroup));
		rep = cg_fd >= 0 ? cg_report_new(NULL, 0) : NULL;
		if (!rep)
			fprintf(stderr, "%s: no per-cgroup figures: the running scheduler has no map "
				"wsched_cgroups of this version\n", prog);
		cgroup_rows(rep, cg_fd, rows, cgroups);	/* the baseline */
	}
	while (!exit_req) {
		/* One sleep to the next line, which a signal ends early: a
		 * monitor woken every 100 ms by a timer would be a task that
		 * waits for time to the scheduler it watches, which serves
		 * such tasks with shorter slices and its slice timer. */
		for (t = now_s(); !exit_req && (left = t + secs - now_s()) > 0;)
			sleep_s(left);
		if (exit_req)
			break;
		if (read_stats(fd, nr_cpus, cur)) {
			fprintf(stderr, "%s: the scheduler is gone\n", prog);
			break;
		}
		t = now_s();
		nr = cgroup_rows(rep, cg_fd, rows, cgroups);
		if (json) {
			printf("{\"time_s\":%.1f", t - t0);
			for (i = 0; i < WSCHED_NR_STATS; i++)
				printf(",\"%s\":%llu", stat_names[i], (unsigned long long)cur[i]);
			if (rep)
				cg_report_json(stdout, rows, nr);
			printf("}\n");
		} else {
			if (lines++ % 20 == 0) {
				printf("%8s", "time_s");
				for (c = 0; c < cols; c++)
					printf(" %8s", monitor_cols[c].head);
				printf("   (per second)\n");
			}
			printf("%8.1f", t - t0);
			for (c = 0; c < cols; c++) {
				i = monitor_cols[c].idx;
				printf(" %8.0f", (cur[i] - prev[i]) / (t - t_prev));
			}
			printf("\n");
			cg_report_table(stdout, rows, nr);
		}
		fflush(stdout);
		memcpy(prev, cur, sizeof(prev));
		t_prev = t;
	}
	cg_report_free(rep);
	if (cg_fd >= 0)
		close(cg_fd);
	close(fd);
	return EX_OK;
}

/* The command line. */
struct opts {
	unsigned long slice_us;
	unsigned long min_slice_us;
	unsigned long lat_slice_us;
	unsigned long wake_preempt_us;	/* --experimental wake-preempt-us=N */
	bool slice_timer;		/* not --experimental no-slice-timer */
	unsigned long grace_us;
	const char *hint_path;
	long hint_gid;			/* --group, -1: root only */
	unsigned long hint_max;
	unsigned long hint_user_max;
	bool hints;			/* serve the hint socket (not --no-hints) */
	bool observe;			/* --hints-observe */
	unsigned long stats_s;		/* 0: no --stats */
	unsigned long monitor_s;	/* --monitor: read, do not load */
	bool json;
	unsigned long cgroups;		/* --cgroups */
};

static const struct option longopts[] = {
	{ "slice-us",	required_argument,	NULL, 's' },
	{ "slice-min-us", required_argument,	NULL, 'm' },
	{ "slice-lat-us", required_argument,	NULL, 'L' },
	{ "experimental", required_argument,	NULL, 'X' },
	/* The old spellings of two --experimental switches: refused, with a
	 * line naming the switch. */
	{ "wake-preempt-us", required_argument,	NULL, 'w' },
	{ "no-slice-timer", no_argument,	NULL, 'T' },
	{ "grace-us",	required_argument,	NULL, 'g' },
	{ "group",	required_argument,	NULL, 'G' },
	{ "hint-socket", required_argument,	NULL, 'P' },
	{ "hint-max",	required_argument,	NULL, 'H' },
	{ "hint-user-max", required_argument,	NULL, 'U' },
	{ "no-hints",	no_argument,		NULL, 'n' },
	{ "hints-observe", no_argument,		NULL, 'O' },
	{ "stats",	required_argument,	NULL, 'S' },
	{ "monitor",	required_argument,	NULL, 'M' },
	{ "json",	no_argument,		NULL, 'j' },
	{ "cgroups",	required_argument,	NULL, 'C' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "version",	no_argument,		NULL, 'V' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void print_usage(void)
{
	printf(usage_fmt, prog, prog, WSCHED_SLICE_US_MIN, WSCHED_SLICE_US_MAX, WSCHED_SLICE_US_DFL,
	       WSCHED_SLICE_US_MIN, WSCHED_SLICE_US_MIN, WSCHED_SLICE_LAT_US_DFL,
	       WSCHED_GRACE_US_MAX, WSCHED_GRACE_US_DFL, WS_HINT_SOCK_PATH,
	       (int)WS_HINT_MAX_PROCS, (int)WS_HINT_MAX_PROCS, (int)WS_HINT_MAX_PROCS,
	       HINT_USER_MAX_DFL, WSCHED_MAX_CGROUPS, CG_REPORT_MAX_DFL,
	       WSCHED_SLICE_US_MAX, WSCHED_WAKE_PREEMPT_US_DFL);
}

/* --experimental LIST: a comma-separated list of switches, into @o. */
static void parse_experimental(const char *list, struct opts *o)
{
	char buf[256], *save = NULL, *sw, *val;
	int n = 0;

	if (strlen(list) >= sizeof(buf))
		die_usage("--experimental: list too long: '%s'", list);
	strcpy(buf, list);
	for (sw = strtok_r(buf, ",", &save); sw; sw = strtok_r(NULL, ",", &save), n++) {
		val = strchr(sw, '=');
		if (val)
			*val++ = '\0';
		if (!strcmp(sw, "no-slice-timer") && !val)
			o->slice_timer = false;
		else if (!strcmp(sw, "wake-preempt-us") && val)
			o->wake_preempt_us = parse_ulong("--experimental wake-preempt-us", val, 0,
							 WSCHED_SLICE_US_MAX);
		else
			die_usage("--experimental: no switch '%s' (no-slice-timer, wake-preempt-us=N)",
				  sw);
	}
	if (!n)
		die_usage("--experimental: no switch in '%s' (no-slice-timer, wake-preempt-us=N)",
			  list);
}

/*
 * Fill @o from the command line and check it (a usage error exits). Returns
 * -1 to go on, or the exit status when there is nothing more to do
 * (--help, --version, an unknown option).
 */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	char load_opt[32] = "";		/* the last option that only loading takes */
	int opt, li = -1;		/* getopt_long's index of a long option */

	*o = (struct opts){
		.slice_us = WSCHED_SLICE_US_DFL,
		.min_slice_us = 0,	/* 0: the default, from slice_us */
		.lat_slice_us = 0,	/* 0: the default, from min_slice_us */
		.wake_preempt_us = WSCHED_WAKE_PREEMPT_US_DFL,
		.slice_timer = true,
		.grace_us = WSCHED_GRACE_US_DFL,
		.hint_path = WS_HINT_SOCK_PATH,
		.hint_gid = -1,
		.hint_max = WS_HINT_MAX_PROCS,
		.hint_user_max = HINT_USER_MAX_DFL,
		.hints = true,
		.cgroups = CG_REPORT_MAX_DFL,
	};
	while ((opt = getopt_long(argc, argv, "s:m:L:X:g:G:P:H:U:nOS:M:jC:vVh", longopts, &li)) != -1) {
		switch (opt) {
		case 's':
			o->slice_us = parse_ulong("--slice-us", optarg, WSCHED_SLICE_US_MIN,
						  WSCHED_SLICE_US_MAX);
			break;
		case 'm':
			o->min_slice_us = parse_ulong("--slice-min-us", optarg, WSCHED_SLICE_US_MIN,
						      WSCHED_SLICE_US_MAX);
			break;
		case 'L':
			o->lat_slice_us = parse_ulong("--slice-lat-us", optarg, WSCHED_SLICE_US_MIN,
						      WSCHED_SLICE_US_MAX);
			break;
		case 'X':
			parse_experimental(optarg, o);
			break;
		case 'w':
			die_usage("%s is an experimental switch: --experimental wake-preempt-us=N",
				  "--wake-preempt-us");
			break;
		case 'T':
			die_usage("%s is an experimental switch: --experimental no-slice-timer",
				  "--no-slice-timer");
			break;
		case 'g':
			o->grace_us = parse_ulong("--grace-us", optarg, 0, WSCHED_GRACE_US_MAX);
			break;
		case 'G':
			o->hint_gid = hint_parse_group(optarg);
			if (o->hint_gid < 0)
				die_usage("--group: no such group '%s'", optarg);
			break;
		case 'P':
			o->hint_path = optarg;
			if (optarg[0] != '/' || strlen(optarg) >= HINT_SOCK_PATH_SIZE)
				die_usage("--hint-socket must be an absolute path shorter than 108 bytes, not '%s'",
					  optarg);
			break;
		case 'H':
			o->hint_max = parse_ulong("--hint-max", optarg, 1, WS_HINT_MAX_PROCS);
			break;
		case 'U':
			o->hint_user_max = parse_ulong("--hint-user-max", optarg, 1, WS_HINT_MAX_PROCS);
			break;
		case 'n':
			o->hints = false;
			break;
		case 'O':
			o->observe = true;
			break;
		case 'S':
			o->stats_s = parse_ulong("--stats", optarg, 1, 3600);
			break;
		case 'M':
			o->monitor_s = parse_ulong("--monitor", optarg, 1, 3600);
			break;
		case 'j':
			o->json = true;
			break;
		case 'C':
			o->cgroups = parse_ulong("--cgroups", optarg, 0, WSCHED_MAX_CGROUPS);
			break;
		case 'v':
			verbose = true;
			break;
		case 'V':
			printf("scx_wsched %s\n", WSCHED_VERSION);
			return EX_OK;
		case 'h':
			print_usage();
			return EX_OK;
		default:
			fprintf(stderr, "%s: bad usage (see --help)\n", prog);
			return EX_USAGE;
		}
		if (opt != 'j' && opt != 'M' && opt != 'C') {
			if (li >= 0)
				snprintf(load_opt, sizeof(load_opt), "--%s", longopts[li].name);
			else
				snprintf(load_opt, sizeof(load_opt), "-%c", opt);
		}
		li = -1;
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (o->monitor_s) {
		if (load_opt[0])
			die_usage("--monitor loads nothing and takes only --json and --cgroups, not %s",
				  load_opt);
		return -1;
	}
	if (o->min_slice_us > o->slice_us) {
		fprintf(stderr, "%s: --slice-min-us must be at most the base slice (--slice-us %lu), not %lu\n",
			prog, o->slice_us, o->min_slice_us);
		return EX_USAGE;
	}
	if (!o->min_slice_us)	/* 1/4 of the base, not below 100 us (the base is not) */
		o->min_slice_us = o->slice_us / 4 > WSCHED_SLICE_US_MIN ? o->slice_us / 4 :
									  WSCHED_SLICE_US_MIN;
	if (o->lat_slice_us > o->min_slice_us) {
		fprintf(stderr, "%s: --slice-lat-us must be at most the minimum slice (--slice-min-us %lu), not %lu\n",
			prog, o->min_slice_us, o->lat_slice_us);
		return EX_USAGE;
	}
	/* Default: 1 ms, or the minimum slice if less; none where the
	 * minimum slice is the base slice (never cut). */
	if (!o->lat_slice_us)
		o->lat_slice_us = o->min_slice_us < WSCHED_SLICE_LAT_US_DFL ||
				  o->min_slice_us == o->slice_us ? o->min_slice_us :
								   WSCHED_SLICE_LAT_US_DFL;
	if (o->observe && !o->hints)
		die_usage("--hints-observe excludes %s: it needs the hint socket", "--no-hints");
	return -1;
}

/* Whether this process may load a scheduler here: root, a kernel with
 * sched_ext, no other scheduler loaded. EX_OK, or the exit status. */
static int check_loadable(const char *scx_sysfs)
{
	char path[512], state[256], ops[128] = "?";

	if (geteuid() != 0) {
		fprintf(stderr, "%s: must run as root to load a sched_ext scheduler\n", prog);
		return EX_NOT_ROOT;
	}
	snprintf(path, sizeof(path), "%s/state", scx_sysfs);
	if (read_str(path, state, sizeof(state))) {
		fprintf(stderr, "%s: this kernel has no sched_ext (%s missing; needs CONFIG_SCHED_CLASS_EXT=y)\n",
			prog, path);
		return EX_NO_SCX;
	}
	if (strcmp(state, "disabled")) {
		snprintf(path, sizeof(path), "%s/root/ops", scx_sysfs);
		read_str(path, ops, sizeof(ops));
		fprintf(stderr, "%s: another sched_ext scheduler is loaded (state %s, ops %s)\n",
			prog, state, ops);
		return EX_BUSY;
	}
	return EX_OK;
}

/* Whether struct sched_ext_ops in the kernel's @btf has @member (true
 * without BTF to tell: libbpf then says what it misses). */
static bool kernel_ops_has(const struct btf *btf, const char *member)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	if (!btf)
		return true;
	id = btf__find_by_name_kind(btf, "sched_ext_ops", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (i = 0, m = t ? btf_members(t) : NULL; t && i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return true;
	return false;
}

/*
 * The cgroup ops the kernel lacks are left out of the ops table (libbpf
 * refuses a member the kernel does not know), said once: without
 * ops.cgroup_init (no CONFIG_EXT_GROUP_SCHED) no cgroup limit is seen,
 * without ops.cgroup_set_bandwidth (before 6.17) cpu.max is not, without
 * ops.cgroup_set_idle (before 6.19) cpu.idle is not.
 */
static void configure_cgroups(struct scx_wsched *skel)
{
	typeof(skel->struct_ops.wsched_ops) ops = skel->struct_ops.wsched_ops;
	struct btf *btf = btf__load_vmlinux_btf();
	static bool said;

	if (!kernel_ops_has(btf, "cgroup_init")) {
		ops->cgroup_init = NULL;
		ops->cgroup_exit = NULL;
		ops->cgroup_set_weight = NULL;
		ops->cgroup_set_bandwidth = NULL;
		ops->cgroup_set_idle = NULL;
		if (!said)
			fprintf(stderr, "%s: this kernel has no sched_ext cgroup support "
				"(CONFIG_EXT_GROUP_SCHED): cpu.weight and cpu.max are not enforced\n",
				prog);
	} else {
		if (!kernel_ops_has(btf, "cgroup_set_bandwidth")) {
			ops->cgroup_set_bandwidth = NULL;
			if (!said)
				fprintf(stderr, "%s: this kernel has no ops.cgroup_set_bandwidth "
					"(6.17 and later): cpu.max is not enforced\n", prog);
		}
		if (!kernel_ops_has(btf, "cgroup_set_idle")) {
			ops->cgroup_set_idle = NULL;
			if (!said)
				fprintf(stderr, "%s: this kernel has no ops.cgroup_set_idle "
					"(6.19 and later): cpu.idle is not enforced\n", prog);
		}
	}
	said = true;
	btf__free(btf);
}

/* Set the tunables and the topology in the opened object, before its load.
 * Returns the number of LLCs. */
static int configure(struct scx_wsched *skel, const struct opts *o, int nr_cpus)
{
	long seq = scx_hotplug_seq();
	int nr_llcs;

	if (seq >= 0)
		skel->struct_ops.wsched_ops->hotplug_seq = seq;
	/* No SCX_ENUM_INIT(): the BPF side relocates its enums (CO-RE). */
	skel->rodata->slice_ns = o->slice_us * 1000ULL;
	skel->rodata->min_slice_ns = o->min_slice_us * 1000ULL;
	skel->rodata->lat_slice_ns = o->lat_slice_us * 1000ULL;
	skel->rodata->wake_preempt_ns = o->wake_preempt_us * 1000ULL;
	skel->rodata->slice_end_timer = o->slice_timer;
	skel->rodata->grace_ns = o->grace_us * 1000ULL;
	skel->rodata->hint_observe = o->observe;
	skel->rodata->nr_cpus = nr_cpus;
	/* getpid() is the kernel's id only in the initial PID namespace. */
	if (pid_ns_initial() == 1)
		skel->rodata->loader_tgid = getpid();
	/* After hotplug_seq: a change of SMT since is a restart. Unknown
	 * (no such file) counts as SMT: select_cpu's shortcut stays off. */
	skel->rodata->smt_active = read_long("/sys/devices/system/cpu/smt/active") != 0;
	nr_llcs = setup_topology(skel, nr_cpus);
	configure_cgroups(skel);
	UEI_SET_SIZE(skel, wsched_ops, uei);
	return nr_llcs;
}

/* Until a signal or the scheduler's exit: serve the hint socket, print the
 * counters every --stats seconds. */
static void serve(struct scx_wsched *skel, const struct opts *o, int nr_cpus,
		  struct cg_report *rep, double t0)
{
	double next = t0 + o->stats_s;

	while (!exit_req && !UEI_EXITED(skel, uei)) {
		hint_server_poll(hint_srv, 100);	/* or sleeps 100 ms */
		if (o->stats_s && now_s() >= next) {
			print_stats(skel, nr_cpus, o->json, o->cgroups, rep, now_s() - t0);
			next += o->stats_s;
		}
	}
}

/*
 * Print the exit the kernel recorded (and its debug dump after an error).
 * Sets *@restart when the kernel asked for a restart we should honour.
 * Returns EX_OK, or EX_EJECTED when the kernel ejected the scheduler.
 */
static int report_exit(struct scx_wsched *skel, bool *restart)
{
	struct user_exit_info *ei = &skel->data->uei;

	if (ei->kind >= EXIT_ERROR && skel->data_uei_dump->uei_dump[0])
		fprintf(stderr, "%s: kernel debug dump:\n%s\n", prog, skel->data_uei_dump->uei_dump);
	fprintf(stderr, "%s: exit: %s", prog, ei->reason[0] ? ei->reason : "(no reason recorded)");
	if (ei->msg[0])
		fprintf(stderr, " (%s)", ei->msg);
	fprintf(stderr, " [kind %d %s, code %#llx]\n", ei->kind, exit_kind_name(ei->kind),
		(unsigned long long)ei->exit_code);

	if (!exit_req && UEI_ECODE_RESTART(ei->exit_code)) {
		fprintf(stderr, "%s: the kernel asked for a restart: loading again\n", prog);
		*restart = true;
	} else if (ei->kind != EXIT_UNREG && ei->kind != EXIT_NONE) {
		/* Anything but our own unregister: the kernel ejected us. */
		return EX_EJECTED;
	}
	return EX_OK;
}

/*
 * One life of the scheduler: open, configure, load and attach it, serve
 * until it exits or a signal asks us to stop, then report why it exited.
 * Sets *@restart when it is to be loaded again (the kernel asked, after
 * CPU hotplug). Returns the exit status.
 */
static int load_and_run(const struct opts *o, int nr_cpus, bool *restart)
{
	double t0, t_open = now_s(), t_load;
	struct cg_report *rep = NULL;
	struct scx_wsched *skel;
	struct bpf_link *link, *exec_link;
	int err, nr_llcs, status;

	*restart = false;
	skel = scx_wsched__open();
	if (!skel) {
		fprintf(stderr, "%s: cannot open the BPF object: %s\n", prog, strerror(errno));
		return EX_LOAD;
	}
	nr_llcs = configure(skel, o, nr_cpus);
	err = scx_wsched__load(skel);
	if (err) {
		fprintf(stderr, "%s: cannot load the BPF scheduler: %s (run with --verbose for the verifier log)\n",
			prog, strerror(-err));
		scx_wsched__destroy(skel);
		return EX_LOAD;
	}
	t_load = now_s();
	if (verbose)
		print_verified(skel->obj);
	/* Before any registration: an exec must always end one. */
	exec_link = bpf_program__attach(skel->progs.wsched_exec);
	if (!exec_link) {
		fprintf(stderr, "%s: cannot attach the exec hook (tp_btf/sched_process_exec): %s\n",
			prog, strerror(errno));
		scx_wsched__destroy(skel);
		return EX_LOAD;
	}
	hint_server_attach(hint_srv, &(struct hint_bpf){
		.outer_fd = bpf_map__fd(skel->maps.hint_procs),
		.live = &skel->bss->hint_procs_live,
		.buckets = skel->bss->hint_tgid_buckets,
		.execd_fd = bpf_map__fd(skel->maps.hint_execd),
		.execd_live = &skel->bss->hint_execd_live,
		.execd_lost = &skel->bss->hint_execd_lost,
	});
	bpf_map__set_autoattach(skel->maps.wsched_ops, false);
	link = bpf_map__attach_struct_ops(skel->maps.wsched_ops);
	if (!link) {
		err = errno;
		hint_server_detach(hint_srv);
		bpf_link__destroy(exec_link);
		scx_wsched__destroy(skel);
		if (err == EBUSY || err == EEXIST || err == EALREADY) {
			fprintf(stderr, "%s: another sched_ext scheduler is loaded (attach: %s)\n",
				prog, strerror(err));
			return EX_BUSY;
		}
		fprintf(stderr, "%s: cannot attach the scheduler: %s\n", prog, strerror(err));
		return EX_LOAD;
	}
	if (verbose)
		fprintf(stderr, "%s: attached: %d CPUs, %d LLCs, slice %lu us, hints %s; "
			"open and load (verifier) %.2f s, attach %.2f s\n",
			prog, nr_cpus, nr_llcs, o->slice_us,
			!o->hints ? "off" : o->observe ? "observed only" : "on",
			t_load - t_open, now_s() - t_load);

	t0 = now_s();
	if (o->stats_s && o->cgroups)
		rep = cg_report_new(NULL, t0);	/* the first line counts from the load */
	serve(skel, o, nr_cpus, rep, t0);
	bpf_link__destroy(link);
	if (o->stats_s)
		print_stats(skel, nr_cpus, o->json, o->cgroups, rep, now_s() - t0);
	cg_report_free(rep);
	status = report_exit(skel, restart);
	hint_server_detach(hint_srv);
	bpf_link__destroy(exec_link);
	scx_wsched__destroy(skel);
	return status;
}

int main(int argc, char **argv)
{
	const char *scx_sysfs = getenv("WSCHED_SCX_SYSFS") ?: "/sys/kernel/sched_ext";
	struct opts o;
	char why[512];
	int nr_cpus, status;
	bool restart;

	prog = argv[0] && strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : "scx_wsched";
	status = parse_opts(argc, argv, &o);
	if (status >= 0)
		return status;
	if (o.monitor_s)
		return monitor(o.monitor_s, o.json, o.cgroups, scx_sysfs);

	status = check_loadable(scx_sysfs);
	if (status != EX_OK)
		return status;
	nr_cpus = libbpf_num_possible_cpus();
	if (nr_cpus <= 0 || nr_cpus > WSCHED_MAX_CPUS) {
		fprintf(stderr, "%s: %d possible CPUs, supported 1..%d\n", prog, nr_cpus, WSCHED_MAX_CPUS);
		return EX_LOAD;
	}
	if (o.hints) {
		hint_srv = hint_server_start(o.hint_path, o.hint_gid, (int)o.hint_max,
					     (int)o.hint_user_max, why, sizeof(why));
		if (!hint_srv) {
			fprintf(stderr, "%s: hint socket: %s (or run with --no-hints)\n", prog, why);
			return EX_LOAD;
		}
	}
	libbpf_set_print(libbpf_print);
	catch_signals();

	do
		status = load_and_run(&o, nr_cpus, &restart);
	while (restart);
	hint_server_stop(hint_srv);
	return status;
}
