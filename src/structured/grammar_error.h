#pragma once
// A schema, regex or grammar the engine cannot turn into a constraint: a user error (HTTP 400), its
// message naming what is wrong (the keyword, the construct, the limit).

#include <fmt/format.h>

#include "core/error.h"

namespace dcu::structured {

class GrammarError : public Error {
 public:
  using Error::Error;
};

template <typename... Args>
[[noreturn]] void grammar_error(fmt::format_string<Args...> format, Args&&... args) {
  throw GrammarError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dcu::structured
