#pragma once
// The CUDA/HIP implementation of Backend and device discovery. Plain C++: no GPU headers here.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/gpu/device_queries.h"

namespace dcu {

struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  std::string arch;          // validated: "gfx906", "sm_90", ...
  size_t total_memory = 0;   // bytes
  size_t free_memory = 0;    // bytes, when listed
  // Why the runtime's two memory answers cannot both be right (memory_disagreement), else nullopt:
  // then no budget can be derived from total_memory and free_memory.
  std::optional<std::string> memory_problem;
};

struct GpuBackendOptions {
  // Logical warp width of the kernels: 0 = the device's own (32 NVIDIA, 64 gfx906). 64 on an NVIDIA
  // GPU runs the wave64 code paths (two warps joined through shared memory) to verify them there.
  int logical_warp = 0;
  // CUDA builds: matmuls of bf16/f16 weights with more than gemv_max_tokens rows go to cuBLAS (tensor
  // cores, activations split into two 16-bit parts, f32 accumulation): the bf16/f16 precision mode,
  // logits within 1e-2 of an f32 reference. Off: the portable f32 kernels everywhere (within 1e-3).
  // HIP builds that find rocBLAS (Hygon DTK, ROCm) do the same for F16 weights; without it (Debian)
  // they ignore it. See gpu_options_for_dtype().
  bool vendor_blas = true;
  // Matmuls with at most this many token rows (1..16) use the bandwidth-bound GEMV; narrow matrices
  // (at most 1,024 output rows) use it up to 16 rows regardless (see use_gemv in matmul.cu). HIP
  // builds always use 16 (no matrix cores to hand the rows to).
  int gemv_max_tokens = 16;
  // CUDA builds with vendor_blas: matmuls of 16-bit weights above the GEMV and up to 32 rows run on
  // the tensor-core kernel (weights read once for both 16-bit halves of the activations) instead of
  // cuBLAS's two GEMMs. Off: cuBLAS, as before (comparisons, debugging).
  bool tensor_core_decode = true;
  // With vendor_blas: false rounds the activations of tensor-core matmuls to one 16-bit part instead
  // of hi + lo (one product instead of two, as vLLM and llama.cpp compute; --matmul-precision medium).
  bool split_activations = true;
  // Matmuls of quantized weights round their activations to int8 blocks and the decode GEMV multiplies
  // codes by codes (dp4a / v_dot4_i32_i8): backend/activation_quantization.h, --activation-quantization.
  bool int8_activations = false;
};

// The options for an engine's --dtype: "float32" keeps every matmul on the f32 kernels (the 1e-3
// tolerance); "bfloat16", "float16" and "auto" use tensor cores for prefill and large batches, with
// the activations as hi + lo (--matmul-precision high, logits within 1e-2) or rounded ("medium").
inline GpuBackendOptions gpu_options_for_dtype(const std::string& dtype, int logical_warp = 0,
                                               const std::string& matmul_precision = "high") {
  GpuBackendOptions o;
  o.logical_warp = logical_warp;
  o.vendor_blas = dtype != "float32";
  o.split_activations = matmul_precision != "medium";
  // On an H200 the tensor-core decode kernel beats the GEMV from 3 rows on the large projections
  // (T = 4: 41.9 vs 47.1 us on [12288, 5120], 55.2 vs 63.7 on [17408, 5120]; T = 2: the GEMV 37.9 vs
  // 42.4); docs/PERFORMANCE_GPU.md, round 5. HIP builds keep the GEMV up to 16 rows regardless.
  if (o.vendor_blas) o.gemv_max_tokens = 2;
  return o;
}

// Devices with validated architecture names (a garbage answer is asked again, then "unknown").
std::vector<GpuDeviceInfo> list_gpu_devices();
// Every device as the runtime answers, unvalidated (`dcuserve doctor` shows what it said).
std::vector<GpuDeviceQuery> query_gpu_devices();
GpuPeerLink query_gpu_peer_link(int a, int b);
std::unique_ptr<Backend> make_gpu_backend(int device_index, const GpuBackendOptions& options = {});

}  // namespace dcu
