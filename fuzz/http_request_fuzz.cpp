// libFuzzer target: arbitrary bytes as what a client sends on one connection: request lines, header
// fields, Content-Length and chunked bodies, several requests pipelined. They are read with the server's
// own parser settings and checks (server/request_reader.h), delivered in pieces of a fuzzed size, and
// every complete request goes through the router to a fake engine and back (fuzz/scripted_engine.h).
// Every answer must be well formed; nothing may crash.
//
// Input: byte 0 sets the size of the pieces the bytes arrive in (1-256); the rest is the wire.
#include <cstdint>
#include <string_view>

#include <boost/beast/_experimental/test/stream.hpp>

#include "scripted_engine.h"
#include "server/fake_engine.h"
#include "server/request_reader.h"

namespace {

namespace http = boost::beast::http;
using namespace dcu;

// Limits small enough for the fuzzer to reach each of them.
server::ServerConfig config() {
  server::ServerConfig c;
  c.served_model_names = {"test-model"};
  c.max_body_bytes = 4096;
  c.max_header_bytes = 2048;
  c.max_header_count = 16;
  c.max_tokens_cap = 64;
  c.defaults.eos_token_ids = {server::testing::kImEnd};
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const server::ServerConfig cfg = config();
  static const server::testing::ByteText text;
  fuzz::ScriptedEngine engine(server::testing::byte_ids("Hello, world!"), text.vocab_size(), 256);
  server::Metrics metrics("test-model");
  const server::ServerContext ctx{engine, text, metrics, cfg};
  const server::Router router(ctx);

  boost::asio::io_context ioc;
  boost::beast::test::stream wire(ioc, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  wire.close_remote();  // the client is done sending: reads past the bytes see EOF
  wire.read_size(1 + data[0]);
  boost::beast::flat_buffer buffer;
  for (int served = 0; served < 8; ++served) {  // as HttpServer::Impl::session, without the socket
    server::RequestParser parser;
    server::apply_request_limits(parser, cfg);
    boost::beast::error_code ec;
    http::read_header(wire, buffer, parser, ec);
    if (!ec) {
      if (auto refusal = server::check_request_header(parser, cfg)) {
        fuzz::check_answer({refusal->status, "application/json", server::error_body(*refusal)});
        break;
      }
      http::read(wire, buffer, parser, ec);
    }
    if (ec) {
      if (auto refusal = server::read_failure_response(ec, cfg))
        fuzz::check_answer({refusal->status, "application/json", server::error_body(*refusal)});
      break;
    }
    const bool keep_alive = parser.get().keep_alive();
    fuzz::check_answer(fuzz::run_to_end(router.handle(server::take_request(parser)), engine));
    if (!keep_alive) break;
  }
  return 0;
}
