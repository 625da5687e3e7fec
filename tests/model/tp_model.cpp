#include "tp_model.h"

#include <algorithm>

#include <omp.h>

#include "comm/in_process_communicator.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace dcu::testing {

TpModel::TpModel(const std::string& model_dir, int n, int64_t random_seed) : config(load_model_config(model_dir)) {
  ranks_.resize(size_t(n));
  std::vector<Backend*> backends;
  for (auto& r : ranks_) {
    r.backend = make_cpu_backend();
    backends.push_back(r.backend.get());
  }
  if (n > 1) comms_ = make_in_process_communicators(backends);
  CacheShape shape;
  shape.num_blocks = 256;
  shape.block_size = 16;
  shape.num_state_slots = 8;
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

TpModel::Sequence TpModel::start_sequence(std::vector<int32_t> tokens) {
  Sequence s;
  s.tokens = std::move(tokens);
  s.slot = *slots_.take_one();
  return s;
}

std::vector<float> TpModel::step(std::vector<std::pair<Sequence*, int>> work, bool all_logits) {
  std::vector<SequenceStep> steps;
  for (auto& [seq, count] : work) {
    const int needed = (seq->computed + count + 15) / 16;
    while (int(seq->blocks.size()) < needed) seq->blocks.push_back(*blocks_.take_one());
    steps.push_back({std::span<const int32_t>(seq->tokens).subspan(size_t(seq->computed), size_t(count)),
                     seq->computed, seq->blocks, seq->slot, all_logits});
  }
  std::vector<float> logits;
  threads_->run(
      [&](int r) {
        const std::vector<float>& out = ranks_[size_t(r)].runner->step(steps);
        if (r == 0) logits = out;
      },
      [&] {
        for (auto& c : comms_) c->abort();
      });
  for (auto& [seq, count] : work) seq->computed += count;
  return logits;
}

std::vector<int32_t> TpModel::greedy(const std::vector<int32_t>& prompt, int count) {
  Sequence seq = start_sequence(prompt);
  std::vector<float> logits = step({{&seq, int(prompt.size())}}, false);
  std::vector<int32_t> out;
  const int64_t V = config.vocab_size;
  while (int(out.size()) < count) {
    const int next = int(std::max_element(logits.begin(), logits.begin() + V) - logits.begin());
    out.push_back(next);
    if (int(out.size()) == count) break;
    seq.tokens.push_back(next);
    logits = step({{&seq, 1}}, false);
  }
  blocks_.give_back(seq.blocks);
  slots_.give_back(seq.slot);
  return out;
}

}  // namespace dcu::testing
