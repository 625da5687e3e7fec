#pragma once
// Samples the next token of many sequences from logits in backend memory. Penalties, bans and
// structured-output masks (filled on the host's threads, one bit per token) are applied there, each row's
// top candidates and softmax sums come back (kilobytes instead of a vocabulary-sized row per sequence),
// and whole rows are downloaded only for the choices that need them (see Sampler). On the CPU backend
// the same path runs in host memory.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "sampling/mask_workers.h"
#include "sampling/sampler.h"

namespace dcu {

struct SamplingJob {
  Sampler* sampler = nullptr;
  int row = 0;                          // its row of the logits; each job its own row
  std::span<const int32_t> banned;      // ids it must not choose (eos before min_tokens)
};

// A job whose structured-output mask overran the budget: its row of logits, kept on the host until the
// mask (still being filled on a worker) is done.
struct LateChoice {
  size_t job = 0;  // its index in the jobs of the sample() call
  std::shared_ptr<PendingMask> mask;
  std::vector<float> row;  // [V]
};

class BatchSampler {
 public:
  // Masks are filled on one worker per host thread (at least two: one slow mask leaves another
  // worker for the rest; at most 32); `on_late_mask` runs on a worker each time a mask
  // finishes (the engine wakes to finish its late choices).
  explicit BatchSampler(Backend& backend, std::chrono::microseconds mask_budget = std::chrono::milliseconds(5),
                        std::function<void()> on_late_mask = {});
  ~BatchSampler();
  BatchSampler(const BatchSampler&) = delete;
  BatchSampler& operator=(const BatchSampler&) = delete;

  // logits [R, V] f32 in the backend's memory (the jobs' rows are modified). One token per job, except
  // with `late`: a job whose mask is not done mask_budget after the logits are ready gets no token here
  // (its entry is left empty) and is appended to *late instead.
  std::vector<SampledToken> sample(const Tensor& logits, std::span<const SamplingJob> jobs,
                                   std::vector<LateChoice>* late = nullptr);
  // Whether a late choice's mask is done; finish() waits for it and chooses as sample() would have.
  bool ready(const LateChoice& choice) { return workers_.done(*choice.mask); }
  SampledToken finish(LateChoice& choice, Sampler& sampler);
  void wait(const LateChoice& choice) { workers_.wait(*choice.mask); }
  // The most likely id of each of the first `rows` rows of logits [R, V] (equal values: the lower id).
  std::vector<int32_t> argmax(const Tensor& logits, int rows);

 private:
  std::vector<float> download_row(const Tensor& logits, int row);
  void* arena(size_t bytes);  // backend scratch, grown on demand

  Backend& backend_;
  std::chrono::microseconds mask_budget_;
  MaskWorkers workers_;
  void* arena_ = nullptr;
  size_t arena_bytes_ = 0;
};

}  // namespace dcu
