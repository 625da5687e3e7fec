#pragma once
// One finding of `dcuserve doctor`: what was checked, how it went, what was seen and, unless it
// passed, what to do about it.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::doctor {

enum class Status { Pass, Warn, Fail };

struct Check {
  std::string name;  // "gpu 0 memory", "library librccl", "link 0-1"
  Status status = Status::Pass;
  std::string detail;   // what was found, one line
  std::string fix;      // what to do (warn and fail), one line
  nlohmann::json data;  // the measured or reported values, for --json (null when none)
};

inline Check pass(std::string name, std::string detail, nlohmann::json data = {}) {
  return {std::move(name), Status::Pass, std::move(detail), "", std::move(data)};
}
inline Check warn(std::string name, std::string detail, std::string fix, nlohmann::json data = {}) {
  return {std::move(name), Status::Warn, std::move(detail), std::move(fix), std::move(data)};
}
inline Check failed(std::string name, std::string detail, std::string fix, nlohmann::json data = {}) {
  return {std::move(name), Status::Fail, std::move(detail), std::move(fix), std::move(data)};
}

const char* status_name(Status s);  // "pass", "warn", "fail"

using Checks = std::vector<Check>;

inline bool any_failed(const Checks& checks) {
  for (const Check& c : checks)
    if (c.status == Status::Fail) return true;
  return false;
}

}  // namespace dcu::doctor
