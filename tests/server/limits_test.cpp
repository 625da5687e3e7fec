// The limits a client meets (docs/API.md, "Limits"), over real sockets: header bytes and fields, open
// connections, idle and slow clients, max_tokens, JSON nesting. The body limit's 413 is in http_server_test.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "server_fixture.h"

namespace dcu::server::testing {
namespace {

using nlohmann::json;
namespace net = boost::asio;

// The raw bytes of a GET /health with `fields` extra header fields of `value`.
std::string health_request(int fields, const std::string& value = "v") {
  std::string r = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < fields; ++i) r += "X-Field-" + std::to_string(i) + ": " + value + "\r\n";
  return r + "\r\n";
}

Reply send_raw(int port, const std::string& bytes) {
  net::io_context ioc;
  auto s = connect_raw(ioc, port);
  net::write(s, net::buffer(bytes));
  return read_reply(s);
}

// Seconds until the server closes a connection on which the client sends `bytes` and then nothing.
double seconds_until_closed(int port, const std::string& bytes) {
  net::io_context ioc;
  auto s = connect_raw(ioc, port);
  if (!bytes.empty()) net::write(s, net::buffer(bytes));
  const auto start = std::chrono::steady_clock::now();
  char byte;
  boost::system::error_code ec;
  while (!ec) s.read_some(net::buffer(&byte, 1), ec);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class HeaderLimitTest : public ServerTest {
 protected:
  // Under `cfg`, the request `inside` its header limit is served and the one `over` it gets 431 with `message`.
  void expect_431(const ServerConfig& cfg, const std::string& inside, const std::string& over,
                  const std::string& message) {
    start(byte_ids("x"), cfg);
    EXPECT_EQ(send_raw(port_, inside).status, 200);
    const Reply r = send_raw(port_, over);
    EXPECT_EQ(r.status, 431);
    EXPECT_EQ(r.json()["error"]["message"], message);
  }
};

TEST_F(HeaderLimitTest, HeaderOverItsByteLimitGets431) {
  ServerConfig cfg;
  cfg.max_header_bytes = 2048;
  expect_431(cfg, health_request(1, std::string(1500, 'a')), health_request(1, std::string(3000, 'a')),
             "Request header too large: more than 2048 bytes of header.");
}

TEST_F(HeaderLimitTest, MoreHeaderFieldsThanTheLimitGet431) {
  ServerConfig cfg;
  cfg.max_header_count = 10;
  expect_431(cfg, health_request(9), health_request(10),  // with Host: 10 fields, then 11
             "Request header too large: more than 10 header fields.");
}

TEST_F(ServerTest, ConnectionsOverTheLimitGet503UntilOneCloses) {
  ServerConfig cfg;
  cfg.max_connections = 2;
  start(byte_ids("x"), cfg);
  net::io_context ioc;
  std::vector<net::ip::tcp::socket> open;
  for (int i = 0; i < 2; ++i) {  // two keep-alive connections, each known to be served
    open.push_back(connect_raw(ioc, port_));
    net::write(open.back(), net::buffer(health_request(0)));
    EXPECT_EQ(read_reply(open.back()).status, 200);
  }
  const Reply refused = send_raw(port_, health_request(0));
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.retry_after, "1");
  EXPECT_EQ(refused.json()["error"]["message"], "The server has its limit of 2 open connections.");
  open.front().close();
  // The server notices the close when its read of the next request ends; then there is room again.
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {
    status = send_raw(port_, health_request(0)).status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, 200);
}

TEST_F(ServerTest, IdleAndSlowClientsAreDisconnected) {
  ServerConfig cfg;
  cfg.header_timeout_seconds = 1;
  cfg.body_timeout_seconds = 1;
  start(byte_ids("x"), cfg);
  const double idle = seconds_until_closed(port_, "");
  EXPECT_GE(idle, 0.9);
  EXPECT_LT(idle, 5.0);
  const std::string half_header = "GET /health HTTP/1.1\r\nHo";
  EXPECT_LT(seconds_until_closed(port_, half_header), 5.0);
  const std::string half_body = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\"";
  const double slow = seconds_until_closed(port_, half_body);
  EXPECT_GE(slow, 0.9);
  EXPECT_LT(slow, 5.0);
}

TEST_F(ServerTest, MaxTokensCapRefusesMoreAndBoundsTheDefault) {
  ServerConfig cfg;
  cfg.max_tokens_cap = 5;
  start(byte_ids("abcdefghij"), cfg);
  const Reply over = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 6}});
  EXPECT_EQ(over.status, 400);
  EXPECT_EQ(over.json()["error"]["param"], "max_tokens");
  const Reply unset = post("/v1/completions", {{"prompt", "x"}});
  ASSERT_EQ(unset.status, 200) << unset.body;
  EXPECT_EQ(unset.json()["choices"][0]["text"], "abcde");
  EXPECT_EQ(unset.json()["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerTest, DeepToolSchemasPassAndAbsurdNestingIs400) {
  ServerConfig cfg;
  cfg.max_body_bytes = 1 << 20;
  start(byte_ids("x"), cfg);
  std::string schema = R"({"type": "string"})";
  for (int level = 0; level < 40; ++level)  // 80 JSON levels, inside the request's own 5
    schema = R"({"type": "object", "properties": {"child": )" + schema + "}}";
  const std::string tools = R"([{"type": "function", "function": {"name": "deep", "parameters": )" + schema + "}}]";
  const std::string deep_tools = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
      "tool_choice": "none", "tools": )" + tools + "}";
  EXPECT_EQ(call(port_, "POST", "/v1/chat/completions", deep_tools).status, 200);
  const std::string absurd = R"({"prompt": )" + std::string(10000, '[') + std::string(10000, ']') + "}";
  const Reply r = call(port_, "POST", "/v1/completions", absurd);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["message"], "JSON nesting deeper than 256 levels");
}

}  // namespace
}  // namespace dcu::server::testing
