#include "sampling/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "backend/backend.h"

namespace dcu {
namespace {

constexpr float kGreedyTemperature = 1e-5f;
// Without top_k the choice reads this many of the most likely tokens first; top-p and min-p widen
// it (x8 at a time) when they need more.
constexpr int kDefaultCandidates = 256;

// log-sum-exp of a row, for log-softmax.
double log_normalizer(std::span<const float> logits) {
  float max = -std::numeric_limits<float>::infinity();
  for (float x : logits) max = std::max(max, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(x - max);  // f32 exp (2x faster), f64 sum
  return double(max) + std::log(sum);
}

void apply_adjustments(std::span<float> logits, std::span<const LogitAdjustment> adjustments) {
  for (const LogitAdjustment& a : adjustments) {
    float& x = logits[size_t(a.id)];
    x = (x > 0 ? x / a.scale : x * a.scale) - a.bias;
  }
}

}  // namespace

// What a choice may read of one processed row: its most likely entries and total temperature mass,
// and the whole row when it is at hand.
struct Sampler::RowView {
  std::vector<ValueId> top;      // most likely first
  double mass = 0;               // sum over the row of exp((x - top[0] value) * inverse temperature)
  int vocab = 0;
  std::span<const float> row;    // empty: only `top` is known

  // Makes `top` hold at least min(k, vocab) entries; false when that needs the row and it is not here.
  bool reach(int k) {
    k = std::min(k, vocab);
    if (int(top.size()) >= k) return true;
    if (row.empty()) return false;
    top = top_entries(row, k);
    return true;
  }

  static RowView of(const RowCandidates& c, std::span<const float> row = {}) {
    RowView v;
    v.top.reserve(c.values.size());
    for (size_t i = 0; i < c.values.size(); ++i) v.top.push_back({c.values[i], c.ids[i]});
    v.mass = c.temperature_mass;
    v.vocab = c.vocab;
    v.row = row;
    return v;
  }
};

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt, uint64_t default_seed)
    : params_(params), rng_(params.seed.value_or(default_seed)) {
  if (params_.repetition_penalty != 1.0f) {
    prompt_tokens_.assign(prompt.begin(), prompt.end());
    std::sort(prompt_tokens_.begin(), prompt_tokens_.end());
    prompt_tokens_.erase(std::unique(prompt_tokens_.begin(), prompt_tokens_.end()), prompt_tokens_.end());
  }
}

bool Sampler::greedy() const { return params_.temperature < kGreedyTemperature; }

float Sampler::inverse_temperature() const { return greedy() ? 1.0f : 1.0f / params_.temperature; }

int Sampler::candidate_count() const {
  const int k = greedy() ? 1 : params_.top_k > 0 ? params_.top_k : kDefaultCandidates;
  return std::max(k, params_.logprobs);
}

void Sampler::accept(int32_t token) {
  ++output_counts_[token];
  if (params_.constraint) params_.constraint->accept(token);
}

bool Sampler::constrained() const { return params_.constraint && params_.constraint->active(); }

std::span<const int32_t> Sampler::fill_constraint_mask(std::span<uint32_t> allowed, std::span<const int32_t> banned,
                                                       int vocab) {
  params_.constraint->fill_mask(allowed);
  if (banned.empty()) return banned;
  for (int word = 0; word * 32 < vocab; ++word)
    for (uint32_t bits = allowed[size_t(word)]; bits != 0; bits &= bits - 1) {
      const int32_t id = word * 32 + std::countr_zero(bits);
      if (id < vocab && std::find(banned.begin(), banned.end(), id) == banned.end()) return banned;
    }
  return {};
}

SampledToken Sampler::sample_allowed(std::span<float> logits, std::span<const uint32_t> allowed,
                                     std::span<const int32_t> kept_bans) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (size_t id = 0; id < logits.size(); ++id)
    if (!((allowed[id >> 5] >> (id & 31)) & 1u)) logits[id] = minus_inf;
  return sample_unconstrained(logits, kept_bans);
}

// As vLLM: the repetition penalty over prompt and output tokens (divide positive logits, multiply
// negative ones), then the frequency and presence penalties over output tokens; bans last.
void Sampler::append_adjustments(std::span<const int32_t> banned, std::vector<LogitAdjustment>& out) const {
  std::unordered_map<int32_t, size_t> at;  // id -> its entry in out
  auto entry = [&](int32_t id) -> LogitAdjustment& {
    auto [it, fresh] = at.emplace(id, out.size());
    if (fresh) out.push_back({id, 1.0f, 0.0f});
    return out[it->second];
  };
  if (params_.repetition_penalty != 1.0f) {
    for (int32_t id : prompt_tokens_) entry(id).scale = params_.repetition_penalty;
    for (const auto& [id, _] : output_counts_) entry(id).scale = params_.repetition_penalty;
  }
  if (params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f)
    for (const auto& [id, count] : output_counts_)
      entry(id).bias = params_.frequency_penalty * float(count) + params_.presence_penalty;
  for (int32_t id : banned) entry(id).bias = std::numeric_limits<float>::infinity();
}

bool Sampler::needs_whole_row(bool adjusted) const {
  return candidate_count() > kMaxLogitCandidates || (params_.logprobs >= 0 && adjusted);
}

SampledToken Sampler::logprobs_of(std::span<const float> logits, int32_t token, int top_k) {
  const double norm = log_normalizer(logits);
  SampledToken out;
  out.id = token;
  out.logprob = float(double(logits[size_t(token)]) - norm);
  out.rank = 1 + int(std::count_if(logits.begin(), logits.end(), [&](float x) { return x > logits[size_t(token)]; }));
  if (top_k > 0)
    for (const auto& [value, id] : top_entries(logits, top_k)) out.top.push_back({id, float(double(value) - norm)});
  return out;
}

SampledToken Sampler::sample(std::span<float> logits, std::span<const int32_t> banned) {
  if (!constrained()) return sample_unconstrained(logits, banned);
  mask_.resize((logits.size() + 31) / 32);
  banned = fill_constraint_mask(mask_, banned, int(logits.size()));
  return sample_allowed(logits, mask_, banned);
}

SampledToken Sampler::sample_unconstrained(std::span<float> logits, std::span<const int32_t> banned) {
  // Raw logprobs are taken before any processing; keep what we need of the raw row.
  std::vector<float> raw;
  if (params_.logprobs >= 0) raw.assign(logits.begin(), logits.end());
  std::vector<LogitAdjustment> adjustments;
  append_adjustments(banned, adjustments);
  apply_adjustments(logits, adjustments);

  RowView view;
  view.vocab = int(logits.size());
  view.row = logits;
  view.top = top_entries(logits, candidate_count());
  if (!greedy()) {
    const double top = view.top[0].first, inv_t = inverse_temperature();
    for (float x : logits) view.mass += std::exp((double(x) - top) * inv_t);
  }
  const int32_t chosen = *choose(view);
  if (params_.logprobs >= 0) return logprobs_of(raw, chosen, params_.logprobs);
  return SampledToken{chosen, 0.0f, {}};
}

std::optional<SampledToken> Sampler::sample_candidates(const RowCandidates& candidates) {
  RowView view = RowView::of(candidates);
  const std::optional<int32_t> chosen = choose(view);
  if (!chosen) return std::nullopt;
  return with_logprobs(view, *chosen, candidates.log_normalizer);
}

SampledToken Sampler::sample_processed(std::span<const float> row, const RowCandidates& candidates) {
  RowView view = RowView::of(candidates, row);
  return with_logprobs(view, *choose(view), candidates.log_normalizer);
}

// The device way only serves logprobs when nothing adjusted the row: processed logits are raw ones.
SampledToken Sampler::with_logprobs(const RowView& view, int32_t chosen, double log_normalizer) const {
  SampledToken out{chosen, 0.0f, {}};
  if (params_.logprobs < 0) return out;
  auto it = std::find_if(view.top.begin(), view.top.end(), [&](const ValueId& e) { return e.second == chosen; });
  const float value = it != view.top.end() ? it->first : view.row[size_t(chosen)];
  out.logprob = float(double(value) - log_normalizer);
  for (int i = 0; i < std::min(params_.logprobs, int(view.top.size())); ++i)
    out.top.push_back({view.top[size_t(i)].second, float(double(view.top[size_t(i)].first) - log_normalizer)});
  return out;
}

std::optional<int32_t> Sampler::choose(RowView& view) {
  if (greedy()) return view.top[0].second;
  const double u = pending_uniform_ ? *pending_uniform_ : std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  pending_uniform_.reset();
  const bool plain = params_.top_k <= 0 && params_.top_p >= 1.0f && params_.min_p <= 0.0f;
  std::optional<int32_t> chosen = plain ? choose_plain(view, u) : choose_truncated(view, u);
  if (!chosen) pending_uniform_ = u;  // the retry with the whole row draws nothing new
  return chosen;
}

// Temperature sampling over the whole vocabulary: the candidate_count() most likely tokens, then the
// others in id order.
std::optional<int32_t> Sampler::choose_plain(RowView& view, double u) {
  const int k = std::min(candidate_count(), view.vocab);
  if (!view.reach(k)) return std::nullopt;
  const double top = view.top[0].first, inv_t = inverse_temperature();
  auto weight = [&](float x) { return std::exp((double(x) - top) * inv_t); };
  const double target = u * view.mass;
  double cum = 0;
  for (int i = 0; i < k; ++i) {
    cum += weight(view.top[size_t(i)].first);
    if (target < cum) return view.top[size_t(i)].second;
  }
  if (view.row.empty()) return std::nullopt;
  std::vector<bool> walked(size_t(view.vocab), false);
  for (int i = 0; i < k; ++i) walked[size_t(view.top[size_t(i)].second)] = true;
  for (int id = 0; id < view.vocab; ++id) {
    if (walked[size_t(id)]) continue;
    cum += weight(view.row[size_t(id)]);
    if (target < cum) return id;
  }
  return view.top[0].second;  // rounding left the target past the sum
}

// Sampling after top-k, top-p and min-p truncation (applied in that order, as vLLM does). Without
// top_k, probabilities are over the whole row (its temperature mass).
std::optional<int32_t> Sampler::choose_truncated(RowView& view, double u) {
  const double inv_t = inverse_temperature();
  std::vector<double> p;
  auto weights = [&](int k) {
    if (!view.reach(k)) return false;
    p.resize(size_t(std::min(k, view.vocab)));
    const double top = view.top[0].first;
    for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp((double(view.top[i].first) - top) * inv_t);
    return true;
  };
  auto sum = [&] {
    double s = 0;
    for (double x : p) s += x;
    return s;
  };
  double total;
  if (params_.top_k > 0) {
    if (!weights(params_.top_k)) return std::nullopt;
    total = sum();
  } else {
    total = view.mass;
    // The prefix must hold every token top-p keeps (min-p only: reach below its floor).
    auto decides = [&] {
      if (int(p.size()) >= view.vocab) return true;
      if (params_.top_p < 1.0f) return sum() >= params_.top_p * total;
      return p.back() < params_.min_p * p[0];
    };
    for (int k = candidate_count();; k = int(std::min<int64_t>(int64_t(k) * 8, view.vocab))) {
      if (!weights(k)) return std::nullopt;
      if (decides()) break;
    }
  }
  size_t keep = p.size();
  if (params_.top_p < 1.0f) {  // smallest prefix whose mass reaches top_p
    double cum = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      cum += p[i];
      if (cum >= params_.top_p * total) {
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
  const double target = u * mass;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += p[i];
    if (target < cum) return view.top[i].second;
  }
  return view.top[keep - 1].second;
}

}  // namespace dcu
