#pragma once
// Shared libraries opened at run time (dlopen) rather than by the loader at start-up, so that a missing
// or mismatched one is an error that names it and the fix, not "undefined symbol" from ld.so. The
// NCCL/RCCL loader (comm/nccl_library.h) and `dcuserve doctor` share these.

#include <string>
#include <string_view>
#include <vector>

namespace dcu {

struct SharedLibrary {
  void* handle = nullptr;  // null when it could not be opened
  std::string path;        // the file the loader picked
  std::string error;       // dlerror()'s text when it could not be opened
};

// dlopen(name, RTLD_NOW | RTLD_LOCAL): every symbol is resolved now, so a dependency that lacks one
// (librccl against a librocm_smi64 without rsmi_init) fails here with the loader's message instead of
// aborting the process at the first call. When `name` cannot be found and `fallback` (a path known at
// build time) is set, that file is tried next. The handle is never closed.
SharedLibrary open_shared_library(const std::string& name, const std::string& fallback = "");

// Paths of the shared objects loaded in this process (dl_iterate_phdr), in load order.
std::vector<std::string> loaded_shared_objects();

// The first of `loaded` whose file name starts with `stem` followed by ".so" ("libcudart" matches
// ".../libcudart.so.13"); empty when none.
std::string find_loaded(const std::vector<std::string>& loaded, std::string_view stem);

// The version a file name carries after ".so.": "libcudart.so.13.0.96" -> "13.0.96"; empty when none.
std::string version_from_file_name(std::string_view path);

// What a user can do about `library` failing to load with the loader's message `error`.
std::string library_load_advice(std::string_view library, std::string_view error);

}  // namespace dcu
