#include "server/constraint_fields.h"

#include "server/errors.h"

namespace dcu::server {
namespace {

using json = nlohmann::ordered_json;
using structured::ConstraintSpec;

const json* field(const json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

// A schema given as an object, or as JSON text (vLLM accepts both).
json schema_value(const json& v, const std::string& param) {
  if (v.is_object() || v.is_boolean()) return v;
  if (v.is_string()) {
    json parsed = json::parse(v.get<std::string>(), nullptr, false);
    if (!parsed.is_discarded() && (parsed.is_object() || parsed.is_boolean())) return parsed;
  }
  reject(param, "'{}' must be a JSON Schema (an object, or its JSON text)", param);
}

std::string string_value(const json& v, const std::string& param) {
  if (!v.is_string()) reject(param, "'{}' must be a string", param);
  return v.get<std::string>();
}

std::vector<std::string> choices(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) reject(param, "'{}' must be a non-empty list of strings", param);
  std::vector<std::string> out;
  for (const auto& c : v) out.push_back(string_value(c, param));
  return out;
}

ConstraintSpec json_object_spec() {
  ConstraintSpec spec;
  spec.schema = {{"type", "object"}};
  spec.json.strict = false;  // any object
  return spec;
}

std::optional<RequestConstraint> from_response_format(const json& body) {
  const json* rf = field(body, "response_format");
  if (!rf) return std::nullopt;
  if (!rf->is_object()) reject(std::string("response_format"), "'response_format' must be an object");
  const json* type = field(*rf, "type");
  if (!type || !type->is_string())
    reject(std::string("response_format.type"), "'response_format.type' must be 'text', 'json_object' or 'json_schema'");
  const std::string t = type->get<std::string>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") return RequestConstraint{json_object_spec(), "response_format"};
  if (t != "json_schema")
    reject(std::string("response_format.type"), "response_format of type '{}' is not supported; use 'text', "
           "'json_object' or 'json_schema'", t);
  const json* js = field(*rf, "json_schema");
  if (!js || !js->is_object())
    reject(std::string("response_format.json_schema"), "response_format 'json_schema' needs a 'json_schema' object");
  const json* schema = field(*js, "schema");
  if (!schema) reject(std::string("response_format.json_schema.schema"), "'response_format.json_schema.schema' is required");
  if (const json* strict = field(*js, "strict"); strict && !strict->is_boolean())
    reject(std::string("response_format.json_schema.strict"), "'response_format.json_schema.strict' must be a boolean");
  ConstraintSpec spec;
  spec.schema = schema_value(*schema, "response_format.json_schema.schema");
  return RequestConstraint{std::move(spec), "response_format"};
}

// structured_outputs {...} or the guided_* fields: the same keys without / with the prefix.
std::optional<RequestConstraint> from_guided(const json& o, const std::string& prefix) {
  std::optional<RequestConstraint> out;
  auto set = [&](ConstraintSpec spec, const std::string& name) {
    if (out) reject(name, "only one of json, regex, choice, grammar and json_object may be given ('{}' and '{}')",
                    out->param, name);
    out = RequestConstraint{std::move(spec), name};
  };
  auto name = [&](const char* key) { return prefix + key; };
  if (const json* v = field(o, (prefix.empty() ? "guided_json" : "json"))) {
    ConstraintSpec spec;
    spec.schema = schema_value(*v, prefix.empty() ? "guided_json" : name("json"));
    set(std::move(spec), prefix.empty() ? "guided_json" : name("json"));
  }
  const std::string g = prefix.empty() ? "guided_" : prefix;
  if (const json* v = field(o, (prefix.empty() ? "guided_regex" : "regex"))) {
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::Regex;
    spec.text = string_value(*v, g + "regex");
    set(std::move(spec), g + "regex");
  }
  if (const json* v = field(o, (prefix.empty() ? "guided_choice" : "choice"))) {
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::Choice;
    spec.choices = choices(*v, g + "choice");
    set(std::move(spec), g + "choice");
  }
  if (const json* v = field(o, (prefix.empty() ? "guided_grammar" : "grammar"))) {
    ConstraintSpec spec;
    spec.kind = ConstraintSpec::Kind::Grammar;
    spec.text = string_value(*v, g + "grammar");
    set(std::move(spec), g + "grammar");
  }
  if (!prefix.empty()) {
    if (const json* v = field(o, "json_object")) {
      if (!v->is_boolean()) reject(name("json_object"), "'{}' must be a boolean", name("json_object"));
      if (v->get<bool>()) set(json_object_spec(), name("json_object"));
    }
    for (const char* unsupported : {"structural_tag"})
      if (field(o, unsupported)) reject(name(unsupported), "'{}' is not supported", name(unsupported));
  }
  if (const json* ws = field(o, (prefix.empty() ? "guided_whitespace_pattern" : "whitespace_pattern"))) {
    const std::string param = g + "whitespace_pattern";
    if (!out) reject(param, "'{}' needs a JSON constraint beside it", param);
    out->spec.json.whitespace_pattern = string_value(*ws, param);
  }
  return out;
}

}  // namespace

std::optional<RequestConstraint> parse_constraint_fields(const json& body) {
  std::optional<RequestConstraint> found;
  auto take = [&](std::optional<RequestConstraint> c) {
    if (!c) return;
    if (found)
      reject(c->param, "structured output is requested twice ('{}' and '{}'); give one", found->param, c->param);
    found = std::move(c);
  };
  take(from_response_format(body));
  if (const json* so = field(body, "structured_outputs")) {
    if (!so->is_object()) reject(std::string("structured_outputs"), "'structured_outputs' must be an object");
    take(from_guided(*so, "structured_outputs."));
  }
  take(from_guided(body, ""));
  return found;
}

}  // namespace dcu::server
