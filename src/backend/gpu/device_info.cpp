// Device discovery: names, validated architecture strings and memory, straight from the runtime.

#include <sstream>

#include "backend/gpu/compat.h"
#include "backend/gpu/gpu_arch.h"
#include "backend/gpu_backend_api.h"
#include "core/log.h"

namespace dcu {
namespace {

#if defined(DCUSERVE_HIP)
constexpr DeviceKind kKind = DeviceKind::Hip;
#else
constexpr DeviceKind kKind = DeviceKind::Cuda;
#endif

GpuDeviceQuery query_device(int i) {
  gpuDeviceProp_t p{};
  GPU_CHECK(gpuGetDeviceProperties(&p, i));
  GpuDeviceQuery q;
  q.kind = kKind;
  q.index = i;
  q.name = p.name;
#if defined(DCUSERVE_HIP)
  q.arch_name = p.gcnArchName;
  q.arch_number = p.gcnArch;
#else
  q.arch_number = p.major * 10 + p.minor;
#endif
  q.properties_memory = p.totalGlobalMem;
  GPU_CHECK(gpuSetDevice(i));
  GPU_CHECK(gpuMemGetInfo(&q.free_memory, &q.total_memory));
  return q;
}

}  // namespace

bool gpu_backend_compiled() { return true; }

GpuBuild gpu_build() {
  GpuBuild b;
  b.kind = kKind;
  std::istringstream archs(DCUSERVE_GPU_ARCHITECTURES);  // CMake's list, ';' made ','
  for (std::string a; std::getline(archs, a, ',');)
    if (!a.empty()) b.architectures.push_back(a);
#if defined(DCUSERVE_CUDA) || defined(DCUSERVE_ROCBLAS)
  b.vendor_blas = true;
#endif
  return b;
}

std::vector<GpuDeviceQuery> query_gpu_devices() {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess) {
    (void)gpuGetLastError();  // no driver or no device: an empty list, not an error
    return {};
  }
  std::vector<GpuDeviceQuery> out;
  for (int i = 0; i < count; ++i) out.push_back(query_device(i));
  return out;
}

std::vector<GpuDeviceInfo> list_gpu_devices() {
  std::vector<GpuDeviceInfo> out;
  for (const GpuDeviceQuery& q : query_gpu_devices()) {
    GpuDeviceInfo info;
    info.index = q.index;
    info.name = q.name;
    std::optional<std::string> arch = validated_arch(q);
    if (!arch) arch = validated_arch(query_device(q.index));  // a garbage answer: ask again before giving up
    if (!arch) log::warn("GPU {} ({}) reports no valid architecture name; listing it as 'unknown'", q.index, q.name);
    info.arch = arch.value_or("unknown");
    info.total_memory = q.total_memory;
    info.free_memory = q.free_memory;
    info.memory_problem = memory_disagreement(q);
    out.push_back(std::move(info));
  }
  return out;
}

GpuPeerLink query_gpu_peer_link(int a, int b) {
  GpuPeerLink link;
  int can = 0;
  GPU_CHECK(gpuDeviceCanAccessPeer(&can, a, b));
  link.peer_access = can != 0;
#if defined(DCUSERVE_HIP)
  uint32_t type = 0, hops = 0;
  if (hipExtGetLinkTypeAndHopCount(a, b, &type, &hops) == hipSuccess) {
    // hsa_amd_link_info_type_t
    const char* names[] = {"hypertransport", "qpi", "pcie", "infiniband", "xgmi"};
    link.link = fmt::format("{}, {} hop{}", type < 5 ? names[type] : "link type " + std::to_string(type), hops,
                            hops == 1 ? "" : "s");
  } else {
    (void)gpuGetLastError();
  }
#else
  int rank = 0;
  if (link.peer_access && cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b) == cudaSuccess)
    link.link = fmt::format("performance rank {}", rank);
  else
    (void)gpuGetLastError();
#endif
  return link;
}

}  // namespace dcu
