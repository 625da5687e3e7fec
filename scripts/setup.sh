#!/usr/bin/env bash
# Installs the Debian packages dcuserve needs. Idempotent; run as root (or with sudo).
# Usage: scripts/setup.sh [serve]
#   (none)  everything scripts/test.sh builds and runs: the test frameworks, Debian's HIP compiler, Node.js
#   serve   only what building dcuserve and serving need (scripts/serve.sh)
set -euo pipefail
mode="${1:-all}"
[[ "$mode" == all || "$mode" == serve ]] || { echo "usage: scripts/setup.sh [serve]" >&2; exit 2; }
packages=(
  build-essential cmake ninja-build pkg-config ccache
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev libboost1.81-dev
  curl
)
if [[ "$mode" == all ]]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    python3-jinja2
    python3-jsonschema  # validates structured outputs (tests/structured/validate_corpus.py)
    hipcc  # Debian's HIP compiler (clang 15): the gfx906 build and its code-object audit
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the end-to-end tests with the openai client; keep any node/npm already installed.
[[ "$mode" == serve ]] || command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
