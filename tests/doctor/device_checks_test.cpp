// The device checks on scripted runtime answers: valid and garbage architecture names, memory queries
// that agree and that disagree, code in the build that runs or not, machines without a usable GPU.

#include <gtest/gtest.h>

#include "doctor/device_checks.h"

namespace dcu::doctor {
namespace {

GpuDeviceQuery z100() {
  GpuDeviceQuery q;
  q.kind = DeviceKind::Hip;
  q.index = 1;
  q.name = "Z100";
  q.arch_name = "gfx906:sramecc-:xnack-";
  q.arch_number = 906;
  q.properties_memory = q.total_memory = size_t(32) << 30;
  q.free_memory = size_t(31) << 30;
  return q;
}

GpuDeviceQuery h200() {
  GpuDeviceQuery q;
  q.kind = DeviceKind::Cuda;
  q.name = "NVIDIA H200";
  q.arch_number = 90;
  q.properties_memory = q.total_memory = size_t(150) << 30;
  q.free_memory = size_t(149) << 30;
  return q;
}

TEST(ArchCheck, TrustsAValidNameAndDropsFeatures) {
  const Check c = check_arch(z100());
  EXPECT_EQ(c.status, Status::Pass);
  EXPECT_EQ(c.name, "gpu 1");
  EXPECT_EQ(c.data["arch"], "gfx906");
  EXPECT_NE(c.detail.find("Z100, gfx906"), std::string::npos) << c.detail;
  EXPECT_EQ(check_arch(h200()).data["arch"], "sm_90");
}

TEST(ArchCheck, GarbageNameWithAValidNumberWarnsAndUsesTheNumber) {
  GpuDeviceQuery q = z100();
  q.arch_name = "gfx18446744073709551615";  // what vLLM read on gfx906 machines
  const Check c = check_arch(q);
  EXPECT_EQ(c.status, Status::Warn);
  EXPECT_EQ(c.data["arch"], "gfx906");
  EXPECT_NE(c.detail.find("gfx18446744073709551615"), std::string::npos) << c.detail;
  EXPECT_FALSE(c.fix.empty());
}

TEST(ArchCheck, NoValidAnswerFails) {
  GpuDeviceQuery q = z100();
  q.arch_name = "gfx18446744073709551615";
  q.arch_number = -1;
  const Check c = check_arch(q);
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_EQ(c.data["arch"], "unknown");
  EXPECT_NE(c.fix.find("driver"), std::string::npos) << c.fix;
  GpuDeviceQuery n = h200();
  n.arch_number = 99;  // sm_99 is no NVIDIA architecture
  EXPECT_EQ(check_arch(n).status, Status::Fail);
}

TEST(MemoryCheck, AgreeingQueriesPass) {
  const Check c = check_memory(z100());
  EXPECT_EQ(c.status, Status::Pass) << c.detail;
  EXPECT_EQ(c.data["total_bytes"], size_t(32) << 30);
  GpuDeviceQuery q = z100();
  q.total_memory -= size_t(512) << 20;  // the driver keeps half a GiB: within the 5% tolerance
  EXPECT_EQ(check_memory(q).status, Status::Pass);
}

TEST(MemoryCheck, DisagreeingQueriesFailWithBothAnswersAndTheFix) {
  GpuDeviceQuery q = z100();
  q.total_memory = size_t(16) << 30;  // MemGetInfo says half of what the properties say
  q.free_memory = size_t(15) << 30;
  const Check c = check_memory(q);
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_NE(c.detail.find("16.00 GiB"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("32.00 GiB"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("hipMemGetInfo"), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("--kv-cache-memory-bytes"), std::string::npos) << c.fix;

  GpuDeviceQuery more_free = z100();
  more_free.free_memory = more_free.total_memory + 1;
  EXPECT_EQ(check_memory(more_free).status, Status::Fail);
  GpuDeviceQuery zero = h200();
  zero.properties_memory = 0;
  EXPECT_EQ(check_memory(zero).status, Status::Fail);
}

TEST(CodeFor, NvidiaCompatibilityRules) {
  const std::vector<std::string> preset = {"80", "90a"};
  EXPECT_EQ(code_for("sm_90", preset).runs, CodeRuns::Natively);
  EXPECT_EQ(code_for("sm_90", preset).entry, "90a");
  EXPECT_EQ(code_for("sm_80", preset).entry, "80");
  EXPECT_EQ(code_for("sm_86", preset).runs, CodeRuns::Natively);  // sm_80 machine code runs on 8.x
  EXPECT_EQ(code_for("sm_86", preset).entry, "80");
  // 9.0's "a" code runs only on 9.0; on 10.0 only the PTX of the plain 80 entry remains, through the JIT.
  EXPECT_EQ(code_for("sm_100", preset).runs, CodeRuns::ThroughJit);
  EXPECT_EQ(code_for("sm_100", preset).entry, "80");
  EXPECT_EQ(code_for("sm_100", {"80-real", "90a"}).runs, CodeRuns::No);  // -real: no PTX
  EXPECT_EQ(code_for("sm_70", preset).runs, CodeRuns::No);               // older than all of it
  EXPECT_EQ(code_for("sm_89", {"86-virtual"}).runs, CodeRuns::ThroughJit);
  EXPECT_EQ(code_for("sm_103", {"100f"}).runs, CodeRuns::Natively);  // family code: later minors
  EXPECT_EQ(code_for("sm_90", {"native"}).runs, CodeRuns::Unknown);
}

TEST(CodeFor, AmdCodeObjectsRunOnTheirOwnIsaOnly) {
  EXPECT_EQ(code_for("gfx906", {"gfx906"}).runs, CodeRuns::Natively);
  EXPECT_EQ(code_for("gfx906", {"gfx906:xnack-"}).entry, "gfx906:xnack-");
  EXPECT_EQ(code_for("gfx926", {"gfx906"}).runs, CodeRuns::No);
  EXPECT_EQ(code_for("gfx90", {"gfx906"}).runs, CodeRuns::No);
}

TEST(CodeCheck, SaysWhatTheBuildHasAndHowToRebuild) {
  GpuBuild cuda{DeviceKind::Cuda, {"80", "90a"}, true};
  EXPECT_EQ(check_code(0, "sm_90", cuda).status, Status::Pass);
  const Check jit = check_code(0, "sm_120", cuda);
  EXPECT_EQ(jit.status, Status::Warn);
  EXPECT_NE(jit.fix.find("-DCMAKE_CUDA_ARCHITECTURES=120"), std::string::npos) << jit.fix;
  GpuBuild hip{DeviceKind::Hip, {"gfx906"}, false};
  EXPECT_EQ(check_code(2, "gfx906", hip).status, Status::Pass);
  const Check k100 = check_code(2, "gfx926", hip);
  EXPECT_EQ(k100.status, Status::Fail);
  EXPECT_EQ(k100.name, "gpu 2 code");
  EXPECT_NE(k100.detail.find("gfx906"), std::string::npos) << k100.detail;
  EXPECT_NE(k100.fix.find("scripts/build_gpu.sh hip build/hip-gfx926 gfx926"), std::string::npos) << k100.fix;
  EXPECT_EQ(check_code(2, std::nullopt, hip).status, Status::Fail);  // the card gave no valid arch
}

TEST(NoGpuCheck, CpuBuildWarnsOnlyWhenTheMachineHasGpus) {
  BuildFacts cpu;
  EXPECT_EQ(check_no_gpu(cpu, {"null", "tty"}, "").status, Status::Pass);
  const Check dcu = check_no_gpu(cpu, {"null", "kfd", "dri"}, "");
  EXPECT_EQ(dcu.status, Status::Warn);
  EXPECT_NE(dcu.fix.find("hip-gfx906"), std::string::npos) << dcu.fix;
  EXPECT_NE(check_no_gpu(cpu, {"nvidia0"}, "").fix.find("cuda"), std::string::npos);
}

TEST(NoGpuCheck, GpuBuildWithoutDevicesSaysWhatToCheck) {
  BuildFacts cuda;
  cuda.gpu.kind = DeviceKind::Cuda;
  const Check no_driver = check_no_gpu(cuda, {"null"}, "");
  EXPECT_EQ(no_driver.status, Status::Warn);
  EXPECT_NE(no_driver.fix.find("--gpus all"), std::string::npos) << no_driver.fix;
  const Check hidden = check_no_gpu(cuda, {"nvidia0", "nvidiactl"}, "-1");
  EXPECT_NE(hidden.fix.find("CUDA_VISIBLE_DEVICES=-1"), std::string::npos) << hidden.fix;
  BuildFacts hip;
  hip.gpu.kind = DeviceKind::Hip;
  EXPECT_NE(check_no_gpu(hip, {}, "").fix.find("/dev/kfd"), std::string::npos);
}

TEST(CpuCheck, FailsWhenTheCpuLacksWhatTheBinaryUses) {
  BuildFacts b;
  b.cpu_features = {"avx2", "fma", "f16c"};
  EXPECT_EQ(check_cpu(b, {"avx2", "fma", "f16c"}, 8).status, Status::Pass);
  const Check c = check_cpu(b, {"avx2"}, 8);
  EXPECT_EQ(c.status, Status::Fail);
  EXPECT_NE(c.detail.find("lacks fma, f16c"), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("DCUSERVE_NATIVE"), std::string::npos);
  EXPECT_EQ(check_cpu(BuildFacts{}, {}, 2).status, Status::Pass);  // the portable build needs nothing
}

}  // namespace
}  // namespace dcu::doctor
