#pragma once
// The server over real sockets on 127.0.0.1 (ephemeral port) against the FakeEngine: the fixture the
// server tests share.

#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "fake_engine.h"
#include "http_test_client.h"
#include "server/http_server.h"

namespace dcu::server::testing {

class ServerTest : public ::testing::Test {
 protected:
  void start(std::vector<int32_t> script, ServerConfig cfg = {}, const ModelText* text = nullptr) {
    engine_ = std::make_unique<FakeEngine>(std::move(script), text ? 4096 : 256);
    cfg.port = 0;
    cfg.served_model_names = {"test-model"};
    if (cfg.max_body_bytes == ServerConfig{}.max_body_bytes) cfg.max_body_bytes = 8192;  // small unless a test sets one
    cfg.defaults.eos_token_ids = {kImEnd};
    config_ = cfg;
    metrics_ = std::make_unique<Metrics>("test-model");
    ctx_ = std::make_unique<ServerContext>(ServerContext{*engine_, text ? *text : text_, *metrics_, config_});
    server_ = std::make_unique<HttpServer>(*ctx_);
    port_ = server_->listen();
    runner_ = std::thread([this] { server_->run(false); });
  }
  void TearDown() override {
    if (server_) {
      server_->stop();
      runner_.join();
    }
    engine_.reset();  // no more callbacks, then the server goes
    server_.reset();
  }
  Reply post(const std::string& target, const nlohmann::json& body, const std::string& auth = "") {
    return call(port_, "POST", target, body.dump(), auth);
  }

  ByteText text_;
  ServerConfig config_;
  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<HttpServer> server_;
  std::thread runner_;
  int port_ = 0;
};

inline boost::asio::ip::tcp::socket connect_raw(boost::asio::io_context& ioc, int port) {
  boost::asio::ip::tcp::socket s(ioc);
  s.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  return s;
}

// The bytes of a POST /v1/completions request.
inline std::string completion_request(const std::string& body, const std::string& version = "1.1") {
  return "POST /v1/completions HTTP/" + version + "\r\nHost: x\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Opens a raw connection and sends a /v1/completions request (the caller reads or closes it).
inline boost::asio::ip::tcp::socket open_completion(boost::asio::io_context& ioc, int port, const nlohmann::json& body,
                                                    const std::string& version = "1.1") {
  auto s = connect_raw(ioc, port);
  boost::asio::write(s, boost::asio::buffer(completion_request(body.dump(), version)));
  return s;
}

// Closes with a reset (SO_LINGER 0), as a client that aborts the connection. A plain close() is a FIN,
// which the server cannot tell from a half-close until it writes.
inline void abort_connection(boost::asio::ip::tcp::socket& s) {
  s.set_option(boost::asio::socket_base::linger(true, 0));
  s.close();
}

}  // namespace dcu::server::testing
