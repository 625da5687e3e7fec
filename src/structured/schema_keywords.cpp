#include "structured/schema_keywords.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "structured/grammar_error.h"

namespace dcu::structured {
namespace {

constexpr std::array<std::string_view, 27> kImplemented = {
    "type",     "enum",          "const",        "properties",       "required",         "additionalProperties",
    "items",    "prefixItems",   "additionalItems", "minItems",      "maxItems",         "anyOf",
    "oneOf",    "allOf",         "$ref",         "pattern",          "minLength",        "maxLength",
    "format",   "minimum",       "maximum",      "exclusiveMinimum", "exclusiveMaximum", "minProperties",
    "maxProperties", "uniqueItems", "unevaluatedProperties"};

constexpr std::array<std::string_view, 19> kAnnotations = {
    "title",    "description", "default",  "examples",         "$schema",          "$id",        "$comment",
    "$defs",    "definitions", "deprecated", "readOnly",       "writeOnly",        "contentEncoding",
    "contentMediaType", "$anchor", "discriminator", "nullable", "markdownDescription", "strict"};

template <size_t N>
bool in(const std::array<std::string_view, N>& list, const std::string& key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

}  // namespace

bool is_annotation_keyword(const std::string& key) { return in(kAnnotations, key) || key.rfind("x-", 0) == 0; }

// JSON keys are always strings: propertyNames true, {} or {"type": "string"} (zod's z.record) say nothing.
bool is_vacuous_keyword(const std::string& key, const ojson& value) {
  if (key != "propertyNames") return false;
  if (value == true) return true;
  if (!value.is_object()) return false;
  for (const auto& [k, v] : value.items())
    if (!is_annotation_keyword(k) && !(k == "type" && v == "string")) return false;
  return true;
}

void check_keywords(const ojson& schema, const std::string& path) {
  for (const auto& [key, value] : schema.items()) {
    if (in(kImplemented, key) || is_annotation_keyword(key) || is_vacuous_keyword(key, value)) continue;
    grammar_error("the JSON Schema keyword '{}' (at {}) is not supported", key, path);
  }
}

bool has_constraints_besides(const ojson& schema, std::initializer_list<const char*> except) {
  for (const auto& [key, value] : schema.items()) {
    if (is_annotation_keyword(key) || is_vacuous_keyword(key, value)) continue;
    // (clang before 16 cannot capture a structured binding: the init-capture names it)
    if (std::find_if(except.begin(), except.end(), [&key = key](const char* e) { return key == e; }) != except.end())
      continue;
    return true;
  }
  return false;
}

}  // namespace dcu::structured
