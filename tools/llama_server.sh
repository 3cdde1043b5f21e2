#!/usr/bin/env bash
# llama.cpp's llama-server, the real serving engine the remote tests attach to (and a class's
# "there" on a laptop): the release source that the npm package node-llama-cpp ships
# (llama/gitRelease.bundle, a git bundle), built CPU-only once per machine into a cache folder
# outside the build tree and reused after.
#
#   tools/llama_server.sh        build it unless the cache holds it; print its path
#
# Exit status 3: the package could not be fetched (no route to the npm registry, or its TLS
# certificate not trusted here); any other failure is 1.
#
# The cache is $SERVESCOPE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/servescope); the
# package comes from the npm registry (curl; no npm needed) and is checked against its SHA-256.
# Needs git, cmake, ninja and a C++ compiler (tools/setup.sh installs them).
set -euo pipefail

package_version=3.21.1  # node-llama-cpp; it ships llama.cpp release v0.4.0
package_sha256=7a231d6bafa14142a1cbed9893d4ec5bc6041b2a5f5939a623accaab4203c11f
cache=${SERVESCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/servescope}
home=$cache/llama-server-node-llama-cpp-$package_version
server=$home/bin/llama-server

if [[ -x $server ]]; then
  echo "$server"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/llama-server.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "llama_server: fetching node-llama-cpp $package_version (llama.cpp's release source)" >&2
if ! curl -fsSL --retry 3 -o "$work/package.tgz" \
  "https://registry.npmjs.org/node-llama-cpp/-/node-llama-cpp-$package_version.tgz"; then
  echo "llama_server: could not fetch node-llama-cpp $package_version from registry.npmjs.org" >&2
  exit 3
fi
echo "$package_sha256  $work/package.tgz" | sha256sum --check --quiet -
tar -xzf "$work/package.tgz" -C "$work" package/llama/gitRelease.bundle
git clone --quiet "$work/package/llama/gitRelease.bundle" "$work/src" 2>/dev/null

echo "llama_server: building llama-server (CPU only; a few minutes, once per machine)" >&2
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_OPENMP=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "$(nproc)" --target llama-server >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; exit 1; }

# Into the cache in one step, so a cut build never looks finished.
mkdir -p "$home.partial/bin"
cp "$work/build/bin/llama-server" "$home.partial/bin/"
rm -rf "$home"
mv "$home.partial" "$home"
echo "$server"
