#include "server/request_reader.h"

#include <iterator>

namespace dcu::server {

namespace http = boost::beast::http;

void apply_request_limits(RequestParser& parser, const ServerConfig& config) {
  parser.header_limit(static_cast<std::uint32_t>(config.max_header_bytes));
  parser.body_limit(config.max_body_bytes);
}

std::optional<ApiError> check_request_header(const RequestParser& parser, const ServerConfig& config) {
  const auto& header = parser.get();
  if (std::distance(header.begin(), header.end()) > config.max_header_count)
    return header_too_large(fmt::format("more than {} header fields", config.max_header_count));
  if (parser.content_length() && *parser.content_length() > config.max_body_bytes)
    return payload_too_large(config.max_body_bytes);
  return std::nullopt;
}

std::optional<ApiError> read_failure_response(const boost::beast::error_code& ec, const ServerConfig& config) {
  if (ec == http::error::body_limit) return payload_too_large(config.max_body_bytes);
  if (ec == http::error::header_limit)
    return header_too_large(fmt::format("more than {} bytes of header", config.max_header_bytes));
  if (ec.category() == http::make_error_code(http::error::bad_method).category() && ec != http::error::end_of_stream)
    return invalid_request("Malformed HTTP request: " + ec.message());
  return std::nullopt;
}

HttpRequest take_request(RequestParser& parser) {
  auto& req = parser.get();
  HttpRequest request;
  request.method = std::string(req.method_string());
  const auto target = req.target();  // a boost::string_view before Boost 1.81
  request.path = std::string(target.substr(0, target.find('?')));
  request.authorization = std::string(req[http::field::authorization]);
  request.body = std::move(req.body());
  return request;
}

}  // namespace dcu::server
