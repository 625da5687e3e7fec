#pragma once
// Prometheus text exposition with vLLM's metric names (`vllm:` prefix), so existing dashboards work.
// Counters and histograms are lock-free; gauges are read from the engine when scraped.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_api.h"

namespace dcu::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends `name_bucket{...,le=...}`, `name_sum`, `name_count` lines.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> counts_;  // per bucket (not cumulative), last = +Inf
  std::atomic<double> sum_{0.0};
};

class Metrics {
 public:
  explicit Metrics(std::string model_name);

  // Engine requests (prompts x n of one HTTP request) the engine accepted; each ends in request_finished.
  void requests_submitted(int count) { submitted_.fetch_add(uint64_t(count), std::memory_order_relaxed); }
  void request_finished(FinishReason reason, int prompt_tokens, int generation_tokens, double e2e_seconds);
  void time_to_first_token(double seconds) { ttft_.observe(seconds); }
  void time_per_output_token(double seconds) { tpot_.observe(seconds); }

  std::string render(const EngineStats& stats) const;

 private:
  std::string labels_;  // model_name="..."
  std::atomic<uint64_t> submitted_{0};
  std::array<std::atomic<uint64_t>, 4> finished_{};  // by FinishReason
  std::atomic<uint64_t> prompt_tokens_{0};
  std::atomic<uint64_t> generation_tokens_{0};
  Histogram ttft_;
  Histogram tpot_;
  Histogram e2e_;
};

}  // namespace dcu::server
