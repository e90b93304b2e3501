// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched-run: run an unmodified, dynamically linked program with
 * libwsched-preload.so, so that scx_wsched sees its threads' locks and
 * yields (Documentation/wsched-run.md). It checks what it can before the
 * program starts (the program's linkage, whether the kernel has sched_ext),
 * sets LD_PRELOAD and the preload's switches, and execs the program: the
 * program keeps wsched-run's process id, so the preload's registration is
 * the process's own.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRELOAD_NAME "libwsched-preload.so"

/*
 * Where the preload is when neither --preload nor $WSCHED_PRELOAD says: the
 * installed wsched-run is built with WSCHED_PRELOAD_INSTALLED, the path
 * make install put the preload at; the build tree's looks in ../lib/ beside
 * itself (build/bin/ and build/lib/), and an installed one never does, so
 * that it cannot pick up a stray copy there.
 */
#ifdef WSCHED_PRELOAD_INSTALLED
#define PRELOAD_DEFAULT_HELP WSCHED_PRELOAD_INSTALLED
#else
#define PRELOAD_DEFAULT_HELP "../lib/" PRELOAD_NAME " beside this program"
#endif

static const char *prog = "wsched-run";

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [OPTIONS] [--] PROGRAM [ARGS...]\n"
"\n"
"Run PROGRAM with libwsched-preload.so: every thread registers with the\n"
"running scx_wsched loader, the time a thread holds a pthread mutex, spin\n"
"lock or rwlock or is inside an OpenMP critical section or lock is marked\n"
"for the scheduler, and a sched_yield() outside those sections gives the\n"
"CPU to every other task waiting on it. Without a loader, sched_ext or\n"
"access to the hint socket, PROGRAM runs unchanged.\n"
"\n"
"options:\n"
"  --no-locks         do not mark pthread mutex, spin lock and rwlock holders\n"
"  --no-omp           do not mark OpenMP critical sections and omp_*_lock holders\n"
"  --no-yield         keep sched_yield() plain (no yield-to-all)\n"
"  --no-inherit       programs that PROGRAM execs run without the preload\n"
"                     (default: they inherit it through LD_PRELOAD)\n"
"  --static=run|refuse  a statically linked PROGRAM cannot be interposed:\n"
"                     run it anyway with a warning (default), or refuse (exit 2)\n"
"  --hint-socket PATH the loader's hint socket (default: $WSCHED_HINT_SOCKET,\n"
"                     else /run/wsched/wsched.sock)\n"
"  --preload PATH     the preload library (default: $WSCHED_PRELOAD, else\n"
"                     " PRELOAD_DEFAULT_HELP ")\n"
"  -q, --quiet        say nothing when cooperation is unavailable\n"
"  -h, --help         this text\n"
"\n"
"exit status: PROGRAM's; 2 for a usage error or a refused static program;\n"
"126 when PROGRAM cannot be executed, 127 when it is not found.\n",
		prog);
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see %s --help)\n", prog);
	exit(2);
}

/* PROGRAM's path as execvp would find it, or NULL with errno set. */
static char *find_program(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	int saved = ENOENT;

	if (strchr(name, '/'))
		return access(name, F_OK) ? NULL : strdup(name);
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		struct stat st;

		/* An empty PATH entry is the current directory. */
		if (snprintf(buf, sizeof(buf), "%.*s/%s", n ? (int)n : 1, n ? path : ".",
			     name) < (int)sizeof(buf) &&
		    !stat(buf, &st) && S_ISREG(st.st_mode)) {
			if (!access(buf, X_OK))
				return strdup(buf);
			saved = EACCES;
		}
		path += n + (path[n] == ':');
	}
	errno = saved;
	return NULL;
}

/*
 * 1 if @path is an ELF executable without a program interpreter (statically
 * linked, static-pie included), 0 if it has one or is not ELF (a script:
 * its interpreter gets the preload), -1 if it cannot be read.
 */
static int is_static_elf(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i, ret = 1;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph)) {
		ret = 0;
		goto out;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))) !=
		    sizeof(ph)) {
			ret = -1;
			goto out;
		}
		if (ph.p_type == PT_INTERP) {
			ret = 0;
			goto out;
		}
	}
out:
	close(fd);
	return ret;
}

/* The preload library: --preload, $WSCHED_PRELOAD, else the installed path
 * or ../lib/ beside us (see PRELOAD_DEFAULT_HELP). */
static char *find_preload(const char *opt)
{
	const char *env = getenv("WSCHED_PRELOAD");
#ifndef WSCHED_PRELOAD_INSTALLED
	char self[PATH_MAX], buf[PATH_MAX + 64], *slash;
	ssize_t n;
#endif

	if (opt)
		return strdup(opt);
	if (env && *env)
		return strdup(env);
#ifdef WSCHED_PRELOAD_INSTALLED
	return strdup(WSCHED_PRELOAD_INSTALLED);
#else
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return strdup(PRELOAD_NAME);
	self[n] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, sizeof(buf), "%s/../lib/%s", self, PRELOAD_NAME);
	return strdup(buf);
#endif
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-locks",	no_argument,		NULL, 'L' },
		{ "no-omp",	no_argument,		NULL, 'M' },
		{ "no-yield",	no_argument,		NULL, 'Y' },
		{ "no-inherit",	no_argument,		NULL, 'I' },
		{ "static",	required_argument,	NULL, 'S' },
		{ "hint-socket", required_argument,	NULL, 'P' },
		{ "preload",	required_argument,	NULL, 'p' },
		{ "quiet",	no_argument,		NULL, 'q' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *preload_opt = NULL, *sock = NULL;
	bool quiet = false, refuse_static = false;
	bool no_locks = false, no_omp = false, no_yield = false, no_inherit = false;
	char off[64], *path, *preload, *ld;
	const char *old;
	int c, st;

	while ((c = getopt_long(argc, argv, "+qh", opts, NULL)) != -1) {
		switch (c) {
		case 'L':
			no_locks = true;
			break;
		case 'M':
			no_omp = true;
			break;
		case 'Y':
			no_yield = true;
			break;
		case 'I':
			no_inherit = true;
			break;
		case 'S':
			if (!strcmp(optarg, "refuse"))
				refuse_static = true;
			else if (strcmp(optarg, "run"))
				die_usage("--static takes 'run' or 'refuse', not '%s'", optarg);
			break;
		case 'P':
			if (optarg[0] != '/' || strlen(optarg) >= 108)
				die_usage("--hint-socket must be an absolute path shorter than 108 bytes, not '%s'",
					  optarg);
			sock = optarg;
			break;
		case 'p':
			if (!*optarg)
				die_usage("--preload needs a path%s", "");
			preload_opt = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "(see %s --help)\n", prog);
			return 2;
		}
	}
	if (optind >= argc)
		die_usage("no PROGRAM given%s", "");

	snprintf(off, sizeof(off), "%s%s%s%s", no_locks ? "locks," : "", no_omp ? "omp," : "",
		 no_yield ? "yield," : "", no_inherit ? "inherit," : "");
	path = find_program(argv[optind]);
	if (!path) {
		int err = errno;

		fprintf(stderr, "%s: cannot run '%s': %s\n", prog, argv[optind], strerror(err));
		return err == ENOENT ? 127 : 126;
	}
	st = is_static_elf(path);
	if (st == 1) {
		if (refuse_static) {
			fprintf(stderr, "%s: '%s' is statically linked and cannot be interposed; refusing (--static=refuse)\n",
				prog, path);
			return 2;
		}
		if (!quiet)
			fprintf(stderr, "%s: '%s' is statically linked and cannot be interposed; running it without cooperation\n",
				prog, path);
	}

	preload = find_preload(preload_opt);
	if (access(preload, R_OK)) {
		fprintf(stderr, "%s: preload library '%s': %s\n", prog, preload, strerror(errno));
		return 2;
	}
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		ld = malloc(strlen(preload) + strlen(old) + 2);
		if (!ld)
			return 2;
		sprintf(ld, "%s:%s", preload, old);
	} else {
		ld = preload;
	}
	if (setenv("LD_PRELOAD", ld, 1) ||
	    (*off && setenv("WSCHED_PRELOAD_OFF", off, 1)) ||
	    (sock && setenv("WSCHED_HINT_SOCKET", sock, 1))) {
		fprintf(stderr, "%s: setenv: %s\n", prog, strerror(errno));
		return 2;
	}
	/* One line about why cooperation is off, from here or from the
	 * preload in the program (which knows what the loader answered). */
	unsetenv("WSCHED_RUN_REPORT");
	if (!quiet && st != 1) {
		if (access("/sys/kernel/sched_ext", F_OK))
			fprintf(stderr, "%s: this kernel has no sched_ext; running '%s' without cooperation\n",
				prog, argv[optind]);
		else
			setenv("WSCHED_RUN_REPORT", "1", 1);
	}
	execv(path, argv + optind);
	c = errno;
	fprintf(stderr, "%s: cannot run '%s': %s\n", prog, path, strerror(c));
	return c == ENOENT ? 127 : 126;
}
