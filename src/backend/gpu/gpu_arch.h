#pragma once
// Validation of the architecture names that drivers report. Some stacks report garbage (vLLM on
// gfx906 saw "gfx18446744073709551615"); a name is accepted only when it looks like an ISA we know.

#include <optional>
#include <string>
#include <string_view>

namespace dcu::gpu {

// "gfx906:sramecc+:xnack-" -> "gfx906"; a gfx name is gfx + 3..4 hex digits (feature suffixes dropped).
// "sm_90a" / "sm_80" -> accepted when the compute capability is a known NVIDIA one. Otherwise nullopt.
std::optional<std::string> validate_arch_name(std::string_view reported);

// The NVIDIA name for a compute capability ("sm_90"), validated.
std::optional<std::string> nvidia_arch(int major, int minor);
// The AMD name from the gcnArch number some HIP versions report (906 -> "gfx906"), validated.
std::optional<std::string> amd_arch_from_number(int gcn_arch);

}  // namespace dcu::gpu
