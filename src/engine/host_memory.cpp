#include "engine/host_memory.h"

#include <fstream>

#include "core/error.h"
#include "engine/cache_plan.h"

namespace dcu {

std::optional<size_t> available_host_memory(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  std::string key, unit;
  size_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    std::getline(in, unit);  // the unit, when the line has one
  }
  return std::nullopt;
}

void check_host_memory(const HostMemoryNeed& need, std::optional<size_t> available) {
  const double total = need.weight_bytes + double(need.cache_bytes);
  if (!available || total <= double(*available)) return;
  const std::string cache =
      need.cache_bytes ? fmt::format(" and --kv-cache-memory-bytes {} more", format_bytes(double(need.cache_bytes))) : "";
  fail("the model needs about {} of host memory on the CPU backend (weights {}{}), but only {} is available "
       "(MemAvailable in /proc/meminfo); free memory, quantize the weights while loading (--quantization int8 "
       "halves them, int4 quarters them){}, or serve it on GPUs (--device cuda or hip)",
       format_bytes(total), format_bytes(need.weight_bytes), cache, format_bytes(double(*available)),
       need.cache_bytes ? ", give the cache less" : "");
}

}  // namespace dcu
