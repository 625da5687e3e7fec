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
  for (float x : logits) sum += std::exp(x - max);  // f32 exp (2x faster), f64 sum
  return double(max) + std::log(sum);
}

// The k largest entries of a row as (value, id), largest first, ties by lower id. Small k: one pass
// with a k-entry heap (no vocabulary-sized copy); large k: select, then sort the selection.
std::vector<std::pair<float, int32_t>> top_entries(std::span<const float> row, int k) {
  using Entry = std::pair<float, int32_t>;
  auto better = [](const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  k = std::min<int>(k, int(row.size()));
  if (size_t(k) * 16 > row.size()) {
    std::vector<Entry> all(row.size());
    for (size_t i = 0; i < row.size(); ++i) all[i] = {row[i], int32_t(i)};
    std::nth_element(all.begin(), all.begin() + k, all.end(), better);
    all.resize(size_t(k));
    std::sort(all.begin(), all.end(), better);
    return all;
  }
  std::vector<Entry> heap;  // the k best so far; heap.front() is the worst of them
  heap.reserve(size_t(k));
  for (size_t i = 0; i < row.size(); ++i) {
    const Entry e{row[i], int32_t(i)};
    if (int(heap.size()) < k) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (k > 0 && better(e, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
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
  std::vector<double> weight(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += weight[i] = std::exp((logits[i] - top) * inv_t);
  const double u = std::uniform_real_distribution<double>(0.0, sum)(rng_);
  double cum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    cum += weight[i];
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
  if (params_.top_k <= 0) {
    // Without top-k, widen the prefix (x8 at a time) until it holds every token top-p or min-p keeps.
    const double top = double(cand[0].first) * inv_t;
    double all = 0;
    for (float x : logits) all += std::exp(float(x * inv_t - top));
    auto prefix_enough = [&] {
      if (int(cand.size()) >= V) return true;
      if (params_.top_p < 1.0f) return sum / all >= params_.top_p;
      return p.back() < params_.min_p * p[0];  // min-p only: the rest falls below the floor
    };
    while (!prefix_enough()) {
      k = int(std::min<int64_t>(int64_t(k) * 8, V));
      cand = top_entries(logits, k);
      sum = probabilities();
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
