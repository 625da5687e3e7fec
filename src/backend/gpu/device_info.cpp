// Device discovery: names, validated architecture strings and memory, straight from the runtime.

#include "backend/gpu/compat.h"
#include "backend/gpu/gpu_arch.h"
#include "backend/gpu_backend_api.h"
#include "core/log.h"

namespace dcu {
namespace {

std::optional<std::string> arch_of(const gpuDeviceProp_t& p) {
#if defined(DCUSERVE_HIP)
  if (auto a = gpu::validate_arch_name(p.gcnArchName)) return a;
  return gpu::amd_arch_from_number(p.gcnArch);
#else
  return gpu::nvidia_arch(p.major, p.minor);
#endif
}

}  // namespace

bool gpu_backend_compiled() { return true; }

std::vector<GpuDeviceInfo> list_gpu_devices() {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess) {
    (void)gpuGetLastError();  // no driver or no device: an empty list, not an error
    return {};
  }
  std::vector<GpuDeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    gpuDeviceProp_t p{};
    GPU_CHECK(gpuGetDeviceProperties(&p, i));
    GpuDeviceInfo info;
    info.index = i;
    info.name = p.name;
    std::optional<std::string> arch = arch_of(p);
    if (!arch) {  // a garbage answer: ask again for this index before giving up
      gpuDeviceProp_t again{};
      GPU_CHECK(gpuGetDeviceProperties(&again, i));
      arch = arch_of(again);
    }
    if (!arch) log::warn("GPU {} ({}) reports no valid architecture name; listing it as 'unknown'", i, info.name);
    info.arch = arch.value_or("unknown");
    GPU_CHECK(gpuSetDevice(i));
    GPU_CHECK(gpuMemGetInfo(&info.free_memory, &info.total_memory));
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace dcu
