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
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev
  curl
)
if [[ "$mode" == all ]]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    python3-jinja2
    python3-jsonschema  # validates structured outputs (tests/structured/validate_corpus.py)
    hipcc  # Debian's HIP compiler (clang 15): the gfx906 build and its code-object audit
    g++-11  # Ubuntu 22.04's compiler: scripts/test_ubuntu2204_toolchain.sh
    # The asan preset and fuzz/ (scripts/fuzz.sh): clang 14, its sanitizer and libFuzzer runtimes, its OpenMP
    clang-14 libclang-rt-14-dev libomp-14-dev
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js runs the end-to-end tests with the openai client; keep any node/npm already installed.
[[ "$mode" == serve ]] || command -v npm >/dev/null || missing+=(nodejs npm)

# Boost (headers only): any libboost1.XX-dev of 1.74 or later that is installed, else the newest the
# distribution has (Debian 12: 1.81, Ubuntu 22.04: 1.74). The versions conflict with one another.
boost_minors() { sed -n 's/^libboost1\.\([0-9]*\)-dev$/\1/p' | sort -n; }
# (dpkg-query exits 1 when no package of that name was ever known: a fresh machine.)
installed_boost="$({ dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'libboost1.*-dev' 2>/dev/null || true; } |
  awk '$1 == "ii" {print $2}' | boost_minors | tail -1)"
need_boost=false
[ -n "$installed_boost" ] && [ "$installed_boost" -ge 74 ] || need_boost=true

if ((${#missing[@]})) || $need_boost; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  if $need_boost; then
    newest="$(apt-cache pkgnames libboost1. | boost_minors | tail -1)"
    [ -n "$newest" ] && [ "$newest" -ge 74 ] || { echo "setup.sh: this distribution has no Boost 1.74 or later" >&2; exit 1; }
    missing+=("libboost1.$newest-dev")
  fi
  echo "setup.sh: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
