#!/usr/bin/env bash
# Builds the GPU backend and its tests.
#   scripts/build_gpu.sh cuda [build-dir] [cuda-archs]   nvcc from /usr/local/cuda, archs default "80;90a"
#   scripts/build_gpu.sh hip  [build-dir] [hip-archs]    the ROCm/DTK tree of ROCM_PATH, /opt/dtk or /opt/rocm, else
#                                                        Debian's hipcc/clang-15 (docs/DCU.md); archs default "gfx906"
# Then: <build-dir>/tests/backend/gpu_ops_test, gpu_quantized_ops_test, gpu_golden_test and gpu_tp_test (they skip when no GPU is present),
# and gpu_kernel_bench (per-kernel speed, docs/PERFORMANCE_GPU.md). EXTRA_TARGETS="dcuserve" adds more.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="${1:-cuda}"
case "$vendor" in
  cuda) build="${2:-$root/build/cuda}"
        flags=(-DDCUSERVE_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${3:-80;90a}") ;;
  hip)  build="${2:-$root/build/hip-gfx906}"
        flags=(-DDCUSERVE_HIP=ON "-DCMAKE_HIP_ARCHITECTURES=${3:-gfx906}") ;;
  *) echo "usage: $0 cuda|hip [build-dir] [archs]"; exit 2 ;;
esac
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${flags[@]}"
cmake --build "$build" --target dcuserve_gpu gpu_arch_test gpu_ops_test gpu_quantized_ops_test gpu_golden_test gpu_tp_test gpu_kernel_bench ${EXTRA_TARGETS:-} -j"${JOBS:-2}"
