#!/usr/bin/env bash
# Builds the CPU backend and runs its test suite with the compiler and Boost of Ubuntu 22.04 (Hygon's DTK
# image): g++-11 and Boost 1.74, both Debian packages. libboost1.74-dev conflicts with the
# libboost1.81-dev that setup.sh installs, so its headers are unpacked into build/.boost174 instead.
# Needs what scripts/test.sh sets up before it: scripts/setup.sh (g++-11), the test tokenizers and
# tests/e2e's node modules.
# Usage: scripts/test_ubuntu2204_toolchain.sh   (build folder: build/cpu-gcc11-boost174)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build/cpu-gcc11-boost174"
boost="$root/build/.boost174"
boost_dir="$boost/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0"

if ! grep -q '"1_74"' "$boost/usr/include/boost/version.hpp" 2>/dev/null; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # As root apt drops to the _apt user, who cannot write into the private temporary folder.
  download() { (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root libboost1.74-dev); }
  download || { apt-get update -qq && download; }
  rm -rf "$boost" && mkdir -p "$boost"
  dpkg-deb -x "$work"/libboost1.74-dev_*.deb "$boost"
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$root"  # CI clones into a new folder each run: hash paths relative to it
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=gcc-11 -DCMAKE_CXX_COMPILER=g++-11 -DBoost_DIR="$boost_dir" "${launcher[@]}" >/dev/null

# Proof that this build is the one it claims to be: the compiler and the Boost headers it really uses.
grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*g++-11$" "$build/CMakeCache.txt" || { echo "$0: not configured with g++-11"; exit 1; }
grep -q -- "-isystem $boost/usr/include " "$build/compile_commands.json" ||
  { echo "$0: the build does not include Boost 1.74 from $boost"; exit 1; }
echo "test_ubuntu2204_toolchain: $(g++-11 --version | head -1), Boost 1.74 from $boost"

cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --no-tests=error
