#include "text/parsers/python_json.h"

namespace dcu::text {
namespace {

void dump_into(const nlohmann::ordered_json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) out += ", ";
      first = false;
      dump_into(nlohmann::ordered_json(key), out);
      out += ": ";
      dump_into(item, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      dump_into(v[i], out);
    }
    out += ']';
  } else {
    // Invalid UTF-8 in model output becomes U+FFFD instead of an exception.
    out += v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump_into(value, out);
  return out;
}

}  // namespace dcu::text
