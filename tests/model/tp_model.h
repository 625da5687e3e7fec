#pragma once
// Test support for tensor parallelism: one model split over N simulated CPU ranks (threads), each
// with its own backend, caches, runner and in-process communicator, stepped together.

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cache/block_allocator.h"
#include "cache/cache_storage.h"
#include "comm/communicator.h"
#include "comm/rank_threads.h"
#include "model/config.h"
#include "model/model_runner.h"

namespace dcu::testing {

class TpModel {
 public:
  // Weights from `model_dir`'s checkpoint, or random with `seed` when random_seed >= 0 (the config
  // still comes from model_dir/config.json).
  TpModel(const std::string& model_dir, int ranks, int64_t random_seed = -1);
  ~TpModel();

  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> blocks;
    int slot = 0;
    int computed = 0;
  };
  Sequence start_sequence(std::vector<int32_t> tokens);
  // One step of every rank: the next `count` tokens of each sequence; rank 0's logits.
  std::vector<float> step(std::vector<std::pair<Sequence*, int>> work, bool all_logits);
  // Greedy continuation of `prompt` (prefill in one step, then one token per step).
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, int count);

  ModelConfig config;

 private:
  struct Rank {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<CacheStorage> cache;
    std::unique_ptr<ModelRunner> runner;
  };
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<Rank> ranks_;
  std::unique_ptr<RankThreads> threads_;
  IdPool blocks_{256};
  IdPool slots_{8};
};

}  // namespace dcu::testing
