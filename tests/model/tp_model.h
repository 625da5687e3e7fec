#pragma once
// Test support for tensor parallelism: one model split over N simulated CPU ranks (threads), each
// with its own backend, caches, runner and in-process communicator, stepped together.

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cache/cache_storage.h"
#include "comm/communicator.h"
#include "comm/rank_threads.h"
#include "model/config.h"
#include "model/model_runner.h"
#include "support/model_fixture.h"

namespace dcu::testing {

class TpModel final : public SteppedModel {
 public:
  // Weights from `model_dir`'s checkpoint, or random with `seed` when random_seed >= 0 (the config
  // still comes from model_dir/config.json).
  TpModel(const std::string& model_dir, int ranks, int64_t random_seed = -1);
  ~TpModel() override;

 private:
  // One step of every rank; rank 0's logits.
  std::vector<float> run(std::span<const SequenceStep> steps) override;

  struct Rank {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<CacheStorage> cache;
    std::unique_ptr<ModelRunner> runner;
  };
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<Rank> ranks_;
  std::unique_ptr<RankThreads> threads_;
};

}  // namespace dcu::testing
