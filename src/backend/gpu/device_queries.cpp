#include "backend/gpu/device_queries.h"

#include <cmath>

#include <fmt/format.h>

#include "backend/gpu/gpu_arch.h"

namespace dcu {
namespace {

std::string gib(size_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

}  // namespace

std::optional<std::string> validated_arch(const GpuDeviceQuery& q) {
  if (q.kind == DeviceKind::Hip) {
    if (auto a = gpu::validate_arch_name(q.arch_name)) return a;
    return gpu::amd_arch_from_number(q.arch_number);
  }
  if (q.arch_number <= 0) return std::nullopt;
  return gpu::nvidia_arch(q.arch_number / 10, q.arch_number % 10);
}

std::optional<std::string> memory_disagreement(const GpuDeviceQuery& q) {
  const char* meminfo = q.kind == DeviceKind::Hip ? "hipMemGetInfo" : "cudaMemGetInfo";
  if (q.total_memory == 0 || q.properties_memory == 0)
    return fmt::format("{} reports {} total and the device properties {} (totalGlobalMem): a zero is no answer",
                       meminfo, gib(q.total_memory), gib(q.properties_memory));
  if (q.free_memory > q.total_memory)
    return fmt::format("{} reports more free memory ({}) than total ({})", meminfo, gib(q.free_memory),
                       gib(q.total_memory));
  const double a = double(q.total_memory), b = double(q.properties_memory);
  if (std::fabs(a - b) > kMemoryAgreement * std::max(a, b))
    return fmt::format(
        "{} reports {} total but the device properties {} (totalGlobalMem): they differ by more "
        "than {:.0f}%",
        meminfo, gib(q.total_memory), gib(q.properties_memory), kMemoryAgreement * 100);
  return std::nullopt;
}

}  // namespace dcu
