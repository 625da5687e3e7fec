#pragma once
// GPU backend entry points that every build can call: a CPU-only build answers "no GPU support"
// (gpu_backend_compiled() is false, list_gpu_devices() is empty, make_gpu_backend() throws).

#include "backend/gpu/gpu_backend.h"

namespace dcu {

// True when this binary was built with the CUDA or HIP backend.
bool gpu_backend_compiled();

}  // namespace dcu
