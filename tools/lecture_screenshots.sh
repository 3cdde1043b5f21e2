#!/bin/sh
# Every lesson step in lecture mode on a projector's screen, light and dark, each step's
# experiment run to its end: the set in docs/screenshots/lecture/, to look at after changing a
# lesson or a panel.
#   tools/lecture_screenshots.sh [BUILD_DIR] [OUT_DIR] [WIDTHxHEIGHT] [LESSON_ID ...]
# Runs offscreen (no display needed) on the CPU backend, with fresh settings and caches.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
out=${2:-$here/docs/screenshots/lecture}
size=${3:-1280x720}
[ $# -ge 3 ] && shift 3 || shift $#
app=$build/bin/servescope
[ -x "$app" ] || { echo "lecture_screenshots: no $app; build first" >&2; exit 1; }
lessons=${*:-$(sed -n 's/^id: *//p' "$here"/lessons/[0-9]*.yaml)}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
width=${size%x*}
height=${size#*x}
cat >"$scratch/screen.json" <<JSON
{ "screens": [ { "name": "projector", "x": 0, "y": 0, "width": $width, "height": $height,
                 "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1 } ] }
JSON
mkdir -p "$out"
for lesson in $lessons; do
  step=1
  while :; do
    for theme in light dark; do
      shot="$out/$lesson-$step-$theme.png"
      if ! XDG_CONFIG_HOME=$scratch/config XDG_CACHE_HOME=$scratch/cache \
           XDG_DATA_HOME=$scratch/data-$theme \
           QT_QPA_PLATFORM="offscreen:configfile=$scratch/screen.json" \
           "$app" --demo "Once upon a time" --backend cpu --lecture --theme "$theme" \
           --lesson "$lesson" --step "$step" --run --screenshot "$shot" --after-ms 1500 \
           2>"$scratch/err"; then
        grep -q "no such lesson step" "$scratch/err" && break 2
        cat "$scratch/err" >&2
        exit 1
      fi
      echo "$shot"
    done
    step=$((step + 1))
  done
done
