#!/usr/bin/env bash
# Installs the Debian packages dcuserve needs to build and test. Idempotent; run as root (or with sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config ccache
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev libboost1.81-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-jinja2 curl
  hipcc  # Debian's HIP compiler (clang 15): the gfx906 build and its code-object audit
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the end-to-end tests with the openai client; keep any node/npm already installed.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
