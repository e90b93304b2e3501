#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check's choice of where the second part of the integration
# tests runs (plan_guest2): beside the first only when about a host CPU is
# idle, after it otherwise, or as WSCHED_CHECK_GUEST2 says. Runs
# scripts/check's own functions (idle_cpus, plan_guest2), taken from it by
# name, against a scratch results directory.
# Usage: check_plan_test.sh [top of the tree] (default: this script's tree).
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"

TESTS=(functions_found busy_host_runs_part2_after idle_sample_decides
	override_beside override_after bad_override_named)
tap_plan ${#TESTS[@]}

RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"; kill $(jobs -p) 2>/dev/null' EXIT

# The two functions, as scripts/check defines them.
defs=$(sed -n -e '/^idle_cpus() {/,/^}/p' -e '/^plan_guest2() {/,/^}/p' "$TOP/scripts/check")
eval "$defs"
found=0
declare -F idle_cpus >/dev/null && declare -F plan_guest2 >/dev/null || found=1
tap_result $found functions_found "idle_cpus or plan_guest2 not found in scripts/check"
[ $found = 0 ] || { for t in "${TESTS[@]:1}"; do tap_skip "$t" "no functions"; done; tap_done; }

# plan [ENV...]: run plan_guest2 with part 1 "started"; prints plan: why.
plan() {
	rm -f "$RESULTS"/guest2.*
	: >"$RESULTS/guest.started"
	(export WSCHED_CHECK_SETTLE=0 "$@"; plan_guest2)
	echo "$(cat "$RESULTS/guest2.plan" 2>/dev/null): $(cat "$RESULTS/guest2.why" 2>/dev/null)"
}

# A spinner on every host CPU leaves none idle, whatever else runs here.
spin=()
for _ in $(seq "$(nproc)"); do
	(while :; do :; done) &
	spin+=($!)
done
got=$(plan WSCHED_CHECK_GUEST2=auto)
kill "${spin[@]}" 2>/dev/null
wait "${spin[@]}" 2>/dev/null
[[ $got = after:* ]]
tap_result $? busy_host_runs_part2_after "with $(nproc) spinners: $got"

# The sample's figure decides, at 0.7 idle CPUs.
idle_cpus() { echo 0.9; }
a=$(plan WSCHED_CHECK_GUEST2=auto)
idle_cpus() { echo 0.4; }
b=$(plan WSCHED_CHECK_GUEST2=auto)
[[ $a = "beside: 0.9 "* && $b = "after: only 0.4 "* ]]
tap_result $? idle_sample_decides "0.9 idle: $a" "0.4 idle: $b"

got=$(plan WSCHED_CHECK_GUEST2=beside)
[[ $got = beside:* ]]
tap_result $? override_beside "$got"
idle_cpus() { echo 2.0; }
got=$(plan WSCHED_CHECK_GUEST2=after)
[[ $got = after:* ]]
tap_result $? override_after "$got"
got=$(plan WSCHED_CHECK_GUEST2=sideways)
[[ $got = "after: WSCHED_CHECK_GUEST2 is 'sideways', not beside, after or auto"* ]]
tap_result $? bad_override_named "$got"

tap_done
