#pragma once
// What the GPU runtime reports about a device, before validation, and the checks that decide whether to
// believe it. Plain C++ in every build, so that `dcuserve doctor` and its tests judge scripted answers
// with the same rules as device discovery.

#include <cstddef>
#include <optional>
#include <string>

#include "backend/backend.h"

namespace dcu {

struct GpuDeviceQuery {
  DeviceKind kind = DeviceKind::Cuda;  // which runtime answered
  int index = 0;
  std::string name;
  std::string arch_name;         // HIP: gcnArchName ("gfx906:sramecc-:xnack-"); CUDA: none
  int arch_number = 0;           // HIP: gcnArch (906); CUDA: major * 10 + minor (90)
  size_t properties_memory = 0;  // the device properties' totalGlobalMem, bytes
  size_t total_memory = 0;       // gpuMemGetInfo's total, bytes
  size_t free_memory = 0;        // gpuMemGetInfo's free, bytes
};

// The architecture name to trust: HIP's gcnArchName when it is a valid name (feature suffixes
// dropped), else the one its gcnArch number gives; CUDA's from the compute capability. nullopt when
// every answer is garbage (gpu/gpu_arch.h says what is valid).
std::optional<std::string> validated_arch(const GpuDeviceQuery& q);

// The two memory queries are independent: gpuMemGetInfo's total must be within kMemoryAgreement of
// the properties' totalGlobalMem (drivers reserve a little) and free must not exceed total. Returns
// why not, naming both answers, or nullopt when they agree.
constexpr double kMemoryAgreement = 0.05;
std::optional<std::string> memory_disagreement(const GpuDeviceQuery& q);

// Whether GPU a can read and write GPU b's memory directly, and what joins them.
struct GpuPeerLink {
  bool peer_access = false;
  std::string link;  // "xgmi, 1 hop" / "pcie, 2 hops" (HIP), "performance rank 0" (CUDA); empty if unknown
};

}  // namespace dcu
