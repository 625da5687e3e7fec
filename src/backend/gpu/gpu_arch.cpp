#include "backend/gpu/gpu_arch.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace dcu::gpu {
namespace {

constexpr std::array<int, 18> kKnownNvidia = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 120, 121};

bool is_hex(char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); }

}  // namespace

std::optional<std::string> validate_arch_name(std::string_view s) {
  s = s.substr(0, s.find(':'));  // target features ("sramecc+", "xnack-") are not part of the ISA name
  if (s.size() >= 5 && s.substr(0, 3) == "gfx") {
    std::string_view digits = s.substr(3);
    if (digits.size() >= 3 && digits.size() <= 4 && std::all_of(digits.begin(), digits.end(), is_hex))
      return std::string(s);
    return std::nullopt;
  }
  if (s.size() >= 5 && s.substr(0, 3) == "sm_") {
    std::string_view digits = s.substr(3);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
    if (digits.empty() || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return std::nullopt;
    const int cc = std::stoi(std::string(digits));
    if (std::find(kKnownNvidia.begin(), kKnownNvidia.end(), cc) == kKnownNvidia.end()) return std::nullopt;
    return std::string(s);
  }
  return std::nullopt;
}

std::optional<std::string> nvidia_arch(int major, int minor) {
  if (major < 0 || minor < 0 || minor > 9) return std::nullopt;
  return validate_arch_name("sm_" + std::to_string(major * 10 + minor));
}

std::optional<std::string> amd_arch_from_number(int gcn_arch) {
  if (gcn_arch <= 0) return std::nullopt;
  return validate_arch_name("gfx" + std::to_string(gcn_arch));
}

}  // namespace dcu::gpu
