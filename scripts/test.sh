#!/usr/bin/env bash
# Sets everything up, builds, and runs every test: the CPU build and its test suite (unit, golden,
# engine, server, end-to-end with the official openai client), the same suite built with Ubuntu 22.04's
# g++-11 and Boost 1.74, the sanitizer suites (AddressSanitizer + UBSan, ThreadSanitizer) and a bounded
# run of every fuzzer, then the GPU backends compiled for CUDA (sm_80, sm_90a) and HIP gfx906 with their
# GPU tests (which skip without a GPU), the gfx906 code-object audit, and the HIP build against a
# ROCm-layout tree in another prefix. Each step prints how long it took; the list of times ends the run.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
fuzz_seconds="${DCUSERVE_FUZZ_SECONDS:-30}"

step_times=()
print_step_times() {
  ((${#step_times[@]})) || return 0
  echo "test.sh: step times"
  printf '  %s\n' "${step_times[@]}"
}
trap print_step_times EXIT
# step NAME COMMAND...: runs the command and records how long it took.
step() {
  local name="$1" start="$SECONDS"
  shift
  echo "=== test.sh: $name"
  "$@"
  step_times+=("$(printf '%-34s %5d s' "$name" "$((SECONDS - start))")")
  echo "=== test.sh: $name: $((SECONDS - start)) s"
}

step "setup" scripts/setup.sh
step "test tokenizers" scripts/fetch_test_tokenizers.sh
step "npm ci (tests/e2e)" bash -c 'cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error'
step "build cpu" scripts/build.sh cpu
step "ctest cpu" ctest --preset cpu -j "$jobs"
step "ubuntu 22.04 toolchain" scripts/test_ubuntu2204_toolchain.sh
# Sanitizers: ASan + UBSan on the unit, engine and server tests (the asan test preset says which and why
# some are left out), TSan on the engine, server and comm tests; then every fuzzer for a bounded time.
step "build asan (tests + fuzzers)" scripts/build.sh asan
step "ctest asan" ctest --preset asan -j "$jobs"
step "fuzz (${fuzz_seconds} s each)" scripts/fuzz.sh "$fuzz_seconds"
step "build tsan" scripts/build.sh tsan
step "ctest tsan" ctest --preset tsan -j "$jobs"

if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  step "build cuda" scripts/build_gpu.sh cuda
  step "ctest cuda" ctest --test-dir build/cuda -R gpu_ --output-on-failure
else
  echo "test.sh: no CUDA toolkit; skipping the CUDA build"
fi
step "build hip" scripts/build_gpu.sh hip
step "ctest hip" ctest --test-dir build/hip-gfx906 -R gpu_ --output-on-failure
step "audit gfx906" scripts/audit_gfx906.sh
step "rocm tree build" scripts/test_rocm_tree_build.sh
