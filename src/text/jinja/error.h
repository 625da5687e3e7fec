#pragma once
// Template errors. Thrown without a line deep in the interpreter; the innermost node being evaluated
// adds its template line on the way out, so the final message always names the line.

#include <string>

#include "core/error.h"

namespace dcu::jinja {

class TemplateError : public dcu::Error {
 public:
  TemplateError(int line, std::string message)
      : dcu::Error(line > 0 ? fmt::format("chat template error at line {}: {}", line, message) : message),
        line_(line),
        message_(std::move(message)) {}
  int line() const { return line_; }
  const std::string& message() const { return message_; }

 private:
  int line_;
  std::string message_;
};

template <typename... Args>
[[noreturn]] void template_fail(fmt::format_string<Args...> format, Args&&... args) {
  throw TemplateError(0, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dcu::jinja
