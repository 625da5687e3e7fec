#pragma once
// The value type of the Jinja interpreter: Python's object model reduced to what chat templates use.
// Lists, dicts and namespaces have reference semantics (shared_ptr), as in Python.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::jinja {

// Generator: what jinja2's map/select/unique/... filters return. Iterable (and, unlike Python's,
// re-iterable), always truthy, without len() or indexing.
// View: dict.keys()/values()/items(); sized and truthy when non-empty, not indexable; `text`
// holds its Python type name ("dict_keys").
enum class Type : uint8_t { Undefined, None, Bool, Int, Float, String, List, Tuple, Generator, View, Dict, Namespace, Function };

struct Value;
struct Dict;
class Interpreter;

// Positional and keyword arguments of a call, as Python passes them.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// A callable: a global (range, namespace, ...), a macro, a bound method or `caller`.
struct Function {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> call;
};

struct Value {
  Type type = Type::Undefined;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;  // String; for Undefined, the error a use of it raises ("'x' is undefined")
  std::shared_ptr<std::vector<Value>> items;  // List, Tuple, Generator, View
  std::shared_ptr<Dict> dict;                 // Dict, Namespace (a namespace or a loop object)
  std::shared_ptr<Function> function;

  static Value undefined(std::string name = {});
  static Value none();
  static Value from_bool(bool b);
  static Value from_int(int64_t i);
  static Value from_float(double f);
  static Value from_string(std::string s);
  static Value list(std::vector<Value> v = {});
  static Value tuple(std::vector<Value> v);
  static Value generator(std::vector<Value> v);
  static Value view(std::string type_name, std::vector<Value> v);
  static Value new_dict();
  static Value new_namespace(std::string class_name);
  static Value func(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);
  static Value from_json(const nlohmann::ordered_json& j);

  bool is_undefined() const { return type == Type::Undefined; }
  bool is_none() const { return type == Type::None; }
  bool is_string() const { return type == Type::String; }
  bool is_number() const { return type == Type::Int || type == Type::Float || type == Type::Bool; }
  bool is_integral() const { return type == Type::Int || type == Type::Bool; }
  bool is_sequence_type() const { return type == Type::List || type == Type::Tuple; }
  int64_t as_int() const { return type == Type::Bool ? int64_t(boolean) : integer; }
  double as_double() const { return type == Type::Float ? real : double(as_int()); }

  bool truthy() const;
  // Python str() and repr().
  std::string str() const;
  std::string repr() const;
  // The Python type name, for error messages ("list", "NoneType").
  std::string type_name() const;
};

// A Python dict that keeps insertion order; also the attribute table of namespaces and loop objects.
struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  std::string class_name;  // for namespaces: "Namespace" or "LoopContext"

  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value value);
};

bool equals(const Value& a, const Value& b);
// Python's < ; fails with a TypeError-like message on unorderable types.
bool less_than(const Value& a, const Value& b);
// Python's `in`.
bool contains(const Value& container, const Value& item);
// Python iteration: list/tuple items, dict keys, string characters; Undefined yields nothing.
std::vector<Value> iterate(const Value& v);
// Python len(); fails on values without a length.
int64_t length(const Value& v);
// Python repr() of a float (shortest round-trip, exponent outside [1e-4, 1e16)).
std::string float_repr(double d);

}  // namespace dcu::jinja

namespace dcu::jinja {
// Raises the error an Undefined value carries (jinja2's UndefinedError).
[[noreturn]] void undefined_error(const Value& undefined);
}  // namespace dcu::jinja
