#!/usr/bin/env bash
# Configures and builds one preset (default: cpu), every target or only the ones named.
# Usage: scripts/build.sh [preset [target...]]   (scripts/serve.sh: scripts/build.sh cpu dcuserve)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-cpu}"
targets=()
if (($# > 1)); then targets=(--target "${@:2}"); fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # CI clones into a new folder each run: hash paths relative to it, and not the folder itself (which
  # ccache otherwise adds for the debug info of the sanitizer presets).
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
cmake --preset "$preset" "${launcher[@]}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" "${targets[@]}"
