#include "engine/stats_log.h"

#include <fmt/format.h>

#include "core/log.h"

namespace dcu {

std::string throughput_line(double seconds, uint64_t prompt_tokens, uint64_t generated_tokens, const EngineStats& now) {
  return fmt::format("Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} tokens/s, Running: {} "
                     "reqs, Waiting: {} reqs, GPU KV cache usage: {:.1f}%",
                     double(prompt_tokens) / seconds, double(generated_tokens) / seconds, now.running, now.waiting,
                     100.0 * now.kv_cache_usage);
}

std::string speculative_line(double seconds, const EngineStats& since, const EngineStats& now) {
  const double drafts = double(now.spec_drafts - since.spec_drafts);
  const double drafted = double(now.spec_draft_tokens - since.spec_draft_tokens);
  const double accepted = double(now.spec_accepted_tokens - since.spec_accepted_tokens);
  std::string per_position;
  for (size_t i = 0; i < now.spec_accepted_per_position.size(); ++i) {
    const uint64_t before = i < since.spec_accepted_per_position.size() ? since.spec_accepted_per_position[i] : 0;
    per_position += fmt::format("{}{:.3f}", i ? ", " : "", double(now.spec_accepted_per_position[i] - before) / drafts);
  }
  return fmt::format("SpecDecoding metrics: Mean acceptance length: {:.2f}, Accepted throughput: {:.2f} tokens/s, "
                     "Drafted throughput: {:.2f} tokens/s, Accepted: {:.0f} tokens, Drafted: {:.0f} tokens, "
                     "Per-position acceptance rate: {}, Avg Draft acceptance rate: {:.1f}%",
                     1.0 + accepted / drafts, accepted / seconds, drafted / seconds, accepted, drafted, per_position,
                     100.0 * accepted / drafted);
}

void StatsLog::log(const EngineStats& now, Clock::time_point time) {
  const double seconds = std::chrono::duration<double>(time - last_).count();
  if (prompt_tokens_ + generated_tokens_ > 0) {
    log::info("{}", throughput_line(seconds, prompt_tokens_, generated_tokens_, now));
    if (now.spec_drafts > logged_.spec_drafts) log::info("{}", speculative_line(seconds, logged_, now));
  }
  last_ = time;
  prompt_tokens_ = generated_tokens_ = 0;
  logged_ = now;
}

}  // namespace dcu
