#include "cli/model_path.h"

#include <filesystem>
#include <vector>
#include <unistd.h>

#include "core/error.h"

namespace dcu {

std::string resolve_model_dir(const std::string& flag_value) {
  namespace fs = std::filesystem;
  if (!flag_value.empty()) return flag_value;
  const fs::path bundled = fs::path("models") / "dcuserve-demo";
  std::vector<fs::path> candidates = {bundled};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      candidates.push_back(dir / bundled);
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json")) return c.string();
  fail("no --model given and the bundled demo model (models/dcuserve-demo) was not found");
}

}  // namespace dcu
