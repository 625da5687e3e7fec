#include "doctor/library_checks.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/shared_library.h"

namespace dcu::doctor {
namespace {

bool is_hyhal(const std::string& dir) { return dir.find("hyhal") != std::string::npos; }

bool has_rocm_smi(const std::vector<std::string>& files) {
  return std::any_of(files.begin(), files.end(),
                     [](const std::string& f) { return f.starts_with("librocm_smi64.so"); });
}

std::vector<std::string> split_path(std::string_view s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    const size_t end = std::min(s.find(':', begin), s.size());
    if (end > begin) out.emplace_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// `first` at the front of `dirs`, the others in their order without it.
std::string with_first(const std::string& first, const std::vector<std::string>& dirs) {
  std::string out = first;
  for (const std::string& d : dirs)
    if (d != first) out += ":" + d;
  return out;
}

// CUDA's runtime and driver versions are 1000 * major + 10 * minor (13000: 13.0).
std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

}  // namespace

std::vector<std::string> libraries_of(const BuildFacts& b) {
  std::vector<std::string> out;
  if (b.gpu.kind == DeviceKind::Cuda) {
    out = {"libcudart", "libcublas"};
    if (b.nccl) out.push_back("libnccl");
  } else if (b.gpu.kind == DeviceKind::Hip) {
    out = {"libamdhip64"};
    if (b.gpu.vendor_blas) out.push_back("librocblas");
    if (b.nccl) out.insert(out.end(), {"librccl", "librocm_smi64"});
  }
  return out;
}

Check check_library(const std::string& library, const LibraryFacts& f) {
  const std::string name = "library " + library;
  const nlohmann::json data = {{"path", f.path}, {"version", f.version}, {"error", f.error}};
  if (!f.error.empty())
    return failed(name, "could not be loaded: " + f.error, library_load_advice(library, f.error), data);
  const std::string where = f.path + (f.version.empty() ? "" : ", version " + f.version);
  if (library == "libcudart") {
    if (f.driver_version == 0)
      return warn(name, where + "; no NVIDIA driver answered (cudaDriverGetVersion)",
                  "install the NVIDIA driver, or start the container with the GPUs (docker run --gpus all)", data);
    if (f.driver_version < f.runtime_version)
      return failed(name,
                    fmt::format("{}; the driver supports CUDA {} but this runtime is CUDA {}", where,
                                cuda_version(f.driver_version), cuda_version(f.runtime_version)),
                    fmt::format("update the NVIDIA driver to one for CUDA {} or later, or build dcuserve with the "
                                "CUDA toolkit the driver supports",
                                cuda_version(f.runtime_version)),
                    data);
    return pass(name, fmt::format("{}; the driver supports CUDA {}", where, cuda_version(f.driver_version)), data);
  }
  if (library == "libamdhip64" && f.driver_version == 0)
    return warn(name, where + "; no GPU driver answered (hipDriverGetVersion)",
                "load the amdgpu / DCU kernel driver (hy-smi or rocm-smi lists the cards when it is), or start the "
                "container with --device=/dev/kfd --device=/dev/dri",
                data);
  return pass(name, where, data);
}

Check check_rocm_smi_order(std::string_view ld_library_path,
                           const std::function<std::vector<std::string>(const std::string&)>& list_dir,
                           const LibraryFacts& rccl, const std::vector<std::string>& hyhal_dirs) {
  const std::string name = "rocm_smi order";
  const std::vector<std::string> dirs = split_path(ld_library_path);
  std::vector<std::string> with_smi;  // the folders of LD_LIBRARY_PATH holding a librocm_smi64, in order
  for (const std::string& d : dirs)
    if (has_rocm_smi(list_dir(d))) with_smi.push_back(d);
  std::string hyhal;  // the hyhal one: on LD_LIBRARY_PATH, else in one of its usual folders
  for (const std::string& d : with_smi)
    if (hyhal.empty() && is_hyhal(d)) hyhal = d;
  for (const std::string& d : hyhal_dirs)
    if (hyhal.empty() && has_rocm_smi(list_dir(d))) hyhal = d;
  const nlohmann::json data = {
      {"ld_library_path", std::string(ld_library_path)}, {"rocm_smi_dirs", with_smi}, {"hyhal", hyhal}};
  if (hyhal.empty())
    return pass(name, "no hyhal librocm_smi64 (not a DTK image): RCCL uses the librocm_smi64 of its own tree", data);
  const std::string fix = "export LD_LIBRARY_PATH=" + with_first(hyhal, dirs);
  const bool rccl_failed = !rccl.error.empty();
  if (!with_smi.empty() && with_smi.front() == hyhal)
    return pass(name, "LD_LIBRARY_PATH finds the hyhal librocm_smi64 first (" + hyhal + ")", data);
  if (!with_smi.empty()) {
    const std::string detail =
        fmt::format("LD_LIBRARY_PATH finds the librocm_smi64 of {} before the hyhal one ({})", with_smi.front(), hyhal);
    if (rccl_failed)
      return failed(name, detail + ": librccl.so.1 fails to load (\"undefined symbol: rsmi_init\" on DTK images)", fix,
                    data);
    return warn(name, detail + "; RCCL loaded anyway, but DTK images need the hyhal one first", fix, data);
  }
  if (rccl.error.find("rsmi_") != std::string::npos)
    return failed(
        name,
        "no librocm_smi64 on LD_LIBRARY_PATH and librccl.so.1 found one without rsmi_init; the hyhal one is in " +
            hyhal,
        fix, data);
  return pass(name, "no librocm_smi64 on LD_LIBRARY_PATH; librccl.so.1 loaded with its own", data);
}

}  // namespace dcu::doctor
