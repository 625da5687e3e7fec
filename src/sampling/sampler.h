#pragma once
// Per-request sampling: penalties, temperature, top-k, top-p, min-p, logprobs, with a request-owned
// random generator so a seeded request samples the same tokens whatever else shares its batch.

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/engine_api.h"

namespace dcu {

class Sampler {
 public:
  // `prompt` feeds the repetition penalty; `default_seed` is used when params.seed is unset.
  Sampler(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t default_seed);

  // Picks the next token from one row of logits [V] (modified in place). `banned` ids get -inf
  // (eos before min_tokens). Logprobs, when requested, are of the unprocessed logits, as vLLM reports.
  SampledToken sample(std::span<float> logits, std::span<const int32_t> banned = {});

  // Records a generated token (penalties count output tokens).
  void accept(int32_t token);

  // Logprob of `token` and the top k under one row of raw logits (prompt logprobs).
  static SampledToken logprobs_of(std::span<const float> logits, int32_t token, int top_k);

 private:
  void apply_penalties(std::span<float> logits) const;
  int32_t sample_full(std::span<const float> logits);
  int32_t sample_truncated(std::span<const float> logits);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int> output_counts_;
  std::vector<int32_t> prompt_tokens_;  // distinct ids of the prompt (repetition penalty)
};

}  // namespace dcu
