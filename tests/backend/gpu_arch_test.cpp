// Architecture-name validation (every build) and the build's answer about GPU support.

#include <gtest/gtest.h>

#include "backend/gpu/gpu_arch.h"
#include "backend/gpu_backend_api.h"
#include "core/error.h"

namespace dcu::gpu {
namespace {

TEST(GpuArch, AcceptsRealNamesAndDropsFeatureSuffixes) {
  EXPECT_EQ(validate_arch_name("gfx906"), "gfx906");
  EXPECT_EQ(validate_arch_name("gfx906:sramecc+:xnack-"), "gfx906");
  EXPECT_EQ(validate_arch_name("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(validate_arch_name("gfx1100"), "gfx1100");
  EXPECT_EQ(validate_arch_name("sm_90a"), "sm_90a");
  EXPECT_EQ(validate_arch_name("sm_80"), "sm_80");
  EXPECT_EQ(nvidia_arch(9, 0), "sm_90");
  EXPECT_EQ(amd_arch_from_number(906), "gfx906");
}

TEST(GpuArch, RejectsGarbage) {
  EXPECT_EQ(validate_arch_name("gfx18446744073709551615"), std::nullopt);  // seen from amdsmi on gfx906
  EXPECT_EQ(validate_arch_name(""), std::nullopt);
  EXPECT_EQ(validate_arch_name("gfx"), std::nullopt);
  EXPECT_EQ(validate_arch_name("gfx9g6"), std::nullopt);
  EXPECT_EQ(validate_arch_name("GFX906"), std::nullopt);
  EXPECT_EQ(validate_arch_name("sm_99"), std::nullopt);
  EXPECT_EQ(validate_arch_name("sm_"), std::nullopt);
  EXPECT_EQ(validate_arch_name("sm_9x"), std::nullopt);
  EXPECT_EQ(nvidia_arch(-1, 0), std::nullopt);
  EXPECT_EQ(amd_arch_from_number(-1), std::nullopt);
  EXPECT_EQ(amd_arch_from_number(0), std::nullopt);
}

TEST(GpuBuild, AnswersConsistently) {
  if (!gpu_backend_compiled()) {
    EXPECT_TRUE(list_gpu_devices().empty());
    EXPECT_THROW(make_gpu_backend(0), Error);
    return;
  }
  for (const GpuDeviceInfo& d : list_gpu_devices()) {
    EXPECT_TRUE(d.arch == "unknown" || validate_arch_name(d.arch).has_value()) << d.arch;
    EXPECT_GT(d.total_memory, 0u);
    EXPECT_LE(d.free_memory, d.total_memory);
  }
  EXPECT_THROW(make_gpu_backend(1 << 20), Error);
}

}  // namespace
}  // namespace dcu::gpu
