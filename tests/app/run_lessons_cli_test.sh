#!/usr/bin/env bash
# `servescope --run-lessons`: the shipped serving and KV lessons' experiments run headless
# and every condition holds (exit 0, a JSON report with each condition as an object); a fixture lesson
# with a claim no run can show exits 1 and says which condition failed.
#   usage: run_lessons_cli_test.sh SERVESCOPE FIXTURE_LESSONS_DIR [LESSON_ID...]
#   (the lessons to run; default serving and kv-cache)
set -euo pipefail
servescope=$1
fixtures=$2
shift 2
lessons=("$@")
[ ${#lessons[@]} -gt 0 ] || lessons=(serving kv-cache)
lesson_args=()
for id in "${lessons[@]}"; do lesson_args+=(--lesson "$id"); done
fail() { echo "FAIL: $*" >&2; exit 1; }
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

set +e
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --run-lessons "${lesson_args[@]}" --json >"$out" 2>"$err"
status=$?
set -e
cat "$err" >&2
[ "$status" -eq 0 ] || fail "${lessons[*]}: exit status $status, expected 0: $(cat "$out")"
grep -q '"condition": "evictions > 0"' "$out" || fail "no evictions condition in: $(cat "$out")"
if [[ " ${lessons[*]} " == *" serving "* ]]; then
  grep -q '"condition": "decode_ms_per_token > prefill_ms_per_token"' "$out" || fail "no serving condition"
fi
grep -q '"passed": false' "$out" && fail "a condition failed: $(cat "$out")"
grep -q '"passed": true' "$out" || fail "nothing passed: $(cat "$out")"

set +e
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --run-lessons "$fixtures" --json >"$out" 2>"$err"
status=$?
set -e
cat "$err" >&2
[ "$status" -eq 1 ] || fail "fixture: exit status $status, expected 1: $(cat "$out")"
grep -q '"condition": "kv_tokens > 1000 \* steps.short-story.kv_tokens",' "$out" || fail "no failing condition: $(cat "$out")"
grep -q '"passed": false' "$out" || fail "nothing failed: $(cat "$out")"
grep -q '"runs": 2' "$out" || fail "the repeated step's measures have no spread: $(cat "$out")"
grep -q 'not: kv_tokens > 1000' "$err" || fail "stderr does not name the failing condition"
echo "run-lessons: ${lessons[*]} hold; the fixture's impossible claim fails with exit 1"
