#include "engine/device.h"

#include "core/error.h"

namespace dcu {

std::unique_ptr<Backend> make_backend(const std::string& device, int device_index) {
  if (device == "auto" || device == "cpu") return make_cpu_backend();
  if (device == "cuda" || device == "hip") fail("--device {}: this build has no GPU backend", device);
  fail("unknown device \"{}\" (choose auto, cpu, cuda or hip)", device);
}

}  // namespace dcu
