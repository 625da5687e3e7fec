#include "doctor/doctor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "doctor/device_checks.h"
#include "doctor/kernel_checks.h"
#include "doctor/library_checks.h"
#include "doctor/link_checks.h"

namespace dcu::doctor {
namespace {

// A probe that threw: `name` fails (or warns) with its message.
template <typename F>
Check attempt(const std::string& name, Status on_error, const std::string& fix, F&& check) {
  try {
    return check();
  } catch (const std::exception& e) {
    return {name, on_error, e.what(), fix, {}};
  }
}

const char* const kReport = "report it with the output of `dcuserve doctor --json`";

void check_gpu(const DoctorProbes& p, const GpuDeviceQuery& q, Checks& out) {
  out.push_back(check_arch(q));
  out.push_back(check_memory(q));
  const std::optional<std::string> arch = validated_arch(q);
  out.push_back(check_code(q.index, arch, p.build.gpu));
  const std::string bandwidth = fmt::format("gpu {} bandwidth", q.index),
                    kernels = fmt::format("gpu {} kernels", q.index);
  out.push_back(
      attempt(bandwidth, Status::Warn, "free some memory on the card (2 x 256 MiB) and run the doctor again",
              [&] { return check_copy_bandwidth(q.index, q.name, arch.value_or(""), p.copy_bandwidth(q.index)); }));
  out.push_back(
      attempt(kernels, Status::Fail, kReport, [&] { return check_kernels(q.index, p.gpu_self_test(q.index)); }));
}

void check_links(const DoctorProbes& p, const std::vector<GpuDeviceQuery>& gpus, Checks& out) {
  const std::string fix =
      "NCCL_DEBUG=INFO dcuserve doctor shows the communicator's own account; check that the GPUs see each other "
      "(nvidia-smi topo -m / hy-smi --showtopo)";
  for (size_t a = 0; a < gpus.size(); ++a)
    for (size_t b = a + 1; b < gpus.size(); ++b) {
      const std::vector<int> pair = {gpus[a].index, gpus[b].index};
      out.push_back(attempt(fmt::format("link {}-{}", pair[0], pair[1]), Status::Fail, fix, [&] {
        return check_link(pair, p.peer_link(pair[0], pair[1]), p.all_reduce(pair), p.build.nccl);
      }));
    }
  if (gpus.size() <= 2) return;
  std::vector<int> all;
  for (const GpuDeviceQuery& q : gpus) all.push_back(q.index);
  out.push_back(attempt(fmt::format("all-reduce {}", fmt::join(all, "-")), Status::Fail, fix,
                        [&] { return check_link(all, std::nullopt, p.all_reduce(all), p.build.nccl); }));
}

}  // namespace

std::string describe_build(const BuildFacts& b) {
  if (b.gpu.kind == DeviceKind::Cpu) return "CPU-only build";
  const bool cuda = b.gpu.kind == DeviceKind::Cuda;
  std::vector<std::string> with;
  if (b.gpu.vendor_blas) with.push_back(cuda ? "cuBLAS" : "rocBLAS");
  if (b.nccl) with.push_back(cuda ? "NCCL" : "RCCL");
  return fmt::format("{} build for {}{}", cuda ? "CUDA" : "HIP", fmt::join(b.gpu.architectures, ", "),
                     with.empty() ? "" : fmt::format(" with {}", fmt::join(with, " and ")));
}

Checks run_doctor(const DoctorProbes& p) {
  Checks out;
  out.push_back(check_cpu(p.build, p.cpu_features(), p.cpu_threads()));
  LibraryFacts rccl;
  for (const std::string& lib : libraries_of(p.build)) {
    if (lib == "librocm_smi64" && !rccl.error.empty()) continue;  // not loaded: the rocm_smi order line says why
    LibraryFacts facts = p.library(lib);
    if (lib == "librccl") rccl = facts;
    out.push_back(check_library(lib, facts));
  }
  if (p.build.gpu.kind == DeviceKind::Hip && p.build.nccl)
    out.push_back(check_rocm_smi_order(p.env("LD_LIBRARY_PATH"), p.list_dir, rccl));

  std::vector<GpuDeviceQuery> gpus;
  const bool cuda = p.build.gpu.kind == DeviceKind::Cuda;
  const auto no_gpu = [&] {
    return check_no_gpu(p.build, p.list_dir("/dev"), p.env(cuda ? "CUDA_VISIBLE_DEVICES" : "HIP_VISIBLE_DEVICES"));
  };
  if (p.build.gpu.kind == DeviceKind::Cpu) {
    out.push_back(no_gpu());
  } else {
    try {
      gpus = p.gpu_devices();
      if (gpus.empty()) out.push_back(no_gpu());
    } catch (const std::exception& e) {
      out.push_back(failed("gpu", std::string("the runtime failed while listing the GPUs: ") + e.what(),
                           "check the driver (nvidia-smi / hy-smi) and the runtime library lines above"));
    }
  }
  for (const GpuDeviceQuery& q : gpus) check_gpu(p, q, out);
  if (gpus.size() >= 2) check_links(p, gpus, out);
  out.push_back(attempt("cpu model", Status::Fail, kReport, [&] { return check_cpu_smoke(p.cpu_smoke()); }));
  return out;
}

}  // namespace dcu::doctor
