#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/lab itself, from the host: argument checks, exit statuses passed
# through from exec and run, the project tree at its own path, the timeout,
# Ctrl-C and guest-panic paths leaving no QEMU or virtiofsd behind, and the
# console check failing a run whose guest kernel logged a warning.
# Each `lab run` boots a guest (about 10 s under TCG on an idle host, minutes
# on a throttled one beside make check's guest): the cases that do not test
# the vCPU count boot one vCPU.
set -u
TOP=$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")
. "$TOP/tests/tap.sh"
LAB=$TOP/scripts/lab
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

tap_plan 21

# The lab's cache directory (its rootfs, .made-dirs).
labdir=$("$LAB" info | sed -n 's/^lab dir: *//p')

# lab ARGS... : runs scripts/lab, leaves its status in $rc, output in files.
lab() { "$LAB" "$@" >"$OUT/stdout" 2>"$OUT/stderr"; rc=$?; }

# Processes of the run started by lab process $1 (its run dir ends in -PID).
leftovers() { pgrep -f -- "runs/[0-9-]*-$1/" || true; }

# argument errors are one clear line and exit 2, before anything boots.
bad=0 diag=()
for args in "run --cpus 0 -- true" "run --cpus 65 -- true" "run --mem 12X -- true" \
	"run --timeout abc -- true" "run --bogus -- true" "run --kernel bogus -- true" \
	"setup --kernel bogus" "run --kernel ubuntu-9.9 -- true" "setup --kernel ubuntu-6" \
	"setup --kernel debian-6.13" "run --kernel debian-7.3 -- true" \
	"run" "exec" "frobnicate"; do
	# shellcheck disable=SC2086
	lab $args
	if [ $rc != 2 ] || ! grep -q "^lab: " "$OUT/stderr"; then
		bad=1; diag+=("'lab $args' exited $rc: $(head -n1 "$OUT/stderr")")
	fi
done
tap_result $bad "usage_errors_exit_2_with_a_message" "${diag[@]}"

# ... and so are bad values of the environment variables that choose the guest.
bad=0 diag=()
for env in WSCHED_LAB_TCG=bogus WSCHED_LAB_ICOUNT_SHIFT=11 WSCHED_LAB_ICOUNT_SHIFT=x \
	WSCHED_LAB_ACCEL=bogus WSCHED_LAB_BOOT_TIMEOUT=0 WSCHED_LAB_BOOT_TIMEOUT=3m; do
	env "$env" "$LAB" run -- true >"$OUT/stdout" 2>"$OUT/stderr"; rc=$?
	if [ $rc != 2 ] || ! grep -q "^lab: ${env%%=*} must be" "$OUT/stderr"; then
		bad=1; diag+=("'$env lab run -- true' exited $rc: $(head -n1 "$OUT/stderr")")
	fi
done
tap_result $bad "bad_environment_exits_2_naming_the_variable" "${diag[@]}"

# WSCHED_LAB_TCG=icount boots a guest whose QEMU counts instructions
# (recorded in the run directory, which the guest finds on its command line,
# beside wslab.clock for benchmarks to report).
WSCHED_LAB_TCG=icount WSCHED_LAB_ICOUNT_SHIFT=4 lab run --cpus 2 -- \
	sh -c 'tr " " "\n" </proc/cmdline | sed -n -e "s/^wslab.run=/run /p" -e "s/^wslab.clock=/clock /p"'
rundir=$(sed -n 's/^run //p' "$OUT/stdout" | tail -n 1)
clock=$(sed -n 's/^clock //p' "$OUT/stdout" | tail -n 1)
ok=1
[ $rc = 0 ] && [ -f "$rundir/accel" ] && grep -q -- "-icount shift=4,sleep=on" "$rundir/accel" &&
	! grep -q "thread=multi" "$rundir/accel" && [ "$clock" = tcg-icount ] && ok=0
tap_result $ok "icount_guest_runs_with_instruction_clock" "exit $rc, clock '$clock'" \
	"accel: $(cat "$rundir/accel" 2>/dev/null)" "$(tail -n 3 "$OUT/stderr")"

# exec passes CMD's status through.
lab exec -- false
tap_result $([ $rc = 1 ]; echo $?) "exec_false_exits_1" "exit $rc"
lab exec -- sh -c 'exit 7'
tap_result $([ $rc = 7 ]; echo $?) "exec_passes_exit_status" "exit $rc"

# exec sees the tree at its own path, in the same directory, and builds
# with the compiler that built the lab kernel.
cd "$TOP/tests" || exit 1
# CONFIG_CC_VERSION_TEXT is "x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0"
# where gcc --version says "gcc (Debian 14.2.0-19) 14.2.0": compare from "(".
lab exec -- sh -c 'pwd; v=$(gcc --version | head -n1); grep "^CONFIG_CC_VERSION_TEXT=" "$KDIR/.config" | grep -F "(${v#*(}\""'
cd "$TOP" || exit 1
ok=1
[ $rc = 0 ] && [ "$(head -n1 "$OUT/stdout")" = "$TOP/tests" ] && ok=0
tap_result $ok "exec_tree_at_same_path_and_kernel_compiler" "exit $rc" "$(cat "$OUT/stdout" "$OUT/stderr")"

# no mount of the chroot is left on the host afterwards.
n=$(grep -c " $("$LAB" info | sed -n 's/^lab dir: *//p')/rootfs" /proc/self/mountinfo)
tap_result $([ "$n" = 0 ]; echo $?) "exec_leaves_no_mounts" "$n mounts of the rootfs remain"

# run passes a failing status through.
lab run -- false
tap_result $([ $rc = 1 ]; echo $?) "run_false_exits_1" "exit $rc" "$(cat "$OUT/stderr")"

# run on 8 vCPUs: sched_ext disabled, 8 CPUs, same cwd, writes land on host.
token=$RANDOM$RANDOM
lab run --cpus 8 -- sh -c "cat /sys/kernel/sched_ext/state; nproc; pwd; echo $token > build/lab/token"
ok=1
[ $rc = 0 ] && [ "$(cat "$OUT/stdout")" = "$(printf 'disabled\n8\n%s' "$TOP")" ] &&
	[ "$(cat "$TOP/build/lab/token" 2>/dev/null)" = "$token" ] && ok=0
rm -f "$TOP/build/lab/token"
tap_result $ok "run_cpus_8_sched_ext_disabled" "exit $rc" "$(cat "$OUT/stdout" "$OUT/stderr")"

# The console log of that run is kept under build/lab/runs/, and
# build/lab/console.log links to the newest run's (other runs may be going
# on beside this test, so that one need not be ours).
cmdfile=$(grep -l "$token" "$TOP"/build/lab/runs/*/cmd 2>/dev/null | head -n1)
ok=1
[ -n "$cmdfile" ] && grep -q "Linux version" "$(dirname "$cmdfile")/console.log" &&
	[ -L "$TOP/build/lab/console.log" ] && ok=0
tap_result $ok "run_keeps_console_log" "no console log with boot messages for the run (${cmdfile:-no run dir})"

# Pruning keeps the 20 newest run directories but never one whose run is
# still going: 25 old directories named after a live pid (this shell),
# and 25 older ones after a pid that cannot exist (above pid_max); a run
# must remove all of the latter (never among the 20 newest) and none of
# the former, though at least 5 of them are not among the 20 newest.
for i in $(seq 1 25); do
	live_d=$TOP/build/lab/runs/19700102-0000$(printf %02d "$i")-$$
	dead_d=$TOP/build/lab/runs/19700101-0000$(printf %02d "$i")-4194305
	mkdir -p "$live_d" "$dead_d"
	touch -d @$((2 * 86400 + i)) "$live_d"
	touch -d @$((86400 + i)) "$dead_d"
done
lab run --cpus 1 -- true
live=$(ls -d "$TOP"/build/lab/runs/19700102-0000*-$$ 2>/dev/null | wc -l)
dead=$(ls -d "$TOP"/build/lab/runs/19700101-0000*-4194305 2>/dev/null | wc -l)
rm -rf "$TOP"/build/lab/runs/1970010[12]-*
ok=1
[ $rc = 0 ] && [ "$live" = 25 ] && [ "$dead" = 0 ] && ok=0
tap_result $ok "run_prunes_only_finished_runs" "exit $rc, live dirs kept $live of 25, dead dirs left $dead" "$(cat "$OUT/stderr")"

# A run's cleanup (its EXIT trap) never changes CMD's status: a directory
# listed for removal that is already gone must not make rm -d fail and,
# under set -e, the run exit 1 after CMD exited 0. The cleanup runs in
# the last run to end, so with other runs going on beside this one (make
# check) it may happen in theirs instead; run alone, this run does it.
echo "/0-wsched-stale-$$" >>"$labdir/.made-dirs"
lab run --cpus 1 -- true
tap_result $([ $rc = 0 ]; echo $?) "run_cleanup_keeps_cmd_status" "exit $rc" "$(cat "$OUT/stderr")"

# --timeout stops the guest after about that long and leaves nothing.
start=$SECONDS
"$LAB" run --timeout 5 -- sleep 60 >"$OUT/stdout" 2>"$OUT/stderr" &
pid=$!
wait $pid; rc=$?
took=$((SECONDS - start))
left=$(leftovers $pid)
ok=1
[ $rc = 124 ] && [ $took -le 15 ] && [ -z "$left" ] && grep -q "timed out after 5 s" "$OUT/stderr" && ok=0
tap_result $ok "run_timeout_stops_guest" "exit $rc after ${took}s, leftover pids: ${left:-none}" "$(cat "$OUT/stderr")"

# Ctrl-C (SIGINT) stops the guest and leaves nothing. Job control on:
# a background job of a plain script would start with SIGINT ignored.
set -m
"$LAB" run --cpus 1 -- sleep 60 >"$OUT/stdout" 2>"$OUT/stderr" &
pid=$!
set +m
sleep 6
kill -INT $pid
wait $pid; rc=$?
sleep 0.5
left=$(leftovers $pid)
tap_result $([ $rc = 130 ] && [ -z "$left" ]; echo $?) "run_sigint_stops_guest" \
	"exit $rc, leftover pids: ${left:-none}" "$(cat "$OUT/stderr")"

# a kernel warning on the guest console fails the run and is shown.
lab run --cpus 1 -- sh -c 'echo "<4>WARNING: lab selftest marker" >/dev/kmsg'
ok=1
[ $rc = 123 ] && grep -q "WARNING: lab selftest marker" "$OUT/stderr" && ok=0
tap_result $ok "run_fails_on_kernel_warning" "exit $rc" "$(cat "$OUT/stderr")"

# a guest panic ends the run with the lab's own status and leaves nothing.
"$LAB" run --cpus 1 -- sh -c 'echo c >/proc/sysrq-trigger; sleep 30' >"$OUT/stdout" 2>"$OUT/stderr" &
pid=$!
wait $pid; rc=$?
left=$(leftovers $pid)
ok=1
[ $rc = 125 ] && [ -z "$left" ] && grep -q "stopped before CMD finished" "$OUT/stderr" && ok=0
tap_result $ok "run_guest_panic_fails" "exit $rc, leftover pids: ${left:-none}" "$(cat "$OUT/stderr")"

# a boot that never reaches init is retried twice, then reported.
start=$SECONDS
WSCHED_LAB_BOOT_TIMEOUT=3 WSCHED_LAB_APPEND=rootdelay=120 \
	"$LAB" run --cpus 1 -- true >"$OUT/stdout" 2>"$OUT/stderr" &
pid=$!
wait $pid; rc=$?
left=$(leftovers $pid)
retries=$(grep -c "retrying the boot" "$OUT/stderr")
ok=1
[ $rc = 125 ] && [ "$retries" = 2 ] && [ -z "$left" ] && grep -q "three times" "$OUT/stderr" && ok=0
tap_result $ok "run_hung_boot_retried_then_fails" "exit $rc after $((SECONDS - start))s," \
	"$retries retries, leftover pids: ${left:-none}" "$(cat "$OUT/stderr")"

# A guest that dies before init (here: no init to run) is retried twice too.
WSCHED_LAB_APPEND=init=/nonexistent lab run --cpus 1 -- true
retries=$(grep -c "died before reaching init; retrying" "$OUT/stderr")
tap_result $([ $rc = 125 ] && [ "$retries" = 2 ]; echo $?) "run_early_guest_death_retried_then_fails" \
	"exit $rc, $retries retries" "$(cat "$OUT/stderr")"

# The kernel release of extra kernel $1 that the lab has set up, or nothing.
extra_kver() { sed -n 's/^KVER=//p' "$labdir/rootfs/etc/wsched-lab-kernel-$1" 2>/dev/null; }

# --kernel sid boots sid's kernel, when the lab has it.
sidver=$(extra_kver sid)
if [ -z "$sidver" ]; then
	tap_skip "run_kernel_sid" "no sid kernel in the lab (scripts/lab setup --kernel sid)"
else
	lab run --cpus 1 --kernel sid -- uname -r
	tap_result $([ $rc = 0 ] && [ "$(cat "$OUT/stdout")" = "$sidver" ]; echo $?) "run_kernel_sid" \
		"exit $rc, want $sidver" "$(cat "$OUT/stdout" "$OUT/stderr")"
fi

# --kernel debian-6.12 boots the lab's own 6.12 build, with sched_ext,
# when the lab has it.
k612=$(extra_kver debian-6.12)
if [ -z "$k612" ]; then
	tap_skip "run_kernel_debian_6_12" "no 6.12 kernel in the lab (scripts/lab setup --kernel debian-6.12)"
else
	lab run --cpus 1 --kernel debian-6.12 -- sh -c 'uname -r; cat /sys/kernel/sched_ext/state'
	tap_result $([ $rc = 0 ] && [ "$(cat "$OUT/stdout")" = "$k612
disabled" ]; echo $?) "run_kernel_debian_6_12" \
		"exit $rc, want $k612 and sched_ext disabled" "$(cat "$OUT/stdout" "$OUT/stderr")"
fi

# a tree under /tmp (where a CI clone may be) is visible in the guest,
# across the guest's own tmpfs on /tmp; no mount point is left in the rootfs.
copy=$(mktemp -d /tmp/wsched-labtest.XXXXXX)
cp -a "$TOP/scripts" "$copy/"
"$copy/scripts/lab" run --cpus 1 -- sh -c 'pwd; test -x scripts/lab-init' >"$OUT/stdout" 2>"$OUT/stderr"; rc=$?
# The mount point is gone, or (while another run is alive, as in make
# check) still listed for the last run's cleanup.
ok=1
[ $rc = 0 ] && [ "$(cat "$OUT/stdout")" = "$copy" ] &&
	{ [ ! -e "$labdir/rootfs$copy" ] || grep -qx "$copy" "$labdir/.made-dirs"; } && ok=0
tap_result $ok "run_tree_under_tmp" "exit $rc, rootfs$copy $([ -e "$labdir/rootfs$copy" ] && echo left behind)" \
	"$(cat "$OUT/stdout" "$OUT/stderr")"
rm -rf "$copy"

tap_done
