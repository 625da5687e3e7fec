#include "doctor/device_checks.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/gpu/gpu_arch.h"

namespace dcu::doctor {
namespace {

std::string gib(size_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

// One entry of CMAKE_CUDA_ARCHITECTURES: "90a-real" -> {90, 'a', machine code, no PTX}.
struct CudaEntry {
  int cc = 0;
  char suffix = 0;  // 'a', 'f' or 0
  bool sass = true, ptx = true;
};

std::optional<CudaEntry> parse_cuda_entry(std::string_view e) {
  CudaEntry c;
  if (e.ends_with("-real"))
    e.remove_suffix(5), c.ptx = false;
  else if (e.ends_with("-virtual"))
    e.remove_suffix(8), c.sass = false;
  if (!e.empty() && (e.back() == 'a' || e.back() == 'f')) c.suffix = e.back(), e.remove_suffix(1);
  if (e.empty() || e.size() > 3 ||
      !std::all_of(e.begin(), e.end(), [](char ch) { return std::isdigit((unsigned char)ch); }))
    return std::nullopt;
  c.cc = std::stoi(std::string(e));
  return c;
}

// Whether code of `e` runs on compute capability `cc` as machine code / after a JIT of its PTX.
bool sass_runs(const CudaEntry& e, int cc) {
  if (e.suffix == 'a') return cc == e.cc;
  return cc / 10 == e.cc / 10 && cc % 10 >= e.cc % 10;  // plain and family ('f') code: the same major, a later minor
}
bool ptx_runs(const CudaEntry& e, int cc) { return e.suffix ? sass_runs(e, cc) : cc >= e.cc; }

}  // namespace

CodeMatch code_for(std::string_view arch, const std::vector<std::string>& compiled) {
  if (arch.starts_with("gfx")) {
    for (const std::string& e : compiled)
      if (std::string_view(e).substr(0, e.find(':')) == arch) return {CodeRuns::Natively, e};
    return {CodeRuns::No, ""};
  }
  if (!arch.starts_with("sm_")) return {CodeRuns::Unknown, ""};
  std::string_view digits = arch.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  const int cc = std::stoi(std::string(digits));
  CodeMatch best{CodeRuns::No, ""};
  for (const std::string& e : compiled) {
    if (e == "native" || e == "all" || e == "all-major") return {CodeRuns::Unknown, e};
    const std::optional<CudaEntry> c = parse_cuda_entry(e);
    if (!c) continue;
    if (c->sass && sass_runs(*c, cc)) return {CodeRuns::Natively, e};
    if (c->ptx && ptx_runs(*c, cc) && best.runs == CodeRuns::No) best = {CodeRuns::ThroughJit, e};
  }
  return best;
}

Check check_arch(const GpuDeviceQuery& q) {
  const std::string name = fmt::format("gpu {}", q.index);
  const std::optional<std::string> arch = validated_arch(q);
  const bool hip = q.kind == DeviceKind::Hip;
  const std::string reported = hip ? fmt::format("gcnArchName \"{}\", gcnArch {}", q.arch_name, q.arch_number)
                                   : fmt::format("compute capability {}.{}", q.arch_number / 10, q.arch_number % 10);
  const nlohmann::json data = {{"name", q.name}, {"arch", arch.value_or("unknown")}, {"reported", reported}};
  if (!arch)
    return failed(name, fmt::format("{}: no valid architecture in the runtime's answer ({})", q.name, reported),
                  hip ? "the driver reports garbage (vLLM on these machines saw gfx18446744073709551615): update the "
                        "DTK / ROCm driver; dcuserve lists the card as 'unknown' and cannot tell whether its code runs"
                      : "the driver reports no known compute capability: update the NVIDIA driver",
                  data);
  // HIP: a garbage gcnArchName with a valid gcnArch is survivable (the number decides), but says the
  // runtime is unreliable.
  if (hip && !gpu::validate_arch_name(q.arch_name))
    return warn(name,
                fmt::format("{}, {} (from gcnArch {}; gcnArchName \"{}\" is not a valid name)", q.name, *arch,
                            q.arch_number, q.arch_name),
                "dcuserve uses the gcnArch number; tools that read gcnArchName (vLLM, amdsmi) will misreport this "
                "card: update the DTK / ROCm driver",
                data);
  return pass(name, fmt::format("{}, {} ({})", q.name, *arch, reported), data);
}

Check check_memory(const GpuDeviceQuery& q) {
  const std::string name = fmt::format("gpu {} memory", q.index);
  const nlohmann::json data = {
      {"total_bytes", q.total_memory}, {"free_bytes", q.free_memory}, {"properties_total_bytes", q.properties_memory}};
  if (auto problem = memory_disagreement(q))
    return failed(name, *problem,
                  "no KV-cache budget can be derived from these answers: serve with an explicit "
                  "--kv-cache-memory-bytes, and update the driver",
                  data);
  return pass(name,
              fmt::format("{} total, {} free ({} and the device properties agree)", gib(q.total_memory),
                          gib(q.free_memory), q.kind == DeviceKind::Hip ? "hipMemGetInfo" : "cudaMemGetInfo"),
              data);
}

Check check_code(int index, const std::optional<std::string>& arch, const GpuBuild& build) {
  const std::string name = fmt::format("gpu {} code", index);
  const std::string list = fmt::format("{}", fmt::join(build.architectures, ", "));
  const nlohmann::json data = {{"compiled", build.architectures}, {"arch", arch.value_or("unknown")}};
  if (!arch)
    return failed(name,
                  "cannot tell whether this binary's code (" + list + ") runs: the card gave no valid architecture",
                  "see the `gpu " + std::to_string(index) + "` line", data);
  const bool hip = build.kind == DeviceKind::Hip;
  const std::string digits = hip ? *arch : arch->substr(3);
  const std::string rebuild = hip ? fmt::format(
                                        "rebuild for it: scripts/build_gpu.sh hip build/hip-{0} {0} (or "
                                        "-DCMAKE_HIP_ARCHITECTURES={0}; docs/DCU.md, Architectures)",
                                        digits)
                                  : fmt::format(
                                        "rebuild for it: scripts/build_gpu.sh cuda build/cuda-{0} \"{0}\" (or "
                                        "-DCMAKE_CUDA_ARCHITECTURES={0})",
                                        digits);
  const CodeMatch m = code_for(*arch, build.architectures);
  switch (m.runs) {
    case CodeRuns::Natively:
      return pass(name,
                  fmt::format("this binary carries {} code (built for {}), which runs on {}", m.entry, list, *arch),
                  data);
    case CodeRuns::ThroughJit:
      return warn(name,
                  fmt::format("no {} machine code (built for {}): the driver compiles the PTX of {} at first use (a "
                              "slow first start; these kernels were not tested that way)",
                              *arch, list, m.entry),
                  rebuild, data);
    case CodeRuns::Unknown:
      return warn(name, fmt::format("built for \"{}\": which architectures that meant is not recorded", m.entry),
                  "build with an explicit architecture list to have it checked", data);
    case CodeRuns::No:
      break;
  }
  return failed(name,
                fmt::format("this binary has code for {} and none of it runs on {} (\"invalid device function\" at "
                            "the first kernel)",
                            list, *arch),
                rebuild, data);
}

Check check_cpu(const BuildFacts& build, const std::vector<std::string>& present, int threads) {
  std::vector<std::string> missing;
  for (const std::string& f : build.cpu_features)
    if (std::find(present.begin(), present.end(), f) == present.end()) missing.push_back(f);
  const nlohmann::json data = {{"threads", threads}, {"compiled_for", build.cpu_features}, {"missing", missing}};
  if (!missing.empty())
    return failed("cpu",
                  fmt::format("{} threads; this binary uses {} and the CPU lacks {}", threads,
                              fmt::join(build.cpu_features, ", "), fmt::join(missing, ", ")),
                  "build on this machine with -DDCUSERVE_NATIVE=ON (or configure where the compiler does not accept "
                  "-mavx2: the portable CPU code is used)",
                  data);
  if (build.cpu_features.empty())
    return pass("cpu", fmt::format("{} threads; the portable CPU code (built without AVX2/FMA/F16C)", threads), data);
  return pass("cpu",
              fmt::format("{} threads; {} present (this binary's CPU fast paths use them)", threads,
                          fmt::join(build.cpu_features, ", ")),
              data);
}

Check check_no_gpu(const BuildFacts& build, const std::vector<std::string>& dev_files, const std::string& visible) {
  const auto has = [&](const char* f) { return std::find(dev_files.begin(), dev_files.end(), f) != dev_files.end(); };
  const bool nvidia = has("nvidia0") || has("nvidiactl"), amd = has("kfd");
  if (build.gpu.kind == DeviceKind::Cpu) {
    if (nvidia || amd)
      return warn("gpu",
                  fmt::format("this machine has GPU device files (/dev/{}) but this build has no GPU backend: "
                              "serve runs on the CPU",
                              nvidia ? "nvidia0" : "kfd"),
                  nvidia ? "build the cuda preset (scripts/build_gpu.sh cuda, or cmake --preset cuda)"
                         : "build the hip-gfx906 preset (docs/DCU.md: cmake --preset hip-gfx906)");
    return pass("gpu", "CPU-only build on a machine without GPU device files: serve runs on the CPU backend");
  }
  const bool cuda = build.gpu.kind == DeviceKind::Cuda;
  const std::string variable = cuda ? "CUDA_VISIBLE_DEVICES" : "HIP_VISIBLE_DEVICES";
  std::string fix;
  if (cuda ? !nvidia : !amd)
    fix = cuda ? "no /dev/nvidia* files: load the NVIDIA driver (nvidia-smi lists the GPUs when it is) or start the "
                 "container with the GPUs (docker run --gpus all)"
               : "no /dev/kfd: load the amdgpu / DCU kernel driver (hy-smi or rocm-smi lists the cards when it is) or "
                 "start the container with --device=/dev/kfd --device=/dev/dri";
  else if (!visible.empty())
    fix = fmt::format("{}={} hides the devices: unset it or name existing ones", variable, visible);
  else
    fix = cuda ? "the device files exist but the runtime lists no GPU: check the driver (nvidia-smi) and that it "
                 "supports this CUDA runtime (the libcudart line)"
               : "the device files exist but the runtime lists no GPU: check the driver (hy-smi / rocm-smi) and that "
                 "this user may open /dev/kfd and /dev/dri/render* (the video and render groups)";
  return warn("gpu", "this GPU build sees no GPU: serve runs on the CPU backend", fix);
}

}  // namespace dcu::doctor
