#pragma once
// Per-request sampling: penalties, temperature, top-k, top-p, min-p, logprobs, with a request-owned
// random generator so a seeded request samples the same tokens whatever else shares its batch.
//
// Two ways in, one choice. sample(row) reads a whole row of logits on the host. The device way
// (BatchSampler) turns the penalties into adjustments the backend applies, asks the backend for the
// row's top candidates and softmax sums, and lets sample_candidates() choose from them; when they do
// not decide (the random number falls in a long tail), sample_processed() finishes with the row and
// the same random number. Either way the tokens are ranked by value (equal values by lower id), and
// plain temperature sampling walks the candidate_count() most likely tokens first, then the rest in id
// order, so both ways give the same token for the same random number.

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/top_k.h"
#include "engine/engine_api.h"

namespace dcu {

// x = (x > 0 ? x / scale : x * scale) - bias on one token's logit (Backend::adjust_logits).
struct LogitAdjustment {
  int32_t id = 0;
  float scale = 1.0f;
  float bias = 0.0f;
};

// What the device reports of one processed row (Backend::logit_summary).
struct RowCandidates {
  std::span<const float> values;  // the largest logits, largest first
  std::span<const int32_t> ids;
  int vocab = 0;                  // the row's length
  double log_normalizer = 0;      // log sum exp over the row
  double temperature_mass = 0;    // sum exp((x - max) * inverse_temperature()) over the row
};

class Sampler {
 public:
  // `prompt` feeds the repetition penalty; `default_seed` is used when params.seed is unset.
  Sampler(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t default_seed);

  // Picks the next token from one row of logits [V] (modified in place). `banned` ids get -inf
  // (eos before min_tokens). Logprobs, when requested, are of the unprocessed logits, as vLLM reports.
  SampledToken sample(std::span<float> logits, std::span<const int32_t> banned = {});
  // sample() with the constraint's mask already filled: allowed [ceil(V / 32)] and the bans
  // fill_constraint_mask kept (a mask filled beside the engine thread; BatchSampler's late rows).
  SampledToken sample_allowed(std::span<float> logits, std::span<const uint32_t> allowed,
                              std::span<const int32_t> kept_bans);

  // --- the device way ---
  // True when only sample() can serve this token: logprobs of raw logits that adjustments change
  // (`adjusted`: append_adjustments gave entries), or a top_k beyond what the device summarises.
  // A constraint's mask is applied on the device (fill_constraint_mask); logprobs are then of the
  // masked logits, as sample() reports them.
  bool needs_whole_row(bool adjusted) const;
  // How many of the most likely tokens the choice reads first.
  int candidate_count() const;
  // 1 / temperature (1 when greedy), for the temperature mass.
  float inverse_temperature() const;
  // Appends this token's penalties and bans, one entry per id.
  void append_adjustments(std::span<const int32_t> banned, std::vector<LogitAdjustment>& out) const;
  // The choice from the candidates, or nullopt when it needs the whole processed row.
  std::optional<SampledToken> sample_candidates(const RowCandidates& candidates);
  // Finishes a choice sample_candidates() left open, with the processed row [V].
  SampledToken sample_processed(std::span<const float> row, const RowCandidates& candidates);

  // Records a generated token (penalties count output tokens; a constraint advances).
  void accept(int32_t token);
  // A structured-output constraint masks this token.
  bool constrained() const;
  // When constrained(): sets the bits of the tokens that may come next in allowed [ceil(vocab / 32)]
  // and returns the bans that stay (none when they would leave no allowed token: the grammar decides,
  // e.g. an output that is complete must end).
  std::span<const int32_t> fill_constraint_mask(std::span<uint32_t> allowed, std::span<const int32_t> banned,
                                                int vocab);

  // Logprob of `token` and the top k under one row of raw logits (prompt logprobs).
  static SampledToken logprobs_of(std::span<const float> logits, int32_t token, int top_k);

 private:
  struct RowView;
  std::optional<int32_t> choose(RowView& view);
  std::optional<int32_t> choose_plain(RowView& view, double u);
  std::optional<int32_t> choose_truncated(RowView& view, double u);
  SampledToken with_logprobs(const RowView& view, int32_t chosen, double log_normalizer) const;
  bool greedy() const;
  SampledToken sample_unconstrained(std::span<float> logits, std::span<const int32_t> banned);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::optional<double> pending_uniform_;  // the random number of a choice left open
  std::unordered_map<int32_t, int> output_counts_;
  std::vector<int32_t> prompt_tokens_;  // distinct ids of the prompt (repetition penalty)
  std::vector<uint32_t> mask_;          // the constraint's allowed tokens, one bit each
};

}  // namespace dcu
