#include "engine/device.h"

#include "backend/gpu_backend_api.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/cache_plan.h"

namespace dcu {

void check_backend_flags(const BackendFlags& f) {
  if (f.dtype != "auto" && f.dtype != "bfloat16" && f.dtype != "float16" && f.dtype != "float32")
    fail("--dtype \"{}\": choose auto, bfloat16, float16 or float32", f.dtype);
  if (f.matmul_precision != "high" && f.matmul_precision != "medium")
    fail("--matmul-precision \"{}\": choose high or medium", f.matmul_precision);
  if (f.matmul_precision == "medium" && f.dtype == "float32")
    fail("--matmul-precision medium rounds activations to 16 bits; it needs a 16-bit --dtype, not {}", f.dtype);
  if (f.activation_quantization != "auto" && f.activation_quantization != "int8" && f.activation_quantization != "none")
    fail("--activation-quantization \"{}\": choose auto, int8 or none", f.activation_quantization);
}

bool int8_activations(DeviceKind device, const std::string& activation_quantization) {
  if (activation_quantization == "auto") return device != DeviceKind::Cpu;
  return activation_quantization == "int8";
}

DType kv_cache_dtype(DeviceKind device, const std::string& dtype, const std::string& kv_cache_dtype) {
  if (kv_cache_dtype == "int8" || kv_cache_dtype == "fp8" || kv_cache_dtype == "fp8_e4m3") return DType::I8;
  if (kv_cache_dtype != "auto") fail("--kv-cache-dtype \"{}\": choose auto or int8 (fp8, fp8_e4m3: the same)", kv_cache_dtype);
  if (device == DeviceKind::Cpu || dtype == "float32") return DType::F32;  // the CPU attention computes in f32
  return dtype == "float16" ? DType::F16 : DType::BF16;
}

std::unique_ptr<Backend> make_backend(const std::string& device, int device_index, const BackendFlags& flags) {
  check_backend_flags(flags);
  auto gpu = [&] {
    GpuBackendOptions o = gpu_options_for_dtype(flags.dtype, 0, flags.matmul_precision);
    o.int8_activations = int8_activations(DeviceKind::Cuda, flags.activation_quantization);
    return make_gpu_backend(device_index, o);
  };
  auto cpu = [&] {
    return make_cpu_backend({.int8_activations = int8_activations(DeviceKind::Cpu, flags.activation_quantization)});
  };
  if (device == "cpu") return cpu();
  if (device == "auto") {
    if (gpu_backend_compiled() && int(list_gpu_devices().size()) > device_index) return gpu();
    return cpu();
  }
  if (device == "cuda" || device == "hip") {
    if (!gpu_backend_compiled()) fail("--device {}: this build has no GPU backend (build the cuda or hip-gfx906 preset)", device);
    const int count = int(list_gpu_devices().size());
    if (device_index >= count) fail("--device {}: GPU {} requested but {} found", device, device_index, count);
    return gpu();
  }
  fail("unknown device \"{}\" (choose auto, cpu, cuda or hip)", device);
}

std::optional<GpuDeviceInfo> gpu_info(const Backend& backend, int device_index) {
  if (backend.kind() == DeviceKind::Cpu) return std::nullopt;
  auto devices = list_gpu_devices();
  if (device_index >= int(devices.size())) return std::nullopt;
  return devices[size_t(device_index)];
}

size_t gpu_cache_budget(const GpuDeviceInfo& gpu, double gpu_memory_utilization, size_t scratch_bytes) {
  if (gpu.memory_problem)
    fail("GPU {} ({}): {}, so no KV-cache budget can be derived from its memory; give one with "
         "--kv-cache-memory-bytes",
         gpu.index, gpu.name, *gpu.memory_problem);
  const double usable = double(gpu.total_memory) * gpu_memory_utilization;
  const double used = double(gpu.total_memory - gpu.free_memory) + double(scratch_bytes);
  if (usable <= used)
    fail("--gpu-memory-utilization {} allows {} on {} but weights and scratch already take {}; raise it or use "
         "more GPUs (--tensor-parallel-size)",
         gpu_memory_utilization, format_bytes(usable), gpu.name, format_bytes(used));
  return size_t(usable - used);
}

}  // namespace dcu
