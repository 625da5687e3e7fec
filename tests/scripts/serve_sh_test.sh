#!/usr/bin/env bash
# scripts/serve.sh with stand-ins for dpkg-query, cmake and the dcuserve executable, in a copy of
# scripts/: it says what it is doing, checks only the packages serving needs, builds only the dcuserve
# target (not the tests), then runs `dcuserve serve` with its arguments.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/scripts" "$work/repo/build/cpu" "$work/bin"
cp "$repo"/scripts/{serve,setup,build}.sh "$work/repo/scripts/"
calls="$work/calls"

# A stand-in that appends its name and arguments to $calls, then runs `body`.
stub() {
  local path="$1" body="${2:-}"
  printf '#!/bin/sh\necho "%s $*" >> "%s"\n%s\n' "$(basename "$path")" "$calls" "$body" > "$path"
  chmod +x "$path"
}
# Every package is installed; the Boost query (setup.sh picks the installed libboost1.XX-dev) lists one.
stub "$work/bin/dpkg-query" 'case "$*" in *libboost1.*) echo "ii  libboost1.74-dev" ;; *) printf "install ok installed" ;; esac'
stub "$work/bin/apt-get"
stub "$work/bin/cmake"
stub "$work/repo/build/cpu/dcuserve"

out="$(PATH="$work/bin:$PATH" "$work/repo/scripts/serve.sh" --port 8001 2>&1)"

fail() {
  echo "FAIL: $1" >&2
  echo "--- serve.sh printed:" >&2; echo "$out" >&2
  echo "--- commands it ran:" >&2; cat "$calls" >&2
  exit 1
}
expected="serve.sh: checking the packages building needs (scripts/setup.sh serve)...
serve.sh: building dcuserve (the first build takes a few minutes)...
serve.sh: starting build/cpu/dcuserve serve --port 8001"
[[ "$out" == "$expected" ]] || fail "the progress messages"
grep -q "^dpkg-query .* libfmt-dev$" "$calls" || fail "the serving packages are not checked"
! grep -q "^apt-get" "$calls" || fail "apt-get runs although everything is installed"
! grep -qE "^dpkg-query .* (libgtest-dev|hipcc)$" "$calls" || fail "test-only packages are checked"
grep -qE "^cmake --build --preset cpu .*--target dcuserve$" "$calls" || fail "cmake does not build the dcuserve target alone"
[[ "$(tail -n 1 "$calls")" == "dcuserve serve --port 8001" ]] || fail "dcuserve serve does not run last, with the arguments"
echo "serve.sh: OK"
