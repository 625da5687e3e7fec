#include "doctor/kernel_checks.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dcu::doctor {
namespace {

nlohmann::json results_json(const SelfTest& t) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpResult& r : t.results) {
    nlohmann::json o = {{"op", r.name}, {"passed", r.passed()}, {"tolerance", r.tolerance}};
    // JSON has no infinity: an output that went NaN or infinite where the reference did not is null.
    o["error"] = std::isfinite(r.error) ? nlohmann::json(r.error) : nlohmann::json();
    if (!r.failure.empty()) o["failure"] = r.failure;
    ops.push_back(std::move(o));
  }
  return {{"seconds", t.seconds}, {"ops", ops}};
}

std::string describe_failure(const OpResult& r) {
  if (!r.failure.empty()) return fmt::format("{} (threw: {})", r.name, r.failure);
  return fmt::format("{} (error {:.1e} > {:.0e})", r.name, r.error, r.tolerance);
}

// Failed ops, and the one that came closest to its tolerance among the others.
struct Summary {
  std::vector<std::string> failures;
  const OpResult* closest = nullptr;
  bool device_code_missing = false;
};

Summary summarize(const SelfTest& t) {
  Summary s;
  for (const OpResult& r : t.results) {
    if (!r.passed()) {
      s.failures.push_back(describe_failure(r));
      s.device_code_missing |= r.failure.find("invalid device function") != std::string::npos ||
                               r.failure.find("no kernel image") != std::string::npos;
    } else if (r.tolerance > 0 && (!s.closest || r.error / r.tolerance > s.closest->error / s.closest->tolerance)) {
      s.closest = &r;
    }
  }
  return s;
}

}  // namespace

Check check_kernels(int index, const SelfTest& t) {
  const std::string name = fmt::format("gpu {} kernels", index);
  const Summary s = summarize(t);
  if (!s.failures.empty())
    return failed(name,
                  fmt::format("{} of {} checks disagree with the CPU reference: {}", s.failures.size(),
                              t.results.size(), fmt::join(s.failures, "; ")),
                  s.device_code_missing
                      ? "this binary has no code for this GPU (see the `gpu " + std::to_string(index) + " code` line)"
                      : "serve with --device cpu until it is fixed, and report it with the output of "
                        "`dcuserve doctor --json`",
                  results_json(t));
  std::string closest;
  if (s.closest)
    closest = fmt::format("; closest to its tolerance: {} at {:.1e} of {:.0e}", s.closest->name, s.closest->error,
                          s.closest->tolerance);
  return pass(name,
              fmt::format("{} checks of the model's ops and of a tiny model match the CPU reference in {:.2f} s{}",
                          t.results.size(), t.seconds, closest),
              results_json(t));
}

Check check_cpu_smoke(const SelfTest& t) {
  const Summary s = summarize(t);
  if (!s.failures.empty())
    return failed("cpu model", fmt::format("the CPU backend disagrees with itself: {}", fmt::join(s.failures, "; ")),
                  "report it with the output of `dcuserve doctor --json` and the CPU model (/proc/cpuinfo)",
                  results_json(t));
  return pass(
      "cpu model",
      fmt::format("a tiny random-weight model on the CPU backend: logits finite, and the same fed at once or in "
                  "chunks and decode steps (within {:.1e}) in {:.2f} s",
                  t.results.empty() ? 0.0 : t.results.front().error, t.seconds),
      results_json(t));
}

}  // namespace dcu::doctor
