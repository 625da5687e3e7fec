#include "server/errors.h"

#include <nlohmann/json.hpp>

namespace dcu::server {

std::string error_body(const ApiError& error) {
  nlohmann::ordered_json e;
  e["message"] = error.message;
  e["type"] = error.type;
  e["param"] = error.param ? nlohmann::ordered_json(*error.param) : nlohmann::ordered_json(nullptr);
  e["code"] = error.code ? nlohmann::ordered_json(*error.code) : nlohmann::ordered_json(error.status);
  return nlohmann::ordered_json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::optional<std::string> param) {
  return {400, "invalid_request_error", std::move(message), std::move(param), std::nullopt, 0};
}

ApiError not_found(std::string message) { return {404, "NotFoundError", std::move(message), {}, {}, 0}; }

ApiError unauthorized() {
  return {401, "authentication_error", "Unauthorized: a valid API key is required (Authorization: Bearer <key>).",
          {}, std::string("invalid_api_key"), 0};
}

ApiError method_not_allowed(const std::string& method, const std::string& path) {
  return {405, "invalid_request_error", fmt::format("Method {} is not allowed on {}.", method, path), {}, {}, 0};
}

ApiError payload_too_large(size_t limit) {
  return {413, "invalid_request_error", fmt::format("Request body exceeds the limit of {} bytes.", limit), {}, {}, 0};
}

ApiError header_too_large(const std::string& what) {
  return {431, "invalid_request_error", fmt::format("Request header too large: {}.", what), {}, {}, 0};
}

ApiError too_many_connections(int limit) {
  return {503, "service_unavailable", fmt::format("The server has its limit of {} open connections.", limit), {}, {}, 1};
}

ApiError service_unavailable(std::string message, int retry_after_seconds) {
  return {503, "service_unavailable", std::move(message), {}, {}, retry_after_seconds};
}

ApiError internal_error(std::string message) {
  return {500, "internal_server_error", std::move(message), {}, {}, 0};
}

}  // namespace dcu::server
