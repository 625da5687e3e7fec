// The filters of jinja2 (filters.py) that chat templates use, plus transformers' tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/call_args.h"
#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/json_dumps.h"
#include "text/jinja/string_ops.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

// Every filter jinja2 3.1 defines; the ones not implemented fail when used, not when parsed.
const std::unordered_set<std::string> kKnownFilters = {
    "abs",    "attr",     "batch",  "capitalize", "center",   "count",  "d",        "default",  "dictsort",  "e",
    "escape", "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int",     "join",
    "last",   "length",   "list",   "lower",      "items",    "map",    "min",      "max",      "pprint",    "random",
    "reject", "rejectattr", "replace", "reverse", "round",    "safe",   "select",   "selectattr", "slice",   "sort",
    "string", "striptags", "sum",   "title",      "trim",     "truncate", "unique", "upper",    "urlencode", "urlize",
    "wordcount", "wordwrap", "xmlattr", "tojson"};

int64_t int_param(const Value& v, const char* fn) {
  if (!v.is_integral()) template_fail("{}: expected an integer, got {}", fn, v.type_name());
  return v.as_int();
}

Value ignore_case(const Value& v) { return v.type == Type::String ? Value::from_string(py_lower(v.text)) : v; }

// make_attrgetter: "a.b.0" looks up a, then b, then item 0, each with jinja's getitem.
Value get_attribute_path(Interpreter& in, Value item, const Value& attribute, const Value* fallback) {
  std::vector<Value> parts;
  if (attribute.type == Type::String) {
    for (auto& p : py_split(attribute.text, std::string("."), -1, false)) {
      bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
      parts.push_back(digits ? Value::from_int(std::stoll(p.substr(0, 18))) : Value::from_string(p));
    }
  } else {
    parts.push_back(attribute);
  }
  for (const auto& part : parts) {
    item = in.getitem(item, part);
    if (fallback && item.is_undefined()) item = *fallback;
  }
  return item;
}

std::vector<Value> attribute_list(const Value& attribute) {  // "age,name"
  if (attribute.type != Type::String) return {attribute};
  std::vector<Value> out;
  for (auto& p : py_split(attribute.text, std::string(","), -1, false)) out.push_back(Value::from_string(p));
  return out;
}

std::vector<Value> stable_sorted(std::vector<Value> items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Python sorts with reverse=True by keeping equal elements in their original order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? less_than(keys[b], keys[a]) : less_than(keys[a], keys[b]);
  });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(std::move(items[i]));
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// Python's round(x, n): correctly rounded, ties to even on the exact binary value.
Value py_round(const Value& v, int64_t precision) {
  if (v.is_integral()) {
    if (precision >= 0) return Value::from_int(v.as_int());
    template_fail("round with negative precision on integers is not supported");
  }
  double d = v.as_double();
  if (!std::isfinite(d) || precision > 300) return v;
  if (precision < -300) return Value::from_float(std::copysign(0.0, d));
  if (precision >= 0) {
    char buf[700];  // 309 integer digits + 300 decimals at most
    std::snprintf(buf, sizeof buf, "%.*f", int(precision), d);
    return Value::from_float(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, double(-precision));
  double q = d / scale, r = std::nearbyint(q);
  return Value::from_float(r * scale);
}

// Python's int(str, base) for base 10 and float(str); nullopt when the text is not a number.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && s[i - 1] != '_' && s[i - 1] != '-' && s[i - 1] != '+') continue;
    digits.push_back(s[i]);
  }
  if (digits.empty()) return std::nullopt;
  size_t start = (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
  if (start == digits.size()) return std::nullopt;
  if (digits.size() > start + 2 && digits[start] == '0') {  // 0x / 0o / 0b prefixes, allowed when they match the base
    char p = char(digits[start + 1] | 0x20);
    int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base && (base == prefix_base || base == 0)) {
      base = prefix_base;
      digits.erase(start, 2);
    }
  }
  if (base == 0) base = 10;
  for (size_t i = start; i < digits.size(); ++i) {
    char c = char(digits[i] | 0x20);
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
  }
  errno = 0;
  long long v = std::strtoll(digits.c_str(), nullptr, base);
  if (errno == ERANGE) template_fail("integer too large");
  return v;
}

std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  std::string lower = py_lower(s);
  std::string body = (lower[0] == '-' || lower[0] == '+') ? lower.substr(1) : lower;
  double sign = lower[0] == '-' ? -1 : 1;
  if (body == "inf" || body == "infinity") return sign * INFINITY;
  if (body == "nan") return NAN;
  for (char c : body)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '+' || c == '-' || c == '_')) return std::nullopt;
  char* end = nullptr;
  std::string clean = s;
  std::erase(clean, '_');
  double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

Value filter_int(const Value& v, const Value& fallback, int64_t base) {
  switch (v.type) {
    case Type::Undefined:  // int(Undefined) raises rather than failing with TypeError
      undefined_error(v);
    case Type::Bool:
    case Type::Int:
      return Value::from_int(v.as_int());
    case Type::Float:
      if (!std::isfinite(v.real)) template_fail("cannot convert float infinity or NaN to integer");
      return Value::from_int(int64_t(v.real));
    case Type::String: {
      if (auto i = parse_int(v.text, int(base))) return Value::from_int(*i);
      if (auto d = parse_float(v.text)) {
        if (!std::isfinite(*d)) template_fail("cannot convert float infinity or NaN to integer");
        return Value::from_int(int64_t(*d));
      }
      return fallback;
    }
    default:
      return fallback;
  }
}

Value filter_float(const Value& v, const Value& fallback) {
  if (v.is_undefined()) undefined_error(v);
  if (v.is_number()) return Value::from_float(v.as_double());
  if (v.type == Type::String)
    if (auto d = parse_float(v.text)) return Value::from_float(*d);
  return fallback;
}

Value tojson(const Value& v, CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get(0, Value::from_bool(false)).truthy();
  Value indent = a.get(1, Value::none());
  if (indent.type == Type::String) o.indent = indent.text;
  else if (indent.is_integral()) o.indent = std::string(size_t(std::clamp<int64_t>(indent.as_int(), 0, 1000)), ' ');
  else if (!indent.is_none()) template_fail("tojson: indent must be an integer or a string");
  o.item_separator = o.indent ? "," : ", ";
  Value separators = a.get(2, Value::none());
  if (!separators.is_none()) {
    if (!separators.is_sequence_type() || separators.items->size() != 2 || (*separators.items)[0].type != Type::String ||
        (*separators.items)[1].type != Type::String)
      template_fail("tojson: separators must be a pair of strings");
    o.item_separator = (*separators.items)[0].text;
    o.key_separator = (*separators.items)[1].text;
  }
  o.sort_keys = a.get(3, Value::from_bool(false)).truthy();
  return Value::from_string(json_dumps(v, o));
}

// map / select / reject / selectattr / rejectattr
Value filter_map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::generator({});  // jinja2 checks its arguments only when there are items
  if (args.positional.empty()) {
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [k, val] : args.keyword) {
      if (k == "attribute") attribute = &val;
      else if (k == "default") fallback = &val;
      else template_fail("Unexpected keyword argument '{}'", k);
    }
    if (!attribute) template_fail("map requires a filter argument");
    for (auto& item : iterate(v)) out.push_back(get_attribute_path(in, item, *attribute, fallback && !fallback->is_none() ? fallback : nullptr));
    return Value::generator(std::move(out));
  }
  if (args.positional[0].type != Type::String) template_fail("map: the filter name must be a string");
  std::string name = args.positional[0].text;
  if (!is_known_filter(name)) template_fail("No filter named '{}'.", name);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (auto& item : iterate(v)) {
    CallArgs copy = rest;
    out.push_back(apply_filter(in, name, item, copy));
  }
  return Value::generator(std::move(out));
}

Value filter_select(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attribute) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::generator({});
  size_t off = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) template_fail("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (args.positional.size() > off) {
    if (args.positional[off].type != Type::String) template_fail("the test name must be a string");
    test = args.positional[off].text;
    if (!is_known_test(*test)) template_fail("No test named '{}'.", *test);
    rest.positional.assign(args.positional.begin() + long(off) + 1, args.positional.end());
    rest.keyword = args.keyword;
  }
  for (auto& item : iterate(v)) {
    Value subject = by_attribute ? get_attribute_path(in, item, attribute, nullptr) : item;
    bool passed;
    if (test) {
      CallArgs copy = rest;
      passed = apply_test(in, *test, subject, copy);
    } else {
      passed = subject.truthy();
    }
    if (passed == keep) out.push_back(std::move(item));
  }
  return Value::generator(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max, const char* fn) {
  BoundArgs a(fn, args, {"case_sensitive", "attribute"});
  bool case_sensitive = a.get(0, Value::from_bool(false)).truthy();
  Value attribute = a.get(1, Value::none());
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = attribute.is_none() ? item : get_attribute_path(in, item, attribute, nullptr);
    return case_sensitive ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less_than(best_key, k) : less_than(k, best_key)) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value indent(const Value& v, CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  if (v.is_undefined()) undefined_error(v);
  if (v.type != Type::String) template_fail("unsupported operand type(s) for +=: '{}' and 'str'", v.type_name());
  Value width = a.get(0, Value::from_int(4));
  std::string pad = width.type == Type::String ? width.text : std::string(size_t(std::clamp<int64_t>(int_param(width, "indent"), 0, 100000)), ' ');
  bool first = a.get(1, Value::from_bool(false)).truthy();
  bool blank = a.get(2, Value::from_bool(false)).truthy();
  std::vector<std::string> lines = py_splitlines(v.text + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + pad : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : pad + lines[i]);
  }
  if (first) rv = pad + rv;
  return Value::from_string(rv);
}

Value truncate(const Value& v, CallArgs& args) {
  BoundArgs a("truncate", args, {"length", "killwords", "end", "leeway"});
  int64_t length = int_param(a.get(0, Value::from_int(255)), "truncate");
  bool killwords = a.get(1, Value::from_bool(false)).truthy();
  std::string end = a.get(2, Value::from_string("...")).str();
  int64_t leeway = int_param(a.get(3, Value::from_int(5)), "truncate");
  int64_t end_len = int64_t(utf8_decode(end).size());
  if (length < end_len) template_fail("expected length >= {}, got {}", end_len, length);
  if (leeway < 0) template_fail("expected leeway >= 0, got {}", leeway);
  if (jinja::length(v) - leeway <= length) return v;  // Python's len(): any sized value passes through
  if (v.type != Type::String) template_fail("truncate: expected a string, got {}", v.type_name());
  std::u32string s = utf8_decode(v.text);
  std::string head = utf8_encode(s.substr(0, size_t(length - end_len)));
  if (killwords) return Value::from_string(head + end);
  return Value::from_string(py_split(head, std::string(" "), 1, true)[0] + end);
}

}  // namespace

bool is_known_filter(const std::string& name) { return kKnownFilters.count(name) > 0; }

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  const char* fn = name.c_str();
  auto no_args = [&] { BoundArgs a(fn, args, {}); };
  if (name == "tojson") return tojson(v, args);
  if (name == "default" || name == "d") {
    BoundArgs a(fn, args, {"default_value", "boolean"});
    if (v.is_undefined() || (a.get(1, Value::from_bool(false)).truthy() && !v.truthy())) return a.get(0, Value::from_string(""));
    return v;
  }
  if (name == "length" || name == "count") {
    no_args();
    return Value::from_int(length(v));
  }
  if (name == "join") {
    BoundArgs a(fn, args, {"d", "attribute"});
    std::string sep = a.get(0, Value::from_string("")).str(), out;
    bool first = true;
    for (auto& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += (a.has(1) && !a.get(1, Value()).is_none()) ? get_attribute_path(in, item, a.get(1, Value()), nullptr).str() : item.str();
      in.check_size(out.size());
    }
    return Value::from_string(std::move(out));
  }
  if (name == "trim") {
    BoundArgs a(fn, args, {"chars"});
    Value chars = a.get(0, Value::none());
    return Value::from_string(py_strip(v.str(), chars.is_none() ? std::nullopt : std::optional<std::string>(chars.str()), true, true));
  }
  if (name == "first" || name == "last") {
    no_args();
    if (v.is_undefined()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
    if (name == "last" && v.type == Type::Generator) template_fail("'generator' object is not reversible");
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    no_args();
    return Value::list(iterate(v));
  }
  if (name == "map") return filter_map(in, v, args);
  if (name == "select" || name == "reject") return filter_select(in, v, args, name == "select", false);
  if (name == "selectattr" || name == "rejectattr") return filter_select(in, v, args, name == "selectattr", true);
  if (name == "unique") {
    BoundArgs a(fn, args, {"case_sensitive", "attribute"});
    bool case_sensitive = a.get(0, Value::from_bool(false)).truthy();
    Value attribute = a.get(1, Value::none());
    std::vector<Value> seen, out;
    for (auto& item : iterate(v)) {
      Value key = attribute.is_none() ? item : get_attribute_path(in, item, attribute, nullptr);
      if (!case_sensitive) key = ignore_case(key);
      if (key.type == Type::List || key.type == Type::Dict) template_fail("unhashable type: '{}'", key.type_name());
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
      seen.push_back(std::move(key));
      out.push_back(item);
    }
    return Value::generator(std::move(out));
  }
  if (name == "string" || name == "safe") {
    no_args();
    return Value::from_string(v.str());
  }
  if (name == "e" || name == "escape" || name == "forceescape") {
    no_args();
    return Value::from_string(html_escape(v.str()));
  }
  if (name == "int") {
    BoundArgs a(fn, args, {"default", "base"});
    return filter_int(v, a.get(0, Value::from_int(0)), int_param(a.get(1, Value::from_int(10)), fn));
  }
  if (name == "float") {
    BoundArgs a(fn, args, {"default"});
    return filter_float(v, a.get(0, Value::from_float(0.0)));
  }
  if (name == "round") {
    BoundArgs a(fn, args, {"precision", "method"});
    int64_t precision = int_param(a.get(0, Value::from_int(0)), fn);
    std::string method = a.get(1, Value::from_string("common")).str();
    if (v.is_undefined()) undefined_error(v);
    if (!v.is_number()) template_fail("type {} doesn't define __round__ method", v.type_name());
    if (method == "common") return py_round(v, precision);
    if (method != "ceil" && method != "floor") template_fail("method must be common, ceil or floor");
    double scale = std::pow(10.0, double(precision));
    double x = v.as_double() * scale;
    return Value::from_float((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (name == "abs") {
    no_args();
    if (v.is_undefined()) undefined_error(v);
    if (v.type == Type::Float) return Value::from_float(std::fabs(v.real));
    if (v.is_integral()) {
      if (v.as_int() == INT64_MIN) template_fail("integer overflow");
      return Value::from_int(std::llabs(v.as_int()));
    }
    template_fail("bad operand type for abs(): '{}'", v.type_name());
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title" || name == "wordcount") {
    no_args();
    std::string s = v.str();
    if (name == "upper") return Value::from_string(py_upper(s));
    if (name == "lower") return Value::from_string(py_lower(s));
    if (name == "capitalize") return Value::from_string(py_capitalize(s));
    if (name == "title") return Value::from_string(jinja_title(s));
    return Value::from_int(word_count(s));
  }
  if (name == "replace") {
    BoundArgs a(fn, args, {"old", "new", "count"});
    Value count = a.get(2, Value::none());
    return Value::from_string(py_replace(v.str(), a.required(0, fn).str(), a.required(1, fn).str(), count.is_none() ? -1 : int_param(count, fn)));
  }
  if (name == "center") {
    BoundArgs a(fn, args, {"width"});
    return Value::from_string(py_center(v.str(), std::min<int64_t>(int_param(a.get(0, Value::from_int(80)), fn), 1 << 20)));
  }
  if (name == "indent") return indent(v, args);
  if (name == "truncate") return truncate(v, args);
  if (name == "items") {
    no_args();
    if (v.is_undefined()) return Value::generator({});
    if (v.type != Type::Dict) template_fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict->entries) out.push_back(Value::tuple({k, val}));
    return Value::generator(std::move(out));
  }
  if (name == "dictsort") {
    BoundArgs a(fn, args, {"case_sensitive", "by", "reverse"});
    if (v.type != Type::Dict) template_fail("'{}' object has no attribute 'items'", v.type_name());
    bool case_sensitive = a.get(0, Value::from_bool(false)).truthy();
    std::string by = a.get(1, Value::from_string("key")).str();
    if (by != "key" && by != "value") template_fail("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> items, keys;
    for (const auto& [k, val] : v.dict->entries) {
      items.push_back(Value::tuple({k, val}));
      const Value& key = by == "key" ? k : val;
      keys.push_back(case_sensitive ? key : ignore_case(key));
    }
    return Value::list(stable_sorted(std::move(items), keys, a.get(2, Value::from_bool(false)).truthy()));
  }
  if (name == "reverse") {
    no_args();
    if (v.type == Type::String) {
      std::u32string s = utf8_decode(v.text);
      std::reverse(s.begin(), s.end());
      return Value::from_string(utf8_encode(s));
    }
    // reversed() of a list is an iterator; a generator is listed and reversed into a list.
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return v.type == Type::Generator ? Value::list(std::move(items)) : Value::generator(std::move(items));
  }
  if (name == "sort") {
    BoundArgs a(fn, args, {"reverse", "case_sensitive", "attribute"});
    bool reverse = a.get(0, Value::from_bool(false)).truthy();
    bool case_sensitive = a.get(1, Value::from_bool(false)).truthy();
    Value attribute = a.get(2, Value::none());
    std::vector<Value> items = iterate(v), keys;
    for (const auto& item : items) {
      if (attribute.is_none()) {
        keys.push_back(case_sensitive ? item : ignore_case(item));
        continue;
      }
      std::vector<Value> parts;
      for (const auto& attr : attribute_list(attribute)) {
        Value k = get_attribute_path(in, item, attr, nullptr);
        parts.push_back(case_sensitive ? k : ignore_case(k));
      }
      keys.push_back(parts.size() == 1 ? parts[0] : Value::list(std::move(parts)));
    }
    return Value::list(stable_sorted(std::move(items), keys, reverse));
  }
  if (name == "sum") {
    BoundArgs a(fn, args, {"attribute", "start"});
    Value total = a.get(1, Value::from_int(0));
    Value attribute = a.get(0, Value::none());
    if (total.type == Type::String) template_fail("sum() can't sum strings [use ''.join(seq) instead]");
    for (auto& item : iterate(v)) {
      Value x = attribute.is_none() ? item : get_attribute_path(in, item, attribute, nullptr);
      if (total.is_number() && x.is_number()) {
        total = (total.type == Type::Float || x.type == Type::Float) ? Value::from_float(total.as_double() + x.as_double())
                                                                       : Value::from_int(total.as_int() + x.as_int());
      } else if (total.is_sequence_type() && total.type == x.type) {
        std::vector<Value> joined = *total.items;
        joined.insert(joined.end(), x.items->begin(), x.items->end());
        Value list = Value::list(std::move(joined));
        list.type = total.type;
        total = std::move(list);
      } else {
        if (x.is_undefined()) undefined_error(x);
        template_fail("unsupported operand type(s) for +: '{}' and '{}'", total.type_name(), x.type_name());
      }
    }
    return total;
  }
  if (name == "min") return min_max(in, v, args, false, fn);
  if (name == "max") return min_max(in, v, args, true, fn);
  if (name == "batch") {
    BoundArgs a(fn, args, {"linecount", "fill_with"});
    int64_t n = int_param(a.required(0, fn), fn);
    if (n <= 0) template_fail("batch: linecount must be positive");
    Value fill = a.get(1, Value::none());
    std::vector<Value> out, tmp;
    for (auto& item : iterate(v)) {
      if (int64_t(tmp.size()) == n) {
        out.push_back(Value::list(std::move(tmp)));
        tmp.clear();
      }
      tmp.push_back(std::move(item));
    }
    if (!tmp.empty()) {
      if (!fill.is_none())
        while (int64_t(tmp.size()) < n) tmp.push_back(fill);
      out.push_back(Value::list(std::move(tmp)));
    }
    return Value::generator(std::move(out));
  }
  if (name == "attr") {
    BoundArgs a(fn, args, {"name"});
    std::string attr = a.required(0, fn).str();
    if (v.type == Type::Namespace) {
      if (const Value* x = v.dict->find(attr)) return *x;
      return Value::undefined(fmt::format("'{}' has no attribute '{}'", v.repr(), attr));
    }
    Value m = lookup_method(v, attr);
    if (!m.is_undefined() || !m.text.empty()) return m;
    return Value::undefined(fmt::format("'{} object' has no attribute '{}'", v.type_name(), attr));
  }
  template_fail("the '{}' filter is not supported", name);
}

}  // namespace dcu::jinja
