#!/usr/bin/env bash
# Mutation check: break a central function on purpose, run the tests that
# guard it, and expect them to fail. A mutation the tests survive means a
# suite whose oracle cannot see the bug.
#
# Each mutation is a sed edit of one file, applied in place and undone on
# exit (the file's original bytes are kept in a temporary file and written
# back by a trap, even on Ctrl-C). The script refuses a mutation that does
# not change its file, so a renamed function cannot turn a check into a
# silent pass. Not part of .ci/run: it edits the working tree while it runs.
#
# Usage: .ci/mutate.sh [NAME...]   (no names: every mutation)
# The engine and store mutations run those packages' suites (about a
# minute each on 2 cores).
# Exit status: 0 when every mutation was killed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

# name | file | sed script | packages to test
mutations=(
	'expr-equal-true|expr/equal.go|/^func deepEqual(x, y any, work \*int) bool {$/a\	return true|./expr/'
	'expr-less-reversed|expr/eval.go|s/return c < 0, nil/return c > 0, nil/|./expr/'
	'expr-and-no-short-circuit|expr/eval.go|s/(n.op == opAnd \&\& !l)/(false \&\& n.op == opAnd \&\& !l)/|./expr/'
	'expr-missing-member-null|expr/eval.go|s/return nil, typeErrorf(fmt.Sprintf("member %q does not exist", n.name))/return nil, nil/|./expr/'
	# The engine's result checks (one sequence for do steps and fanout items): the contract, the ensures.
	'engine-contract-ignored|engine/ensure.go|s/		if errs := out.Validate(output, "result"); len(errs) > 0 {/		if errs := out.Validate(output, "result"); false \&\& len(errs) > 0 {/|./engine/'
	'engine-ensure-ignored|engine/ensure.go|s/	if er := t.runEnsures(ec, ensures, b); er.reason != "" {/	if er := t.runEnsures(ec, ensures, b); false \&\& er.reason != "" {/|./engine/'
	# The store's chain checks: read back from the head, read forwards in pages, the line's own hash.
	'store-chain-back|store/logfile.go|s/		if ev.Hash != want {/		if false \&\& ev.Hash != want {/|./store/'
	'store-chain-forward|store/logfile.go|s/		if ev.PrevHash != prev {/		if false \&\& ev.PrevHash != prev {/|./store/'
	'store-line-hash|store/event.go|s/	if got := hashBody(body); got != w.Hash {/	if got := hashBody(body); false \&\& got != w.Hash {/|./store/'
)

target=""
backup=""
restore() {
	if [[ -n $target && -n $backup ]]; then
		cp "$backup" "$target"
		rm -f "$backup"
	fi
	target=""
	backup=""
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

want=("$@")
selected() {
	[[ ${#want[@]} -eq 0 ]] && return 0
	local w
	for w in "${want[@]}"; do [[ $w == "$1" ]] && return 0; done
	return 1
}

status=0
ran=0
log=$(mktemp)
for m in "${mutations[@]}"; do
	IFS='|' read -r name file script pkgs <<<"$m"
	selected "$name" || continue
	ran=$((ran + 1))
	backup=$(mktemp)
	cp "$file" "$backup"
	target=$file
	sed -i -e "$script" "$file"
	if cmp -s "$file" "$backup"; then
		echo "ERROR    $name: the sed script did not change $file (update this script)"
		status=1
		restore
		continue
	fi
	# shellcheck disable=SC2086 # pkgs is a space-separated package list
	if go test -count=1 $pkgs >"$log" 2>&1; then
		echo "SURVIVED $name: go test $pkgs passed with $file mutated"
		status=1
	elif grep -q '^--- FAIL' "$log"; then
		failed=$(grep '^--- FAIL' "$log" | awk '{print $3}' | sort -u | tr '\n' ' ')
		echo "killed   $name: failing: $failed"
	else
		echo "ERROR    $name: go test failed without a failing test (does the mutant build?)"
		sed -n 1,20p "$log"
		status=1
	fi
	restore
done
rm -f "$log"
if [[ $ran -eq 0 ]]; then
	echo "ERROR    no mutation named ${want[*]}"
	status=1
fi
exit $status
