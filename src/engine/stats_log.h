#pragma once
// The engine's periodic log lines, as vLLM writes them (every 10 s while there is work): prompt and
// generation throughput, running and waiting requests and KV-cache usage; with speculative decoding a
// second line with the mean acceptance length (1 + accepted / drafts) and each draft position's rate.

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/engine_api.h"

namespace dcu {

class StatsLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StatsLog(Clock::duration interval = std::chrono::seconds(10)) : interval_(interval) {}

  void count_step(int prompt_tokens, int generated_tokens) {
    prompt_tokens_ += uint64_t(prompt_tokens);
    generated_tokens_ += uint64_t(generated_tokens);
  }
  // Whether the interval has passed since the last lines (then the caller gathers the stats for log()).
  bool due(Clock::time_point time = Clock::now()) const { return time - last_ >= interval_; }
  // The lines, if anything was computed since the last ones; `now` has the gauges and the cumulative
  // speculative counters.
  void log(const EngineStats& now, Clock::time_point time = Clock::now());

 private:
  Clock::duration interval_;
  Clock::time_point last_ = Clock::now();
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  EngineStats logged_;  // the speculative counters at the last lines
};

// The lines for one interval of `seconds`; `since` holds the speculative counters at its start.
std::string throughput_line(double seconds, uint64_t prompt_tokens, uint64_t generated_tokens, const EngineStats& now);
std::string speculative_line(double seconds, const EngineStats& since, const EngineStats& now);

}  // namespace dcu
