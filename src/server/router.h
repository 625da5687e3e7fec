#pragma once
// Maps a request to an endpoint: authentication, method checks, parsing, and either a finished response
// or a generation job for the transport to run. Never throws.

#include <memory>
#include <variant>

#include "server/generation_job.h"
#include "server/http_types.h"
#include "server/server_context.h"

namespace dcu::server {

class Router {
 public:
  explicit Router(const ServerContext& ctx) : ctx_(ctx) {}
  using Result = std::variant<HttpResponse, std::shared_ptr<GenerationJob>>;
  Result handle(const HttpRequest& request) const;

 private:
  Result dispatch(const HttpRequest& request) const;
  void check_model(const std::optional<std::string>& model) const;
  HttpResponse models() const;
  HttpResponse model(const std::string& id) const;  // GET /v1/models/{id}
  nlohmann::ordered_json model_card(const std::string& name) const;
  HttpResponse tokenize(const HttpRequest& request) const;
  HttpResponse detokenize(const HttpRequest& request) const;

  const ServerContext& ctx_;
};

}  // namespace dcu::server
