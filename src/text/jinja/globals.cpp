// Global functions: jinja2's range, dict and namespace, and transformers' raise_exception and
// strftime_now.
#include <ctime>

#include "text/jinja/builtins.h"
#include "text/jinja/call_args.h"
#include "text/jinja/error.h"

namespace dcu::jinja {
namespace {

int64_t int_arg(const Value& v, const char* fn) {
  if (!v.is_integral()) template_fail("{}() argument must be an integer, not {}", fn, v.type_name());
  return v.as_int();
}

}  // namespace

Value lookup_global(const std::string& name) {
  static const Value range = Value::func("range", [](Interpreter&, CallArgs& args) {
    BoundArgs a("range", args, {"a", "b", "step"});
    int64_t start = 0, stop, step = int_arg(a.get(2, Value::from_int(1)), "range");
    if (a.has(1)) {
      start = int_arg(a.required(0, "range"), "range");
      stop = int_arg(a.get(1, Value()), "range");
    } else {
      stop = int_arg(a.required(0, "range"), "range");
    }
    if (step == 0) template_fail("range() arg 3 must not be zero");
    __int128 lo = start, hi = stop, st = step;  // 128-bit: the span of two int64 values can overflow
    __int128 n = st > 0 ? (hi > lo ? (hi - lo + st - 1) / st : 0) : (lo > hi ? (lo - hi - st - 1) / -st : 0);
    if (n > 100000) template_fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> items;
    for (int64_t i = 0; i < int64_t(n); ++i) items.push_back(Value::from_int(start + i * step));
    return Value::list(std::move(items));
  });
  static const auto make_mapping = [](Value target, CallArgs& args, const char* fn) {
    if (args.positional.size() > 1) template_fail("{} expected at most 1 argument, got {}", fn, args.positional.size());
    if (!args.positional.empty()) {
      const Value& init = args.positional[0];
      if (init.type != Type::Dict) template_fail("{}() argument must be a mapping", fn);
      for (const auto& [k, v] : init.dict->entries) target.dict->set(k, v);
    }
    for (const auto& [k, v] : args.keyword) target.dict->set(Value::from_string(k), v);
    return target;
  };
  static const Value dict = Value::func("dict", [](Interpreter&, CallArgs& args) { return make_mapping(Value::new_dict(), args, "dict"); });
  static const Value ns = Value::func("namespace", [](Interpreter&, CallArgs& args) {
    return make_mapping(Value::new_namespace("Namespace"), args, "namespace");
  });
  static const Value raise = Value::func("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
    BoundArgs a("raise_exception", args, {"message"});
    throw TemplateError(0, a.required(0, "raise_exception").str());
  });
  static const Value strftime_now = Value::func("strftime_now", [](Interpreter&, CallArgs& args) {
    BoundArgs a("strftime_now", args, {"format"});
    Value format_value = a.required(0, "strftime_now");
    if (format_value.type != Type::String) template_fail("strftime_now() argument must be str, not {}", format_value.type_name());
    const std::string& format = format_value.text;
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::string buf(format.size() * 4 + 64, '\0');
    size_t n = format.empty() ? 0 : std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    buf.resize(n);
    return Value::from_string(buf);
  });
  if (name == "range") return range;
  if (name == "dict") return dict;
  if (name == "namespace") return ns;
  if (name == "raise_exception") return raise;
  if (name == "strftime_now") return strftime_now;
  return Value::undefined();
}

}  // namespace dcu::jinja
