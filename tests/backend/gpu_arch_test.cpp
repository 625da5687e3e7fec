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

TEST(DeviceQueries, TheArchitectureToTrust) {
  GpuDeviceQuery hip{DeviceKind::Hip, 0, "Z100", "gfx906:sramecc-:xnack-", 906, 1, 1, 1};
  EXPECT_EQ(validated_arch(hip), "gfx906");
  hip.arch_name = "gfx18446744073709551615";  // garbage: the gcnArch number decides
  EXPECT_EQ(validated_arch(hip), "gfx906");
  hip.arch_number = 0;
  EXPECT_EQ(validated_arch(hip), std::nullopt);
  GpuDeviceQuery cuda{DeviceKind::Cuda, 0, "NVIDIA H200", "", 90, 1, 1, 1};
  EXPECT_EQ(validated_arch(cuda), "sm_90");
  cuda.arch_number = 0;
  EXPECT_EQ(validated_arch(cuda), std::nullopt);
}

TEST(DeviceQueries, TheTwoMemoryQueriesMustAgree) {
  const size_t gib = size_t(1) << 30;
  GpuDeviceQuery q{DeviceKind::Cuda, 0, "NVIDIA H200", "", 90, 140 * gib, 139 * gib, 100 * gib};
  EXPECT_EQ(memory_disagreement(q), std::nullopt);  // within 5%
  q.total_memory = 70 * gib;
  q.free_memory = 60 * gib;
  ASSERT_TRUE(memory_disagreement(q).has_value());
  EXPECT_NE(memory_disagreement(q)->find("cudaMemGetInfo reports 70.00 GiB total"), std::string::npos) << *memory_disagreement(q);
  q.total_memory = 140 * gib;
  q.free_memory = 141 * gib;  // more free than total
  EXPECT_TRUE(memory_disagreement(q).has_value());
  q.free_memory = 0;
  q.properties_memory = 0;
  EXPECT_TRUE(memory_disagreement(q).has_value());
}

TEST(GpuBuild, AnswersConsistently) {
  if (!gpu_backend_compiled()) {
    EXPECT_EQ(gpu_build().kind, DeviceKind::Cpu);
    EXPECT_TRUE(gpu_build().architectures.empty());
    EXPECT_TRUE(list_gpu_devices().empty());
    EXPECT_TRUE(query_gpu_devices().empty());
    EXPECT_THROW(make_gpu_backend(0), Error);
    return;
  }
  EXPECT_NE(gpu_build().kind, DeviceKind::Cpu);
  EXPECT_FALSE(gpu_build().architectures.empty());
  for (const GpuDeviceInfo& d : list_gpu_devices()) {
    EXPECT_TRUE(d.arch == "unknown" || validate_arch_name(d.arch).has_value()) << d.arch;
    EXPECT_GT(d.total_memory, 0u);
    EXPECT_LE(d.free_memory, d.total_memory);
    EXPECT_EQ(d.memory_problem, std::nullopt) << *d.memory_problem;
  }
  EXPECT_THROW(make_gpu_backend(1 << 20), Error);
}

}  // namespace
}  // namespace dcu::gpu
