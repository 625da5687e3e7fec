#pragma once
// Choosing the backend for --device (auto | cpu | cuda | hip).

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/gpu/gpu_backend.h"
#include "core/error.h"

namespace dcu {

// The flags that shape a backend's arithmetic.
struct BackendFlags {
  // --dtype picks the GPU precision mode: float32 keeps every matmul on exact f32 kernels, the others let
  // large matmuls use tensor cores, their activations as hi + lo 16-bit parts (--matmul-precision high)
  // or rounded to one (medium: faster prefill, vLLM's precision).
  std::string dtype = "auto";
  std::string matmul_precision = "high";
  // --activation-quantization: int8 rounds the activations of matmuls with quantized weights to int8
  // blocks (backend/activation_quantization.h), so that the decode GEMVs multiply codes; none keeps them
  // f32; auto is int8 on GPUs and none on the CPU (whose matmuls gain nothing from it).
  std::string activation_quantization = "auto";
};

// `auto` picks a GPU when this build has GPU support and a device is present, else the CPU. Throws
// dcu::Error for a device this build or machine cannot provide, or flags check_backend_flags refuses.
std::unique_ptr<Backend> make_backend(const std::string& device, int device_index = 0, const BackendFlags& flags = {});

// Throws dcu::Error for flags make_backend would refuse (before any device): unknown names, or medium
// with float32.
void check_backend_flags(const BackendFlags& flags);

// Whether a backend of this kind rounds quantized matmuls' activations to int8 (BackendFlags).
bool int8_activations(DeviceKind device, const std::string& activation_quantization);

// The KV cache's element type. --kv-cache-dtype int8 (also vLLM's fp8 and fp8_e4m3: the same 8-bit cache,
// stored as int8 codes with one scale per token and KV head) gives I8 on every backend; auto gives what
// the attention reads at the run's precision: f32 on the CPU and with --dtype float32, f16 with
// --dtype float16, else bf16. Throws dcu::Error for other names.
DType kv_cache_dtype(DeviceKind device, const std::string& dtype, const std::string& kv_cache_dtype);

// Total and free memory of the GPU behind `backend`; nullopt for the CPU. Its memory_problem says when
// the two memory queries disagree (no budget can be derived then).
std::optional<GpuDeviceInfo> gpu_info(const Backend& backend, int device_index = 0);

// Bytes for KV pages and state slots on `gpu` (weights already loaded): total * utilization less what
// is in use (total - free) and `scratch_bytes`. Throws dcu::Error naming the GPU when its two memory
// queries disagree (memory_problem) or nothing is left.
size_t gpu_cache_budget(const GpuDeviceInfo& gpu, double gpu_memory_utilization, size_t scratch_bytes);

// The last line of an error from setting up GPUs (runtime, libraries, memory, communicators).
inline constexpr const char* kDoctorHint = "run `dcuserve doctor` for a full check of this machine's GPUs and libraries";

// Runs one GPU start-up step; a dcu::Error it throws is rethrown with kDoctorHint as its last line.
template <typename F> decltype(auto) with_doctor_hint(F&& step) {
  try {
    return step();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.ends_with(kDoctorHint)) throw;
    throw Error(what + "\n" + kDoctorHint);
  }
}

}  // namespace dcu
