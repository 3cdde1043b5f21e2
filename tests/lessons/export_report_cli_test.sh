#!/usr/bin/env bash
# `servescope --export-report FILE.html` with no window: FILE.html and FILE.pdf from the
# learner's progress file (none yet: a report that says so), exit 0; a folder that does not
# exist: exit 1 with the path named. XDG_DATA_HOME points the progress file at a fresh folder.
#   usage: export_report_cli_test.sh SERVESCOPE
set -euo pipefail
servescope=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

export XDG_DATA_HOME="$dir/data" XDG_RUNTIME_DIR="$dir"
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --export-report "$dir/report.html" \
  >"$dir/out" 2>"$dir/err" || fail "exit status $?: $(cat "$dir/err")"
grep -q "wrote $dir/report.html and $dir/report.pdf" "$dir/out" || fail "stdout: $(cat "$dir/out")"
grep -q "No lesson started yet" "$dir/report.html" || fail "the HTML does not say no lesson started"
[ "$(head -c 5 "$dir/report.pdf")" = "%PDF-" ] || fail "report.pdf is not a PDF"

set +e
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$servescope" --export-report "$dir/no/such/r.html" \
  >"$dir/out" 2>"$dir/err"
status=$?
set -e
[ "$status" -eq 1 ] || fail "exit status $status for an unwritable path, expected 1"
grep -q "$dir/no/such/r.html" "$dir/err" || fail "stderr does not name the path: $(cat "$dir/err")"
echo "ok"
