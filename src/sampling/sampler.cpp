#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace dcu {
namespace {

constexpr float kGreedyTemperature = 1e-5f;

// log-sum-exp of a row, for log-softmax.
double log_normalizer(std::span<const float> logits) {
  float max = -std::numeric_limits<float>::infinity();
  for (float x : logits) max = std::max(max, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - max);
  return double(max) + std::log(sum);
}

// The k largest entries of a row as (value, id), largest first, ties by lower id.
std::vector<std::pair<float, int32_t>> top_entries(std::span<const float> row, int k) {
  std::vector<std::pair<float, int32_t>> all(row.size());
  for (size_t i = 0; i < row.size(); ++i) all[i] = {row[i], int32_t(i)};
  auto better = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  k = std::min<int>(k, int(all.size()));
  std::partial_sort(all.begin(), all.begin() + k, all.end(), better);
  all.resize(size_t(k));
  return all;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t default_seed)
    : params_(params), rng_(params.seed.value_or(default_seed)) {
  if (params_.repetition_penalty != 1.0f) {
    std::unordered_set<int32_t> seen(prompt.begin(), prompt.end());
    prompt_tokens_.assign(seen.begin(), seen.end());
  }
}

void Sampler::accept(int32_t token) { ++output_counts_[token]; }

void Sampler::apply_penalties(std::span<float> logits) const {
  // As vLLM: repetition penalty over prompt and output tokens (divide positive logits, multiply
  // negative ones), then frequency and presence penalties over output tokens.
  if (params_.repetition_penalty != 1.0f) {
    auto penalize = [&](int32_t id) {
      float& x = logits[size_t(id)];
      x = x > 0 ? x / params_.repetition_penalty : x * params_.repetition_penalty;
    };
    std::unordered_set<int32_t> done;
    for (int32_t id : prompt_tokens_) done.insert(id), penalize(id);
    for (const auto& [id, _] : output_counts_)
      if (!done.count(id)) penalize(id);
  }
  for (const auto& [id, count] : output_counts_)
    logits[size_t(id)] -= params_.frequency_penalty * float(count) + params_.presence_penalty;
}

SampledToken Sampler::logprobs_of(std::span<const float> logits, int32_t token, int top_k) {
  const double norm = log_normalizer(logits);
  SampledToken out;
  out.id = token;
  out.logprob = float(double(logits[size_t(token)]) - norm);
  if (top_k > 0)
    for (const auto& [value, id] : top_entries(logits, top_k)) out.top.push_back({id, float(double(value) - norm)});
  return out;
}

SampledToken Sampler::sample(std::span<float> logits, std::span<const int32_t> banned) {
  // Raw logprobs are taken before any processing; keep what we need of the raw row.
  std::vector<float> raw;
  if (params_.logprobs >= 0) raw.assign(logits.begin(), logits.end());

  apply_penalties(logits);
  for (int32_t id : banned) logits[size_t(id)] = -std::numeric_limits<float>::infinity();

  int32_t chosen;
  if (params_.temperature < kGreedyTemperature) {
    chosen = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  } else if (params_.top_k <= 0 && params_.top_p >= 1.0f && params_.min_p <= 0.0f) {
    chosen = sample_full(logits);
  } else {
    chosen = sample_truncated(logits);
  }
  if (params_.logprobs >= 0) return logprobs_of(raw, chosen, params_.logprobs);
  return SampledToken{chosen, 0.0f, {}};
}


// Plain temperature sampling over the whole vocabulary, in id order.
int32_t Sampler::sample_full(std::span<const float> logits) {
  const float inv_t = 1.0f / params_.temperature;
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x - top) * inv_t);
  const double u = std::uniform_real_distribution<double>(0.0, sum)(rng_);
  double cum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    cum += std::exp(double(logits[i] - top) * inv_t);
    if (u < cum) return int32_t(i);
  }
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Sampling after top-k, top-p and min-p truncation (applied in that order, as vLLM does).
int32_t Sampler::sample_truncated(std::span<const float> logits) {
  const float inv_t = 1.0f / params_.temperature;
  const int V = int(logits.size());
  // Candidates, most likely first: top-k if set, else a prefix that top-p/min-p usually need; the
  // whole vocabulary when that prefix does not reach top_p.
  int k = params_.top_k > 0 ? std::min(params_.top_k, V) : std::min(V, 1024);
  std::vector<std::pair<float, int32_t>> cand = top_entries(logits, k);
  std::vector<double> p(cand.size());
  auto probabilities = [&]() {
    p.resize(cand.size());
    const double top = double(cand[0].first) * inv_t;
    double sum = 0;
    for (size_t i = 0; i < cand.size(); ++i) sum += p[i] = std::exp(double(cand[i].first) * inv_t - top);
    return sum;
  };
  double sum = probabilities();
  if (params_.top_k <= 0 && k < V) {
    // Mass of the prefix relative to the whole vocabulary at this temperature.
    const double top = double(cand[0].first) * inv_t;
    double all = 0;
    for (float x : logits) all += std::exp(double(x) * inv_t - top);
    const bool prefix_enough = params_.top_p < 1.0f ? sum / all >= params_.top_p : false;
    if (!prefix_enough && params_.top_p < 1.0f) {
      cand = top_entries(logits, V);
      sum = probabilities();
    } else if (params_.top_p >= 1.0f) {
      // min-p only: tokens outside the prefix fall below min_p * p_max unless min_p is tiny.
      const double p_last = p.back() / sum;
      if (p_last >= params_.min_p * (p[0] / sum)) {
        cand = top_entries(logits, V);
        sum = probabilities();
      }
    }
  }
  for (double& x : p) x /= sum;
  size_t keep = cand.size();
  if (params_.top_p < 1.0f) {  // smallest prefix whose mass reaches top_p
    double cum = 0;
    for (size_t i = 0; i < cand.size(); ++i) {
      cum += p[i];
      if (cum >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (params_.min_p > 0.0f) {
    const double floor = params_.min_p * p[0];
    size_t i = 1;
    while (i < keep && p[i] >= floor) ++i;
    keep = i;
  }
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += p[i];
  const double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (u < cum) return cand[i].second;
  }
  return cand[keep - 1].second;
}

}  // namespace dcu
