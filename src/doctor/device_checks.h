#pragma once
// The CPU, then each GPU as the runtime reports it: a name and architecture to trust, memory from two independent
// queries that agree, and code in this binary that runs on it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/check.h"
#include "doctor/probes.h"

namespace dcu::doctor {

// How code compiled for one of `compiled` (CMake's architecture list: "80", "90a", "80-real",
// "86-virtual", "gfx906", "gfx906:xnack-") runs on a device of `arch` ("sm_90", "gfx906"). NVIDIA:
// machine code (SASS) for X.y runs on X.z with z >= y, "a" code (sm_90a) only on that exact
// architecture, "f" code on the family's later minors; PTX (plain and -virtual entries) is compiled by
// the driver for any later architecture. AMD: a code object runs only on its own ISA.
enum class CodeRuns { Natively, ThroughJit, No, Unknown };
struct CodeMatch {
  CodeRuns runs = CodeRuns::No;
  std::string entry;  // the entry that runs (best first: machine code, then PTX)
};
CodeMatch code_for(std::string_view arch, const std::vector<std::string>& compiled);

// "gpu i": name and the architecture dcuserve trusts; fail when no answer is a valid name.
Check check_arch(const GpuDeviceQuery& q);
// "gpu i memory": the two queries agree (backend/gpu/device_queries.h), else fail.
Check check_memory(const GpuDeviceQuery& q);
// "gpu i code": whether the build carries code that runs on `arch` (nullopt: the device gave none).
Check check_code(int index, const std::optional<std::string>& arch, const GpuBuild& build);

// "cpu": its threads, and the x86 extensions this binary's CPU code was compiled for (`present`: those
// the CPU has); fail when one is missing.
Check check_cpu(const BuildFacts& build, const std::vector<std::string>& present, int threads);

// "gpu": what a machine without usable GPUs gets: a CPU-only build (warn when the machine has GPU
// device files: /dev/nvidia0, /dev/kfd), or a GPU build that sees no device (warn, with what to check).
// `dev_files`: the names in /dev; `visible`: CUDA_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES as set.
Check check_no_gpu(const BuildFacts& build, const std::vector<std::string>& dev_files, const std::string& visible);

}  // namespace dcu::doctor
