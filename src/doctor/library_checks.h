#pragma once
// The shared libraries a build loads (path and version of each) and the library orders known to break.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/check.h"
#include "doctor/probes.h"

namespace dcu::doctor {

// The libraries this build loads, in the order the checks list them: CUDA: libcudart, libcublas,
// libnccl; HIP: libamdhip64, librocblas, librccl, librocm_smi64 (RCCL's); none without a GPU backend.
std::vector<std::string> libraries_of(const BuildFacts& build);

// One line per library: where it was loaded from and its version; fail with the fix when it cannot be
// loaded or the driver is older than the runtime.
Check check_library(const std::string& library, const LibraryFacts& facts);

// Where the DTK keeps the librocm_smi64 that RCCL needs (Hygon's hyhal): the usual folders.
inline const std::vector<std::string> kHyhalRocmSmiDirs = {"/opt/dtk/.hyhal/rocm_smi/lib", "/opt/hyhal/lib",
                                                           "/opt/hyhal/rocm_smi/lib"};

// On DTK images librccl.so.1 fails with "undefined symbol: rsmi_init" unless the hyhal librocm_smi64
// comes before any other in LD_LIBRARY_PATH. Looks at `ld_library_path` in order (each folder listed
// with `list_dir`) and at `hyhal_dirs`: fail when another librocm_smi64 comes first and RCCL failed to
// load, warn when it comes first but RCCL loaded anyway, pass otherwise. The fix is the
// LD_LIBRARY_PATH to export.
Check check_rocm_smi_order(std::string_view ld_library_path,
                           const std::function<std::vector<std::string>(const std::string&)>& list_dir,
                           const LibraryFacts& rccl, const std::vector<std::string>& hyhal_dirs = kHyhalRocmSmiDirs);

}  // namespace dcu::doctor
