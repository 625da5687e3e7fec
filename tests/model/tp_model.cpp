#include "tp_model.h"

#include <algorithm>

#include <omp.h>

#include "comm/in_process_communicator.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace dcu::testing {

namespace {
constexpr int kBlocks = 256, kSlots = 8;
}  // namespace

TpModel::TpModel(const std::string& model_dir, int n, int64_t random_seed)
    : SteppedModel(load_model_config(model_dir), kBlocks, kSlots) {
  ranks_.resize(size_t(n));
  std::vector<Backend*> backends;
  for (auto& r : ranks_) {
    r.backend = make_cpu_backend();
    backends.push_back(r.backend.get());
  }
  if (n > 1) comms_ = make_in_process_communicators(backends);
  CacheShape shape;
  shape.num_blocks = kBlocks;
  shape.block_size = kBlockSize;
  shape.num_state_slots = kSlots;
  for (int i = 0; i < n; ++i) {
    Rank& r = ranks_[size_t(i)];
    const ShardPlan plan = shard_plan(config, i, n);
    ModelWeights w = random_seed >= 0 ? random_weights(config, *r.backend, DType::BF16, uint64_t(random_seed), plan)
                                      : load_weights(model_dir, config, *r.backend, plan);
    r.cache = std::make_unique<CacheStorage>(*r.backend, local_config(config, plan), shape);
    r.runner = std::make_unique<ModelRunner>(*r.backend, config, std::move(w), *r.cache, 1024, 1024,
                                             n > 1 ? comms_[size_t(i)].get() : nullptr);
  }
  // Two shared cores: one OpenMP thread per rank keeps N ranks from oversubscribing them.
  const int per_rank = std::max(1, omp_get_max_threads() / n);
  threads_ = std::make_unique<RankThreads>(n, [per_rank](int) { omp_set_num_threads(per_rank); });
}

TpModel::~TpModel() = default;

std::vector<float> TpModel::run(std::span<const SequenceStep> steps) {
  std::vector<float> logits;
  threads_->run(
      [&](int r) {
        const std::vector<float>& out = ranks_[size_t(r)].runner->step_to_host(steps);
        if (r == 0) logits = out;
      },
      [&] {
        for (auto& c : comms_) c->abort();
      });
  return logits;
}

}  // namespace dcu::testing
