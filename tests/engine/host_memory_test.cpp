// Host memory at start-up: MemAvailable read from a meminfo file, and the check that a model served
// from host memory fits before it is loaded.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/host_memory.h"

namespace dcu {
namespace {

std::string write_meminfo(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(HostMemory, AvailableIsMemAvailableOfTheMeminfoFile) {
  const std::string path = write_meminfo("dcuserve_meminfo_full", "MemTotal:       32000000 kB\n"
                                                                  "MemFree:         1000000 kB\n"
                                                                  "HugePages_Total:       0\n"
                                                                  "MemAvailable:   20000000 kB\n");
  EXPECT_EQ(available_host_memory(path), size_t(20000000) * 1024);
  const std::string without = write_meminfo("dcuserve_meminfo_old", "MemTotal: 32000000 kB\nMemFree: 1000 kB\n");
  EXPECT_EQ(available_host_memory(without), std::nullopt);
  EXPECT_EQ(available_host_memory("/nonexistent/meminfo"), std::nullopt);
  EXPECT_TRUE(available_host_memory().has_value()) << "this Linux has MemAvailable";
}

TEST(HostMemory, AModelLargerThanAvailableMemoryIsAClearError) {
  const size_t gib = size_t(1) << 30;
  EXPECT_NO_THROW(check_host_memory({10.0 * double(gib), 0}, 16 * gib));
  EXPECT_NO_THROW(check_host_memory({1e15, 0}, std::nullopt));  // unknown: nothing to check against
  try {
    check_host_memory({54.0 * double(gib), 0}, 16 * gib);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "the model needs about 54.00 GiB of host memory on the CPU backend (weights 54.00 GiB), but only "
                 "16.00 GiB is available (MemAvailable in /proc/meminfo); free memory, quantize the weights while "
                 "loading (--quantization int8 halves them, int4 quarters them), or serve it on GPUs (--device cuda "
                 "or hip)");
  }
  // Weights that fit, with an explicit cache that does not.
  try {
    check_host_memory({10.0 * double(gib), 8 * gib}, 16 * gib);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs about 18.00 GiB of host memory on the CPU backend (weights 10.00 GiB "
                                         "and --kv-cache-memory-bytes 8.00 GiB more), but only 16.00 GiB"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("give the cache less"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu
