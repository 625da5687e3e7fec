#pragma once
// Samples the next token of many sequences from logits in backend memory. Penalties, bans and
// structured-output masks (filled on the host's threads, one bit per token) are applied there, each row's
// top candidates and softmax sums come back (kilobytes instead of a vocabulary-sized row per sequence),
// and whole rows are downloaded only for the choices that need them (see Sampler). On the CPU backend
// the same path runs in host memory.

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "sampling/sampler.h"

namespace dcu {

struct SamplingJob {
  Sampler* sampler = nullptr;
  int row = 0;                          // its row of the logits; each job its own row
  std::span<const int32_t> banned;      // ids it must not choose (eos before min_tokens)
};

class BatchSampler {
 public:
  explicit BatchSampler(Backend& backend) : backend_(backend) {}
  ~BatchSampler();
  BatchSampler(const BatchSampler&) = delete;
  BatchSampler& operator=(const BatchSampler&) = delete;

  // logits [R, V] f32 in the backend's memory (the jobs' rows are modified). One token per job.
  std::vector<SampledToken> sample(const Tensor& logits, std::span<const SamplingJob> jobs);
  // The most likely id of each of the first `rows` rows of logits [R, V] (equal values: the lower id).
  std::vector<int32_t> argmax(const Tensor& logits, int rows);

 private:
  std::vector<float> download_row(const Tensor& logits, int row);
  void* arena(size_t bytes);  // backend scratch, grown on demand

  Backend& backend_;
  void* arena_ = nullptr;
  size_t arena_bytes_ = 0;
};

}  // namespace dcu
