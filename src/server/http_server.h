#pragma once
// The HTTP/1.1 transport (Boost.Beast, kept out of this header): keep-alive, body limit (413, then a
// lingering close), timeouts, chunked SSE (raw until close on HTTP/1.0), client-disconnect detection
// (cancels the engine requests; a half-close is not a disconnect), clean shutdown.
//
// Lifetime: the engine must stop calling back (be destroyed, or have no request in flight) before the
// HttpServer is destroyed; late engine events after that are dropped, never delivered to freed memory.

#include <memory>

#include "server/server_context.h"

namespace dcu::server {

class HttpServer {
 public:
  explicit HttpServer(const ServerContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds config.host:config.port (0: ephemeral) and listens; returns the bound port. Throws dcu::Error.
  int listen();
  // Serves on config.io_threads threads (the caller's included) until stop(), or SIGINT/SIGTERM when
  // `handle_signals`. On stop: no new connections, in-flight requests cancelled, connections closed.
  void run(bool handle_signals);
  // SIGINT/SIGTERM stop the server from now on (also before run(): a signal that arrives while the
  // caller announces the port is not lost).
  void catch_signals();
  void stop();  // thread-safe

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dcu::server
