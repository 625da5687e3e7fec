#pragma once
// --speculative-config, as vLLM takes it: a JSON object {"method": "mtp", "num_speculative_tokens": k}.
// The method names vLLM uses for Qwen3.5's multi-token-prediction block ("mtp", "qwen3_5_mtp",
// "qwen3_next_mtp") all mean the same drafter.

#include <string>

namespace dcu {

constexpr int kMaxSpeculativeTokens = 8;

struct SpeculativeConfig {
  int num_speculative_tokens = 0;  // 0: off
};

// Throws dcu::Error naming what is wrong: not JSON, not an object, an unknown method or key, k outside
// 1..kMaxSpeculativeTokens.
SpeculativeConfig parse_speculative_config(const std::string& json_text);

}  // namespace dcu
