#pragma once
// Host memory at start-up: what the kernel says is available, and the check that a model served from
// host memory (the CPU backend) fits in it before anything is loaded.

#include <cstddef>
#include <optional>
#include <string>

namespace dcu {

// MemAvailable of a /proc/meminfo-format file (free memory plus the page cache and slabs the kernel can
// reclaim), in bytes; nullopt when the file or the field is missing.
std::optional<size_t> available_host_memory(const std::string& meminfo_path = "/proc/meminfo");

// What the CPU backend will hold in host memory: the weights as loaded (read in place from the mapped
// checkpoint, or converted copies) and an explicit --kv-cache-memory-bytes (the default budget is
// already a share of what is available).
struct HostMemoryNeed {
  double weight_bytes = 0;
  size_t cache_bytes = 0;
};

// Throws dcu::Error, naming both figures and what to change, when `need` exceeds `available`. Unknown
// availability passes: nothing to check against.
void check_host_memory(const HostMemoryNeed& need, std::optional<size_t> available);

}  // namespace dcu
