#pragma once
// Python's json.dumps over template values, as the tojson filter of transformers calls it.

#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace dcu::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line
  std::string item_separator;         // ", " on one line, "," when indented (json.dumps' defaults)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

std::string json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace dcu::jinja
