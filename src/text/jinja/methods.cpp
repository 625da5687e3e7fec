// Methods of str, list and dict reachable from templates (`s.strip()`, `d.items()`). The
// sandbox forbids the methods jinja2's ImmutableSandboxedEnvironment lists as mutating.
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/call_args.h"
#include "text/jinja/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/string_ops.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

std::optional<std::string> optional_string(const BoundArgs& a, size_t i, const char* fn) {
  Value v = a.get(i, Value::none());
  if (v.is_none()) return std::nullopt;
  if (v.type != Type::String) template_fail("{}() argument must be str or None, not {}", fn, v.type_name());
  return v.text;
}

const std::string& string_arg(const Value& v, const char* fn) {
  if (v.type != Type::String) template_fail("{}() argument must be str, not {}", fn, v.type_name());
  return v.text;
}

int64_t int_arg(const Value& v, const char* fn) {
  if (!v.is_integral()) template_fail("{}() argument must be an integer, not {}", fn, v.type_name());
  return v.as_int();
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::from_string(std::move(p)));
  return Value::list(std::move(items));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* fn) {
  if (affix.type == Type::Tuple) {
    for (const auto& a : *affix.items)
      if (affix_match(s, a, prefix, fn)) return true;
    return false;
  }
  const std::string& x = string_arg(affix, fn);
  if (x.size() > s.size()) return false;
  return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
}

template <typename Pred>
bool all_code_points(const std::string& s, Pred pred) {
  std::u32string cps = utf8_decode(s);
  if (cps.empty()) return false;
  for (char32_t c : cps)
    if (!pred(c)) return false;
  return true;
}

Value string_method(const std::string& s, const std::string& name, CallArgs& args) {
  const char* fn = name.c_str();
  if (name == "startswith" || name == "endswith") {
    BoundArgs a(fn, args, {"prefix"});
    return Value::from_bool(affix_match(s, a.required(0, fn), name == "startswith", fn));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(fn, args, {"sep", "maxsplit"});
    return string_list(py_split(s, optional_string(a, 0, fn), int_arg(a.get(1, Value::from_int(-1)), fn), name == "rsplit"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(fn, args, {"chars"});
    return Value::from_string(py_strip(s, optional_string(a, 0, fn), name != "rstrip", name != "lstrip"));
  }
  if (name == "replace") {
    BoundArgs a(fn, args, {"old", "new", "count"});
    return Value::from_string(py_replace(s, string_arg(a.required(0, fn), fn), string_arg(a.required(1, fn), fn),
                                         int_arg(a.get(2, Value::from_int(-1)), fn)));
  }
  if (name == "format") return Value::from_string(py_format(s, args));
  if (name == "splitlines") {
    BoundArgs a(fn, args, {});
    return string_list(py_splitlines(s));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(fn, args, {"affix"});
    const std::string& x = string_arg(a.required(0, fn), fn);
    bool prefix = name == "removeprefix";
    if (!affix_match(s, Value::from_string(x), prefix, fn)) return Value::from_string(s);
    return Value::from_string(prefix ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(fn, args, {"sep"});
    const std::string& sep = string_arg(a.required(0, fn), fn);
    if (sep.empty()) template_fail("empty separator");
    size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (f == std::string::npos) {
      Value e = Value::from_string("");
      return name == "partition" ? Value::tuple({Value::from_string(s), e, e}) : Value::tuple({e, e, Value::from_string(s)});
    }
    return Value::tuple({Value::from_string(s.substr(0, f)), Value::from_string(sep), Value::from_string(s.substr(f + sep.size()))});
  }
  if (name == "ljust" || name == "rjust" || name == "zfill") {
    BoundArgs a(fn, args, name == "zfill" ? std::initializer_list<const char*>{"width"} : std::initializer_list<const char*>{"width", "fillchar"});
    int64_t width = std::min<int64_t>(int_arg(a.required(0, fn), fn), 1 << 20);
    std::u32string cps = utf8_decode(s);
    if (width <= int64_t(cps.size())) return Value::from_string(s);
    size_t pad = size_t(width) - cps.size();
    if (name == "zfill") {
      size_t sign = !cps.empty() && (cps[0] == '-' || cps[0] == '+') ? 1 : 0;
      cps.insert(sign, pad, U'0');
      return Value::from_string(utf8_encode(cps));
    }
    std::u32string fill = utf8_decode(a.get(1, Value::from_string(" ")).str());
    if (fill.size() != 1) template_fail("The fill character must be exactly one character long");
    cps.insert(name == "ljust" ? cps.size() : 0, pad, fill[0]);
    return Value::from_string(utf8_encode(cps));
  }
  if (name == "join") {
    BoundArgs a(fn, args, {"iterable"});
    std::string out;
    bool first = true;
    for (const auto& item : iterate(a.required(0, fn))) {
      if (item.type != Type::String) template_fail("sequence item: expected str instance, {} found", item.type_name());
      if (!first) out += s;
      first = false;
      out += item.text;
    }
    return Value::from_string(std::move(out));
  }
  BoundArgs a(fn, args, name == "find" || name == "rfind" || name == "count" ? std::initializer_list<const char*>{"sub"} : std::initializer_list<const char*>{});
  if (name == "find") return Value::from_int(py_find(s, string_arg(a.required(0, fn), fn)));
  if (name == "rfind") return Value::from_int(py_find(s, string_arg(a.required(0, fn), fn), true));
  if (name == "count") return Value::from_int(py_count(s, string_arg(a.required(0, fn), fn)));
  if (name == "upper") return Value::from_string(py_upper(s));
  if (name == "lower") return Value::from_string(py_lower(s));
  if (name == "title") return Value::from_string(py_title(s));
  if (name == "capitalize") return Value::from_string(py_capitalize(s));
  if (name == "isdigit") return Value::from_bool(all_code_points(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isspace") return Value::from_bool(all_code_points(s, is_py_space));
  if (name == "isalnum") return Value::from_bool(all_code_points(s, is_alnum));
  if (name == "isalpha") return Value::from_bool(all_code_points(s, is_alpha));
  if (name == "islower" || name == "isupper") return Value::from_bool(py_is_cased_as(s, name == "islower"));
  template_fail("'str' object has no method '{}'", name);
}

const std::unordered_set<std::string> kStringMethods = {"startswith", "endswith", "split",  "rsplit", "strip",      "lstrip",
                                                        "rstrip",     "replace",  "format", "join",   "find",       "count",
                                                        "upper",      "lower",    "title",  "capitalize", "isdigit", "isspace",
                                                        "isalnum",    "islower",  "isupper", "isalpha", "splitlines",
                                                        "removeprefix", "removesuffix", "partition", "rpartition",
                                                        "ljust",      "rjust",    "zfill",  "rfind"};
// jinja2's sandbox does not list pop and clear as unsafe for lists, so they work (and mutate).
const std::unordered_set<std::string> kListMethods = {"index", "count", "copy", "pop", "clear"};
const std::unordered_set<std::string> kListMutators = {"append", "insert", "extend", "remove", "reverse", "sort"};
const std::unordered_set<std::string> kDictMethods = {"items", "keys", "values", "get", "copy"};
const std::unordered_set<std::string> kDictMutators = {"update", "pop", "popitem", "setdefault", "clear"};

Value list_method(const Value& self, const std::string& name, CallArgs& args) {
  const char* fn = name.c_str();
  if (name == "copy") {
    BoundArgs a(fn, args, {});
    Value v = Value::list(*self.items);
    v.type = self.type;
    return v;
  }
  if (name == "clear") {
    BoundArgs a(fn, args, {});
    self.items->clear();
    return Value::none();
  }
  if (name == "pop") {
    BoundArgs a(fn, args, {"index"});
    int64_t n = int64_t(self.items->size());
    int64_t i = int_arg(a.get(0, Value::from_int(-1)), fn);
    if (n == 0) template_fail("pop from empty list");
    if (i < 0) i += n;
    if (i < 0 || i >= n) template_fail("pop index out of range");
    Value v = (*self.items)[size_t(i)];
    self.items->erase(self.items->begin() + i);
    return v;
  }
  BoundArgs a(fn, args, {"value"});
  const Value& x = a.required(0, fn);
  int64_t count = 0;
  for (size_t i = 0; i < self.items->size(); ++i) {
    if (!equals((*self.items)[i], x)) continue;
    if (name == "index") return Value::from_int(int64_t(i));
    ++count;
  }
  if (name == "index") template_fail("{} is not in list", x.repr());
  return Value::from_int(count);
}

Value dict_method(const Value& self, const std::string& name, CallArgs& args) {
  const char* fn = name.c_str();
  if (name == "get") {
    BoundArgs a(fn, args, {"key", "default"});
    const Value* v = self.dict->find(a.required(0, fn));
    return v ? *v : a.get(1, Value::none());
  }
  BoundArgs a(fn, args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.dict->entries) {
    if (name == "items") out.push_back(Value::tuple({k, v}));
    else if (name == "keys") out.push_back(k);
    else if (name == "values") out.push_back(v);
  }
  if (name == "copy") {
    Value d = Value::new_dict();
    d.dict->entries = self.dict->entries;
    return d;
  }
  return Value::view("dict_" + name, std::move(out));
}

Value bind_method(const Value& self, const std::string& name, Value (*impl)(const Value&, const std::string&, CallArgs&)) {
  return Value::func(name, [self, name, impl](Interpreter&, CallArgs& args) { return impl(self, name, args); });
}

}  // namespace

Value lookup_method(const Value& self, const std::string& name) {
  switch (self.type) {
    case Type::String:
      if (!kStringMethods.count(name)) return Value::undefined();
      return bind_method(self, name, [](const Value& s, const std::string& n, CallArgs& a) { return string_method(s.text, n, a); });
    case Type::List:
    case Type::Tuple:
      if (kListMutators.count(name) && self.type == Type::List)
        return Value::undefined(fmt::format("access to attribute '{}' of 'list' object is unsafe.", name));
      if (!kListMethods.count(name) || (self.type == Type::Tuple && name != "index" && name != "count")) return Value::undefined();
      return bind_method(self, name, list_method);
    case Type::Dict:
      if (kDictMutators.count(name)) return Value::undefined(fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
      if (!kDictMethods.count(name)) return Value::undefined();
      return bind_method(self, name, dict_method);
    default:
      return Value::undefined();
  }
}

}  // namespace dcu::jinja
