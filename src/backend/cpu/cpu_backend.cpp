#include "backend/cpu/cpu_backend.h"

namespace dcu {

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace dcu
