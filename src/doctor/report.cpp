#include "doctor/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "doctor/doctor.h"

namespace dcu::doctor {

const char* status_name(Status s) {
  switch (s) {
    case Status::Pass:
      return "pass";
    case Status::Warn:
      return "warn";
    case Status::Fail:
      return "fail";
  }
  return "?";
}

namespace {

int count(const Checks& checks, Status s) {
  return int(std::count_if(checks.begin(), checks.end(), [s](const Check& c) { return c.status == s; }));
}

const char* kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::Cpu:
      return "none";
    case DeviceKind::Cuda:
      return "cuda";
    case DeviceKind::Hip:
      return "hip";
  }
  return "?";
}

}  // namespace

std::string format_text(const BuildFacts& build, const Checks& checks) {
  size_t width = 0;
  for (const Check& c : checks) width = std::max(width, c.name.size());
  std::string out = fmt::format("dcuserve doctor: {}\n", describe_build(build));
  for (const Check& c : checks) {
    // Failures in capitals, so that they stand out in a long report.
    const char* status = c.status == Status::Fail ? "FAIL" : status_name(c.status);
    out += fmt::format("{}  {:<{}}  {}\n", status, c.name, width, c.detail);
    if (!c.fix.empty()) out += fmt::format("{:<{}}  fix: {}\n", "", width + 6, c.fix);
  }
  out += fmt::format("{} passed, {} warnings, {} failed\n", count(checks, Status::Pass), count(checks, Status::Warn),
                     count(checks, Status::Fail));
  return out;
}

nlohmann::json format_json(const BuildFacts& build, const Checks& checks) {
  nlohmann::json list = nlohmann::json::array();
  for (const Check& c : checks) {
    nlohmann::json j = {{"name", c.name}, {"status", status_name(c.status)}, {"detail", c.detail}};
    if (!c.fix.empty()) j["fix"] = c.fix;
    if (!c.data.is_null()) j["data"] = c.data;
    list.push_back(std::move(j));
  }
  return {{"build",
           {{"description", describe_build(build)},
            {"gpu", kind_name(build.gpu.kind)},
            {"architectures", build.gpu.architectures},
            {"vendor_blas", build.gpu.vendor_blas},
            {"nccl", build.nccl},
            {"cpu_features", build.cpu_features}}},
          {"checks", list},
          {"summary",
           {{"pass", count(checks, Status::Pass)},
            {"warn", count(checks, Status::Warn)},
            {"fail", count(checks, Status::Fail)}}},
          {"ok", !any_failed(checks)}};
}

}  // namespace dcu::doctor
