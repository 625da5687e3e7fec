#include "structured/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "structured/char_encoding.h"
#include "structured/grammar_error.h"
#include "structured/json_formats.h"
#include "structured/number_ranges.h"
#include "structured/regex_parser.h"
#include "structured/schema_merge.h"

namespace dcu::structured {
namespace {

constexpr int kMaxDepth = 200;  // schema nesting and $ref chains the converter follows

std::string dump(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string child(const std::string& path, const std::string& key) { return path + "/" + key; }

// A non-negative whole number keyword, or nullopt when absent.
std::optional<int> count_keyword(const ojson& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::nullopt;
  const ojson& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()))
    grammar_error("'{}' at {} must be a non-negative whole number", key, path);
  if (v.get<double>() > 1e6) grammar_error("'{}' at {} is larger than supported (1000000)", key, path);
  return int(v.get<double>());
}

bool is_type(const ojson& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

std::vector<std::string> types_of(const ojson& s, const std::string& path) {
  static const char* kTypes[] = {"null", "boolean", "integer", "number", "string", "array", "object"};
  auto known = [&](const std::string& t) {
    for (const char* k : kTypes)
      if (t == k) return true;
    grammar_error("unknown type '{}' at {}", t, path);
  };
  std::vector<std::string> out;
  if (s.contains("type")) {
    const ojson& t = s["type"];
    if (t.is_string() && known(t.get<std::string>())) out.push_back(t.get<std::string>());
    else if (t.is_array())
      for (const auto& x : t) {
        if (!x.is_string()) grammar_error("'type' at {} must be a string or a list of strings", path);
        if (known(x.get<std::string>())) out.push_back(x.get<std::string>());
      }
    else grammar_error("'type' at {} must be a string or a list of strings", path);
    return out;
  }
  // No type: the keywords say which kind of value they describe.
  auto any_of = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (s.contains(k)) return true;
    return false;
  };
  if (any_of({"properties", "required", "additionalProperties", "minProperties", "maxProperties", "unevaluatedProperties"}))
    out.push_back("object");
  if (any_of({"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"})) out.push_back("array");
  if (any_of({"pattern", "minLength", "maxLength", "format"})) out.push_back("string");
  if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) out.push_back("number");
  return out;
}

}  // namespace

JsonSchemaConverter::JsonSchemaConverter(Grammar& g, const ojson& root, const JsonGrammarOptions& options,
                                         std::string rule_prefix)
    : g_(g), root_(root), options_(options), prefix_(std::move(rule_prefix)) {}

int JsonSchemaConverter::new_rule(const std::string& what) {
  return g_.add_rule(prefix_ + what + "_" + std::to_string(g_.rule_count()));
}

int JsonSchemaConverter::whitespace() {
  if (whitespace_rule_ < 0) {
    whitespace_rule_ = new_rule("ws");
    const int body = options_.whitespace_pattern
                         ? parse_regex(g_, *options_.whitespace_pattern, CharEncoding::Raw, RegexMatch::Whole)
                         : g_.repeat(g_.chars({{' ', ' '}, {'\n', '\n'}, {'\t', '\t'}}), 0, options_.max_whitespace);
    g_.set_body(whitespace_rule_, body);
  }
  return g_.ref(whitespace_rule_);
}

int JsonSchemaConverter::plain_string() {
  return g_.seq({g_.literal("\""), g_.star(json_string_char(g_)), g_.literal("\"")});
}

// open ws content ws close, or open ws close where it may be empty: an empty object or array has one
// gap of whitespace, not two. `content` must not match the empty string.
int JsonSchemaConverter::bracketed(const char* open, int content, bool may_be_empty, const char* close) {
  const int inside = g_.seq({content, whitespace()});
  return g_.seq({g_.literal(open), whitespace(), may_be_empty ? g_.optional(inside) : inside, g_.literal(close)});
}

// Any JSON value: the recursive rules value / object / array.
int JsonSchemaConverter::any_value() {
  if (value_rule_ < 0) {
    value_rule_ = new_rule("any_value");
    const int object = new_rule("any_object"), array = new_rule("any_array");
    auto ws = [&] { return whitespace(); };
    auto member = [&] { return g_.seq({plain_string(), ws(), g_.literal(":"), ws(), g_.ref(value_rule_)}); };
    auto comma = [&] { return g_.seq({ws(), g_.literal(","), ws()}); };
    g_.set_body(object, bracketed("{", g_.seq({member(), g_.star(g_.seq({comma(), member()}))}), true, "}"));
    g_.set_body(array, bracketed("[", g_.seq({g_.ref(value_rule_), g_.star(g_.seq({comma(), g_.ref(value_rule_)}))}),
                                 true, "]"));
    ojson number_schema = {{"type", "number"}};
    g_.set_body(value_rule_, g_.alt({g_.ref(object), g_.ref(array), plain_string(), number_value(number_schema, false, "#"),
                                     g_.literal("true"), g_.literal("false"), g_.literal("null")}));
  }
  return g_.ref(value_rule_);
}

const ojson& JsonSchemaConverter::resolve_pointer(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    grammar_error("'$ref' '{}' at {}: only local references (#/...) are supported", ref, path);
  const ojson* at = &root_;
  size_t pos = 1;
  if (ref.size() > 1 && ref[1] != '/') grammar_error("'$ref' '{}' at {}: anchors are not supported", ref, path);
  while (pos < ref.size()) {
    size_t next = ref.find('/', pos + 1);
    std::string token = ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    std::string key;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) key += token[++i] == '1' ? '/' : '~';
      else if (token[i] == '%' && i + 2 < token.size()) key += char(std::stoi(token.substr(i + 1, 2), nullptr, 16)), i += 2;
      else key += token[i];
    }
    if (at->is_object() && at->contains(key)) at = &(*at)[key];
    else if (at->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
             std::stoul(key) < at->size())
      at = &(*at)[std::stoul(key)];
    else grammar_error("'$ref' '{}' at {} points to nothing", ref, path);
    if (next == std::string::npos) break;
    pos = next;
  }
  return *at;
}

// The schema with top-level $ref and allOf folded in (for merging, not for recursion).
ojson JsonSchemaConverter::resolved(const ojson& schema, const std::string& path, int depth) const {
  if (depth > kMaxDepth) grammar_error("'$ref' / allOf at {} nest too deeply (or refer to themselves)", path);
  if (!schema.is_object()) return schema;
  ojson out = schema;
  if (out.contains("$ref")) {
    const std::string ref = out["$ref"].get<std::string>();
    out.erase("$ref");
    out = merge_schemas(resolved(resolve_pointer(ref, path), path, depth + 1), out, path);
  }
  if (out.contains("allOf")) {
    const ojson parts = out["allOf"];
    out.erase("allOf");
    for (const auto& part : parts) out = merge_schemas(out, resolved(part, path, depth + 1), path);
  }
  return out;
}

int JsonSchemaConverter::value(const ojson& schema, const std::string& path) {
  if (++depth_ > kMaxDepth) grammar_error("the schema nests too deeply at {}", path);
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth_};
  if (schema.is_boolean()) return schema.get<bool>() ? any_value() : g_.nothing();
  if (!schema.is_object()) grammar_error("the schema at {} must be an object or a boolean", path);
  check_keywords(schema, path);

  if (schema.contains("$ref")) {
    if (!schema["$ref"].is_string()) grammar_error("'$ref' at {} must be a string", path);
    const std::string ref = schema["$ref"].get<std::string>();
    if (has_constraints_besides(schema, {"$ref"})) return value(resolved(schema, path, 0), path);
    // One rule per target, made before its body, so recursion refers back to it.
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return g_.ref(it->second);
    const int rule = new_rule("ref");
    ref_rules_.emplace(ref, rule);
    g_.set_body(rule, value(resolve_pointer(ref, path), ref));
    return g_.ref(rule);
  }
  if (schema.contains("allOf")) {
    if (!schema["allOf"].is_array()) grammar_error("'allOf' at {} must be a list", path);
    return value(resolved(schema, path, 0), path);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key)) continue;
    if (schema.contains("anyOf") && schema.contains("oneOf"))
      grammar_error("'anyOf' together with 'oneOf' at {} is not supported", path);
    const ojson& branches = schema[key];
    if (!branches.is_array() || branches.empty()) grammar_error("'{}' at {} must be a non-empty list", key, path);
    ojson rest = schema;
    rest.erase(key);
    const bool merge = has_constraints_besides(rest, {});
    std::vector<int> alternatives;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string at = child(child(path, key), std::to_string(i));
      alternatives.push_back(merge ? value(merge_schemas(rest, resolved(branches[i], at, 0), at), at)
                                   : value(branches[i], at));
    }
    return g_.alt(std::move(alternatives));
  }
  if (schema.contains("const")) return literal_values(ojson::array({schema["const"]}), schema, path);
  if (schema.contains("enum")) {
    if (!schema["enum"].is_array()) grammar_error("'enum' at {} must be a list", path);
    return literal_values(schema["enum"], schema, path);
  }
  const std::vector<std::string> types = types_of(schema, path);
  if (types.empty()) return any_value();
  std::vector<int> alternatives;
  for (const auto& t : types) alternatives.push_back(typed_value(t, schema, path));
  return g_.alt(std::move(alternatives));
}

int JsonSchemaConverter::literal_values(const ojson& values, const ojson& schema, const std::string& path) {
  if (has_constraints_besides(schema, {"enum", "const", "type"}))
    for (const auto& [key, v] : schema.items())
      if (key != "enum" && key != "const" && key != "type" && !is_annotation_keyword(key))
        grammar_error("'{}' together with 'enum' or 'const' (at {}) is not supported", key, path);
  const std::vector<std::string> types = schema.contains("type") ? types_of(schema, path) : std::vector<std::string>{};
  std::vector<int> alternatives;
  for (const auto& v : values) {
    bool typed = types.empty();
    for (const auto& t : types) typed = typed || is_type(v, t);
    if (typed) alternatives.push_back(g_.literal(dump(v)));
  }
  return g_.alt(std::move(alternatives));
}

int JsonSchemaConverter::typed_value(const std::string& type, const ojson& schema, const std::string& path) {
  if (type == "null") return g_.literal("null");
  if (type == "boolean") return g_.alt({g_.literal("true"), g_.literal("false")});
  if (type == "integer") return number_value(schema, true, path);
  if (type == "number") return number_value(schema, false, path);
  if (type == "string") return string_value(schema, path);
  if (type == "array") return array_value(schema, path);
  return object_value(schema, path);
}

int JsonSchemaConverter::number_value(const ojson& schema, bool integer, const std::string& path) {
  std::optional<DecimalBound> lo, hi;
  auto bound = [&](const char* key, bool exclusive, std::optional<DecimalBound>& out, bool lower) {
    if (!schema.contains(key) || schema[key].is_boolean()) return;
    if (!schema[key].is_number()) grammar_error("'{}' at {} must be a number", key, path);
    double v = schema[key].get<double>();
    // Draft 4: exclusiveMinimum / exclusiveMaximum are flags on minimum / maximum.
    const char* flag = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    if (!exclusive && schema.contains(flag) && schema[flag].is_boolean()) exclusive = schema[flag].get<bool>();
    if (v != std::floor(v)) {
      if (!integer) grammar_error("'{}' {} at {}: only whole-number bounds are supported on numbers", key, v, path);
      v = lower ? std::ceil(v) : std::floor(v);
      exclusive = false;
    }
    if (std::fabs(v) > double(kMaxMagnitude)) v = v < 0 ? -double(kMaxMagnitude) - 1 : double(kMaxMagnitude) + 1;
    DecimalBound b{int64_t(v), exclusive};
    if (!out || (lower ? (b.value > out->value || (b.value == out->value && b.exclusive))
                       : (b.value < out->value || (b.value == out->value && b.exclusive))))
      out = b;
  };
  bound("minimum", false, lo, true);
  bound("exclusiveMinimum", true, lo, true);
  bound("maximum", false, hi, false);
  bound("exclusiveMaximum", true, hi, false);
  if (integer) {
    const int64_t a = lo ? lo->value + (lo->exclusive ? 1 : 0) : -kMaxMagnitude;
    const int64_t b = hi ? hi->value - (hi->exclusive ? 1 : 0) : kMaxMagnitude;
    return integer_range(g_, a, b);
  }
  if (lo || hi) return decimal_range(g_, lo, hi);
  const int digits = g_.chars({{'0', '9'}});
  // A sign before any whole part, 0 included: -0.5 (and -0) are numbers.
  const int whole = g_.seq({g_.optional(g_.literal("-")), integer_range(g_, 0, kMaxMagnitude)});
  const int frac = g_.seq({g_.literal("."), g_.repeat(digits, 1, kMaxFractionDigits)});
  const int exponent = g_.seq({g_.chars({{'e', 'e'}, {'E', 'E'}}), g_.optional(g_.chars({{'+', '+'}, {'-', '-'}})),
                               g_.repeat(digits, 1, 2)});
  return g_.seq({whole, g_.optional(frac), g_.optional(exponent)});
}

int JsonSchemaConverter::string_value(const ojson& schema, const std::string& path) {
  std::optional<int> content;
  if (schema.contains("pattern")) {
    if (!schema["pattern"].is_string()) grammar_error("'pattern' at {} must be a string", path);
    content = parse_regex(g_, schema["pattern"].get<std::string>(), CharEncoding::JsonString, RegexMatch::Search);
  }
  const std::string format =
      schema.contains("format") && schema["format"].is_string() ? schema["format"].get<std::string>() : "";
  if (schema.contains("format") && !(content && is_pattern_format(format))) {
    auto regex = format_regex(format);
    if (!regex) grammar_error("the string format '{}' (at {}) is not supported", format, path);
    const int f = parse_regex(g_, *regex, CharEncoding::JsonString, RegexMatch::Whole);
    content = content ? g_.intersect(*content, f) : f;
  }
  const auto min = count_keyword(schema, "minLength", path), max = count_keyword(schema, "maxLength", path);
  if (min && max && *max < *min) grammar_error("'maxLength' is below 'minLength' at {}", path);
  if (min || max) {
    const int length = g_.repeat(json_string_char(g_), min.value_or(0), max ? *max : -1);
    content = content ? g_.intersect(*content, length) : length;
  }
  if (!content) content = g_.star(json_string_char(g_));
  return g_.seq({g_.literal("\""), *content, g_.literal("\"")});
}

int JsonSchemaConverter::object_value(const ojson& schema, const std::string& path) {
  const ojson properties = schema.value("properties", ojson::object());
  if (!properties.is_object()) grammar_error("'properties' at {} must be an object", path);
  std::vector<std::string> required;
  if (schema.contains("required")) {
    if (!schema["required"].is_array()) grammar_error("'required' at {} must be a list", path);
    for (const auto& r : schema["required"]) {
      if (!r.is_string()) grammar_error("'required' at {} must list strings", path);
      if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
        required.push_back(r.get<std::string>());
    }
  }
  // The schema of properties not listed, or nullopt when none may appear.
  std::optional<ojson> additional;
  if (schema.contains("additionalProperties")) {
    if (schema["additionalProperties"] != false) additional = schema["additionalProperties"];
  } else if (schema.contains("unevaluatedProperties")) {
    if (schema["unevaluatedProperties"] != false)
      grammar_error("'unevaluatedProperties' other than false (at {}) is not supported", path);
  } else if (!options_.strict) {
    additional = ojson(true);
  }
  struct Property {
    std::string name;
    ojson schema;
    bool required;
  };
  std::vector<Property> props;
  for (const auto& [name, s] : properties.items())
    props.push_back({name, s, std::find(required.begin(), required.end(), name) != required.end()});
  for (const auto& r : required) {
    if (properties.contains(r)) continue;
    if (!additional)
      grammar_error("required property '{}' at {} is not in 'properties' and additional properties are not allowed", r, path);
    props.push_back({r, *additional, true});
  }
  size_t required_count = required.size();
  if (auto min = count_keyword(schema, "minProperties", path); min && size_t(*min) > required_count)
    grammar_error("'minProperties' {} at {} above the number of required properties is not supported", *min, path);
  if (auto max = count_keyword(schema, "maxProperties", path); max && (additional || size_t(*max) < props.size()))
    grammar_error("'maxProperties' at {} below the number of properties that may appear is not supported", path);

  auto ws = [&] { return whitespace(); };
  auto comma = [&] { return g_.seq({ws(), g_.literal(","), ws()}); };
  // Each value once, as a rule: the compiler inlines it where that copies little.
  std::vector<int> values;
  for (const auto& p : props) {
    const int rule = new_rule("property");
    g_.set_body(rule, value(p.schema, child(child(path, "properties"), p.name)));
    values.push_back(rule);
  }
  auto member = [&](size_t i) {
    return g_.seq({g_.literal(dump(ojson(props[i].name))), ws(), g_.literal(":"), ws(), g_.ref(values[i])});
  };
  // Additional members come after the listed ones, with any key the schema does not list.
  std::optional<int> extra;
  if (additional) {
    int key = plain_string();
    if (!props.empty()) {
      std::vector<int> listed;
      for (const auto& p : props) listed.push_back(g_.literal(dump(ojson(p.name))));
      key = g_.difference(key, g_.alt(std::move(listed)));
    }
    extra = g_.seq({key, ws(), g_.literal(":"), ws(), value(*additional, child(path, "additionalProperties"))});
  }
  // after[i]: the members from i on once some member was written (each after a comma), a rule each
  // so the no-member-yet chain below can share them.
  const size_t n = props.size();
  std::vector<int> after(n + 1);
  {
    int tail = extra ? g_.star(g_.seq({comma(), *extra})) : g_.empty();
    after[n] = tail;
    for (size_t i = n; i-- > 1;) {
      const int written = g_.seq({comma(), member(i)});
      const int rule = new_rule("members");
      g_.set_body(rule, g_.seq({props[i].required ? written : g_.optional(written), after[i + 1]}));
      after[i] = g_.ref(rule);
    }
  }
  // first(i): nothing written yet, at least one member from i on.
  int first = extra ? g_.seq({*extra, g_.star(g_.seq({comma(), *extra}))}) : g_.nothing();
  bool may_be_empty = true;
  for (size_t i = n; i-- > 0;) {
    const int here = g_.seq({member(i), after[i + 1]});
    first = props[i].required ? here : g_.alt({here, first});
    may_be_empty = may_be_empty && !props[i].required;
  }
  return bracketed("{", first, may_be_empty, "}");
}

int JsonSchemaConverter::array_value(const ojson& schema, const std::string& path) {
  if (schema.contains("uniqueItems") && schema["uniqueItems"] != false)
    grammar_error("'uniqueItems' (at {}) is not supported", path);
  std::vector<ojson> prefix;
  std::optional<ojson> items;  // the schema of items after the prefix, nullopt: none allowed
  const ojson* prefix_items = schema.contains("prefixItems") ? &schema["prefixItems"] : nullptr;
  if (schema.contains("items") && schema["items"].is_array()) {  // draft 4-2019 tuples
    prefix_items = &schema["items"];
    if (schema.contains("additionalItems")) {
      if (schema["additionalItems"] != false) items = schema["additionalItems"];
    } else if (!options_.strict) {
      items = ojson(true);
    }
  } else if (schema.contains("items")) {
    if (schema["items"] != false) items = schema["items"];
  } else if (!prefix_items || !options_.strict) {
    items = ojson(true);
  }
  if (prefix_items)
    for (const auto& p : *prefix_items) prefix.push_back(p);
  const int min = count_keyword(schema, "minItems", path).value_or(0);
  const auto max_opt = count_keyword(schema, "maxItems", path);
  const int max = max_opt ? *max_opt : -1;
  if (max >= 0 && max < min) grammar_error("'maxItems' is below 'minItems' at {}", path);
  const int k = int(prefix.size());

  auto ws = [&] { return whitespace(); };
  auto comma = [&] { return g_.seq({ws(), g_.literal(","), ws()}); };
  int item_rule = -1;
  if (items) {
    item_rule = new_rule("item");
    g_.set_body(item_rule, value(*items, child(path, "items")));
  }
  // The items from position j >= 1 on, j already written (each after a comma).
  std::function<int(int)> from = [&](int j) -> int {
    if (max >= 0 && j >= max) return g_.empty();
    if (j >= k) {
      if (!items) return j >= min ? g_.empty() : g_.nothing();
      return g_.repeat(g_.seq({comma(), g_.ref(item_rule)}), std::max(0, min - j), max < 0 ? -1 : max - j);
    }
    const int element = value(prefix[size_t(j)], child(child(path, "prefixItems"), std::to_string(j)));
    const int both = g_.seq({comma(), element, from(j + 1)});
    return j < min ? both : g_.optional(both);
  };
  // At least one item: the first (the prefix's, or one of `items`), then the rest.
  int some = g_.nothing();
  if (max != 0 && k > 0) {
    some = g_.seq({value(prefix[0], child(child(path, "prefixItems"), "0")), from(1)});
  } else if (max != 0 && items) {
    const int rest = g_.repeat(g_.seq({comma(), g_.ref(item_rule)}), std::max(0, min - 1), max < 0 ? -1 : max - 1);
    some = g_.seq({g_.ref(item_rule), rest});
  }
  return bracketed("[", some, min == 0, "]");
}

Grammar json_schema_grammar(const ojson& schema, const JsonGrammarOptions& options) {
  Grammar g;
  g.root = g.add_rule("root");
  JsonSchemaConverter converter(g, schema, options, "");
  const int ws = converter.whitespace();
  g.set_body(g.root, g.seq({ws, converter.value(schema, "#"), ws}));
  return g;
}

}  // namespace dcu::structured
