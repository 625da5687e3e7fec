#pragma once
// Test helper: renders templates with Python's jinja2 (tools/jinja_reference.py, the environment
// transformers uses) and compares dcuserve's Jinja engine with it byte for byte.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::test {

struct JinjaCase {
  std::string name;
  std::string source;
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
};

struct JinjaResult {
  bool ok = false;
  std::string output;   // when ok
  std::string error;    // Python exception type, or the dcu::Error message
  int line = 0;         // template line of the error (0: unknown)
};

// Runs all cases through /usr/bin/python3 + jinja2 in one process. Throws when Python or jinja2
// is missing, so the calling test fails (scripts/setup.sh installs python3-jinja2).
std::vector<JinjaResult> reference_render(const std::vector<JinjaCase>& cases);

// Renders with dcuserve's engine; errors become ok=false with the line parsed from the message.
JinjaResult engine_render(const JinjaCase& c);

// GoogleTest expectations: every case renders identically or both fail (at the same line when
// compare_error_lines).
void expect_same_as_reference(const std::vector<JinjaCase>& cases, bool compare_error_lines = true);

}  // namespace dcu::test
