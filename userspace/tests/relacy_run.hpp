// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The TAP runner of the Relacy tests: run<T>() model-checks one test suite
 * and prints one TAP line, expecting it to pass (a correct deque) or to be
 * caught (a mutant); relacy_iterations() scales the random schedules with
 * WSCHED_TEST_SCALE (percent, default 100: 100,000). Each test sets
 * relacy_log to the prefix of its checker log in /tmp.
 */
#ifndef WSCHED_RELACY_RUN_HPP
#define WSCHED_RELACY_RUN_HPP

#include <fstream>
#include <string>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

#include "relacy_shim.hpp"

static const char *relacy_log = "ws_relacy";

static int nr_test;
static int nr_fail;

template <class T>
static void run(const char *name, unsigned long iterations, bool expect_ok,
		rl::scheduler_type_e sched = rl::sched_random, unsigned bound = 1)
{
	rl::test_params p;
	char path[64];
	bool ok;

	/* A file, not a string stream: Relacy intercepts operator new/delete
	 * while it runs, and a growing string buffer trips over that. */
	snprintf(path, sizeof(path), "/tmp/%s_%d.log", relacy_log, (int)getpid());
	std::ofstream out(path);

	p.iteration_count = iterations;
	p.output_stream = &out;
	p.progress_stream = &out;
	p.search_type = sched;
	p.context_bound = bound;
	ok = rl::simulate<T>(p);
	nr_test++;
	if (ok == expect_ok) {
		printf("ok %d %s (%s after %llu iterations)\n", nr_test, name,
		       ok ? "no failure" : rl::test_result_str(p.test_result),
		       (unsigned long long)p.stop_iteration);
	} else {
		nr_fail++;
		printf("not ok %d %s: %s\n", nr_test, name,
		       ok ? "the checker did not catch the known bug" :
		       "checker failure, first lines of its report:");
		fflush(stdout);
		out.close();
		std::string cmd = std::string("head -c 6000 ") + path + " | sed 's/^/# /'";
		if (system(cmd.c_str()))
			printf("# (could not show %s)\n", path);
	}
	fflush(stdout);
	unlink(path);
}

static unsigned long relacy_iterations(void)
{
	const char *sc = getenv("WSCHED_TEST_SCALE");
	unsigned long scale = sc ? strtoul(sc, NULL, 10) : 100;
	unsigned long it = 100000UL * scale / 100;

	return it < 1000 ? 1000 : it;
}

#endif /* WSCHED_RELACY_RUN_HPP */
