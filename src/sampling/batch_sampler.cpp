#include "sampling/batch_sampler.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace dcu {
namespace {

// Host staging of one summary call: what goes up in one upload and comes back in one download.
// Every element is 4 bytes, so the sections are laid out back to back.
struct SummaryLayout {
  int64_t m = 0, W = 0, n = 0, k = 0, E = 0;
  // up: masked rows [m] i32, masks [m, W] (a bit per id), rows [n] i32, inverse temperatures [n] f32,
  //     targets [E, 2] i32, factors [E, 2] f32
  int64_t masks() const { return m; }
  int64_t rows() const { return m + m * W; }
  int64_t inv_temperatures() const { return rows() + n; }
  int64_t targets() const { return inv_temperatures() + n; }
  int64_t factors() const { return targets() + 2 * E; }
  int64_t up_words() const { return factors() + 2 * E; }
  // down: top values [n, k] f32, top ids [n, k] i32, stats [n, 2] f32
  int64_t down_words() const { return 2 * n * k + 2 * n; }
};

Tensor view(void* base, int64_t word, DType dtype, std::initializer_list<int64_t> shape) {
  return Tensor(static_cast<char*>(base) + word * 4, dtype, shape);
}

}  // namespace

BatchSampler::BatchSampler(Backend& backend, std::chrono::microseconds mask_budget, std::function<void()> on_late_mask)
    : backend_(backend), mask_budget_(mask_budget), workers_(int(std::clamp(std::thread::hardware_concurrency(), 2u, 32u)), std::move(on_late_mask)) {}

BatchSampler::~BatchSampler() { backend_.release(arena_); }

void* BatchSampler::arena(size_t bytes) {
  if (bytes > arena_bytes_) {
    backend_.release(arena_);
    arena_ = nullptr;  // until the allocation succeeds: a failed one leaves no arena to be used
    const size_t grown = std::max(bytes, arena_bytes_ * 2);
    arena_bytes_ = 0;
    arena_ = backend_.allocate(grown);
    arena_bytes_ = grown;
  }
  return arena_;
}

std::vector<float> BatchSampler::download_row(const Tensor& logits, int row) {
  std::vector<float> out(size_t(logits.cols()));
  backend_.download(out.data(), logits.as<float>() + int64_t(row) * logits.cols(), out.size() * sizeof(float));
  return out;
}

SampledToken BatchSampler::finish(LateChoice& choice, Sampler& sampler) {
  workers_.wait(*choice.mask);
  return sampler.sample_allowed(choice.row, choice.mask->allowed, choice.mask->kept_bans);
}

std::vector<SampledToken> BatchSampler::sample(const Tensor& logits, std::span<const SamplingJob> jobs,
                                               std::vector<LateChoice>* late) {
  const int V = int(logits.cols());
  std::vector<SampledToken> tokens(jobs.size());

  // Each job's adjustments, built once. Choices only a whole raw row serves are downloaded before
  // anything adjusts them; the others are summarised.
  std::vector<std::vector<LogitAdjustment>> job_adjustments(jobs.size());
  std::vector<size_t> whole, summarised;
  for (size_t j = 0; j < jobs.size(); ++j) {
    jobs[j].sampler->append_adjustments(jobs[j].banned, job_adjustments[j]);
    (jobs[j].sampler->needs_whole_row(!job_adjustments[j].empty()) ? whole : summarised).push_back(j);
  }
  std::vector<std::vector<float>> rows(jobs.size());
  for (size_t j : whole) rows[j] = download_row(logits, jobs[j].row);
#pragma omp parallel for schedule(dynamic, 1) if (whole.size() > 1)
  for (size_t i = 0; i < whole.size(); ++i) {
    const SamplingJob& job = jobs[whole[i]];
    tokens[whole[i]] = job.sampler->sample(rows[whole[i]], job.banned);
  }
  if (summarised.empty()) return tokens;

  // The masks of the constrained rows, filled on the workers while the backend runs the step (each
  // constraint is its own sequence's; the grammar caches they share lock). With `late`, a mask not
  // done mask_budget after the step's logits are ready leaves its row for later.
  std::vector<size_t> masked;  // the summarised jobs a constraint masks
  std::vector<std::shared_ptr<PendingMask>> masks;
  const int64_t W = (V + 31) / 32;
  for (size_t j : summarised) {
    if (!jobs[j].sampler->constrained()) continue;
    auto mask = std::make_shared<PendingMask>();
    mask->allowed.resize(size_t(W));
    mask->banned.assign(jobs[j].banned.begin(), jobs[j].banned.end());
    workers_.submit(mask, [sampler = jobs[j].sampler, V](PendingMask& m) {
      const std::span<const int32_t> kept = sampler->fill_constraint_mask(m.allowed, m.banned, V);
      m.kept_bans.assign(kept.begin(), kept.end());
    });
    masked.push_back(j);
    masks.push_back(std::move(mask));
  }
  if (late && !masked.empty()) {
    backend_.synchronize();  // the logits are ready: the budget counts from here
    const auto deadline = std::chrono::steady_clock::now() + mask_budget_;
    std::vector<size_t> on_time;
    std::vector<std::shared_ptr<PendingMask>> on_time_masks;
    for (size_t i = 0; i < masked.size(); ++i) {
      if (workers_.wait_until(*masks[i], deadline)) {
        on_time.push_back(masked[i]);
        on_time_masks.push_back(std::move(masks[i]));
      } else {
        late->push_back({masked[i], std::move(masks[i]), download_row(logits, jobs[masked[i]].row)});
        std::erase(summarised, masked[i]);
      }
    }
    masked.swap(on_time);
    masks.swap(on_time_masks);
    if (summarised.empty()) return tokens;
  }
  for (const auto& mask : masks) workers_.wait(*mask);

  // Adjust, mask and summarise the other rows on the backend: one upload, three ops, one download.
  SummaryLayout lay;
  lay.n = int64_t(summarised.size());
  lay.W = W;
  lay.m = int64_t(masked.size());
  std::vector<uint32_t> up(size_t(lay.rows()));
  for (int64_t i = 0; i < lay.m; ++i) {
    up[size_t(i)] = uint32_t(jobs[masked[size_t(i)]].row);
    std::copy(masks[size_t(i)]->allowed.begin(), masks[size_t(i)]->allowed.end(), &up[size_t(lay.masks() + i * W)]);
  }
  for (size_t i = 0; i < masked.size(); ++i)
    if (masks[i]->kept_bans.size() != jobs[masked[i]].banned.size()) {  // the bans would have left no token
      job_adjustments[masked[i]].clear();
      jobs[masked[i]].sampler->append_adjustments(masks[i]->kept_bans, job_adjustments[masked[i]]);
    }

  std::vector<LogitAdjustment> adjustments;
  std::vector<int32_t> adjusted_row;
  for (size_t j : summarised) {
    adjustments.insert(adjustments.end(), job_adjustments[j].begin(), job_adjustments[j].end());
    adjusted_row.resize(adjustments.size(), jobs[j].row);
    lay.k = std::max<int64_t>(lay.k, jobs[j].sampler->candidate_count());
  }
  lay.k = std::min<int64_t>(lay.k, V);
  lay.E = int64_t(adjustments.size());
  up.resize(size_t(lay.up_words()));
  for (int64_t i = 0; i < lay.n; ++i) {
    const SamplingJob& job = jobs[summarised[size_t(i)]];
    const float inv_t = job.sampler->inverse_temperature();
    up[size_t(lay.rows() + i)] = uint32_t(job.row);
    std::memcpy(&up[size_t(lay.inv_temperatures() + i)], &inv_t, 4);
  }
  for (int64_t e = 0; e < lay.E; ++e) {
    const LogitAdjustment& a = adjustments[size_t(e)];
    uint32_t* target = &up[size_t(lay.targets() + 2 * e)];
    float* factor = reinterpret_cast<float*>(&up[size_t(lay.factors() + 2 * e)]);
    target[0] = uint32_t(adjusted_row[size_t(e)]), target[1] = uint32_t(a.id);
    factor[0] = a.scale, factor[1] = a.bias;
  }
  void* base = arena(size_t(lay.up_words() + lay.down_words()) * 4);
  backend_.upload(base, up.data(), up.size() * 4);
  const int64_t m = lay.m, n = lay.n, k = lay.k, E = lay.E, down = lay.up_words();
  if (m > 0)
    backend_.mask_logits(logits, view(base, 0, DType::I32, {m}), view(base, lay.masks(), DType::I32, {m, lay.W}));
  if (E > 0)
    backend_.adjust_logits(logits, view(base, lay.targets(), DType::I32, {E, 2}),
                           view(base, lay.factors(), DType::F32, {E, 2}));
  backend_.logit_summary(logits, view(base, lay.rows(), DType::I32, {n}),
                         view(base, lay.inv_temperatures(), DType::F32, {n}), view(base, down, DType::F32, {n, k}),
                         view(base, down + n * k, DType::I32, {n, k}), view(base, down + 2 * n * k, DType::F32, {n, 2}));
  std::vector<uint32_t> summary(size_t(lay.down_words()));
  backend_.download(summary.data(), static_cast<char*>(base) + down * 4, summary.size() * 4);

  const float* values = reinterpret_cast<const float*>(summary.data());
  const int32_t* ids = reinterpret_cast<const int32_t*>(summary.data() + n * k);
  const float* stats = reinterpret_cast<const float*>(summary.data() + 2 * n * k);
  std::vector<RowCandidates> candidates(static_cast<size_t>(n));
  std::vector<size_t> open;  // choices the candidates did not decide
  for (int64_t i = 0; i < n; ++i) {
    RowCandidates& c = candidates[size_t(i)];
    c.values = {values + i * k, size_t(k)};
    c.ids = {ids + i * k, size_t(k)};
    c.vocab = V;
    c.log_normalizer = stats[2 * i];
    c.temperature_mass = stats[2 * i + 1];
    const size_t j = summarised[size_t(i)];
    if (auto token = jobs[j].sampler->sample_candidates(c)) tokens[j] = std::move(*token);
    else open.push_back(size_t(i));
  }
  for (size_t i : open) rows[summarised[i]] = download_row(logits, jobs[summarised[i]].row);
#pragma omp parallel for schedule(dynamic, 1) if (open.size() > 1)
  for (size_t o = 0; o < open.size(); ++o) {
    const size_t i = open[o], j = summarised[i];
    tokens[j] = jobs[j].sampler->sample_processed(rows[j], candidates[i]);
  }
  return tokens;
}

std::vector<int32_t> BatchSampler::argmax(const Tensor& logits, int rows) {
  if (rows == 0) return {};
  // up: rows [n] i32, inverse temperatures [n] f32; down: top value [n], top id [n], stats [n, 2]
  const int64_t n = rows;
  std::vector<uint32_t> up(size_t(2 * n));
  const float one = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    up[size_t(i)] = uint32_t(i);
    std::memcpy(&up[size_t(n + i)], &one, 4);
  }
  void* base = arena(size_t(6 * n) * 4);
  backend_.upload(base, up.data(), up.size() * 4);
  backend_.logit_summary(logits, view(base, 0, DType::I32, {n}), view(base, n, DType::F32, {n}),
                         view(base, 2 * n, DType::F32, {n, 1}), view(base, 3 * n, DType::I32, {n, 1}),
                         view(base, 4 * n, DType::F32, {n, 2}));
  std::vector<int32_t> ids(static_cast<size_t>(n));
  backend_.download(ids.data(), static_cast<char*>(base) + 3 * n * 4, size_t(n) * 4);
  return ids;
}

}  // namespace dcu
