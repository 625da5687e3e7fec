#pragma once
// GPU backend entry points that every build can call: a CPU-only build answers "no GPU support"
// (gpu_backend_compiled() is false, list_gpu_devices() is empty, make_gpu_backend() throws).

#include "backend/gpu/gpu_backend.h"

namespace dcu {

// True when this binary was built with the CUDA or HIP backend.
bool gpu_backend_compiled();

// What the GPU backend of this binary was built for.
struct GpuBuild {
  DeviceKind kind = DeviceKind::Cpu;       // Cpu: no GPU backend
  std::vector<std::string> architectures;  // CMAKE_CUDA_ARCHITECTURES ("80", "90a") or CMAKE_HIP_ARCHITECTURES ("gfx906")
  bool vendor_blas = false;                // links cuBLAS / rocBLAS
};
GpuBuild gpu_build();

}  // namespace dcu
