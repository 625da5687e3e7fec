// SSE framing and the Prometheus text exposition.
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "http_test_client.h"
#include "server/metrics.h"
#include "server/sse.h"

namespace dcu::server {
namespace {

TEST(Sse, FramingSurvivesNewlinesAndBadUtf8) {
  nlohmann::ordered_json chunk = {{"text", "line1\n\nline2\r\n"}, {"bytes", std::string("\xe4\xb8", 2)}};
  const std::string body = sse_event(chunk) + sse_event({{"n", 1}}) + sse_done();
  auto parsed = testing::split_sse(body);  // throws on bad framing
  ASSERT_EQ(parsed.events.size(), 2u);
  EXPECT_TRUE(parsed.done);
  EXPECT_EQ(parsed.events[0]["text"], "line1\n\nline2\r\n");
  EXPECT_EQ(parsed.events[0]["bytes"], "\xef\xbf\xbd");  // a cut UTF-8 character becomes U+FFFD
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

// Checks every line against the text exposition format 0.0.4 and returns the samples by series.
std::map<std::string, double> parse_exposition(const std::string& text) {
  static const std::regex comment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+)");
  static const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? ([-+0-9.eE]+|\+Inf|NaN))");
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, comment)) continue;
    EXPECT_TRUE(std::regex_match(line, m, sample)) << line;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST(Metrics, ExpositionFormatAndHistogramInvariants) {
  Metrics metrics("my \"model\"");
  metrics.time_to_first_token(0.003);
  metrics.time_to_first_token(0.3);
  metrics.time_to_first_token(5000.0);  // beyond the last bound: only +Inf
  metrics.time_per_output_token(0.02);
  metrics.requests_submitted(2);
  metrics.requests_submitted(1);
  metrics.request_finished(FinishReason::Stop, 10, 5, 1.2);
  metrics.request_finished(FinishReason::Length, 7, 16, 0.4);
  metrics.request_finished(FinishReason::Abort, 3, 0, 0.1);
  EngineStats stats;
  stats.running = 2;
  stats.waiting = 1;
  stats.kv_cache_usage = 0.5;
  const std::string text = metrics.render(stats);
  auto s = parse_exposition(text);
  const std::string l = R"(model_name="my \"model\"")";
  EXPECT_EQ(s["vllm:num_requests_running{" + l + "}"], 2);
  EXPECT_EQ(s["vllm:num_requests_waiting{" + l + "}"], 1);
  EXPECT_EQ(s["vllm:kv_cache_usage_perc{" + l + "}"], 0.5);
  EXPECT_EQ(s["vllm:prompt_tokens_total{" + l + "}"], 20);
  EXPECT_EQ(s["vllm:generation_tokens_total{" + l + "}"], 21);
  EXPECT_EQ(s["vllm:request_success_total{" + l + ",finished_reason=\"stop\"}"], 1);
  EXPECT_EQ(s["vllm:request_success_total{" + l + ",finished_reason=\"length\"}"], 1);
  EXPECT_EQ(s["vllm:request_success_total{" + l + ",finished_reason=\"abort\"}"], 1);
  EXPECT_EQ(s["dcuserve:requests_submitted_total{" + l + "}"], 3);
  const std::string ttft = "vllm:time_to_first_token_seconds";
  EXPECT_EQ(s[ttft + "_bucket{" + l + ",le=\"0.001\"}"], 0);
  EXPECT_EQ(s[ttft + "_bucket{" + l + ",le=\"0.005\"}"], 1);
  EXPECT_EQ(s[ttft + "_bucket{" + l + ",le=\"0.5\"}"], 2);
  EXPECT_EQ(s[ttft + "_bucket{" + l + ",le=\"2560\"}"], 2);
  EXPECT_EQ(s[ttft + "_bucket{" + l + ",le=\"+Inf\"}"], 3);
  EXPECT_EQ(s[ttft + "_count{" + l + "}"], 3);
  EXPECT_DOUBLE_EQ(s[ttft + "_sum{" + l + "}"], 5000.303);
  // Buckets are cumulative: never decreasing in the order written.
  double previous = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(ttft + "_bucket", 0) == 0) {
      const double v = std::stod(line.substr(line.rfind(' ') + 1));
      EXPECT_GE(v, previous);
      previous = v;
    }
  // No speculative decoding, no spec_decode series.
  EXPECT_EQ(text.find("spec_decode"), std::string::npos);
  // Every series a vLLM dashboard reads is there, with a TYPE line.
  for (const char* name : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                           "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
                           "vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds",
                           "vllm:e2e_request_latency_seconds"})
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
}

TEST(Metrics, SpeculativeDecodingCountersUseVllmsNames) {
  Metrics metrics("m");
  EngineStats stats;
  stats.spec_drafts = 10;
  stats.spec_draft_tokens = 30;
  stats.spec_accepted_tokens = 17;
  stats.spec_accepted_per_position = {9, 6, 2};
  auto s = parse_exposition(metrics.render(stats));
  const std::string l = R"(model_name="m")";
  EXPECT_EQ(s["vllm:spec_decode_num_drafts_total{" + l + "}"], 10);
  EXPECT_EQ(s["vllm:spec_decode_num_draft_tokens_total{" + l + "}"], 30);
  EXPECT_EQ(s["vllm:spec_decode_num_accepted_tokens_total{" + l + "}"], 17);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(s["vllm:spec_decode_num_accepted_tokens_per_pos_total{" + l + ",position=\"" + std::to_string(i) + "\"}"],
              double(stats.spec_accepted_per_position[size_t(i)]));
}

}  // namespace
}  // namespace dcu::server
