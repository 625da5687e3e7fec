#pragma once
// Filters, tests, methods and globals available to templates.

#include <string>

#include "text/jinja/value.h"

namespace dcu::jinja {

// Whether jinja2 knows the name; the parser rejects unknown filters and tests as jinja2 does.
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

Value apply_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& value, CallArgs& args);
// Attribute lookup of a method on a str, list or dict (`s.strip`); Undefined when there is none.
Value lookup_method(const Value& self, const std::string& name);
// range, dict, namespace, raise_exception, strftime_now; Undefined for any other name.
// (jinja2's lipsum, cycler and joiner are not provided.)
Value lookup_global(const std::string& name);

}  // namespace dcu::jinja
