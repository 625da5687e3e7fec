#pragma once
// A blocking HTTP/1.1 client for the in-process server tests (Beast, so chunked bodies are decoded by an
// implementation independent of the server's writer), and an SSE splitter.

#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace dcu::server::testing {

struct Reply {
  int status = 0;
  std::string content_type;
  std::string retry_after;
  std::string transfer_encoding;
  std::string allow;
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

// Reads one response from a socket or a Beast stream.
template <typename SyncReadStream>
Reply read_reply(SyncReadStream& stream) {
  namespace http = boost::beast::http;
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  http::read(stream, buffer, parser);
  auto& res = parser.get();
  return Reply{int(res.result_int()), std::string(res[http::field::content_type]),
               std::string(res[http::field::retry_after]), std::string(res[http::field::transfer_encoding]),
               std::string(res[http::field::allow]), res.body()};
}

inline Reply send_request(boost::beast::tcp_stream& stream, const std::string& method, const std::string& target,
                          const std::string& body, const std::string& auth = "") {
  namespace http = boost::beast::http;
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!auth.empty()) req.set(http::field::authorization, auth);
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  return read_reply(stream);
}

inline Reply call(int port, const std::string& method, const std::string& target, const std::string& body = "",
                  const std::string& auth = "") {
  boost::asio::io_context ioc;
  boost::beast::tcp_stream stream(ioc);
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  return send_request(stream, method, target, body, auth);
}

// The JSON payloads of an SSE body; `done` tells whether it ended with [DONE]. Fails (throws) on framing
// that OpenAI clients would not accept.
struct SseEvents {
  std::vector<nlohmann::json> events;
  bool done = false;
};

inline SseEvents split_sse(const std::string& body) {
  SseEvents out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) throw std::runtime_error("unterminated SSE event: " + body.substr(pos));
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) != 0) throw std::runtime_error("SSE event without 'data: ': " + event);
    if (out.done) throw std::runtime_error("event after [DONE]");
    const std::string payload = event.substr(6);
    if (payload == "[DONE]") out.done = true;
    else out.events.push_back(nlohmann::json::parse(payload));
    pos = end + 2;
  }
  return out;
}

}  // namespace dcu::server::testing
