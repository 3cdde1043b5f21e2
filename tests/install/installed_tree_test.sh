#!/usr/bin/env bash
# An installed tree stands on its own: install the build into a fresh prefix, run the installed
# servescope-cli from another folder, and check it reads its model from the prefix (hiding the
# prefix's data makes it fail with the lookup message; SERVESCOPE_DATA_DIR brings it back).
#   usage: installed_tree_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
unset SERVESCOPE_MODEL SERVESCOPE_DATA_DIR

fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/servescope-cli share/servescope/models/servescope-stories.gguf \
         share/servescope/eval/stories.txt share/applications/servescope.desktop \
         share/icons/hicolor/scalable/apps/servescope.svg; do
  [ -f "$prefix/$f" ] || fail "cmake --install did not put $f in the prefix"
done

if [ -x "$build/bin/servescope" ]; then  # the window, when the GUI was built
  [ -x "$prefix/bin/servescope" ] || fail "cmake --install did not put bin/servescope in the prefix"
  "$prefix/bin/servescope" --help | grep -q "usage: servescope" || fail "servescope --help failed"
  [ -f "$prefix/share/servescope/lessons/README.md" ] || fail "cmake --install did not put the lessons in"
  (cd / && env -u DISPLAY -u WAYLAND_DISPLAY "$prefix/bin/servescope" --check-lessons >/dev/null) ||
    fail "servescope --check-lessons failed on the installed lessons"
fi

cd /
story=$("$prefix/bin/servescope-cli" generate --prompt "Once upon a time" --max-tokens 12 \
        --greedy --json) || fail "the installed servescope-cli could not generate"
grep -q '"generated_ids"' <<<"$story" || fail "generate printed no generated_ids: $story"

mv "$prefix/share/servescope" "$prefix/share/moved"
if message=$("$prefix/bin/servescope-cli" info 2>&1 >/dev/null); then
  fail "the installed servescope-cli found a model with its data folder moved away"
fi
grep -q "SERVESCOPE_DATA_DIR" <<<"$message" || fail "unhelpful message: $message"
SERVESCOPE_DATA_DIR="$prefix/share/moved" "$prefix/bin/servescope-cli" info >/dev/null ||
  fail "SERVESCOPE_DATA_DIR did not point the installed servescope-cli at its data"
echo "installed tree: generate, missing-data message and SERVESCOPE_DATA_DIR all behave"
