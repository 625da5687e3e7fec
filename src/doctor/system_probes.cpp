// The real probes: this binary's build, the process's loader, the file system and the GPU runtime.

#include <chrono>
#include <cpuid.h>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "backend/gpu_backend_api.h"
#include "comm/in_process_communicator.h"
#include "comm/nccl_communicator.h"
#include "core/shared_library.h"
#include "doctor/measure.h"
#include "doctor/probes.h"

namespace dcu::doctor {
namespace {

std::vector<std::string> compiled_cpu_features() {
  std::vector<std::string> out;
#if defined(__AVX2__)
  out.push_back("avx2");
#endif
#if defined(__FMA__)
  out.push_back("fma");
#endif
#if defined(__F16C__)
  out.push_back("f16c");
#endif
  return out;
}

// From CPUID itself: __builtin_cpu_supports reads the compiler runtime's feature table, and a binary
// compiled by GCC but linked by clang (the HIP builds) got compiler-rt's, which said f16c was missing
// on a CPU that has it.
std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return out;
  const unsigned leaf1_ecx = c;
  // AVX registers are usable only when the OS saves them (OSXSAVE, then XCR0's SSE and AVX bits).
  unsigned xcr0 = 0;
  if (leaf1_ecx & bit_OSXSAVE) {
    unsigned high = 0;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
  }
  const bool avx_state = (xcr0 & 6) == 6;
  const bool avx2 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
  if (avx_state && avx2) out.push_back("avx2");
  if (avx_state && (leaf1_ecx & bit_FMA)) out.push_back("fma");
  if (avx_state && (leaf1_ecx & bit_F16C)) out.push_back("f16c");
#endif
  return out;
}

// The version calls of the libraries, looked up in the loaded file (none is linked by name here, so a
// CPU-only build compiles this too). Each returns 0 on success.
template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

void read_versions(const std::string& lib, void* h, LibraryFacts& f) {
  using IntVersion = int (*)(int*);
  if (lib == "libcudart" || lib == "libamdhip64") {
    const bool cuda = lib == "libcudart";
    auto runtime = symbol<IntVersion>(h, cuda ? "cudaRuntimeGetVersion" : "hipRuntimeGetVersion");
    auto driver = symbol<IntVersion>(h, cuda ? "cudaDriverGetVersion" : "hipDriverGetVersion");
    if (runtime && runtime(&f.runtime_version) == 0)
      // CUDA: 1000 * major + 10 * minor; HIP: 10^7 * major + 10^5 * minor + patch.
      f.version = cuda ? fmt::format("{}.{}", f.runtime_version / 1000, f.runtime_version % 1000 / 10)
                       : fmt::format("{}.{}.{}", f.runtime_version / 10000000, f.runtime_version / 100000 % 100,
                                     f.runtime_version % 100000);
    if (driver && driver(&f.driver_version) != 0) f.driver_version = 0;
  } else if (lib == "libcublas") {
    auto property = symbol<int (*)(int, int*)>(h, "cublasGetProperty");  // MAJOR_VERSION 0, MINOR 1, PATCH_LEVEL 2
    int v[3] = {};
    if (property && property(0, &v[0]) == 0 && property(1, &v[1]) == 0 && property(2, &v[2]) == 0)
      f.version = fmt::format("{}.{}.{}", v[0], v[1], v[2]);
  } else if (lib == "librocblas") {
    auto get = symbol<int (*)(char*, size_t)>(h, "rocblas_get_version_string");
    char buffer[128] = {};
    if (get && get(buffer, sizeof buffer) == 0) f.version = buffer;
  } else if (lib == "librocm_smi64") {
    struct RsmiVersion {  // rsmi_version_t
      uint32_t major, minor, patch;
      const char* build;
    } v{};
    auto get = symbol<int (*)(RsmiVersion*)>(h, "rsmi_version_get");
    if (get && get(&v) == 0) f.version = fmt::format("{}.{}.{}", v.major, v.minor, v.patch);
  }
}

LibraryFacts library(const std::string& lib) {
  LibraryFacts f;
  if (lib == "libnccl" || lib == "librccl") {  // opened at run time (comm/nccl_library.h), as serve would
    const NcclLibraryInfo info = nccl_library_info();
    f.path = info.path, f.version = info.version, f.error = info.error;
    return f;
  }
  if (lib == "librocm_smi64") nccl_library_info();  // RCCL's dependency: loaded with it
  f.path = find_loaded(loaded_shared_objects(), lib);
  if (f.path.empty()) {
    f.error = lib + " is not loaded in this process" +
              (lib == "librocm_smi64" ? " (librccl.so.1 did not load, or does not use it)" : " (linked statically?)");
    return f;
  }
  if (void* h = dlopen(f.path.c_str(), RTLD_NOW | RTLD_NOLOAD)) read_versions(lib, h, f);
  if (f.version.empty()) f.version = version_from_file_name(f.path);
  return f;
}

// One backend per GPU, made on first use and kept for the run (each costs a BLAS handle and a stream).
class GpuBackends {
 public:
  Backend& of(int device) {
    auto& b = backends_[device];
    if (!b) b = make_gpu_backend(device, gpu_options_for_dtype("auto"));
    return *b;
  }

 private:
  std::map<int, std::unique_ptr<Backend>> backends_;
};

AllReduceMeasurement all_reduce(GpuBackends& gpus, const std::vector<int>& devices) {
  std::vector<Backend*> backends;
  for (int d : devices) backends.push_back(&gpus.of(d));
  AllReduceMeasurement m;
  std::vector<std::unique_ptr<Communicator>> comms;
  if (nccl_compiled()) {
    NcclGroupOptions g;
    g.devices = devices;
    g.world_size = int(devices.size());
    comms = make_nccl_communicators(g, backends);
  } else {
    comms = make_in_process_communicators(backends);
  }
  m.communicator = comms.front()->name();
  m.timings = measure_all_reduce(backends, comms, kAllReduceBytes);
  return m;
}

template <typename F>
SelfTest timed(F&& run) {
  const auto start = std::chrono::steady_clock::now();
  SelfTest t;
  run(t.results);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

// Both precision modes the server runs GPUs in: --dtype float32 (f32 kernels only) and the default
// bf16 mode (tensor cores / vendor BLAS for larger matmuls, activations split hi + lo).
SelfTest gpu_self_test(int device) {
  return timed([device](std::vector<OpResult>& out) {
    auto cpu = make_cpu_backend();
    for (const char* mode : {"float32", "bfloat16"}) {
      auto gpu = make_gpu_backend(device, gpu_options_for_dtype(mode));
      std::vector<OpResult> results = compare_ops(*cpu, *gpu);
      // The tiny model's logits against the CPU: golden_test's tolerances (1e-3, 1e-2) times ten.
      for (OpResult& r : compare_model(*cpu, *gpu, std::string(mode) == "float32" ? 1e-2 : 1e-1))
        results.push_back(std::move(r));
      for (OpResult& r : results) {
        r.name = fmt::format("{} ({})", r.name, mode);
        out.push_back(std::move(r));
      }
    }
  });
}

}  // namespace

std::vector<std::string> list_directory(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    out.push_back(it->path().filename().string());
  return out;
}

DoctorProbes real_probes() {
  DoctorProbes p;
  p.build = {gpu_build(), nccl_compiled(), compiled_cpu_features()};
  p.env = [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v ? v : "");
  };
  p.list_dir = list_directory;
  p.cpu_features = cpu_features;
  p.cpu_threads = [] { return int(std::thread::hardware_concurrency()); };
  p.library = library;
  p.gpu_devices = query_gpu_devices;
  p.peer_link = query_gpu_peer_link;
  auto gpus = std::make_shared<GpuBackends>();
  p.copy_bandwidth = [gpus](int device) { return measure_copy_bandwidth(gpus->of(device)); };
  p.all_reduce = [gpus](const std::vector<int>& devices) { return all_reduce(*gpus, devices); };
  p.gpu_self_test = gpu_self_test;
  p.cpu_smoke = [] {
    return timed([](std::vector<OpResult>& out) {
      auto cpu = make_cpu_backend();
      out = cpu_smoke(*cpu);
    });
  };
  return p;
}

}  // namespace dcu::doctor
