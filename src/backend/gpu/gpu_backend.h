#pragma once
// The CUDA/HIP implementation of Backend and device discovery. Plain C++: no GPU headers here.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace dcu {

struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  std::string arch;          // validated: "gfx906", "sm_90", ...
  size_t total_memory = 0;   // bytes
  size_t free_memory = 0;    // bytes, when listed
};

struct GpuBackendOptions {
  // Logical warp width of the kernels: 0 = the device's own (32 NVIDIA, 64 gfx906). 64 on an NVIDIA
  // GPU runs the wave64 code paths (two warps joined through shared memory) to verify them there.
  int logical_warp = 0;
  // CUDA builds: hand large bf16/f16 matmuls to cuBLAS. Off: the portable tiled kernel everywhere.
  // Off by default: on H200 the tensor-core path measured 4-8x the logit error of the f32 kernels
  // (docs/KERNELS.md), too much for the golden tolerance while activations are f32.
  bool vendor_blas = false;
};

std::vector<GpuDeviceInfo> list_gpu_devices();
std::unique_ptr<Backend> make_gpu_backend(int device_index, const GpuBackendOptions& options = {});

}  // namespace dcu
