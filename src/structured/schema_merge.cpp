#include "structured/schema_merge.h"

#include <algorithm>
#include <vector>

#include "structured/grammar_error.h"

namespace dcu::structured {
namespace {

std::vector<std::string> type_list(const ojson& t) {
  if (t.is_string()) return {t.get<std::string>()};
  std::vector<std::string> out;
  for (const auto& x : t) out.push_back(x.get<std::string>());
  return out;
}

ojson intersect_types(const ojson& a, const ojson& b, const std::string& path) {
  std::vector<std::string> out;
  const auto la = type_list(a), lb = type_list(b);
  for (const auto& x : la)
    for (const auto& y : lb) {
      std::string both = x == y ? x : (x == "integer" && y == "number") || (x == "number" && y == "integer") ? "integer" : "";
      if (!both.empty() && std::find(out.begin(), out.end(), both) == out.end()) out.push_back(both);
    }
  if (out.empty()) grammar_error("allOf at {} requires types that exclude each other", path);
  if (out.size() == 1) return out[0];
  return ojson(out);
}

ojson all_of(const ojson& a, const ojson& b) { return ojson{{"allOf", ojson::array({a, b})}}; }

// Properties that an `additionalProperties: false` side does not list cannot appear at all.
void restrict_to(ojson& merged, const ojson& side, const std::string& path) {
  if (!side.contains("additionalProperties") || side["additionalProperties"] != false) return;
  const ojson listed = side.value("properties", ojson::object());
  if (merged.contains("properties")) {
    ojson kept = ojson::object();
    for (const auto& [k, v] : merged["properties"].items())
      if (listed.contains(k)) kept[k] = v;
    merged["properties"] = kept;
  }
  if (merged.contains("required"))
    for (const auto& r : merged["required"])
      if (!listed.contains(r.get<std::string>()))
        grammar_error("allOf at {} requires property '{}', which additionalProperties: false excludes", path,
                      r.get<std::string>());
}

}  // namespace

ojson merge_schemas(const ojson& a, const ojson& b, const std::string& path) {
  if (a.is_boolean() || b.is_boolean()) {
    if (a == false || b == false) return false;
    return a.is_boolean() ? b : a;
  }
  ojson out = a;
  for (const auto& [key, vb] : b.items()) {
    if (!out.contains(key)) {
      out[key] = vb;
      continue;
    }
    ojson& va = out[key];
    if (va == vb || is_annotation_keyword(key)) continue;
    if (key == "type") {
      va = intersect_types(va, vb, path);
    } else if (key == "properties") {
      for (const auto& [name, sb] : vb.items()) va[name] = va.contains(name) ? all_of(va[name], sb) : sb;
    } else if (key == "required") {
      for (const auto& r : vb)
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
    } else if (key == "minimum" || key == "minLength" || key == "minItems" || key == "minProperties") {
      va = std::max(va.get<double>(), vb.get<double>());
    } else if (key == "maximum" || key == "maxLength" || key == "maxItems" || key == "maxProperties") {
      va = std::min(va.get<double>(), vb.get<double>());
    } else if ((key == "exclusiveMinimum" || key == "exclusiveMaximum") && va.is_number() && vb.is_number()) {
      va = key == "exclusiveMinimum" ? std::max(va.get<double>(), vb.get<double>()) : std::min(va.get<double>(), vb.get<double>());
    } else if (key == "enum") {
      ojson both = ojson::array();
      for (const auto& x : va)
        if (std::find(vb.begin(), vb.end(), x) != vb.end()) both.push_back(x);
      va = both;
    } else if (key == "additionalProperties" || key == "unevaluatedProperties") {
      va = va == false || vb == false ? ojson(false) : all_of(va, vb);
    } else if (key == "items") {
      if (va.is_array() || vb.is_array()) grammar_error("allOf at {}: merging tuple 'items' is not supported", path);
      va = all_of(va, vb);
    } else if (key == "const") {
      grammar_error("allOf at {} requires two different constants", path);
    } else {
      grammar_error("allOf at {}: merging two different '{}' is not supported", path, key);
    }
  }
  restrict_to(out, a, path);
  restrict_to(out, b, path);
  return out;
}

}  // namespace dcu::structured
