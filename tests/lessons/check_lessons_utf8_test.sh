#!/usr/bin/env bash
# `servescope --check-lessons` on a lesson file with a byte that is not UTF-8: exit status 1
# and FILE:LINE: not valid UTF-8 (byte offset N) on stderr, not an abort in the JSON report.
#   usage: check_lessons_utf8_test.sh SERVESCOPE
set -euo pipefail
servescope=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'id: latin\nnumber: 1\ntitle: caf\xe9\n' >"$dir/01-latin.yaml"

set +e
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --check-lessons "$dir" \
  >"$dir/out" 2>"$dir/err"
status=$?
set -e
[ "$status" -eq 1 ] || fail "exit status $status, expected 1: $(cat "$dir/err")"
grep -qx "$dir/01-latin.yaml:3: not valid UTF-8 (byte offset 30)" "$dir/err" ||
  fail "stderr lacks the UTF-8 problem: $(cat "$dir/err")"
grep -q '"errors":\[".*not valid UTF-8' "$dir/out" || fail "no JSON report: $(cat "$dir/out")"
echo "check-lessons: a non-UTF-8 byte is FILE:LINE, exit 1"
