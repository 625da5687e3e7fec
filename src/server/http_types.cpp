#include "server/http_types.h"

#include "server/sse.h"

namespace dcu::server {

HttpResponse json_response(const nlohmann::ordered_json& body, int status) {
  return HttpResponse{status, "application/json", to_json_text(body), {}};
}

HttpResponse error_response(const ApiError& error) {
  HttpResponse r{error.status, "application/json", error_body(error), {}};
  if (error.retry_after_seconds > 0) r.headers.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  return r;
}

}  // namespace dcu::server
