// The server over real sockets on 127.0.0.1 (ephemeral port) against the FakeEngine.
#include "server/http_server.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "server_fixture.h"
#include "server/text_adapter.h"

namespace dcu::server::testing {
namespace {

using nlohmann::json;
namespace net = boost::asio;

TEST_F(ServerTest, CompletionNonStreaming) {
  start(byte_ids("Hello world"));
  auto r = post("/v1/completions", {{"model", "test-model"}, {"prompt", "Hi"}, {"max_tokens", 5}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 2}, {"total_tokens", 7}, {"completion_tokens", 5}}));
  ASSERT_EQ(engine_->submitted().size(), 1u);
  EXPECT_EQ(engine_->submitted()[0].prompt, byte_ids("Hi"));
  EXPECT_EQ(engine_->submitted()[0].sampling.max_tokens, 5);
}

TEST_F(ServerTest, StopStringCancelsTheEngineRequest) {
  start(byte_ids("Hello world, again"));
  auto j = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 50}, {"stop", {"wor", "zzz"}}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Hello ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 9);  // the tokens up to the end of "wor"
  EXPECT_TRUE(engine_->wait_cancelled(1));
}

TEST_F(ServerTest, EosTokenFromGenerationConfigStops) {
  std::vector<int32_t> script = byte_ids("Hey");
  script.push_back(kImEnd);
  start(script);
  auto j = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 50}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Hey");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  // As in vLLM, the stop token's own text is left out even when special tokens are kept ...
  j = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"skip_special_tokens", false}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Hey");
  EXPECT_EQ(j["choices"][0]["stop_reason"], nullptr);  // eos: no stop_reason
  // ... unless include_stop_str_in_output.
  j = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"skip_special_tokens", false},
                               {"include_stop_str_in_output", true}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Hey<|im_end|>");
}

TEST_F(ServerTest, CompletionStreamingMatchesNonStreaming) {
  start(byte_ids("Hello world"));
  json req = {{"prompt", {"Hi", "Yo"}}, {"max_tokens", 8}, {"n", 2}};
  auto whole = post("/v1/completions", req).json();
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto r = post("/v1/completions", req);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/event-stream");
  EXPECT_EQ(r.transfer_encoding, "chunked");
  auto sse = split_sse(r.body);
  EXPECT_TRUE(sse.done);
  std::map<int, std::string> text, reason;
  for (const auto& e : sse.events) {
    for (const auto& c : e["choices"]) {
      text[c["index"]] += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) reason[c["index"]] = c["finish_reason"];
    }
  }
  ASSERT_EQ(whole["choices"].size(), 4u);
  for (const auto& c : whole["choices"]) {
    EXPECT_EQ(text[c["index"]], c["text"]);
    EXPECT_EQ(reason[c["index"]], c["finish_reason"]);
  }
  const auto& last = sse.events.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"], whole["usage"]);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], 4);  // each prompt once, whatever n
}

TEST_F(ServerTest, EchoWithPromptLogprobs) {
  start(byte_ids("xyz"));
  auto j = post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}}).json();
  ASSERT_EQ(engine_->submitted().size(), 1u);
  EXPECT_EQ(engine_->submitted()[0].sampling.prompt_logprobs, 1);
  const auto& c = j["choices"][0];
  EXPECT_EQ(c["text"], "abc");
  EXPECT_EQ(c["logprobs"]["tokens"], json({"a", "b", "c"}));
  EXPECT_TRUE(c["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_DOUBLE_EQ(c["logprobs"]["token_logprobs"][1].get<double>(), -0.5);
  EXPECT_EQ(c["logprobs"]["text_offset"], json({0, 1, 2}));
  j = post("/v1/completions", {{"prompt", "ab"}, {"max_tokens", 2}, {"echo", true}, {"logprobs", 0}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "abxy");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({"a", "b", "x", "y"}));
}

TEST_F(ServerTest, ChatStreamingAndNot) {
  start(byte_ids("Fine."));
  json req = {{"messages", {{{"role", "user"}, {"content", "How are you?"}}}}, {"max_completion_tokens", 5},
              {"logprobs", true}, {"top_logprobs", 2}};
  auto whole = post("/v1/chat/completions", req).json();
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Fine.");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["choices"][0]["logprobs"]["content"].size(), 5u);
  EXPECT_EQ(whole["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(whole["choices"][0]["logprobs"]["content"][0]["bytes"], json({int('F')}));
  // The prompt is what the chat template renders.
  EXPECT_EQ(engine_->submitted()[0].prompt, text_.encode("user: How are you?<|im_end|>\nassistant: "));

  req["stream"] = true;
  auto sse = split_sse(post("/v1/chat/completions", req).body);
  ASSERT_TRUE(sse.done);
  ASSERT_GE(sse.events.size(), 2u);
  EXPECT_EQ(sse.events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(sse.events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  for (const auto& e : sse.events) content += e["choices"][0]["delta"].value("content", "");
  EXPECT_EQ(content, "Fine.");
  EXPECT_EQ(sse.events.back()["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerTest, ChatErrors) {
  start(byte_ids("x"));
  auto r = post("/v1/chat/completions", {{"messages", {{{"role", "developer"}, {"content", "x"}}}}});
  EXPECT_EQ(r.status, 400);  // the template refused it
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("chat template"), std::string::npos);
  json tools = {{{"type", "function"}, {"function", {{"name", "f"}}}}};
  r = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", tools}});
  EXPECT_EQ(r.status, 400);  // auto needs --enable-auto-tool-choice
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("--enable-auto-tool-choice"), std::string::npos);
  r = post("/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", tools}, {"tool_choice", "none"}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 200);
}

TEST_F(ServerTest, ErrorStatusesAndShapes) {
  start(byte_ids("x"));
  auto r = post("/v1/completions", {{"model", "other"}, {"prompt", "x"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["message"], "The model `other` does not exist.");
  r = call(port_, "GET", "/v1/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_TRUE(r.json()["error"].contains("message"));
  r = call(port_, "POST", "/v1/completions", "{\"prompt\": ");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error");
  r = call(port_, "POST", "/v1/completions", json{{"prompt", std::string(10000, 'a')}}.dump());
  EXPECT_EQ(r.status, 413);
  r = post("/v1/completions", {{"prompt", std::string(300, 'a')}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["message"],
            "This model's maximum context length is 256 tokens. However, your request has 300 input tokens. Please "
            "reduce the length of the input messages.");
  r = post("/v1/completions", {{"prompt", {1, 2, 999}}});
  EXPECT_EQ(r.status, 400);  // out of vocabulary
}

TEST_F(ServerTest, MethodNotAllowedNamesTheAllowedMethod) {
  start(byte_ids("x"));
  auto r = call(port_, "GET", "/v1/completions");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.allow, "POST");
  EXPECT_EQ(r.json()["error"]["message"], "Method GET is not allowed on /v1/completions.");
  r = call(port_, "DELETE", "/v1/models");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.allow, "GET");
}

TEST_F(ServerTest, ApiKeyProtectsV1Only) {
  ServerConfig cfg;
  cfg.api_key = "sekrit";
  start(byte_ids("x"), cfg);
  EXPECT_EQ(call(port_, "GET", "/v1/models").status, 401);
  EXPECT_EQ(call(port_, "GET", "/v1/models", "", "Bearer wrong").status, 401);
  EXPECT_EQ(call(port_, "GET", "/v1/models", "", "sekrit").status, 401);
  EXPECT_EQ(call(port_, "GET", "/v1/models", "", "Bearer sekrit").status, 200);
  EXPECT_EQ(call(port_, "GET", "/health").status, 200);
}

TEST_F(ServerTest, QueueFullGives503WithRetryAfter) {
  start(byte_ids("x"));
  engine_->set_max_active(0);
  auto r = post("/v1/completions", {{"prompt", "x"}});
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.retry_after, "3");
  EXPECT_EQ(r.json()["error"]["message"], "the waiting queue is full");
}

TEST_F(ServerTest, ModelsHealthVersionTokenize) {
  start(byte_ids("x"));
  auto models = call(port_, "GET", "/v1/models").json();
  EXPECT_EQ(models["data"][0]["id"], "test-model");
  EXPECT_EQ(models["data"][0]["max_model_len"], 256);
  EXPECT_EQ(call(port_, "GET", "/health").status, 200);
  EXPECT_TRUE(call(port_, "GET", "/version").json().contains("version"));
  auto t = post("/tokenize", {{"prompt", "ab<|im_end|>"}}).json();
  EXPECT_EQ(t["tokens"], json({'a', 'b', kImEnd}));
  EXPECT_EQ(t["count"], 3);
  t = post("/tokenize", {{"messages", {{{"role", "user"}, {"content", "q"}}}}}).json();
  EXPECT_EQ(t["tokens"], json(text_.encode("user: q<|im_end|>\nassistant: ")));
  EXPECT_EQ(post("/detokenize", {{"tokens", {'h', 'i'}}}).json()["prompt"], "hi");
  EXPECT_EQ(post("/detokenize", {{"tokens", {'h', 5000}}}).status, 400);
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start(byte_ids("abc"));
  net::io_context ioc;
  boost::beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
  for (int i = 0; i < 3; ++i) {
    auto r = send_request(stream, "POST", "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 2}}.dump());
    EXPECT_EQ(r.json()["choices"][0]["text"], "ab");
    r = send_request(stream, "POST", "/v1/completions",
                     json{{"prompt", "x"}, {"max_tokens", 2}, {"stream", true}}.dump());
    EXPECT_TRUE(split_sse(r.body).done);
  }
}

// Everything the server sends until it closes.
std::string read_to_eof(net::ip::tcp::socket& s) {
  std::string got;
  char buf[4096];
  boost::system::error_code ec;
  while (!ec) got.append(buf, s.read_some(net::buffer(buf), ec));
  EXPECT_EQ(ec, net::error::eof) << ec.message();
  return got;
}

std::string completion_text(const SseEvents& sse) {
  std::string text;
  for (const auto& e : sse.events)
    if (!e["choices"].empty()) text += e["choices"][0]["text"].get<std::string>();
  return text;
}

TEST_F(ServerTest, DisconnectMidStreamCancels) {
  start(byte_ids("abcdefgh"));
  net::io_context ioc;
  auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 200}, {"stream", true}});
  std::string got;
  char buf[512];
  while (got.find("data: ") == std::string::npos) got.append(buf, s.read_some(net::buffer(buf)));
  s.close();
  EXPECT_TRUE(engine_->wait_cancelled(1));
  EXPECT_EQ(engine_->cancelled_count(), 1u);
}

TEST_F(ServerTest, DisconnectBeforeFirstTokenCancels) {
  start(byte_ids("abc"));
  engine_->set_paused(true);
  for (bool stream : {true, false}) {
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 20}, {"stream", stream}});
    ASSERT_TRUE(engine_->wait_submitted(stream ? 1 : 2));
    abort_connection(s);
    EXPECT_TRUE(engine_->wait_cancelled(stream ? 1 : 2)) << "stream=" << stream;
  }
}

// A client that half-closes after its request (TCP FIN, as `nc -N` does) still gets the whole response;
// then the server closes the connection.
TEST_F(ServerTest, HalfClosedClientStillGetsTheResponse) {
  start(byte_ids("abc"));
  engine_->set_paused(true);  // the job is still running when the FIN arrives
  size_t submitted = 0;
  for (bool stream : {false, true}) {
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 3}, {"stream", stream}});
    ASSERT_TRUE(engine_->wait_submitted(++submitted));
    s.shutdown(net::ip::tcp::socket::shutdown_send);
    // Leaves the server time to see the FIN, which must not cancel.
    EXPECT_FALSE(engine_->wait_cancelled(1, std::chrono::milliseconds(300))) << "stream=" << stream;
    engine_->set_paused(false);
    const auto r = read_reply(s);
    engine_->set_paused(true);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(stream ? completion_text(split_sse(r.body)) : r.json()["choices"][0]["text"].get<std::string>(), "abc")
        << "stream=" << stream;
    EXPECT_EQ(read_to_eof(s), "");
  }
}

// A request pipelined behind a generation request, sent while the job runs (so the server's watch for a
// client reset reads it), is answered after the first on the same kept-alive connection.
TEST_F(ServerTest, RequestPipelinedWhileAJobRunsIsAnsweredNext) {
  start(byte_ids("abc"));
  engine_->set_paused(true);
  size_t submitted = 0;
  for (bool stream : {false, true}) {
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 3}, {"stream", stream}});
    ASSERT_TRUE(engine_->wait_submitted(++submitted));
    net::write(s, net::buffer(completion_request(json{{"prompt", "y"}, {"max_tokens", 2}}.dump())));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server reads it while the job waits
    engine_->set_paused(false);
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;  // one buffer for both: the second response may come with the first
    http::response<http::string_body> first, second;
    http::read(s, buffer, first);
    http::read(s, buffer, second);
    ++submitted;
    engine_->set_paused(true);
    EXPECT_EQ(first.result_int(), 200u);
    EXPECT_TRUE(first.keep_alive()) << "stream=" << stream;
    EXPECT_EQ(stream ? completion_text(split_sse(first.body()))
                     : json::parse(first.body())["choices"][0]["text"].get<std::string>(),
              "abc");
    EXPECT_EQ(second.result_int(), 200u) << "stream=" << stream;
    EXPECT_EQ(json::parse(second.body())["choices"][0]["text"], "ab") << "stream=" << stream;
  }
}

// HTTP/1.0 has no chunked encoding: the events come raw and the closing connection ends them.
TEST_F(ServerTest, Http10StreamIsRawUntilClose) {
  start(byte_ids("abc"));
  net::io_context ioc;
  auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 3}, {"stream", true}}, "1.0");
  const std::string reply = read_to_eof(s);
  const size_t end = reply.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << reply;
  std::string head = reply.substr(0, end + 2);
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  EXPECT_EQ(head.rfind("http/1.0 200 ", 0), 0u) << head;
  EXPECT_EQ(head.find("transfer-encoding"), std::string::npos) << head;
  EXPECT_EQ(head.find("content-length"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nconnection: close\r\n"), std::string::npos) << head;
  const auto sse = split_sse(reply.substr(end + 4));
  EXPECT_TRUE(sse.done);
  EXPECT_EQ(completion_text(sse), "abc");
}

// Most clients send the whole body before reading (no Expect: 100-continue); one over the limit must then
// read the 413, not fail its write because the server closed on unread bytes.
TEST_F(ServerTest, OversizedBodyIsAnswered413AfterTheClientSentIt) {
  start(byte_ids("x"));
  net::io_context ioc;
  auto s = connect_raw(ioc, port_);
  boost::system::error_code ec;
  net::write(s, net::buffer(completion_request(std::string(40u << 20, 'a'))), ec);
  ASSERT_FALSE(ec) << ec.message();
  const auto r = read_reply(s);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.json()["error"]["message"], "Request body exceeds the limit of 8192 bytes.");
  EXPECT_EQ(r.json()["error"]["code"], 413);
}

TEST_F(ServerTest, SixtyFourConcurrentStreams) {
  start(byte_ids("0123456789"));
  std::vector<std::future<std::string>> results;
  for (int i = 0; i < 64; ++i)
    results.push_back(std::async(std::launch::async, [this] {
      auto r = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 30}, {"stream", true}});
      auto sse = split_sse(r.body);
      return sse.done ? completion_text(sse) : std::string("<no [DONE]>");
    }));
  for (auto& f : results) EXPECT_EQ(f.get(), "012345678901234567890123456789");
}

TEST_F(ServerTest, GarbageDoesNotCrash) {
  start(byte_ids("x"));
  for (std::string junk : {std::string("GARBAGE\r\n\r\n"), std::string("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
                           std::string(70000, 'A'), std::string("\0\1\2\r\n\r\n", 7)}) {
    net::io_context ioc;
    net::ip::tcp::socket s(ioc);
    s.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port_));
    boost::system::error_code ec;
    net::write(s, net::buffer(junk), ec);
    char buf[4096];
    std::string reply;
    for (size_t n; (n = s.read_some(net::buffer(buf), ec)) > 0 && !ec;) reply.append(buf, n);
    if (!reply.empty()) EXPECT_EQ(reply.rfind("HTTP/1.1 4", 0), 0u) << reply;
  }
  EXPECT_EQ(call(port_, "GET", "/health").status, 200);  // still serving
}

TEST_F(ServerTest, StopCancelsInFlightRequests) {
  start(byte_ids("abc"));
  engine_->set_paused(true);
  net::io_context ioc;
  auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 20}, {"stream", true}});
  ASSERT_TRUE(engine_->wait_submitted(1));
  server_->stop();
  runner_.join();  // run() returns
  server_.reset();
  EXPECT_TRUE(engine_->wait_cancelled(1));
}

TEST_F(ServerTest, MetricsCountRequests) {
  start(byte_ids("abc"));
  post("/v1/completions", {{"prompt", "xy"}, {"max_tokens", 3}});
  auto m = call(port_, "GET", "/metrics");
  EXPECT_EQ(m.content_type.rfind("text/plain", 0), 0u);
  EXPECT_NE(m.body.find("vllm:request_success_total{model_name=\"test-model\",finished_reason=\"length\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.body.find("vllm:prompt_tokens_total{model_name=\"test-model\"} 2\n"), std::string::npos);
  EXPECT_NE(m.body.find("vllm:generation_tokens_total{model_name=\"test-model\"} 3\n"), std::string::npos);
  EXPECT_NE(m.body.find("vllm:time_to_first_token_seconds_count{model_name=\"test-model\"} 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("vllm:kv_cache_usage_perc{model_name=\"test-model\"} 0.25\n"), std::string::npos);
}

// The real text layer on the demo model, checked against Hugging Face's rendering and decoding
// (models/dcuserve-demo/reference.json).
TEST_F(ServerTest, DemoModelTextMatchesHuggingFace) {
  std::ifstream in("models/dcuserve-demo/reference.json");
  ASSERT_TRUE(in.good());
  const json chat = json::parse(in)["chats"][1];
  auto text = load_model_text("models/dcuserve-demo", {});
  start(chat["greedy_ids"].get<std::vector<int32_t>>(), {}, text.get());
  auto t = post("/tokenize", {{"messages", chat["messages"]}}).json();
  EXPECT_EQ(t["tokens"], chat["ids"]);
  auto r = post("/v1/chat/completions", {{"messages", chat["messages"]}, {"max_tokens", chat["greedy_ids"].size()},
                                          {"skip_special_tokens", false}}).json();
  EXPECT_EQ(engine_->submitted()[0].prompt, chat["ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(r["choices"][0]["message"]["content"], chat["greedy_text"]);
}

}  // namespace
}  // namespace dcu::server::testing
