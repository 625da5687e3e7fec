#include "model_fixture.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu::testing {

std::vector<float> Reference::floats(const std::string& name, std::vector<int64_t>* shape) const {
  const StoredTensor& t = file_.tensors().at(name);
  DCU_CHECK(t.dtype == DType::F32);
  if (shape) *shape = t.shape;
  std::vector<float> out(t.bytes / 4);
  std::memcpy(out.data(), t.data, t.bytes);
  return out;
}

std::vector<int32_t> Reference::ints(const std::string& name) const {
  const StoredTensor& t = file_.tensors().at(name);
  DCU_CHECK(t.dtype == DType::I32);
  std::vector<int32_t> out(t.bytes / 4);
  std::memcpy(out.data(), t.data, t.bytes);
  return out;
}

std::vector<ReferenceCase> reference_cases(const std::string& model_dir, size_t max_ids) {
  auto j = nlohmann::json::parse(std::ifstream(model_dir + "/reference.json"));
  std::vector<ReferenceCase> out;
  for (const char* group : {"prompts", "chats"})
    if (j.contains(group))
      for (const auto& c : j[group])
        if (c["ids"].size() < max_ids)
          out.push_back({c["key"].get<std::string>(), c["ids"].get<std::vector<int32_t>>(),
                         c["greedy_ids"].get<std::vector<int32_t>>()});
  return out;
}

SteppedModel::SteppedModel(ModelConfig model_config, int num_blocks, int num_slots)
    : config(std::move(model_config)), blocks_(num_blocks), slots_(num_slots) {}

SteppedModel::Sequence SteppedModel::start_sequence(std::vector<int32_t> tokens) {
  Sequence s;
  s.tokens = std::move(tokens);
  s.slot = *slots_.take_one();
  return s;
}

void SteppedModel::finish_sequence(Sequence& s) {
  blocks_.give_back(s.blocks);
  slots_.give_back(s.slot);
  s.blocks.clear();
}

std::vector<float> SteppedModel::step(std::vector<std::pair<Sequence*, int>> work, bool all_logits) {
  std::vector<SequenceStep> steps;
  for (auto& [seq, count] : work) {
    const int needed = (seq->computed + count + kBlockSize - 1) / kBlockSize;
    while (int(seq->blocks.size()) < needed) seq->blocks.push_back(*blocks_.take_one());
    steps.push_back({std::span<const int32_t>(seq->tokens).subspan(size_t(seq->computed), size_t(count)),
                     seq->computed, seq->blocks, seq->slot, all_logits});
  }
  std::vector<float> logits = run(steps);
  for (auto& [seq, count] : work) seq->computed += count;
  return logits;
}

std::vector<int32_t> SteppedModel::greedy(const std::vector<int32_t>& prompt, size_t count) {
  const int64_t V = config.vocab_size;
  auto seq = start_sequence(prompt);
  std::vector<float> logits = step({{&seq, int(prompt.size())}}, false);
  std::vector<int32_t> generated;
  while (generated.size() < count) {
    const int next = argmax(logits.data(), V);
    generated.push_back(next);
    if (generated.size() == count) break;
    seq.tokens.push_back(next);
    logits = step({{&seq, 1}}, false);
  }
  finish_sequence(seq);
  return generated;
}

LoadedModel::LoadedModel(const std::string& model_dir, int max_tokens_per_step, int num_blocks, int num_slots,
                         std::unique_ptr<Backend> be, const WeightOptions& weights, DType kv_dtype)
    : SteppedModel(load_model_config(model_dir), num_blocks, num_slots), backend(std::move(be)) {
  CacheShape shape;
  shape.num_blocks = num_blocks;
  shape.block_size = kBlockSize;
  shape.num_state_slots = num_slots;
  shape.draft_layers = weights.mtp ? 1 : 0;
  shape.kv_dtype = kv_dtype;
  cache = std::make_unique<CacheStorage>(*backend, config, shape);
  runner = std::make_unique<ModelRunner>(*backend, config, load_weights(model_dir, config, *backend, shard_plan(config, 0, 1), {}, weights), *cache,
                                         max_tokens_per_step);
}

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

int argmax(const float* row, int64_t n) { return int(std::max_element(row, row + n) - row); }

}  // namespace dcu::testing
