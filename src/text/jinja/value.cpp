#include "text/jinja/value.h"

#include <charconv>
#include <cmath>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.text = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.type = Type::None;
  return v;
}
Value Value::from_bool(bool b) {
  Value v;
  v.type = Type::Bool;
  v.boolean = b;
  return v;
}
Value Value::from_int(int64_t i) {
  Value v;
  v.type = Type::Int;
  v.integer = i;
  return v;
}
Value Value::from_float(double f) {
  Value v;
  v.type = Type::Float;
  v.real = f;
  return v;
}
Value Value::from_string(std::string s) {
  Value v;
  v.type = Type::String;
  v.text = std::move(s);
  return v;
}
Value Value::list(std::vector<Value> items) {
  Value v;
  v.type = Type::List;
  v.items = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.type = Type::Tuple;
  return v;
}
Value Value::generator(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.type = Type::Generator;
  return v;
}
Value Value::view(std::string type_name, std::vector<Value> items) {
  Value v = list(std::move(items));
  v.type = Type::View;
  v.text = std::move(type_name);
  return v;
}
Value Value::new_dict() {
  Value v;
  v.type = Type::Dict;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::new_namespace(std::string class_name) {
  Value v;
  v.type = Type::Namespace;
  v.dict = std::make_shared<Dict>();
  v.dict->class_name = std::move(class_name);
  return v;
}
Value Value::func(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  Value v;
  v.type = Type::Function;
  v.function = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return from_bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return from_int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) return from_float(double(u));
      return from_int(int64_t(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return from_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return from_string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = new_dict();
      d.dict->entries.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.dict->entries.emplace_back(from_string(k), from_json(e));
      return d;
    }
    default:
      template_fail("unsupported JSON value in the template context");
  }
}

bool Value::truthy() const {
  switch (type) {
    case Type::Undefined:
    case Type::None:
      return false;
    case Type::Bool:
      return boolean;
    case Type::Int:
      return integer != 0;
    case Type::Float:
      return real != 0;
    case Type::String:
      return !text.empty();
    case Type::List:
    case Type::Tuple:
    case Type::View:
      return !items->empty();
    case Type::Dict:
      return !dict->entries.empty();
    default:
      return true;
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  auto e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  int decpt = exponent + 1;  // value = 0.digits * 10^decpt
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(size_t(-decpt), '0') + digits;
    } else if (size_t(decpt) >= digits.size()) {
      out += digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(1, '.').append(digits, 1);
    int x = decpt - 1;
    out += x < 0 ? "e-" : "e+";
    std::string xs = std::to_string(std::abs(x));
    if (xs.size() < 2) xs = "0" + xs;
    out += xs;
  }
  return out;
}

static std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8_decode(s)) {
    if (c == char32_t(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(char(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (!is_py_printable(c)) {
      if (c < 0x100)
        out += fmt::format("\\x{:02x}", uint32_t(c));
      else if (c < 0x10000)
        out += fmt::format("\\u{:04x}", uint32_t(c));
      else
        out += fmt::format("\\U{:08x}", uint32_t(c));
    } else {
      utf8_append(out, c);
    }
  }
  out.push_back(quote);
  return out;
}

namespace {
// Containers can hold themselves through a namespace; Python prints those as "..." where we stop.
struct ReprGuard {
  ReprGuard() {
    if (++depth > 100) template_fail("maximum recursion depth exceeded while printing a value");
  }
  ~ReprGuard() { --depth; }
  static thread_local int depth;
};
thread_local int ReprGuard::depth = 0;
}  // namespace

std::string Value::str() const {
  ReprGuard guard;
  switch (type) {
    case Type::Undefined:
      return "";
    case Type::None:
      return "None";
    case Type::Bool:
      return boolean ? "True" : "False";
    case Type::Int:
      return std::to_string(integer);
    case Type::Float:
      return float_repr(real);
    case Type::String:
      return text;
    case Type::List:
    case Type::Tuple: {
      std::string out = type == Type::List ? "[" : "(";
      for (size_t i = 0; i < items->size(); ++i) {
        if (i) out += ", ";
        out += (*items)[i].repr();
      }
      if (type == Type::Tuple && items->size() == 1) out += ",";
      out += type == Type::List ? "]" : ")";
      return out;
    }
    case Type::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Type::Namespace: {
      if (dict->class_name == "LoopContext") {
        const Value* index = dict->find(std::string("index"));
        const Value* len = dict->find(std::string("length"));
        return fmt::format("<LoopContext {}/{}>", index ? index->str() : "?", len ? len->str() : "?");
      }
      Value copy = new_dict();
      copy.dict->entries = dict->entries;
      return "<" + dict->class_name + " " + copy.str() + ">";
    }
    case Type::Function:
      return "<function " + function->name + ">";
    case Type::Generator:
      return "<generator object>";
    case Type::View: {
      Value as_list = list(*items);
      return text + "(" + as_list.str() + ")";
    }
  }
  return "";
}

std::string Value::repr() const {
  if (type == Type::String) return string_repr(text);
  if (type == Type::Undefined) return "Undefined";
  return str();
}

std::string Value::type_name() const {
  switch (type) {
    case Type::Undefined:
      return "Undefined";
    case Type::None:
      return "NoneType";
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Float:
      return "float";
    case Type::String:
      return "str";
    case Type::List:
      return "list";
    case Type::Tuple:
      return "tuple";
    case Type::Generator:
      return "generator";
    case Type::View:
      return text;
    case Type::Dict:
      return "dict";
    case Type::Namespace:
      return dict->class_name;
    case Type::Function:
      return "function";
  }
  return "object";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k.type == Type::String && k.text == key) return &v;
  return nullptr;
}

void Dict::set(const Value& key, Value value) {
  for (auto& [k, v] : entries)
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type == Type::Float || b.type == Type::Float) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::Undefined:
    case Type::None:
      return true;
    case Type::String:
      return a.text == b.text;
    case Type::List:
    case Type::Tuple: {
      if (a.items->size() != b.items->size()) return false;
      for (size_t i = 0; i < a.items->size(); ++i)
        if (!equals((*a.items)[i], (*b.items)[i])) return false;
      return true;
    }
    case Type::Dict: {
      if (a.dict->entries.size() != b.dict->entries.size()) return false;
      for (const auto& [k, v] : a.dict->entries) {
        const Value* other = b.dict->find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Type::Namespace:
      return a.dict == b.dict;
    case Type::Function:
      return a.function == b.function;
    default:
      return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type == Type::Float || b.type == Type::Float) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.type == Type::String && b.type == Type::String) return a.text < b.text;  // UTF-8 byte order == code point order
  if (a.is_sequence_type() && a.type == b.type) {
    const auto& x = *a.items;
    const auto& y = *b.items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return less_than(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined())
    undefined_error(a.is_undefined() ? a : b);
  template_fail("'<' not supported between instances of '{}' and '{}'", a.type_name(), b.type_name());
}

bool contains(const Value& container, const Value& item) {
  switch (container.type) {
    case Type::String:
      if (item.type != Type::String)
        template_fail("'in <string>' requires string as left operand, not {}", item.type_name());
      return container.text.find(item.text) != std::string::npos;
    case Type::List:
    case Type::Tuple:
    case Type::Generator:
    case Type::View:
      for (const auto& v : *container.items)
        if (equals(v, item)) return true;
      return false;
    case Type::Dict:
      if (item.type == Type::List || item.type == Type::Dict) template_fail("unhashable type: '{}'", item.type_name());
      return container.dict->find(item) != nullptr;
    case Type::Undefined:
      return false;
    default:
      template_fail("argument of type '{}' is not iterable", container.type_name());
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return {};
    case Type::List:
    case Type::Tuple:
    case Type::Generator:
    case Type::View:
      return *v.items;
    case Type::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict->entries.size());
      for (const auto& [k, _] : v.dict->entries) keys.push_back(k);
      return keys;
    }
    case Type::String: {
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.text)) chars.push_back(Value::from_string(utf8_encode(std::u32string(1, c))));
      return chars;
    }
    default:
      template_fail("'{}' object is not iterable", v.type_name());
  }
}

int64_t length(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return 0;
    case Type::String:
      return is_ascii(v.text) ? int64_t(v.text.size()) : int64_t(utf8_decode(v.text).size());
    case Type::List:
    case Type::Tuple:
    case Type::View:
      return int64_t(v.items->size());
    case Type::Dict:
      return int64_t(v.dict->entries.size());
    default:
      template_fail("object of type '{}' has no len()", v.type_name());
  }
}

}  // namespace dcu::jinja

namespace dcu::jinja {
void undefined_error(const Value& undefined) {
  template_fail("{}", undefined.text.empty() ? std::string("value is undefined") : undefined.text);
}
}  // namespace dcu::jinja
