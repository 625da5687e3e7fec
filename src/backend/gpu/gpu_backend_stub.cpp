// The answer of a build without CUDA or HIP: there is no GPU backend in this binary.

#include "backend/gpu_backend_api.h"
#include "core/error.h"

namespace dcu {

bool gpu_backend_compiled() { return false; }

GpuBuild gpu_build() { return {}; }

std::vector<GpuDeviceInfo> list_gpu_devices() { return {}; }

std::vector<GpuDeviceQuery> query_gpu_devices() { return {}; }

GpuPeerLink query_gpu_peer_link(int a, int b) { fail("GPU {} and {}: this dcuserve build has no GPU support", a, b); }

std::unique_ptr<Backend> make_gpu_backend(int device_index, const GpuBackendOptions&) {
  fail("GPU device {} requested, but this dcuserve build has no GPU support (configure with -DDCUSERVE_CUDA=ON or "
       "-DDCUSERVE_HIP=ON)", device_index);
}

}  // namespace dcu
