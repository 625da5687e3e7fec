#pragma once
// Choosing the backend for --device (auto | cpu | cuda | hip).

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/gpu/gpu_backend.h"

namespace dcu {

// `auto` picks a GPU when this build has GPU support and a device is present, else the CPU.
// `dtype` (--dtype) picks the GPU precision mode: float32 keeps every matmul on exact f32 kernels,
// the others let large matmuls use tensor cores, their activations as hi + lo 16-bit parts
// (`matmul_precision` high) or rounded to one (medium: faster prefill, vLLM's precision). Throws
// dcu::Error for a device this build or machine cannot provide, or medium with float32.
std::unique_ptr<Backend> make_backend(const std::string& device, int device_index = 0,
                                      const std::string& dtype = "auto", const std::string& matmul_precision = "high");

// Total and free memory of the GPU behind `backend`; nullopt for the CPU.
std::optional<GpuDeviceInfo> gpu_info(const Backend& backend, int device_index = 0);

}  // namespace dcu
