#pragma once
// The doctor's checks as text (one line each, the fix under every warning and failure) or JSON.

#include <string>

#include <nlohmann/json.hpp>

#include "doctor/check.h"
#include "doctor/probes.h"

namespace dcu::doctor {

std::string format_text(const BuildFacts& build, const Checks& checks);

// {"build": {...}, "checks": [{"name", "status", "detail", "fix", "data"}], "summary": {"pass", "warn",
// "fail"}, "ok": no check failed}. "fix" and "data" only where there are some.
nlohmann::json format_json(const BuildFacts& build, const Checks& checks);

}  // namespace dcu::doctor
