// The `is` tests of jinja2 (tests.py).
#include <cmath>
#include <unordered_set>

#include "text/jinja/builtins.h"
#include "text/jinja/call_args.h"
#include "text/jinja/error.h"
#include "text/jinja/string_ops.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

const std::unordered_set<std::string> kTests = {
    "odd",     "even",   "divisibleby", "defined",  "undefined", "filter", "test", "none", "boolean", "false", "true",
    "integer", "float",  "lower",       "upper",    "string",    "mapping", "number", "sequence", "iterable", "callable",
    "sameas",  "escaped", "in",         "==",       "eq",        "equalto", "!=",   "ne",   ">",       "ge",    "gt",
    "greaterthan", ">=", "<",           "le",       "lt",        "lessthan", "<="};

Value modulo(const Value& v, const Value& by) {
  if (v.is_undefined()) undefined_error(v);
  if (!v.is_number() || !by.is_number()) template_fail("unsupported operand type(s) for %: '{}' and '{}'", v.type_name(), by.type_name());
  if (by.as_double() == 0) template_fail("integer division or modulo by zero");
  if (v.type == Type::Float || by.type == Type::Float) {
    double m = std::fmod(v.as_double(), by.as_double());
    if (m != 0 && ((m < 0) != (by.as_double() < 0))) m += by.as_double();
    return Value::from_float(m);
  }
  int64_t m = v.as_int() % by.as_int();
  if (m != 0 && ((m < 0) != (by.as_int() < 0))) m += by.as_int();
  return Value::from_int(m);
}

}  // namespace

bool is_known_test(const std::string& name) { return kTests.count(name) > 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  const char* fn = name.c_str();
  auto other = [&]() -> Value {
    BoundArgs a(fn, args, {"other"});
    return a.required(0, fn);
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.type == Type::String;
  if (name == "mapping") return v.type == Type::Dict;
  if (name == "sequence") return v.type == Type::String || v.is_sequence_type() || v.type == Type::Dict || v.is_undefined();
  if (name == "iterable")
    return v.type == Type::String || v.is_sequence_type() || v.type == Type::Generator || v.type == Type::View ||
           v.type == Type::Dict || v.is_undefined();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.type == Type::Int;
  if (name == "float") return v.type == Type::Float;
  if (name == "boolean") return v.type == Type::Bool;
  if (name == "true") return v.type == Type::Bool && v.boolean;
  if (name == "false") return v.type == Type::Bool && !v.boolean;
  if (name == "callable") return v.type == Type::Function;
  if (name == "escaped") return false;
  if (name == "lower") return py_is_cased_as(v.str(), true);
  if (name == "upper") return py_is_cased_as(v.str(), false);
  if (name == "odd") return modulo(v, Value::from_int(2)).as_double() == 1;
  if (name == "even") return modulo(v, Value::from_int(2)).as_double() == 0;
  if (name == "divisibleby") return modulo(v, other()).as_double() == 0;
  if (name == "filter") return v.type == Type::String && is_known_filter(v.text);
  if (name == "test") return v.type == Type::String && is_known_test(v.text);
  if (name == "==" || name == "eq" || name == "equalto") return equals(v, other());
  if (name == "!=" || name == "ne") return !equals(v, other());
  if (name == "<" || name == "lt" || name == "lessthan") return less_than(v, other());
  if (name == "<=" || name == "le") return !less_than(other(), v);
  if (name == ">" || name == "gt" || name == "greaterthan") return less_than(other(), v);
  if (name == ">=" || name == "ge") return !less_than(v, other());
  if (name == "in") return contains(other(), v);
  if (name == "sameas") {
    const Value& o = other();
    if (v.type != o.type) return false;
    if (v.is_sequence_type()) return v.items == o.items;
    if (v.type == Type::Dict || v.type == Type::Namespace) return v.dict == o.dict;
    return equals(v, o);
  }
  (void)in;
  template_fail("No test named '{}'.", name);
}

}  // namespace dcu::jinja
