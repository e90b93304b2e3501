#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
#
# wsbench's command line: every bad input is one clear line on stderr and
# exit status 2; a small run of every benchmark prints the JSON fields of
# wsbench(1) with result_ok true; cpu_seconds and p_a are sane; fib's
# CUTOFF keeps the result; --ready-file holds the timed part until SIGUSR1;
# `wsbench handoff` reaches the handoff benchmark (sched_yield only:
# /dev/wsched exists only in the lab guest).
# Usage: wsbench_cli.sh [path/to/wsbench] (default build/bin/wsbench).
set -u
TOP=$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")
. "$TOP/tests/tap.sh"
WSBENCH=${1:-$TOP/build/bin/wsbench}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

tap_plan 8

# run ARGS...: status in $rc, output in $OUT/stdout and $OUT/stderr.
run() { "$WSBENCH" "$@" >"$OUT/stdout" 2>"$OUT/stderr"; rc=$?; }

# 1. bad inputs
bad=0 diag=()
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086
	run $args
	lines=$(wc -l <"$OUT/stderr")
	if [ "$rc" != 2 ] || [ "$lines" != 1 ] || ! grep -q -- "$want" "$OUT/stderr"; then
		bad=1
		diag+=("wsbench $args: exit $rc, stderr: $(cat "$OUT/stderr")")
	fi
done <<'EOF'
|no benchmark given
frobnicate|unknown benchmark 'frobnicate'
--bogus fib|unknown option '--bogus'
--workers 0 fib|--workers must be an integer
--workers x fib|--workers must be an integer
--repeat 2000 fib|--repeat must be an integer
--runtime cilk fib|unknown runtime 'cilk'
--runtime serial --workers 2 fib|serial runtime runs with --workers 1 only
fib 99|N must be an integer
fib 10 2 3|too many arguments
fib 10 0|CUTOFF must be an integer
--ready-file|option --ready-file needs a value
--ready-file /nonexistent/dir/f fib 5|cannot create --ready-file
--ready-file x lock|--ready-file does not apply to 'lock'
uts 10 0.5 4|needs Q \* M < 1
--runtime tbb deque|measures libwsched only
handoff --noise 99|--noise must be 0..16
handoff --method other|--method is yield_to, sched_yield or both
handoff extra|unexpected argument 'extra'
lock --lock x|--lock is spin, ticket, mutex or all, not 'x'
lock --threads 0|--threads must be an integer in \[1, 1024\]
lock --hints maybe|--hints is auto, on or off
lock --seconds|unknown option or missing value
lock extra|unexpected argument 'extra'
EOF
tap_result $bad "bad inputs: one line on stderr naming the problem, exit 2" "${diag[@]}"

# 2. every benchmark on wsched and serial: the JSON fields, a correct result
bad=0 diag=()
for rt in wsched serial; do
	for b in "fib 20" "nqueens 8 2" "uts 200 0.19 5 2" "sort 20000 512" "matmul 64 4"; do
		# shellcheck disable=SC2086
		run --json --runtime $rt --workers 1 --repeat 2 $b
		for f in '"bench": "'"${b%% *}"'"' '"runtime": "'$rt'"' '"workers": 1' \
			'"args": "' '"seconds_median": [0-9]' '"seconds_min": [0-9]' '"repeat": 2' \
			'"cpu_seconds": [0-9]' '"p_a": [0-9]' '"sys_busy_cpus": [0-9]' \
			'"csw_voluntary": [0-9][0-9]*,' '"csw_involuntary": [0-9][0-9]*,' '"result_ok": true'; do
			if [ "$rc" != 0 ] || ! grep -q -- "$f" "$OUT/stdout"; then
				bad=1
				diag+=("$rt $b: exit $rc, no $f in: $(cat "$OUT/stdout" "$OUT/stderr")")
				break
			fi
		done
	done
done
tap_result $bad "every benchmark: JSON with bench, runtime, workers, args, times, result_ok" "${diag[@]}"

# 3. two workers agree with the reference too
run --json --workers 2 --repeat 3 fib 24
ok=1
[ "$rc" = 0 ] && grep -q '"workers": 2' "$OUT/stdout" && grep -q '"result_ok": true' "$OUT/stdout" && ok=0
tap_result $ok "fib 24 on 2 workers: result_ok" "exit $rc: $(cat "$OUT/stdout" "$OUT/stderr")"

# 4. handoff: sched_yield between two threads on one CPU, JSON lines
run --json handoff --method sched_yield --noise 0 --samples 200 --cpu 0
if [ "$rc" = 0 ] && grep -q '"method": "sched_yield"' "$OUT/stdout" &&
   grep -q '"median_ns": [1-9]' "$OUT/stdout"; then
	tap_result 0 "wsbench --json handoff: sched_yield median"
else
	tap_result 1 "wsbench --json handoff: sched_yield median" \
		"exit $rc: $(cat "$OUT/stdout" "$OUT/stderr")"
fi
# 5. lock: every kind keeps mutual exclusion; the JSON fields of the lock benchmark
run --json lock --threads 3 --seconds 1
ok=0
for k in spin ticket mutex; do
	line=$(grep "\"lock\": \"$k\"" "$OUT/stdout")
	for f in '"bench": "lock"' '"sched": "' '"hints": false' '"threads": 3' '"vcpus": [1-9]' \
		'"ops_per_sec": [1-9]' '"p99_wait_ns": [0-9]' '"lock_holder_preemptions": [0-9]' \
		'"result_ok": true'; do
		echo "$line" | grep -q -- "$f" || { ok=1; break; }
	done
done
tap_result $ok "wsbench --json lock: three kinds, exclusion kept, fields present" \
	"exit $rc: $(cat "$OUT/stdout" "$OUT/stderr")"

# field NAME: the number after "NAME": in $OUT/stdout.
field() { sed -n 's/.*"'"$1"'": \([0-9.eE+-]*\).*/\1/p' "$OUT/stdout"; }

# 6. cpu_seconds and p_a: positive; p_a at most the threads that can run
# (1 for serial; workers + the main thread for wsched); cpu_seconds is p_a x
# the wall time of the 3 runs, which is at least 3 x the fastest run
bad=0 diag=()
for spec in "serial 1" "wsched 2"; do
	read -r rt w <<<"$spec"
	run --json --runtime "$rt" --workers "$w" --repeat 3 fib 27
	cpu=$(field cpu_seconds) pa=$(field p_a) mn=$(field seconds_min)
	if [ "$rc" != 0 ] || [ -z "$cpu" ] || [ -z "$pa" ] || [ -z "$mn" ] ||
	   ! awk -v c="$cpu" -v p="$pa" -v w="$w" -v mn="$mn" \
		'BEGIN { exit !(c > 0 && p > 0 && p <= w + 1.05 && c >= p * 3 * mn * 0.99) }'; then
		bad=1
		diag+=("$rt workers=$w: exit $rc, cpu_seconds '$cpu' p_a '$pa' in: $(cat "$OUT/stdout" "$OUT/stderr")")
	fi
done
tap_result $bad "cpu_seconds > 0 and 0 < p_a <= runnable threads, consistent with the times" "${diag[@]}"

# 7. fib's CUTOFF: a serial tail below it, same result on every runtime built
bad=0 diag=()
for rt in wsched serial tbb omp; do
	w=2
	[ "$rt" = serial ] && w=1
	run --json --runtime "$rt" --workers "$w" --repeat 1 fib 25 12
	[ "$rc" = 2 ] && grep -q "was not built" "$OUT/stderr" && continue
	if [ "$rc" != 0 ] || ! grep -q '"args": "25 12"' "$OUT/stdout" ||
	   ! grep -q '"result_ok": true' "$OUT/stdout"; then
		bad=1
		diag+=("$rt: exit $rc: $(cat "$OUT/stdout" "$OUT/stderr")")
	fi
done
tap_result $bad "fib N CUTOFF: correct on every runtime, args name both" "${diag[@]}"

# 8. --ready-file: the file appears after setup, nothing is timed or printed
# before SIGUSR1, then the run completes
rf=$OUT/ready
"$WSBENCH" --json --workers 2 --repeat 1 --ready-file "$rf" fib 20 >"$OUT/stdout" 2>"$OUT/stderr" &
pid=$!
for _ in $(seq 200); do [ -e "$rf" ] && break; sleep 0.05; done
sleep 0.3
ok=1 why="no ready file after 10 s"
if [ -e "$rf" ]; then
	why="exited before SIGUSR1"
	if kill -0 "$pid" 2>/dev/null && [ ! -s "$OUT/stdout" ]; then
		kill -USR1 "$pid"
		wait "$pid"
		rc=$?
		why="after SIGUSR1: exit $rc"
		[ "$rc" = 0 ] && grep -q '"result_ok": true' "$OUT/stdout" && ok=0
	fi
fi
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
tap_result $ok "--ready-file: waits for SIGUSR1 after setup, then runs" \
	"$why: $(cat "$OUT/stdout" "$OUT/stderr")"
tap_done
