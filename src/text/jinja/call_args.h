#pragma once
// Binds Python-style call arguments to a builtin's named parameters.

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/error.h"
#include "text/jinja/value.h"

namespace dcu::jinja {

class BoundArgs {
 public:
  BoundArgs(const char* function, const CallArgs& args, std::initializer_list<const char*> names) : values_(names.size()) {
    std::vector<const char*> params(names);
    if (args.positional.size() > params.size())
      template_fail("{}() takes at most {} argument(s) ({} given)", function, params.size(), args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
    for (const auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < params.size() && key != params[i]) ++i;
      if (i == params.size()) template_fail("{}() got an unexpected keyword argument '{}'", function, key);
      if (values_[i]) template_fail("{}() got multiple values for argument '{}'", function, key);
      values_[i] = value;
    }
  }
  bool has(size_t i) const { return values_[i].has_value(); }
  Value get(size_t i, const Value& fallback) const { return values_[i] ? *values_[i] : fallback; }
  const Value& required(size_t i, const char* function) const {
    if (!values_[i]) template_fail("{}() missing a required argument", function);
    return *values_[i];
  }

 private:
  std::vector<std::optional<Value>> values_;
};

}  // namespace dcu::jinja
