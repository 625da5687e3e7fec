// The measured checks (bandwidth, links) and the self-test's checks on scripted numbers.

#include <gtest/gtest.h>

#include "doctor/kernel_checks.h"
#include "doctor/link_checks.h"

namespace dcu::doctor {
namespace {

TEST(Bandwidth, NominalFiguresByNameThenArch) {
  EXPECT_EQ(nominal_bandwidth("NVIDIA H200", "sm_90"), 4.8e12);
  EXPECT_EQ(nominal_bandwidth("NVIDIA H100 PCIe", "sm_90"), 2.0e12);
  EXPECT_EQ(nominal_bandwidth("NVIDIA H100 80GB HBM3", "sm_90"), 3.35e12);
  EXPECT_EQ(nominal_bandwidth("NVIDIA A100-SXM4-80GB", "sm_80"), 2.0e12);
  EXPECT_EQ(nominal_bandwidth("Z100", "gfx906"), 1.0e12);
  EXPECT_EQ(nominal_bandwidth("NVIDIA GeForce RTX 4090", "sm_89"), std::nullopt);
}

TEST(Bandwidth, ComparedWithNominalAndAShortfallOnlyWarns) {
  const Check ok = check_copy_bandwidth(0, "NVIDIA H200", "sm_90", 3.9e12);
  EXPECT_EQ(ok.status, Status::Pass);
  EXPECT_NE(ok.detail.find("81% of the 4.80 TB/s nominal"), std::string::npos) << ok.detail;
  const Check slow = check_copy_bandwidth(3, "Z100", "gfx906", 0.3e12);
  EXPECT_EQ(slow.status, Status::Warn);
  EXPECT_EQ(slow.name, "gpu 3 bandwidth");
  EXPECT_FALSE(slow.fix.empty());
  const Check unknown = check_copy_bandwidth(0, "Mystery GPU", "sm_89", 0.1e12);
  EXPECT_EQ(unknown.status, Status::Pass);
  EXPECT_NE(unknown.detail.find("no nominal figure"), std::string::npos);
}

AllReduceMeasurement nccl(double small_s, double large_s) { return {"nccl", {{20480, small_s}, {1 << 20, large_s}}}; }

TEST(Links, AFastPairPassesWithLatencyAndBusBandwidth) {
  const Check c = check_link({0, 1}, GpuPeerLink{true, "performance rank 0"}, nccl(15e-6, 40e-6), true);
  EXPECT_EQ(c.status, Status::Pass) << c.detail;
  EXPECT_EQ(c.name, "link 0-1");
  EXPECT_NE(c.detail.find("peer access yes (performance rank 0)"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("20 KiB in 15.0 us"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("1 MiB in 40.0 us (26.2 GB/s)"), std::string::npos) << c.detail;  // 2^20 / 40 us
  EXPECT_EQ(c.data["all_reduce"].size(), 2u);
}

TEST(Links, NoPeerAccessOrASlowLinkWarns) {
  EXPECT_EQ(check_link({0, 1}, GpuPeerLink{false, "pcie, 2 hops"}, nccl(30e-6, 90e-6), true).status, Status::Warn);
  const Check slow = check_link({0, 1}, GpuPeerLink{true, ""}, nccl(400e-6, 900e-6), true);
  EXPECT_EQ(slow.status, Status::Warn);
  EXPECT_NE(slow.fix.find("51.2 ms per step"), std::string::npos) << slow.fix;  // 128 x 400 us
}

TEST(Links, AGroupReportsBusBandwidthAndABuildWithoutNcclWarns) {
  // Four ranks: a ring moves 2 (n - 1) / n of the buffer over each link.
  const Check group = check_link({0, 1, 2, 3}, std::nullopt, nccl(20e-6, 1e-3), true);
  EXPECT_EQ(group.name, "all-reduce 0-1-2-3");
  EXPECT_NE(group.detail.find("1 MiB in 1000.0 us (1.6 GB/s)"), std::string::npos) << group.detail;
  EXPECT_EQ(group.detail.find("peer access"), std::string::npos);
  const Check host = check_link({0, 1}, GpuPeerLink{true, ""}, {"in-process", {{20480, 50e-6}}}, false);
  EXPECT_EQ(host.status, Status::Warn);
  EXPECT_NE(host.detail.find("host memory"), std::string::npos);
}

SelfTest results(std::vector<OpResult> r) { return {std::move(r), 0.5}; }

TEST(Kernels, AllWithinToleranceIsAPass) {
  const Check c = check_kernels(0, results({{"rms_norm", 1e-6, 2e-4, ""}, {"matmul BF16 T=1", 5e-4, 1e-3, ""}}));
  EXPECT_EQ(c.status, Status::Pass);
  EXPECT_NE(c.detail.find("closest to its tolerance: matmul BF16 T=1"), std::string::npos) << c.detail;
  EXPECT_EQ(c.data["ops"].size(), 2u);
}

TEST(Kernels, FailuresAreNamedAndAMissingCodeObjectPointsAtTheCodeLine) {
  const Check wrong = check_kernels(1, results({{"rms_norm", 0.3, 2e-4, ""}, {"gdn_conv", 0, 2e-4, ""}}));
  EXPECT_EQ(wrong.status, Status::Fail);
  EXPECT_NE(wrong.detail.find("1 of 2 checks"), std::string::npos) << wrong.detail;
  EXPECT_NE(wrong.detail.find("rms_norm (error 3.0e-01 > 2e-04)"), std::string::npos) << wrong.detail;
  EXPECT_NE(wrong.fix.find("--device cpu"), std::string::npos);
  const Check missing = check_kernels(1, results({{"embed", 0, 0, "hipLaunchKernel: invalid device function"}}));
  EXPECT_EQ(missing.status, Status::Fail);
  EXPECT_NE(missing.fix.find("gpu 1 code"), std::string::npos) << missing.fix;
  const Check nan = check_kernels(0, results({{"paged_attention", INFINITY, 1e-3, ""}}));
  EXPECT_EQ(nan.status, Status::Fail);
  EXPECT_TRUE(nan.data["ops"][0]["error"].is_null());  // JSON has no infinity
}

TEST(Kernels, CpuSmoke) {
  EXPECT_EQ(check_cpu_smoke(results({{"tiny model", 1e-7, 1e-4, ""}})).status, Status::Pass);
  EXPECT_EQ(check_cpu_smoke(results({{"tiny model", 1e-2, 1e-4, ""}})).status, Status::Fail);
}

}  // namespace
}  // namespace dcu::doctor
