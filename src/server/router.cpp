#include "server/router.h"

#include <cstring>
#include <ctime>

#include "core/error.h"
#include "core/log.h"
#include "server/chat_handler.h"
#include "server/completion_handler.h"
#include "server/logprobs_format.h"
#include "server/openai_schema.h"

#ifndef DCUSERVE_VERSION
#define DCUSERVE_VERSION "0.0.0"
#endif

namespace dcu::server {

using ojson = nlohmann::ordered_json;

namespace {

// Constant-time comparison so the key cannot be guessed from response times.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {
    {"/health", "GET"},       {"/version", "GET"},         {"/metrics", "GET"},
    {"/v1/models", "GET"},    {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"},
    {"/tokenize", "POST"},    {"/detokenize", "POST"},
};

}  // namespace

Router::Result Router::handle(const HttpRequest& request) const {
  try {
    return dispatch(request);
  } catch (const ApiException& e) {
    return error_response(e.error());
  } catch (const Error& e) {
    return error_response(invalid_request(e.what()));
  } catch (const std::exception& e) {
    log::error("{} {}: {}", request.method, request.path, e.what());
    return error_response(internal_error(e.what()));
  }
}

Router::Result Router::dispatch(const HttpRequest& request) const {
  const std::string& path = request.path;
  const Route* route = nullptr;
  for (const auto& r : kRoutes)
    if (path == r.path) route = &r;
  static constexpr Route kModel{"/v1/models/", "GET"};  // GET /v1/models/{id}
  const bool model_path = !route && path.rfind(kModel.path, 0) == 0 && path.size() > std::strlen(kModel.path);
  if (model_path) route = &kModel;
  if (!route) return error_response(not_found(fmt::format("Route {} not found.", path)));
  if (path.rfind("/v1/", 0) == 0 && !ctx_.config.api_key.empty() &&
      !same_secret(request.authorization, "Bearer " + ctx_.config.api_key))
    return error_response(unauthorized());
  if (request.method != route->method) {
    auto response = error_response(method_not_allowed(request.method, path));
    response.headers.emplace_back("Allow", route->method);
    return response;
  }

  if (path == "/health") return HttpResponse{200, "application/json", "", {}};
  if (path == "/version") return json_response({{"version", DCUSERVE_VERSION}});
  if (path == "/metrics")
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", ctx_.metrics.render(ctx_.engine.stats()), {}};
  if (path == "/v1/models") return models();
  if (model_path) return model(path.substr(std::strlen(kModel.path)));
  if (path == "/tokenize") return tokenize(request);
  if (path == "/detokenize") return detokenize(request);

  const auto body = parse_json_body(request.body, ctx_.config.max_json_depth);
  if (path == "/v1/completions") {
    auto parsed = parse_completion_request(body, ctx_.config.max_logprobs);
    check_model(parsed.common.model);
    return make_completion_job(ctx_, parsed);
  }
  auto parsed = parse_chat_request(body, ctx_.config.max_logprobs);
  check_model(parsed.common.model);
  return make_chat_job(ctx_, parsed);
}

void Router::check_model(const std::optional<std::string>& model) const {
  if (!model) return;
  for (const auto& name : ctx_.config.served_model_names)
    if (*model == name) return;
  throw ApiException(not_found(fmt::format("The model `{}` does not exist.", *model)));
}

nlohmann::ordered_json Router::model_card(const std::string& name) const {
  return {{"id", name}, {"object", "model"}, {"created", static_cast<int64_t>(std::time(nullptr))},
          {"owned_by", "dcuserve"}, {"root", ctx_.config.model_root}, {"parent", nullptr},
          {"max_model_len", ctx_.engine.max_model_len()}};
}

HttpResponse Router::models() const {
  ojson data = ojson::array();
  for (const auto& name : ctx_.config.served_model_names) data.push_back(model_card(name));
  return json_response({{"object", "list"}, {"data", std::move(data)}});
}

HttpResponse Router::model(const std::string& id) const {
  check_model(id);
  return json_response(model_card(id));
}

HttpResponse Router::tokenize(const HttpRequest& request) const {
  const auto parsed = parse_tokenize_request(parse_json_body(request.body, ctx_.config.max_json_depth));
  check_model(parsed.model);
  const std::string text = parsed.chat ? render_chat_prompt(ctx_, *parsed.chat) : *parsed.prompt;
  const auto ids = ctx_.text.encode(text);
  ojson r = {{"count", ids.size()}, {"max_model_len", ctx_.engine.max_model_len()}, {"tokens", ids}};
  if (parsed.return_token_strs) {
    ojson strs = ojson::array();
    for (int32_t id : ids) strs.push_back(token_string(ctx_.text, id));
    r["token_strs"] = std::move(strs);
  }
  return json_response(r);
}

HttpResponse Router::detokenize(const HttpRequest& request) const {
  const auto parsed = parse_detokenize_request(parse_json_body(request.body, ctx_.config.max_json_depth));
  check_model(parsed.model);
  for (int32_t id : parsed.tokens)
    if (id >= ctx_.text.vocab_size())
      reject(std::string("tokens"), "token id {} is out of vocabulary (size {})", id, ctx_.text.vocab_size());
  return json_response({{"prompt", ctx_.text.decode(parsed.tokens, false)}});
}

}  // namespace dcu::server
