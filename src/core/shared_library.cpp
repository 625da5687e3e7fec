#include "core/shared_library.h"

#include <dlfcn.h>
#include <filesystem>
#include <link.h>

namespace dcu {
namespace {

std::string file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string path_of(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return "";
  return map->l_name;
}

SharedLibrary try_open(const std::string& name) {
  SharedLibrary lib;
  dlerror();
  lib.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char* e = dlerror();
    lib.error = e ? e : name + ": dlopen failed";
    return lib;
  }
  lib.path = path_of(lib.handle);
  return lib;
}

bool not_found(const std::string& error) { return error.find("cannot open shared object file") != std::string::npos; }

}  // namespace

SharedLibrary open_shared_library(const std::string& name, const std::string& fallback) {
  SharedLibrary lib = try_open(name);
  if (lib.handle || fallback.empty() || fallback == name || !not_found(lib.error)) return lib;
  SharedLibrary second = try_open(fallback);
  if (!second.handle) second.error = lib.error + "; then " + second.error;
  return second;
}

std::vector<std::string> loaded_shared_objects() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &out);
  return out;
}

std::string find_loaded(const std::vector<std::string>& loaded, std::string_view stem) {
  const std::string prefix = std::string(stem) + ".so";
  for (const std::string& path : loaded)
    if (file_name(path).starts_with(prefix)) return path;
  return "";
}

std::string version_from_file_name(std::string_view path) {
  // A symlink (libnccl.so.2 -> libnccl.so.2.28.3) names the version in its target.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(std::filesystem::path(path), ec);
  const std::string name = file_name(ec ? std::string(path) : real.string());
  const size_t so = name.find(".so.");
  return so == std::string::npos ? "" : name.substr(so + 4);
}

std::string library_load_advice(std::string_view library, std::string_view error) {
  const auto has = [&](std::string_view s) { return error.find(s) != std::string_view::npos; };
  const std::string lib(library);
  if (has("undefined symbol: rsmi_"))
    return "librccl needs the librocm_smi64 of the DTK's hyhal (the one with rsmi_init) and the loader found another "
           "one "
           "first: put the hyhal folder first in LD_LIBRARY_PATH, e.g. export "
           "LD_LIBRARY_PATH=/opt/dtk/.hyhal/rocm_smi/lib:$LD_LIBRARY_PATH (`dcuserve doctor` names the folders on this "
           "machine)";
  if (has("undefined symbol"))
    return lib +
           " was built against other versions of its dependencies than the ones the loader found first: "
           "check the order of LD_LIBRARY_PATH (`dcuserve doctor` shows the file each library comes from)";
  if (has(" has no "))  // comm/nccl_library.cpp: a file by that name without a function dcuserve calls
    return "the " + lib +
           " found first is too old or another library of that name: put the folder of the right one "
           "first in LD_LIBRARY_PATH, or remove the other";
  if (has("wrong ELF class"))
    return "the " + lib + " found is not a 64-bit x86-64 library: remove its folder from LD_LIBRARY_PATH";
  if (has("cannot open shared object file")) {
    if (lib.starts_with("libnccl"))
      return "install NCCL (NVIDIA's libnccl2 package, or pip's nvidia-nccl-cu13) or add the folder that holds "
             "libnccl.so.2 to LD_LIBRARY_PATH";
    if (lib.starts_with("librccl") || lib.starts_with("librocm_smi") || lib.starts_with("libamdhip") ||
        lib.starts_with("librocblas"))
      return "load the DTK's or ROCm's environment (source /opt/dtk/env.sh) or add the folder that holds " + lib +
             " (/opt/dtk/lib, /opt/rocm/lib) to LD_LIBRARY_PATH";
    return "install " + lib + " or add the folder that holds it to LD_LIBRARY_PATH";
  }
  return "check that " + lib + " and its dependencies are the ones this build expects (LD_LIBRARY_PATH)";
}

}  // namespace dcu
