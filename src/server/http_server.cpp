#include "server/http_server.h"

#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/error.h"
#include "core/log.h"
#include "server/request_reader.h"
#include "server/router.h"

namespace dcu::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

// The completion token of every co_await here: the error goes to `ec` instead of being thrown. (Boost 1.74,
// Ubuntu 22.04's, has neither as_tuple nor the awaitable operators.)
auto into(beast::error_code& ec) { return net::redirect_error(net::use_awaitable, ec); }

// Engine events cross to the request side through a post() onto the connection's strand. The gate lets
// the server refuse posts once it is being destroyed (engine callbacks may still come late).
struct Gate {
  std::mutex mutex;
  bool open = true;
};

// Events of the job a connection is running, queued on the connection's strand.
struct JobInbox {
  explicit JobInbox(net::any_io_executor ex) : strand(ex), wake(ex) {}
  const net::any_io_executor strand;  // the connection's, where `pending` is used
  std::deque<std::pair<int, GenerationEvent>> pending;
  net::steady_timer wake;  // cancelled to wake the session when an event arrives
};

// While a job runs, a read left pending on the socket notices a client that resets the connection (or sends
// more) while nothing is being written. Its completion wakes the session as an event does. What it reads
// goes into the session's buffer: a pipelined request that arrives meanwhile is read from there next.
struct ClientProbe {
  bool reading = false;
  std::optional<beast::error_code> result;  // until the session takes it
};
constexpr size_t kProbeBytes = 4096;

// The handler runs on the socket's executor: the connection's strand, as the session and the inbox do.
// `buffer` is the session's, untouched by anyone else until the probe's read has completed.
void start_probe(tcp::socket& socket, beast::flat_buffer& buffer, const std::shared_ptr<ClientProbe>& probe,
                 const std::shared_ptr<JobInbox>& inbox) {
  probe->reading = true;
  socket.async_read_some(buffer.prepare(kProbeBytes), [&buffer, probe, inbox](const beast::error_code& ec, size_t n) {
    buffer.commit(n);
    probe->reading = false;
    probe->result = ec;
    inbox->wake.cancel();
  });
}

struct Connection {
  explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  std::shared_ptr<JobInbox> inbox;  // while a generation job runs
  std::shared_ptr<GenerationJob> job;
  bool stopping = false;
};

// Closes a connection the client may still be sending on (the rest of an oversized body) after an error
// response: closing with unread bytes would reset it, and the client would get EPIPE/ECONNRESET instead of
// the response. As nginx's lingering close: half-close, then discard what arrives until the client closes,
// within a byte and a time cap.
constexpr size_t kLingerBytes = 64u << 20;
constexpr auto kLingerTime = std::chrono::seconds(5);

net::awaitable<void> linger_close(beast::tcp_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(kLingerTime);
  std::vector<char> discard(64 * 1024);
  for (size_t total = 0; !ec && total < kLingerBytes;)
    total += co_await stream.async_read_some(net::buffer(discard), into(ec));
  stream.socket().close(ec);
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const ServerContext& c)
      : ctx(c), router(c), acceptor(ioc), signals(ioc), gate(std::make_shared<Gate>()) {}

  const ServerContext& ctx;
  Router router;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::signal_set signals;
  std::shared_ptr<Gate> gate;
  std::mutex connections_mutex;
  std::list<std::weak_ptr<Connection>> connections;
  std::atomic<bool> stopped{false};
  std::atomic<int> open_connections{0};  // sessions running (--max-concurrent-connections)
  bool catching_signals = false;

  std::chrono::seconds write_timeout() const { return std::chrono::seconds(ctx.config.write_timeout_seconds); }
  net::awaitable<void> accept_loop();
  net::awaitable<void> session(std::shared_ptr<Connection> conn);
  net::awaitable<void> refuse_connection(std::shared_ptr<Connection> conn);
  net::awaitable<bool> write_response(Connection& conn, const HttpResponse& r, unsigned version, bool keep_alive);
  net::awaitable<void> refuse(Connection& conn, const ApiError& error);
  net::awaitable<bool> write_stream_header(Connection& conn, unsigned version, bool keep_alive);
  net::awaitable<bool> write_stream_part(Connection& conn, const std::string& bytes, bool chunked);
  net::awaitable<bool> run_job(Connection& conn, beast::flat_buffer& buffer, std::shared_ptr<GenerationJob> job,
                               unsigned version, bool keep_alive);
  void stop_all();
};

int HttpServer::listen() {
  auto& s = *impl_;
  beast::error_code ec;
  auto address = net::ip::make_address(s.ctx.config.host, ec);
  if (ec) fail("--host {} is not an IP address: {}", s.ctx.config.host, ec.message());
  tcp::endpoint endpoint(address, static_cast<unsigned short>(s.ctx.config.port));
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on {}:{}: {}", s.ctx.config.host, s.ctx.config.port, ec.message());
  return s.acceptor.local_endpoint().port();
}

HttpServer::HttpServer(const ServerContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {}

HttpServer::~HttpServer() {
  {
    std::lock_guard lock(impl_->gate->mutex);
    impl_->gate->open = false;
  }
}

void HttpServer::catch_signals() {
  auto& s = *impl_;
  if (s.catching_signals) return;
  s.catching_signals = true;
  s.signals.add(SIGINT);
  s.signals.add(SIGTERM);
  s.signals.async_wait([this](const beast::error_code& ec, int signal) {
    if (ec) return;
    log::info("signal {} received: shutting down", signal);
    stop();
  });
}

void HttpServer::run(bool handle_signals) {
  auto& s = *impl_;
  if (!s.acceptor.is_open()) listen();
  if (handle_signals) catch_signals();
  net::co_spawn(s.ioc, s.accept_loop(), net::detached);
  std::vector<std::thread> extra;
  for (int i = 1; i < s.ctx.config.io_threads; ++i) extra.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : extra) t.join();
}

void HttpServer::stop() {
  auto& s = *impl_;
  net::post(s.ioc, [&s] { s.stop_all(); });
}

void HttpServer::Impl::stop_all() {
  if (stopped.exchange(true)) return;
  beast::error_code ec;
  acceptor.close(ec);
  signals.cancel(ec);
  std::lock_guard lock(connections_mutex);
  for (auto& weak : connections) {
    auto conn = weak.lock();
    if (!conn) continue;
    net::post(conn->stream.get_executor(), [conn] {
      conn->stopping = true;
      if (conn->job) conn->job->cancel();
      if (conn->inbox) conn->inbox->wake.cancel();
      beast::error_code ignored;
      conn->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      conn->stream.socket().close(ignored);
    });
  }
}

net::awaitable<void> HttpServer::Impl::accept_loop() {
  for (;;) {
    tcp::socket socket(net::make_strand(ioc));
    beast::error_code ec;
    co_await acceptor.async_accept(socket, into(ec));
    if (ec) {
      if (stopped || ec == net::error::operation_aborted) co_return;
      log::warn("accept failed: {}", ec.message());
      continue;
    }
    auto conn = std::make_shared<Connection>(std::move(socket));
    if (open_connections.load() >= ctx.config.max_connections) {
      net::co_spawn(conn->stream.get_executor(), refuse_connection(conn), net::detached);
      continue;
    }
    {
      std::lock_guard lock(connections_mutex);
      connections.remove_if([](const auto& w) { return w.expired(); });
      connections.push_back(conn);
    }
    ++open_connections;
    net::co_spawn(conn->stream.get_executor(), session(conn), net::detached);
  }
}

net::awaitable<bool> HttpServer::Impl::write_response(Connection& conn, const HttpResponse& r, unsigned version,
                                                       bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "dcuserve");
  res.set(http::field::content_type, r.content_type);
  for (const auto& [name, value] : r.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = r.body;
  res.prepare_payload();
  conn.stream.expires_after(write_timeout());
  beast::error_code ec;
  co_await http::async_write(conn.stream, res, into(ec));
  co_return !ec;
}

// Answers a request whose body is not read to its end, then closes the connection.
net::awaitable<void> HttpServer::Impl::refuse(Connection& conn, const ApiError& error) {
  const HttpResponse response = error_response(error);
  const bool written = co_await write_response(conn, response, 11, false);
  if (written) co_await linger_close(conn.stream);
}

net::awaitable<void> HttpServer::Impl::refuse_connection(std::shared_ptr<Connection> conn) {
  co_await refuse(*conn, too_many_connections(ctx.config.max_connections));
}

net::awaitable<void> HttpServer::Impl::session(std::shared_ptr<Connection> conn) {
  struct Count {  // counted up by accept_loop, which starts the session
    std::atomic<int>& open;
    ~Count() { --open; }
  } count{open_connections};
  auto& stream = conn->stream;
  beast::flat_buffer buffer;
  const auto& cfg = ctx.config;
  for (;;) {
    RequestParser parser;
    apply_request_limits(parser, cfg);
    stream.expires_after(std::chrono::seconds(cfg.header_timeout_seconds));
    beast::error_code ec;
    co_await http::async_read_header(stream, buffer, parser, into(ec));
    if (!ec) {
      if (auto refusal = check_request_header(parser, cfg)) {
        co_await refuse(*conn, *refusal);
        break;
      }
    }
    if (!ec && parser.get()[http::field::expect] == "100-continue" && !parser.is_done()) {
      http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
      beast::error_code wec;
      co_await http::async_write(stream, cont, into(wec));
      if (wec) break;
    }
    if (!ec) {
      stream.expires_after(std::chrono::seconds(cfg.body_timeout_seconds));
      co_await http::async_read(stream, buffer, parser, into(ec));
    }
    if (ec) {
      if (auto refusal = read_failure_response(ec, cfg)) co_await refuse(*conn, *refusal);
      break;
    }
    if (conn->stopping) break;
    const bool keep_alive = parser.get().keep_alive();
    const unsigned version = parser.get().version();
    const HttpRequest request = take_request(parser);

    auto result = router.handle(request);
    bool ok;
    if (auto* response = std::get_if<HttpResponse>(&result))
      ok = co_await write_response(*conn, *response, version, keep_alive);
    else
      ok = co_await run_job(*conn, buffer, std::get<std::shared_ptr<GenerationJob>>(std::move(result)), version,
                            keep_alive);
    if (!ok || !keep_alive || conn->stopping) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream.socket().close(ignored);
}

// The header of a streaming response. HTTP/1.0 has no chunked encoding: there the events go out raw and
// the closing connection ends the body.
net::awaitable<bool> HttpServer::Impl::write_stream_header(Connection& conn, unsigned version, bool keep_alive) {
  http::response<http::empty_body> res{http::status::ok, version};
  res.set(http::field::server, "dcuserve");
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  if (version >= 11) {
    res.keep_alive(keep_alive);
    res.chunked(true);
  } else {
    res.set(http::field::connection, "close");
  }
  http::response_serializer<http::empty_body> serializer{res};
  conn.stream.expires_after(write_timeout());
  beast::error_code ec;
  co_await http::async_write_header(conn.stream, serializer, into(ec));
  co_return !ec;
}

net::awaitable<bool> HttpServer::Impl::write_stream_part(Connection& conn, const std::string& bytes, bool chunked) {
  conn.stream.expires_after(write_timeout());
  beast::error_code ec;
  if (chunked)
    co_await net::async_write(conn.stream, http::make_chunk(net::buffer(bytes)), into(ec));
  else
    co_await net::async_write(conn.stream, net::buffer(bytes), into(ec));
  co_return !ec;
}

// Runs one generation job on this connection. Returns false when the connection cannot be reused.
net::awaitable<bool> HttpServer::Impl::run_job(Connection& conn, beast::flat_buffer& buffer,
                                                std::shared_ptr<GenerationJob> job, unsigned version, bool keep_alive) {
  auto& stream = conn.stream;
  auto inbox = std::make_shared<JobInbox>(stream.get_executor());
  // The engine may hold the sink after the server and its io_context are gone (a cancelled request it has
  // not retired yet), so the sink owns nothing of the io_context: no executor (a strand's destructor uses
  // the io_context's strand service), no timer. It reaches the strand through the inbox, only while the
  // gate is open, which ~HttpServer closes before the io_context goes.
  auto sink = [weak_inbox = std::weak_ptr<JobInbox>(inbox), gate = gate](int index, GenerationEvent&& event) {
    std::lock_guard lock(gate->mutex);
    if (!gate->open) return;
    const auto alive = weak_inbox.lock();
    if (!alive) return;  // the job ended on its connection
    net::post(alive->strand, [weak_inbox, index, event = std::move(event)]() mutable {
      auto inbox = weak_inbox.lock();
      if (!inbox) return;  // the job ended on this connection
      inbox->pending.emplace_back(index, std::move(event));
      inbox->wake.cancel();
    });
  };
  if (auto error = job->start(sink)) co_return co_await write_response(conn, error_response(*error), version, keep_alive);
  conn.job = job;
  conn.inbox = inbox;
  struct Detach {
    Connection& c;
    ~Detach() {
      c.job.reset();
      c.inbox.reset();
    }
  } detach{conn};

  const bool chunked = version >= 11;  // HTTP/1.0: the closing connection ends a stream
  if (job->streaming() && !chunked) keep_alive = false;
  bool client_gone = false;
  if (job->streaming()) client_gone = !co_await write_stream_header(conn, version, keep_alive);
  auto probe = std::make_shared<ClientProbe>();
  bool watching = true;
  // EOF: the client half-closed after its request (`nc -N`), which is no reason to cancel (one that really
  // went away fails a later write); the connection closes after this response. Bytes: a pipelined request,
  // now in the session's buffer, answered after this one; a reset is noticed at a failed write from here on.
  auto take_probe_result = [&] {
    const beast::error_code ec = *probe->result;
    probe->result.reset();
    client_gone = client_gone || (ec && ec != net::error::eof);
    watching = false;
    if (ec) keep_alive = false;
  };
  while (!client_gone && !job->done() && !conn.stopping) {
    if (inbox->pending.empty()) {
      if (probe->result) {
        take_probe_result();
        continue;
      }
      stream.expires_never();
      if (watching && !probe->reading) start_probe(stream.socket(), buffer, probe, inbox);
      inbox->wake.expires_at(net::steady_timer::time_point::max());
      beast::error_code ec;
      co_await inbox->wake.async_wait(into(ec));
      continue;
    }
    auto [index, event] = std::move(inbox->pending.front());
    inbox->pending.pop_front();
    std::string bytes = job->on_event(index, std::move(event));
    if (job->streaming() && !bytes.empty()) client_gone = !co_await write_stream_part(conn, bytes, chunked);
  }
  // The probe's read is taken back before the response, and before the session reads the next request.
  if (probe->reading) {
    beast::error_code ignored;
    stream.socket().cancel(ignored);
    while (probe->reading) {
      inbox->wake.expires_at(net::steady_timer::time_point::max());
      co_await inbox->wake.async_wait(into(ignored));
    }
  }
  if (probe->result && *probe->result != net::error::operation_aborted) take_probe_result();
  if (client_gone || conn.stopping) {
    job->cancel();
    co_return false;
  }
  if (!job->streaming()) {
    const HttpResponse response = job->response();
    const bool written = co_await write_response(conn, response, version, keep_alive);
    co_return written && keep_alive;
  }
  const std::string tail = job->stream_tail();
  const bool written = co_await write_stream_part(conn, tail, chunked);
  if (!written || !chunked) co_return false;
  stream.expires_after(write_timeout());
  beast::error_code ec;
  co_await net::async_write(stream, http::make_chunk_last(), into(ec));
  co_return !ec && keep_alive;
}

}  // namespace dcu::server
