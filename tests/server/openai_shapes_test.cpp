// What real clients read from the server, as vLLM (and OpenAI) answer it: stop semantics (stop_reason,
// the stop token's text, include_stop_str_in_output), vLLM's extensions (prompt_logprobs,
// truncate_prompt_tokens, return_tokens_as_token_ids, continuous usage stats), the fields clients
// expect (usage: null, system_fingerprint, refusal, /v1/models/{id}), parallel_tool_calls, character
// text offsets, and metrics that count aborted requests.
#include <chrono>
#include <thread>

#include "server/text_adapter.h"
#include "server_fixture.h"

namespace dcu::server::testing {
namespace {

using nlohmann::json;
namespace net = boost::asio;

// The value of one metric line, or -1 when absent.
double metric(int port, const std::string& line_prefix) {
  const std::string body = call(port, "GET", "/metrics").body;
  const size_t at = body.find(line_prefix + " ");
  return at == std::string::npos ? -1 : std::stod(body.substr(at + line_prefix.size() + 1));
}

const std::string kAborted = "vllm:request_success_total{model_name=\"test-model\",finished_reason=\"abort\"}";
const std::string kGenerated = "vllm:generation_tokens_total{model_name=\"test-model\"}";

// Waits (bounded) until the metric reaches `want`.
double wait_metric(int port, const std::string& line, double want) {
  double v = metric(port, line);
  for (int i = 0; i < 200 && v < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = metric(port, line);
  }
  return v;
}

TEST_F(ServerTest, AbortedRequestsAndTheirTokensAreCounted) {
  start(byte_ids("abcdefgh"));
  {  // mid-stream: the tokens already streamed count as generated
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 200}, {"stream", true}});
    std::string got;
    char buf[512];
    while (got.find("\"text\":\"b\"") == std::string::npos) got.append(buf, s.read_some(net::buffer(buf)));
    s.close();
    EXPECT_EQ(wait_metric(port_, kAborted, 1), 1);
    EXPECT_GE(metric(port_, kGenerated), 2);
  }
  engine_->set_paused(true);
  {  // before the first token, and an n = 4 stream: every choice is an aborted request
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 20}, {"stream", true}, {"n", 4}});
    ASSERT_TRUE(engine_->wait_submitted(5));
    abort_connection(s);
    EXPECT_EQ(wait_metric(port_, kAborted, 5), 5);
  }
  {  // non-streaming, the client gives up and resets the connection
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 20}});
    ASSERT_TRUE(engine_->wait_submitted(6));
    abort_connection(s);
    EXPECT_EQ(wait_metric(port_, kAborted, 6), 6);
  }
}

// dcuserve:requests_submitted_total counts the engine requests the engine took; once nothing runs, it
// equals what request_success_total counts over every reason. A refused request (503) is in neither.
TEST_F(ServerTest, EverySubmittedRequestEndsInOneFinishReason) {
  start(byte_ids("abcdefgh"));
  const std::string labels = "{model_name=\"test-model\"";
  const std::string submitted = "dcuserve:requests_submitted_total" + labels + "}";
  auto finished = [&](const char* reason) {
    return metric(port_, "vllm:request_success_total" + labels + ",finished_reason=\"" + reason + "\"}");
  };
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}, {"n", 2}}).status, 200);  // 2 x length
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 8}, {"stop", "c"}}).status, 200);  // stop string
  {
    net::io_context ioc;
    auto s = open_completion(ioc, port_, {{"prompt", "x"}, {"max_tokens", 200}, {"stream", true}});
    ASSERT_TRUE(engine_->wait_submitted(4));
    abort_connection(s);
    EXPECT_EQ(wait_metric(port_, kAborted, 1), 1);
  }
  engine_->set_max_active(0);
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}}).status, 503);
  EXPECT_EQ(metric(port_, submitted), 4);
  EXPECT_EQ(finished("length"), 2);
  EXPECT_EQ(finished("stop"), 1);
  EXPECT_EQ(finished("error"), 0);
}

TEST_F(ServerTest, StopTokenTextIsLeftOutAndNamedInStopReason) {
  start(byte_ids("Compiler"));
  const int32_t stop_id = 'p';
  auto j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 20}, {"stop_token_ids", {stop_id}}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Com");  // vLLM: "Com", not "Comp"
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["stop_reason"], stop_id);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);  // the stop token is still a generated token
  j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 20}, {"stop_token_ids", {stop_id}},
                               {"include_stop_str_in_output", true}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Comp");

  j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 20}, {"stop", {"pi"}}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "Com");
  EXPECT_EQ(j["choices"][0]["stop_reason"], "pi");
  j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 20}, {"stop", {"pi"}}, {"include_stop_str_in_output", true}})
          .json();
  EXPECT_EQ(j["choices"][0]["text"], "Compi");

  j = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"stop", "le"}}).json();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Compi");
  EXPECT_EQ(j["choices"][0]["stop_reason"], "le");
  j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}}).json();
  EXPECT_EQ(j["choices"][0]["stop_reason"], nullptr);  // length
}

TEST_F(ServerTest, ShapesClientsExpect) {
  start(byte_ids("Fine."));
  const json chat = {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 3}};
  auto j = post("/v1/chat/completions", chat).json();
  ASSERT_TRUE(j.contains("system_fingerprint"));
  EXPECT_EQ(j["choices"][0]["message"]["refusal"], nullptr);
  ASSERT_TRUE(j["choices"][0]["message"].contains("refusal"));

  json req = chat;
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto sse = split_sse(post("/v1/chat/completions", req).body);
  ASSERT_GE(sse.events.size(), 3u);
  for (size_t i = 0; i + 1 < sse.events.size(); ++i) {
    ASSERT_TRUE(sse.events[i].contains("usage")) << sse.events[i].dump();
    EXPECT_TRUE(sse.events[i]["usage"].is_null());
  }
  EXPECT_EQ(sse.events.back()["usage"]["completion_tokens"], 3);

  req["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  sse = split_sse(post("/v1/chat/completions", req).body);
  int last = -1;
  for (const auto& e : sse.events) {
    ASSERT_TRUE(e["usage"].is_object()) << e.dump();
    EXPECT_GE(e["usage"]["completion_tokens"].get<int>(), last);
    last = e["usage"]["completion_tokens"];
  }
  EXPECT_EQ(last, 3);

  auto model = call(port_, "GET", "/v1/models/test-model");
  EXPECT_EQ(model.status, 200);
  EXPECT_EQ(model.json()["id"], "test-model");
  EXPECT_EQ(model.json()["object"], "model");
  EXPECT_EQ(call(port_, "GET", "/v1/models/other").status, 404);
}

TEST_F(ServerTest, TruncatePromptTokensKeepsTheLastTokens) {
  start(byte_ids("ok"));
  auto r = post("/v1/completions", {{"prompt", "abcdef"}, {"max_tokens", 1}, {"truncate_prompt_tokens", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(engine_->submitted().back().prompt, byte_ids("ef"));
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 2);
  post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 1},
                                {"truncate_prompt_tokens", 3}});
  EXPECT_EQ(engine_->submitted().back().prompt, byte_ids("t: "));  // the end of "...assistant: "
  post("/v1/completions", {{"prompt", "ab"}, {"max_tokens", 1}, {"truncate_prompt_tokens", 5}});
  EXPECT_EQ(engine_->submitted().back().prompt, byte_ids("ab")) << "shorter prompts are kept whole";
  r = post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 1}, {"truncate_prompt_tokens", 100000}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "truncate_prompt_tokens");
}

TEST_F(ServerTest, PromptLogprobsAndTokenIds) {
  start(byte_ids("hi"));
  auto j = post("/v1/completions", {{"prompt", "ab"}, {"max_tokens", 1}, {"prompt_logprobs", 1}, {"logprobs", 0},
                                    {"return_tokens_as_token_ids", true}})
               .json();
  const auto& p = j["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0].is_null());
  const auto& b = p[1][std::to_string(int('b'))];
  EXPECT_EQ(b["decoded_token"], "token_id:98");
  EXPECT_TRUE(b.contains("logprob"));
  EXPECT_TRUE(b.contains("rank"));
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"][0], "token_id:104");

  j = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 1},
                                    {"prompt_logprobs", 0}})
          .json();
  ASSERT_TRUE(j["prompt_logprobs"].is_array()) << j.dump();
  EXPECT_TRUE(j["prompt_logprobs"][0].is_null());
  EXPECT_EQ(j["prompt_logprobs"][1].begin().value()["decoded_token"], "s");  // "user: q..." second token

  // n choices share the prompt: only the first engine request computes its logprobs.
  j = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 1},
                                    {"prompt_logprobs", 0}, {"n", 2}})
          .json();
  EXPECT_TRUE(j["prompt_logprobs"].is_array());
  const auto sent = engine_->submitted();
  ASSERT_GE(sent.size(), 2u);
  EXPECT_EQ(sent[sent.size() - 2].sampling.prompt_logprobs, 0);
  EXPECT_EQ(sent.back().sampling.prompt_logprobs, -1);

  auto r = post("/v1/completions", {{"prompt", "ab"}, {"prompt_logprobs", 1}, {"stream", true}});
  EXPECT_EQ(r.status, 400);
}

TEST_F(ServerTest, TextOffsetsCountCharactersOfTheReturnedText) {
  start(byte_ids("h\xc3\xa9llo"));  // "héllo": the é is two byte tokens
  auto j = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 6}, {"logprobs", 0}}).json();
  EXPECT_EQ(j["choices"][0]["text"], "h\xc3\xa9llo");
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({0, 1, 1, 2, 3, 4}));
}

TEST(ParallelToolCalls, FalseReturnsAtMostOneCall) {
  auto text = load_model_text("models/dcuserve-demo", {"", "", "qwen3_coder"});
  const std::string two_calls =
      "<tool_call>\n<function=a>\n</function>\n</tool_call>\n<tool_call>\n<function=b>\n</function>\n</tool_call>";
  const auto script = text->encode(two_calls);
  FakeEngine engine(script, 4096);
  ServerConfig cfg;
  cfg.served_model_names = {"m"};
  cfg.tool_call_parser = "qwen3_coder";
  cfg.enable_auto_tool_choice = true;
  Metrics metrics("m");
  ServerContext ctx{engine, *text, metrics, cfg};
  HttpServer server(ctx);
  const int port = server.listen();
  std::thread runner([&] { server.run(false); });
  json req = {{"messages", {{{"role", "user"}, {"content", "q"}}}},
              {"max_tokens", int(script.size())},
              {"tools", {{{"type", "function"}, {"function", {{"name", "a"}}}},
                         {{"type", "function"}, {"function", {{"name", "b"}}}}}}};
  auto both = call(port, "POST", "/v1/chat/completions", req.dump()).json();
  EXPECT_EQ(both["choices"][0]["message"]["tool_calls"].size(), 2u) << both.dump();
  req["parallel_tool_calls"] = false;
  auto one = call(port, "POST", "/v1/chat/completions", req.dump()).json();
  ASSERT_EQ(one["choices"][0]["message"]["tool_calls"].size(), 1u) << one.dump();
  EXPECT_EQ(one["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "a");
  server.stop();
  runner.join();
}

}  // namespace
}  // namespace dcu::server::testing
