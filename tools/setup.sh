#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   tools/setup.sh run    install missing packages, build (release), launch on the default model
#   tools/setup.sh test   install missing packages, build, run the whole test suite twice:
#                         once optimised (warnings are errors), once under ASan + UBSan;
#                         the remote tests' llama-server is built once per machine first
#                         (tools/llama_server.sh, into ~/.cache/servescope)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the build, the tests and the offline tools need.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git curl ca-certificates
  libopenblas-dev nlohmann-json3-dev libyaml-cpp-dev libpcre2-dev libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-svg-dev fonts-dejavu-core
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  clang libclang-rt-14-dev
  xvfb xauth
  file dpkg-dev  # cpack's .deb: dpkg-shlibdeps works out Depends, CPack checks binaries with file
)

install_missing_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "setup: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {  # build PRESET
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1" -j "$(nproc)"
}

run_app() {
  build release
  local bin=build/release/bin
  if [ -x "$bin/servescope" ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
    exec "$bin/servescope"
  fi
  if [ -x "$bin/servescope" ]; then
    echo "setup: no display here, so the story comes from servescope-cli instead of the window" >&2
  fi
  exec "$bin/servescope-cli" generate --prompt "Once upon a time" --max-tokens 100
}

run_tests() {
  build ci
  # The remote tests attach to a real llama-server: built once per machine into a cache folder
  # (tools/llama_server.sh), then required, so they never skip. A machine that cannot reach the
  # npm registry cannot have it: those tests then skip, saying why; any other failure stops.
  local server status=0
  server=$(tools/llama_server.sh) || status=$?
  if [ "$status" -eq 0 ]; then
    export SERVESCOPE_LLAMA_SERVER=$server SERVESCOPE_REQUIRE_LLAMA_SERVER=1
  elif [ "$status" -eq 3 ]; then
    echo "setup: no llama-server on this machine (the npm registry is out of reach): the" \
      "tests against a real server will skip" >&2
  else
    exit "$status"
  fi
  ctest --preset ci -j "$(nproc)"
  build ci-asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset ci-asan -j "$(nproc)"
}

install_missing_packages
case "${1:-}" in
  run) run_app ;;
  test) run_tests ;;
  *) echo "usage: tools/setup.sh run|test" >&2; exit 2 ;;
esac
