// The periodic log lines: vLLM's wording, rates over the interval, and the speculative counters as
// differences since the last lines.

#include <gtest/gtest.h>

#include "engine/stats_log.h"

namespace dcu {
namespace {

TEST(StatsLog, ThroughputLine) {
  EngineStats now;
  now.running = 3;
  now.waiting = 1;
  now.kv_cache_usage = 0.25;
  EXPECT_EQ(throughput_line(10.0, 1234, 567, now),
            "Avg prompt throughput: 123.4 tokens/s, Avg generation throughput: 56.7 tokens/s, Running: 3 reqs, "
            "Waiting: 1 reqs, GPU KV cache usage: 25.0%");
}

TEST(StatsLog, SpeculativeLineCountsTheIntervalOnly) {
  EngineStats since, now;
  since.spec_drafts = 100, since.spec_draft_tokens = 200, since.spec_accepted_tokens = 150;
  since.spec_accepted_per_position = {90, 60};
  now.spec_drafts = 140, now.spec_draft_tokens = 280, now.spec_accepted_tokens = 200;
  now.spec_accepted_per_position = {120, 80};  // +30 and +20 of 40 drafts
  EXPECT_EQ(speculative_line(10.0, since, now),
            "SpecDecoding metrics: Mean acceptance length: 2.25, Accepted throughput: 5.00 tokens/s, Drafted "
            "throughput: 8.00 tokens/s, Accepted: 50 tokens, Drafted: 80 tokens, Per-position acceptance rate: "
            "0.750, 0.500, Avg Draft acceptance rate: 62.5%");
}

}  // namespace
}  // namespace dcu
