#include "engine/device.h"

#include "backend/gpu_backend_api.h"
#include "core/error.h"
#include "core/log.h"

namespace dcu {

std::unique_ptr<Backend> make_backend(const std::string& device, int device_index, const std::string& dtype,
                                      const std::string& matmul_precision) {
  if (dtype != "auto" && dtype != "bfloat16" && dtype != "float16" && dtype != "float32")
    fail("--dtype \"{}\": choose auto, bfloat16, float16 or float32", dtype);
  if (matmul_precision != "high" && matmul_precision != "medium")
    fail("--matmul-precision \"{}\": choose high or medium", matmul_precision);
  if (matmul_precision == "medium" && dtype == "float32")
    fail("--matmul-precision medium rounds activations to 16 bits; it needs a 16-bit --dtype, not {}", dtype);
  if (device == "cpu") return make_cpu_backend();
  if (device == "auto") {
    if (gpu_backend_compiled() && int(list_gpu_devices().size()) > device_index)
      return make_gpu_backend(device_index, gpu_options_for_dtype(dtype, 0, matmul_precision));
    return make_cpu_backend();
  }
  if (device == "cuda" || device == "hip") {
    if (!gpu_backend_compiled()) fail("--device {}: this build has no GPU backend (build the cuda or hip-gfx906 preset)", device);
    const int count = int(list_gpu_devices().size());
    if (device_index >= count) fail("--device {}: GPU {} requested but {} found", device, device_index, count);
    return make_gpu_backend(device_index, gpu_options_for_dtype(dtype, 0, matmul_precision));
  }
  fail("unknown device \"{}\" (choose auto, cpu, cuda or hip)", device);
}

std::optional<GpuDeviceInfo> gpu_info(const Backend& backend, int device_index) {
  if (backend.kind() == DeviceKind::Cpu) return std::nullopt;
  auto devices = list_gpu_devices();
  if (device_index >= int(devices.size())) return std::nullopt;
  return devices[size_t(device_index)];
}

}  // namespace dcu
