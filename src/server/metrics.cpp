#include "server/metrics.h"

#include <fmt/format.h>

namespace dcu::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  double s = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(s, s + value, std::memory_order_relaxed)) {
  }
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    std::string le = i < bounds_.size() ? fmt::format("{}", bounds_[i]) : "+Inf";
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, cumulative);
  }
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_.load(std::memory_order_relaxed));
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, cumulative);
}

namespace {

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

// Bucket bounds are vLLM's.
Metrics::Metrics(std::string model_name)
    : labels_(fmt::format("model_name=\"{}\"", escape_label(model_name))),
      ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
             80.0, 160.0, 640.0, 2560.0}),
      tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
            960.0, 1920.0, 7680.0}) {}

void Metrics::request_finished(FinishReason reason, int prompt_tokens, int generation_tokens, double e2e_seconds) {
  finished_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  prompt_tokens_.fetch_add(static_cast<uint64_t>(prompt_tokens), std::memory_order_relaxed);
  generation_tokens_.fetch_add(static_cast<uint64_t>(generation_tokens), std::memory_order_relaxed);
  e2e_.observe(e2e_seconds);
}

std::string Metrics::render(const EngineStats& stats) const {
  std::string out;
  header(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
  out += fmt::format("vllm:num_requests_running{{{}}} {}\n", labels_, stats.running);
  header(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
  out += fmt::format("vllm:num_requests_waiting{{{}}} {}\n", labels_, stats.waiting);
  header(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  out += fmt::format("vllm:kv_cache_usage_perc{{{}}} {}\n", labels_, stats.kv_cache_usage);
  header(out, "vllm:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.");
  out += fmt::format("vllm:num_preemptions_total{{{}}} {}\n", labels_, stats.preemptions);
  header(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
  out += fmt::format("vllm:prompt_tokens_total{{{}}} {}\n", labels_, prompt_tokens_.load());
  header(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
  out += fmt::format("vllm:generation_tokens_total{{{}}} {}\n", labels_, generation_tokens_.load());
  header(out, "vllm:request_success_total", "counter", "Count of finished requests by finish reason.");
  static const char* kReasons[] = {"stop", "length", "abort", "error"};
  for (size_t i = 0; i < finished_.size(); ++i)
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels_, kReasons[i],
                       finished_[i].load());
  // Not a vLLM series: what lets a dashboard (or the soak test) check that every request ended, i.e. that
  // submitted = the sum of request_success_total over its reasons + running + waiting.
  header(out, "dcuserve:requests_submitted_total", "counter",
         "Engine requests (prompts x n) accepted; each ends in one request_success_total.");
  out += fmt::format("dcuserve:requests_submitted_total{{{}}} {}\n", labels_, submitted_.load());
  if (!stats.spec_accepted_per_position.empty()) {  // speculative decoding is on
    header(out, "vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.");
    out += fmt::format("vllm:spec_decode_num_drafts_total{{{}}} {}\n", labels_, stats.spec_drafts);
    header(out, "vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.");
    out += fmt::format("vllm:spec_decode_num_draft_tokens_total{{{}}} {}\n", labels_, stats.spec_draft_tokens);
    header(out, "vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.");
    out += fmt::format("vllm:spec_decode_num_accepted_tokens_total{{{}}} {}\n", labels_, stats.spec_accepted_tokens);
    header(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Accepted tokens per draft position.");
    for (size_t i = 0; i < stats.spec_accepted_per_position.size(); ++i)
      out += fmt::format("vllm:spec_decode_num_accepted_tokens_per_pos_total{{{},position=\"{}\"}} {}\n", labels_, i,
                         stats.spec_accepted_per_position[i]);
  }
  header(out, "vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
  ttft_.render(out, "vllm:time_to_first_token_seconds", labels_);
  header(out, "vllm:time_per_output_token_seconds", "histogram", "Histogram of time per output token in seconds.");
  tpot_.render(out, "vllm:time_per_output_token_seconds", labels_);
  header(out, "vllm:e2e_request_latency_seconds", "histogram", "Histogram of end to end request latency in seconds.");
  e2e_.render(out, "vllm:e2e_request_latency_seconds", labels_);
  return out;
}

}  // namespace dcu::server
