#pragma once
// How the server reads one request off the wire: the Beast parser with the configured limits, the checks
// made once the header is in, what each read error is answered with, and the request handed to the
// router. http_server.cpp runs these on sockets; fuzz/http_request_fuzz.cpp runs the same on bytes.

#include <optional>

#include <boost/beast/http.hpp>

#include "server/errors.h"
#include "server/http_types.h"
#include "server/server_config.h"

namespace dcu::server {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Header bytes (request line included) and body bytes, as --max-header-bytes / --max-request-body-bytes.
void apply_request_limits(RequestParser& parser, const ServerConfig& config);

// Once the header is read: a 431 for more fields than --max-header-count, a 413 for a Content-Length over
// the body limit (answered before a 100 Continue), or nothing.
std::optional<ApiError> check_request_header(const RequestParser& parser, const ServerConfig& config);

// The answer to a failed read: 413 past the body limit, 431 past the header limit, 400 for malformed
// HTTP; nothing when the client closed or timed out (the connection just ends).
std::optional<ApiError> read_failure_response(const boost::beast::error_code& ec, const ServerConfig& config);

// The parsed request as the router takes it (the body is moved out of the parser).
HttpRequest take_request(RequestParser& parser);

}  // namespace dcu::server
