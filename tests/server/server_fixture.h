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
    cfg.max_body_bytes = 8192;
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

// Opens a raw connection and sends a /v1/completions request (the caller reads or closes it).
inline boost::asio::ip::tcp::socket open_completion(boost::asio::io_context& ioc, int port, const nlohmann::json& body) {
  namespace net = boost::asio;
  net::ip::tcp::socket s(ioc);
  s.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  const std::string text = body.dump();
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  net::write(s, net::buffer(req));
  return s;
}

}  // namespace dcu::server::testing
