#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The form of the commit messages since the rule was kept (README.md,
# "Testing"): a subject of at most 72 characters, no trailing full stop,
# no fixup!/squash!/WIP subject, and a blank line between the subject and
# a body. On the host, as the lab rootfs
# has no git. Skipped outside a git checkout, without git, or in a clone too
# shallow to hold the first commit checked.
# Usage: commits_test.sh [top of the tree] (default: this script's tree).
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"

# Commits after this one are checked: the last commit whose subject was
# longer than 72 characters (older ones are history).
BASE=b3035e9

TESTS=(subjects_at_most_72 no_full_stop no_fixup_or_wip blank_line_before_body)
tap_plan ${#TESTS[@]}

# skip_all WHY: every test skipped, and the end.
skip_all() {
	local t
	for t in "${TESTS[@]}"; do tap_skip "$t" "$1"; done
	tap_done
}

if ! command -v git >/dev/null || ! git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
	skip_all "not a git checkout, or no git"
fi
git -C "$TOP" cat-file -e "$BASE^{commit}" 2>/dev/null ||
	skip_all "commit $BASE is not in this clone (shallow?)"

# "hash subject" of each non-merge commit after BASE.
subjects=$(git -C "$TOP" log --no-merges --format='%h %s' "$BASE..HEAD")

long=$(awk '{ s = substr($0, index($0, " ") + 1) } length(s) > 72 { print }' <<<"$subjects")
tap_result "$([ -z "$long" ]; echo $?)" subjects_at_most_72 "subjects over 72 characters:" "$long"

stop=$(grep -E '^[0-9a-f]+ .*[^.]\.$' <<<"$subjects" || true)
tap_result "$([ -z "$stop" ]; echo $?)" no_full_stop "subjects ending in a full stop:" "$stop"

wip=$(grep -E -i '^[0-9a-f]+ (fixup!|squash!|amend!|wip\b)' <<<"$subjects" || true)
tap_result "$([ -z "$wip" ]; echo $?)" no_fixup_or_wip "fixup, squash or WIP commits:" "$wip"

# The second line of each message, when there is one, is empty.
nobl=$(for h in $(git -C "$TOP" rev-list --no-merges "$BASE..HEAD"); do
	git -C "$TOP" log -1 --format=%B "$h" | sed -n '2{/./q1}' || echo "${h:0:7}"
done)
tap_result "$([ -z "$nobl" ]; echo $?)" blank_line_before_body "no blank line after the subject:" "$nobl"
tap_done
