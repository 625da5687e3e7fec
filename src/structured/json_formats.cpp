#include "structured/json_formats.h"

namespace dcu::structured {
namespace {

// Years 0001-9999: RFC 3339's four digits admit 0000, but validators built on a date type (Python's
// date.fromisoformat and rfc3339-validator, used by jsonschema's format checker) reject year 0. Days
// 29-31 only in the months that always have them (no leap-year arithmetic in a regex).
constexpr const char* kDate =
    "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-"
    "(((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01]))|((0[469]|11)-(0[1-9]|[12][0-9]|30))|"
    "(02-(0[1-9]|1[0-9]|2[0-8])))";
// A time with its offset (RFC 3339 requires one; some validators do).
constexpr const char* kTime = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
constexpr const char* kLabel = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";

}  // namespace

std::optional<std::string> format_regex(std::string_view format) {
  const std::string label = kLabel;
  if (format == "date") return std::string(kDate);
  if (format == "time") return std::string(kTime);
  if (format == "date-time") return std::string(kDate) + "T" + kTime;
  if (format == "uuid") return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  if (format == "email") return "[a-zA-Z0-9_%+-]+(\\.[a-zA-Z0-9_%+-]+)*@" + label + "(\\." + label + ")+";
  if (format == "ipv4") {
    const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    return "(" + octet + "\\.){3}" + octet;
  }
  if (format == "ipv6") {
    // The eight groups, or fewer around one "::" (no embedded IPv4 part, no zone).
    const std::string h = "[0-9a-fA-F]{1,4}";
    std::string forms = "(" + h + ":){7}" + h;
    for (int before = 0; before <= 7; ++before) {
      const int after_max = 7 - before;
      const std::string head = before == 0 ? ":" : "(" + h + ":){" + std::to_string(before) + "}";
      const std::string tail = after_max == 0 ? ":" : "(:|(:" + h + "){1," + std::to_string(after_max) + "})";
      forms += "|" + head + tail;
    }
    return forms;
  }
  if (format == "uri")
    return "[a-zA-Z][a-zA-Z0-9+.-]*://" + label + "(\\." + label + ")*(/[a-zA-Z0-9._~-]*)*(\\?[a-zA-Z0-9._~=&-]*)?";
  return std::nullopt;
}

bool is_pattern_format(std::string_view format) {
  return format == "starts_with" || format == "ends_with" || format == "includes";
}

}  // namespace dcu::structured
