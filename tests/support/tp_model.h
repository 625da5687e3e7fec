#pragma once
// Test support for tensor parallelism: one model split over N ranks (threads), each with its own
// backend, caches, runner and communicator, stepped together. By default the ranks are simulated on
// the CPU and meet through the in-process communicator; TpSetup puts them on GPUs (several may share
// one GPU) or over NCCL/RCCL.

#include <functional>
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

struct TpSetup {
  // The backend of rank r.
  std::function<std::unique_ptr<Backend>(int rank)> backend = [](int) { return make_cpu_backend(); };
  // The group's communicators, rank i on backends[i]; empty: in-process.
  std::function<std::vector<std::unique_ptr<Communicator>>(const std::vector<Backend*>&)> communicators;
  bool graphs = true;  // decode steps as CUDA/HIP graphs where the backend and communicator allow
  WeightOptions weights;  // how each rank stores its matrices (e.g. quantized while loading)
};

class TpModel final : public SteppedModel {
 public:
  // Weights from `model_dir`'s checkpoint, or random with `seed` when random_seed >= 0 (the config
  // still comes from model_dir/config.json).
  TpModel(const std::string& model_dir, int ranks, int64_t random_seed = -1, const TpSetup& setup = {});
  // Random weights of `config`.
  TpModel(const ModelConfig& config, int ranks, uint64_t random_seed, const TpSetup& setup = {});
  ~TpModel() override;

 private:
  void start_ranks(const std::string& model_dir, int ranks, int64_t random_seed, const TpSetup& setup);
  // One step of every rank; rank 0's logits.
  std::vector<float> run(std::span<const SequenceStep> steps) override;

  struct Rank {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<CacheStorage> cache;
    std::unique_ptr<ModelRunner> runner;
  };
  std::vector<Rank> ranks_;
  std::vector<std::unique_ptr<Communicator>> comms_;  // declared after ranks_: gone before the backends
  std::unique_ptr<RankThreads> threads_;
};

// Test prompt ids: `length` tokens below `vocab`, a different prompt for each salt.
std::vector<int32_t> prompt_of(int length, int64_t vocab, int salt);

// Prefill of two sequences in one step (all logits), then chunked prefill and decode steps that mix
// them, fed to both models; expects each step's logits within `tolerance`. Returns the largest
// difference seen.
float expect_same_steps(SteppedModel& one, SteppedModel& many, float tolerance);

}  // namespace dcu::testing
