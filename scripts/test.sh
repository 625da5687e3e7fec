#!/usr/bin/env bash
# Sets everything up, builds, and runs every test: the CPU build and its test suite (unit, golden,
# engine, server, end-to-end with the official openai client), the same suite built with Ubuntu 22.04's
# g++-11 and Boost 1.74, then the GPU backends compiled for CUDA (sm_80, sm_90a) and HIP gfx906 with
# their GPU tests (which skip without a GPU), the gfx906 code-object audit, and the HIP build against a
# ROCm-layout tree in another prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_test_tokenizers.sh
(cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
scripts/build.sh cpu
ctest --preset cpu -j "$(nproc)"
scripts/test_ubuntu2204_toolchain.sh

if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  scripts/build_gpu.sh cuda
  ctest --test-dir build/cuda -R gpu_ --output-on-failure
else
  echo "test.sh: no CUDA toolkit; skipping the CUDA build"
fi
scripts/build_gpu.sh hip
ctest --test-dir build/hip-gfx906 -R gpu_ --output-on-failure
scripts/audit_gfx906.sh
scripts/test_rocm_tree_build.sh
