#!/usr/bin/env bash
# `servescope --check-lessons` on a folder of broken lessons: exit status 1, the JSON counts
# line on stdout, and one FILE:LINE: line per problem on stderr, each at the right line.
#   usage: check_lessons_cli_test.sh SERVESCOPE INVALID_LESSONS_DIR
set -euo pipefail
servescope=$1
dir=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

set +e
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --check-lessons "$dir" >"$out" 2>"$err"
status=$?
set -e
[ "$status" -eq 1 ] || fail "exit status $status, expected 1"
grep -q '^{"lessons":2,"experiments":[0-9]*,"questions":[0-9]*,"generated_questions":[0-9]*,"flashcards":[0-9]*,"errors":\[' "$out" ||
  fail "no JSON counts line on stdout: $(cat "$out")"
for expected in \
    "syntax.yaml:[0-9]*: not valid YAML" \
    "structure.yaml:2: the lesson's number must be a whole number, got 'two'" \
    "structure.yaml:11: unknown action 'warp_speed'" \
    "structure.yaml:17: key 'title' appears twice" \
    "semantics.yaml:23: set_classmates 40 is outside 0..32" \
    "semantics.yaml:39: question 'choice-out-of-range': answer 2 is not an option's index" \
    "semantics.yaml:68: question 'bad-params' working: {{calc.blocks}}"; do
  grep -q "^$dir/$expected" "$err" || fail "stderr lacks '$expected':
$(cat "$err")"
done
lines=$(wc -l <"$err")
errors=$(grep -o '"errors":\[.*\]' "$out" | grep -o '","\|\["' | wc -l)
[ "$lines" -eq "$errors" ] || fail "$lines stderr lines but $errors errors in the JSON"
echo "check-lessons: exit 1, $lines problems, each FILE:LINE"
