#pragma once
// Transport-neutral request/response values shared by the router, the handlers and http_server.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/errors.h"

namespace dcu::server {

struct HttpRequest {
  std::string method;          // "GET", "POST", ...
  std::string path;            // target without the query string
  std::string authorization;   // the Authorization header
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

HttpResponse json_response(const nlohmann::ordered_json& body, int status = 200);
HttpResponse error_response(const ApiError& error);

}  // namespace dcu::server
