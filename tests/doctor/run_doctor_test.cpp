// run_doctor over whole scripted machines (a healthy 4 x H200 host, a DTK host with a broken library
// order, a garbage architecture and disagreeing memory queries, a CPU-only machine, a runtime that
// throws) and both report formats.

#include <map>
#include <stdexcept>

#include <gtest/gtest.h>

#include "core/error.h"
#include "doctor/doctor.h"
#include "doctor/report.h"

namespace dcu::doctor {
namespace {

SelfTest all_pass() { return {{{"rms_norm", 1e-6, 2e-4, ""}}, 0.1}; }

// Probes that answer for a machine with no GPU and nothing odd; each test changes what it needs.
DoctorProbes quiet_machine() {
  DoctorProbes p;
  p.build.cpu_features = {"avx2"};
  p.env = [](const std::string&) { return std::string(); };
  p.list_dir = [](const std::string&) { return std::vector<std::string>{}; };
  p.cpu_features = [] { return std::vector<std::string>{"avx2"}; };
  p.cpu_threads = [] { return 4; };
  p.library = [](const std::string& lib) { return LibraryFacts{"/lib/" + lib + ".so.1", "1.0", "", 13000, 13000}; };
  p.gpu_devices = [] { return std::vector<GpuDeviceQuery>{}; };
  p.peer_link = [](int, int) { return GpuPeerLink{true, "performance rank 0"}; };
  p.copy_bandwidth = [](int) { return 4.0e12; };
  p.all_reduce = [](const std::vector<int>&) {
    return AllReduceMeasurement{"nccl", {{20480, 15e-6}, {1 << 20, 40e-6}}};
  };
  p.gpu_self_test = [](int) { return all_pass(); };
  p.cpu_smoke = [] { return all_pass(); };
  return p;
}

const Check& find(const Checks& checks, const std::string& name) {
  for (const Check& c : checks)
    if (c.name == name) return c;
  throw std::runtime_error("no check named " + name);
}

bool has(const Checks& checks, const std::string& name) {
  for (const Check& c : checks)
    if (c.name == name) return true;
  return false;
}

GpuDeviceQuery device(DeviceKind kind, int index, const std::string& name, const std::string& arch_name, int number,
                      size_t gib) {
  GpuDeviceQuery q{kind, index, name, arch_name, number, gib << 30, gib << 30, (gib - 1) << 30};
  return q;
}

TEST(RunDoctor, HealthyH200HostPassesEveryCheck) {
  DoctorProbes p = quiet_machine();
  p.build.gpu = {DeviceKind::Cuda, {"80", "90a"}, true};
  p.build.nccl = true;
  p.gpu_devices = [] {
    std::vector<GpuDeviceQuery> out;
    for (int i = 0; i < 4; ++i) out.push_back(device(DeviceKind::Cuda, i, "NVIDIA H200", "", 90, 140));
    return out;
  };
  std::vector<std::vector<int>> measured;
  p.all_reduce = [&](const std::vector<int>& d) {
    measured.push_back(d);
    return AllReduceMeasurement{"nccl", {{20480, 15e-6}, {1 << 20, 40e-6}}};
  };
  const Checks checks = run_doctor(p);
  for (const Check& c : checks) EXPECT_EQ(c.status, Status::Pass) << c.name << ": " << c.detail;
  for (const char* name :
       {"cpu", "library libcudart", "library libcublas", "library libnccl", "gpu 3", "gpu 3 memory", "gpu 3 code",
        "gpu 3 bandwidth", "gpu 3 kernels", "link 0-1", "link 2-3", "all-reduce 0-1-2-3", "cpu model"})
    EXPECT_TRUE(has(checks, name)) << name;
  EXPECT_EQ(measured.size(), 7u);  // 6 pairs and the group of 4
  EXPECT_FALSE(has(checks, "rocm_smi order"));
  EXPECT_FALSE(any_failed(checks));
}

TEST(RunDoctor, BrokenDtkHostFailsWhereItIsBrokenAndSaysHowToFixIt) {
  DoctorProbes p = quiet_machine();
  p.build.gpu = {DeviceKind::Hip, {"gfx906"}, true};
  p.build.nccl = true;
  const std::string hyhal = "/opt/dtk/.hyhal/rocm_smi/lib", other = "/opt/dtk/lib";
  p.env = [&](const std::string& name) { return name == "LD_LIBRARY_PATH" ? other + ":" + hyhal : std::string(); };
  p.list_dir = [&](const std::string& dir) {
    return dir == hyhal || dir == other ? std::vector<std::string>{"librocm_smi64.so.2"} : std::vector<std::string>{};
  };
  std::vector<std::string> asked;
  p.library = [&](const std::string& lib) {
    asked.push_back(lib);
    if (lib == "librccl") return LibraryFacts{"", "", "librccl.so.1: undefined symbol: rsmi_init"};
    return LibraryFacts{"/opt/dtk/lib/" + lib + ".so", "5.7", "", 50700000, 50700000};
  };
  p.gpu_devices = [] {
    GpuDeviceQuery garbage = device(DeviceKind::Hip, 1, "Z100", "gfx18446744073709551615", 0, 32);
    garbage.total_memory = size_t(16) << 30;  // and the two memory queries disagree
    return std::vector<GpuDeviceQuery>{device(DeviceKind::Hip, 0, "Z100", "gfx906:sramecc-:xnack-", 906, 32), garbage};
  };
  p.all_reduce = [](const std::vector<int>&) -> AllReduceMeasurement {
    fail("tensor parallelism on GPUs needs librccl.so.1: undefined symbol: rsmi_init");
  };
  const Checks checks = run_doctor(p);
  EXPECT_TRUE(any_failed(checks));
  EXPECT_EQ(find(checks, "library librccl").status, Status::Fail);
  const Check& order = find(checks, "rocm_smi order");
  EXPECT_EQ(order.status, Status::Fail);
  EXPECT_EQ(order.fix, "export LD_LIBRARY_PATH=" + hyhal + ":" + other);
  EXPECT_FALSE(has(checks, "library librocm_smi64"));  // RCCL did not load it; the order line says why
  EXPECT_EQ(asked, (std::vector<std::string>{"libamdhip64", "librocblas", "librccl"}));
  EXPECT_EQ(find(checks, "gpu 0").status, Status::Pass);
  EXPECT_EQ(find(checks, "gpu 0 code").status, Status::Pass);
  EXPECT_EQ(find(checks, "gpu 1").status, Status::Fail);
  EXPECT_EQ(find(checks, "gpu 1 memory").status, Status::Fail);
  EXPECT_EQ(find(checks, "gpu 1 code").status, Status::Fail);
  const Check& link = find(checks, "link 0-1");
  EXPECT_EQ(link.status, Status::Fail);
  EXPECT_NE(link.detail.find("rsmi_init"), std::string::npos);
  EXPECT_FALSE(has(checks, "all-reduce 0-1"));  // a group beyond the pair only from three GPUs
}

TEST(RunDoctor, MeasurementAndSelfTestFailuresAreReportedNotThrown) {
  DoctorProbes p = quiet_machine();
  p.build.gpu = {DeviceKind::Cuda, {"90a"}, true};
  p.gpu_devices = [] { return std::vector<GpuDeviceQuery>{device(DeviceKind::Cuda, 0, "NVIDIA H200", "", 90, 140)}; };
  p.copy_bandwidth = [](int) -> double { fail("out of GPU memory allocating 268435456 bytes"); };
  p.gpu_self_test = [](int) -> SelfTest { fail("cudaMalloc failed"); };
  p.cpu_smoke = []() -> SelfTest { throw std::bad_alloc(); };
  const Checks checks = run_doctor(p);
  EXPECT_EQ(find(checks, "gpu 0 bandwidth").status, Status::Warn);
  EXPECT_NE(find(checks, "gpu 0 bandwidth").detail.find("out of GPU memory"), std::string::npos);
  EXPECT_EQ(find(checks, "gpu 0 kernels").status, Status::Fail);
  EXPECT_EQ(find(checks, "cpu model").status, Status::Fail);
  EXPECT_FALSE(has(checks, "link 0-1"));
}

TEST(RunDoctor, ARuntimeThatThrowsWhileListingIsOneFailure) {
  DoctorProbes p = quiet_machine();
  p.build.gpu = {DeviceKind::Cuda, {"90a"}, true};
  p.gpu_devices = []() -> std::vector<GpuDeviceQuery> { fail("cudaGetDeviceProperties failed: unknown error"); };
  const Checks checks = run_doctor(p);
  EXPECT_EQ(find(checks, "gpu").status, Status::Fail);
  EXPECT_NE(find(checks, "gpu").detail.find("unknown error"), std::string::npos);
  EXPECT_TRUE(has(checks, "cpu model"));
}

TEST(RunDoctor, CpuOnlyBuildSaysSoAndStillTestsTheCpu) {
  const Checks checks = run_doctor(quiet_machine());
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].name, "cpu");
  EXPECT_EQ(checks[1].name, "gpu");
  EXPECT_NE(checks[1].detail.find("CPU-only build"), std::string::npos);
  EXPECT_EQ(checks[2].name, "cpu model");
  EXPECT_EQ(describe_build(quiet_machine().build), "CPU-only build");
}

TEST(Report, TextHasOneLinePerCheckAndTheFixUnderProblems) {
  BuildFacts b{{DeviceKind::Hip, {"gfx906"}, true}, true, {}};
  EXPECT_EQ(describe_build(b), "HIP build for gfx906 with rocBLAS and RCCL");
  const Checks checks = {pass("cpu", "8 threads"), warn("gpu 0 bandwidth", "0.30 TB/s", "check clocks"),
                         failed("gpu 1 memory", "they disagree", "use --kv-cache-memory-bytes")};
  EXPECT_EQ(format_text(b, checks),
            "dcuserve doctor: HIP build for gfx906 with rocBLAS and RCCL\n"
            "pass  cpu              8 threads\n"
            "warn  gpu 0 bandwidth  0.30 TB/s\n"
            "                       fix: check clocks\n"
            "FAIL  gpu 1 memory     they disagree\n"
            "                       fix: use --kv-cache-memory-bytes\n"
            "1 passed, 1 warnings, 1 failed\n");
}

TEST(Report, JsonCarriesEveryCheckTheSummaryAndTheVerdict) {
  BuildFacts b{{DeviceKind::Cuda, {"80", "90a"}, true}, true, {"avx2"}};
  const Checks checks = {pass("cpu", "8 threads", {{"threads", 8}}), failed("gpu", "no", "fix it")};
  const nlohmann::json j = format_json(b, checks);
  EXPECT_EQ(j["build"]["gpu"], "cuda");
  EXPECT_EQ(j["build"]["architectures"].get<std::vector<std::string>>(), (std::vector<std::string>{"80", "90a"}));
  EXPECT_EQ(j["checks"].size(), 2u);
  EXPECT_EQ(j["checks"][0]["data"]["threads"], 8);
  EXPECT_FALSE(j["checks"][0].contains("fix"));
  EXPECT_EQ(j["checks"][1]["status"], "fail");
  EXPECT_EQ(j["checks"][1]["fix"], "fix it");
  EXPECT_EQ(j["summary"]["pass"], 1);
  EXPECT_EQ(j["summary"]["fail"], 1);
  EXPECT_EQ(j["ok"], false);
}

}  // namespace
}  // namespace dcu::doctor
