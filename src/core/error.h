#pragma once
// Errors and checks. Every failure carries a message a user can act on; checks name the file and line.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dcu {

// The one exception type of the project. `what()` is a complete, user-facing sentence.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dcu

// Internal invariant: a failure here is a bug in dcuserve, not bad input.
#define DCU_CHECK(cond)                                                                         \
  do {                                                                                          \
    if (!(cond)) ::dcu::fail("internal check failed at {}:{}: {}", __FILE__, __LINE__, #cond); \
  } while (0)
