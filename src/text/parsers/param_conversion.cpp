#include "text/parsers/param_conversion.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "text/parsers/text_scan.h"

namespace dcu::text {
namespace {

using Json = nlohmann::ordered_json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Python's str(x).strip().lower() of a schema "type" value.
std::string type_name(const Json& t) {
  return lower(strip(t.is_string() ? t.get<std::string>() : t.dump()));
}

struct ParamType {
  std::string name = "string";
  bool allows_null = false;
};

ParamType param_type_of(const Json& schema) {
  ParamType t;
  if (!schema.is_object()) return t;
  if (schema.contains("type")) {
    const Json& type = schema["type"];
    if (type.is_array()) {
      // vLLM would stringify the list ("['integer', 'null']"), which matches no type name and falls
      // to its literal_eval branch; we use the first non-null entry instead, which converts the
      // values the model writes the same way and keeps "string" values as strings.
      bool picked = false;
      for (const Json& option : type) {
        std::string name = type_name(option);
        if (name == "null") t.allows_null = true;
        else if (!picked) t.name = name, picked = true;
      }
    } else {
      t.name = type_name(type);
      t.allows_null = t.name == "null";
    }
  } else if (schema.contains("anyOf") && schema["anyOf"].is_array()) {
    // First non-null type of the union; "null" in it makes the parameter nullable.
    bool picked = false;
    for (const Json& option : schema["anyOf"]) {
      if (!option.is_object() || !option.contains("type")) continue;
      std::string name = type_name(option["type"]);
      if (name == "null") t.allows_null = true;
      else if (!picked) t.name = name, picked = true;
    }
  }
  return t;
}

// Python's int(text): optional sign, decimal digits with single '_' between them, surrounding
// whitespace. Values beyond 64 bits (Python has big integers) are not converted.
std::optional<Json> python_int(std::string_view text) {
  std::string_view s = strip(text);
  std::string digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits += s[i++];
  bool last_digit = false;
  for (; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) digits += s[i], last_digit = true;
    else if (s[i] == '_' && last_digit && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))
      last_digit = false;
    else return std::nullopt;
  }
  if (!last_digit) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(digits.c_str(), &end, 10);
  if (errno == ERANGE) return std::nullopt;
  return Json(static_cast<int64_t>(v));
}

// Python's float(text), then vLLM's "integral floats become ints". inf/nan stay strings.
std::optional<Json> python_number(std::string_view text) {
  std::string_view s = strip(text);
  std::string cleaned;
  size_t i = 0, mantissa_digits = 0;
  auto digits = [&](size_t& count) {
    bool last_digit = false;
    while (i < s.size()) {
      char c = s[i];
      if (std::isdigit(static_cast<unsigned char>(c))) cleaned += c, last_digit = true, ++count;
      else if (c == '_' && last_digit && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))
        last_digit = false;
      else break;
      ++i;
    }
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) cleaned += s[i++];
  digits(mantissa_digits);
  if (i < s.size() && s[i] == '.') {
    cleaned += s[i++];
    digits(mantissa_digits);
  }
  if (mantissa_digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    cleaned += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) cleaned += s[i++];
    size_t exponent_digits = 0;
    digits(exponent_digits);
    if (exponent_digits == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double v = std::strtod(cleaned.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  if (v == std::trunc(v) && std::fabs(v) < 9.2e18) return Json(static_cast<int64_t>(v));
  return Json(v);
}

std::optional<Json> parse_json(const std::string& text) {
  Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

// vLLM falls back to Python's ast.literal_eval. We cover what a model trained on the Qwen3.5
// template writes: JSON literals (numbers, "strings", lists, objects) and Python's True/False.
// JSON's true/false/null are not Python literals, so they stay strings as in vLLM.
Json python_literal_or_string(const std::string& value) {
  std::string_view s = strip(value);
  if (s == "True") return true;
  if (s == "False") return false;
  if (s == "true" || s == "false" || s == "null") return value;
  if (auto v = parse_json(value)) return *v;
  return value;
}

}  // namespace

Json find_tool_properties(const Json& tools, std::string_view function_name) {
  if (!tools.is_array()) return Json::object();
  for (const Json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function")) continue;
    const Json& fn = tool["function"];
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string() || fn["name"] != function_name) continue;
    if (fn.contains("parameters") && fn["parameters"].is_object() && fn["parameters"].contains("properties") &&
        fn["parameters"]["properties"].is_object())
      return fn["parameters"]["properties"];
    return Json::object();
  }
  return Json::object();
}

Json convert_param_value(const std::string& value, const std::string& param_name, const Json& properties) {
  if (!properties.is_object() || !properties.contains(param_name)) return value;
  ParamType type = param_type_of(properties[param_name]);
  std::string lowered = lower(value);
  bool null_word = lowered == "null" || lowered == "none";  // "None": the template renders null via |string
  if (type.allows_null && null_word) return nullptr;
  static const std::string_view kStringTypes[] = {"string", "str", "text", "varchar", "char", "enum"};
  if (std::find(std::begin(kStringTypes), std::end(kStringTypes), type.name) != std::end(kStringTypes)) return value;
  if (null_word) return nullptr;

  const std::string& t = type.name;
  if (starts_with(t, "int") || starts_with(t, "uint") || starts_with(t, "long") || starts_with(t, "short") ||
      starts_with(t, "unsigned")) {
    if (auto v = python_int(value)) return *v;
    return value;
  }
  if (starts_with(t, "num") || starts_with(t, "float")) {
    if (auto v = python_number(value)) return *v;
    return value;
  }
  if (t == "boolean" || t == "bool" || t == "binary") return lowered == "true";  // anything else: false
  bool container = t == "object" || t == "array" || t == "arr" || starts_with(t, "dict") || starts_with(t, "list");
  if (container) {
    if (auto v = parse_json(value)) return *v;
  }
  return python_literal_or_string(value);
}

}  // namespace dcu::text
