#include "support/tp_model.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>
#include <omp.h>

#include "comm/in_process_communicator.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace dcu::testing {

namespace {
constexpr int kBlocks = 256, kSlots = 8;
}  // namespace

TpModel::TpModel(const std::string& model_dir, int n, int64_t random_seed, const TpSetup& setup)
    : SteppedModel(load_model_config(model_dir), kBlocks, kSlots) {
  start_ranks(model_dir, n, random_seed, setup);
}

TpModel::TpModel(const ModelConfig& config, int n, uint64_t random_seed, const TpSetup& setup)
    : SteppedModel(config, kBlocks, kSlots) {
  start_ranks("", n, int64_t(random_seed), setup);
}

void TpModel::start_ranks(const std::string& model_dir, int n, int64_t random_seed, const TpSetup& setup) {
  ranks_.resize(size_t(n));
  std::vector<Backend*> backends;
  for (int i = 0; i < n; ++i) {
    ranks_[size_t(i)].backend = setup.backend(i);
    backends.push_back(ranks_[size_t(i)].backend.get());
  }
  if (n > 1) comms_ = setup.communicators ? setup.communicators(backends) : make_in_process_communicators(backends);
  CacheShape shape;
  shape.num_blocks = kBlocks;
  shape.block_size = kBlockSize;
  shape.num_state_slots = kSlots;
  for (int i = 0; i < n; ++i) {
    Rank& r = ranks_[size_t(i)];
    const ShardPlan plan = shard_plan(config, i, n);
    ModelWeights w = random_seed >= 0 ? random_weights(config, *r.backend, DType::BF16, uint64_t(random_seed), plan,
                                                       {}, setup.weights.quantize)
                                      : load_weights(model_dir, config, *r.backend, plan, {}, setup.weights);
    r.cache = std::make_unique<CacheStorage>(*r.backend, local_config(config, plan), shape);
    r.runner = std::make_unique<ModelRunner>(*r.backend, config, std::move(w), *r.cache, 1024, 1024,
                                             n > 1 ? comms_[size_t(i)].get() : nullptr);
    r.runner->set_use_graphs(setup.graphs);
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

std::vector<int32_t> prompt_of(int length, int64_t vocab, int salt) {
  std::vector<int32_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back(int32_t((i * 7919 + salt * 104729 + 17) % vocab));
  return ids;
}

float expect_same_steps(SteppedModel& one, SteppedModel& many, float tolerance) {
  const int64_t V = one.config.vocab_size;
  auto a1 = one.start_sequence(prompt_of(37, V, 1)), b1 = one.start_sequence(prompt_of(21, V, 2));
  auto aN = many.start_sequence(prompt_of(37, V, 1)), bN = many.start_sequence(prompt_of(21, V, 2));
  const std::vector<std::vector<std::pair<int, int>>> schedule = {
      {{0, 20}, {1, 21}}, {{0, 17}}, {{0, 1}, {1, 1}}, {{1, 1}, {0, 1}}, {{0, 1}, {1, 1}}};
  float worst = 0;
  for (size_t s = 0; s < schedule.size(); ++s) {
    std::vector<std::pair<SteppedModel::Sequence*, int>> w1, wN;
    for (auto [which, count] : schedule[s]) {
      SteppedModel::Sequence* x1 = which == 0 ? &a1 : &b1;
      SteppedModel::Sequence* xN = which == 0 ? &aN : &bN;
      if (x1->computed + count > int(x1->tokens.size())) {  // decode: extend both with the same token
        const int32_t t = int32_t((x1->tokens.size() * 31 + s) % V);
        x1->tokens.push_back(t);
        xN->tokens.push_back(t);
      }
      w1.push_back({x1, count});
      wN.push_back({xN, count});
    }
    const bool all = s == 0;
    std::vector<float> l1 = one.step(w1, all), lN = many.step(wN, all);
    EXPECT_EQ(l1.size(), lN.size()) << "step " << s;
    EXPECT_FALSE(l1.empty()) << "step " << s;
    if (l1.size() != lN.size() || l1.empty()) return INFINITY;
    const float diff = max_abs_diff(l1.data(), lN.data(), l1.size());
    EXPECT_LT(diff, tolerance) << "step " << s;
    worst = std::max(worst, diff);
  }
  one.finish_sequence(a1), one.finish_sequence(b1), many.finish_sequence(aN), many.finish_sequence(bN);
  return worst;
}

}  // namespace dcu::testing
