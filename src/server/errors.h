#pragma once
// HTTP-facing errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.

#include <optional>
#include <string>

#include <fmt/format.h>

namespace dcu::server {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::optional<std::string> param;
  std::optional<std::string> code;
  int retry_after_seconds = 0;  // > 0: sent as a Retry-After header (503)
};

// Thrown while parsing/validating a request; the router turns it into a response.
class ApiException {
 public:
  explicit ApiException(ApiError error) : error_(std::move(error)) {}
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
};

std::string error_body(const ApiError& error);  // the JSON text of the error object

ApiError invalid_request(std::string message, std::optional<std::string> param = std::nullopt);
ApiError not_found(std::string message);
ApiError unauthorized();
ApiError method_not_allowed(const std::string& method, const std::string& path);
ApiError payload_too_large(size_t limit);
ApiError header_too_large(const std::string& what);  // 431, `what` says which limit
ApiError too_many_connections(int limit);            // 503 + Retry-After, then the connection closes
ApiError service_unavailable(std::string message, int retry_after_seconds);
ApiError internal_error(std::string message);

template <typename... Args>
[[noreturn]] void reject(std::optional<std::string> param, fmt::format_string<Args...> format, Args&&... args) {
  throw ApiException(invalid_request(fmt::format(format, std::forward<Args>(args)...), std::move(param)));
}

}  // namespace dcu::server
