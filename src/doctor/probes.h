#pragma once
// Everything `dcuserve doctor` asks of the machine, behind functions: real_probes() asks the runtime,
// the loader and the file system; tests script the answers (a garbage arch name, memory queries that
// disagree, a fake LD_LIBRARY_PATH tree, a library that fails to load) to reach every failure path.
// A probe may throw dcu::Error; the check that called it reports the message.

#include <functional>
#include <string>
#include <vector>

#include "backend/gpu/device_queries.h"
#include "backend/gpu_backend_api.h"
#include "doctor/self_test.h"

namespace dcu::doctor {

// What this binary was built with.
struct BuildFacts {
  GpuBuild gpu;                           // kind Cpu: no GPU backend
  bool nccl = false;                      // uses NCCL (CUDA) or RCCL (HIP)
  std::vector<std::string> cpu_features;  // x86 extensions the CPU code was compiled for ("avx2", "fma", "f16c")
};

// One shared library as the loader resolved it.
struct LibraryFacts {
  std::string path;     // the file loaded; empty when none was
  std::string version;  // from the library's own version call, else its file name's; may be empty
  std::string error;    // the loader's message when it could not be loaded
  // GPU runtimes only (libcudart, libamdhip64): (cuda|hip)RuntimeGetVersion and DriverGetVersion; a
  // driver version of 0 means no driver answered.
  int runtime_version = 0;
  int driver_version = 0;
};

// Back-to-back all-reduces of one size, each rank's f32 buffer summed over the group.
struct AllReduceTiming {
  size_t bytes = 0;
  double seconds = 0;  // per all-reduce
};
struct AllReduceMeasurement {
  std::string communicator;  // "nccl", "rccl", "in-process"
  std::vector<AllReduceTiming> timings;
};

struct DoctorProbes {
  BuildFacts build;
  std::function<std::string(const std::string& name)> env;                   // "" when unset
  std::function<std::vector<std::string>(const std::string& dir)> list_dir;  // file names; empty when missing
  std::function<std::vector<std::string>()> cpu_features;                    // of this CPU, among build.cpu_features
  std::function<int()> cpu_threads;
  // "libcudart", "libcublas", "libnccl", "libamdhip64", "librocblas", "librccl", "librocm_smi64".
  std::function<LibraryFacts(const std::string& library)> library;
  std::function<std::vector<GpuDeviceQuery>()> gpu_devices;
  std::function<GpuPeerLink(int a, int b)> peer_link;
  std::function<double(int device)> copy_bandwidth;  // bytes read + written per second
  std::function<AllReduceMeasurement(const std::vector<int>& devices)> all_reduce;
  std::function<SelfTest(int device)> gpu_self_test;  // the device against the CPU backend
  std::function<SelfTest()> cpu_smoke;
};

// The all-reduce sizes of the link checks: one decode row of the 27B (5120 f32) and a batch of them.
inline const std::vector<size_t> kAllReduceBytes = {5120 * 4, size_t(1) << 20};

DoctorProbes real_probes();

// The real list_dir: the names in `dir` (files, folders, links), empty when it cannot be read.
std::vector<std::string> list_directory(const std::string& dir);

}  // namespace dcu::doctor
