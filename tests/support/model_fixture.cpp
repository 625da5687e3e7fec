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

LoadedModel::LoadedModel(const std::string& model_dir, int max_tokens_per_step, int num_blocks, int num_slots,
                         std::unique_ptr<Backend> be)
    : config(load_model_config(model_dir)), backend(std::move(be)), blocks(num_blocks), slots(num_slots) {
  CacheShape shape;
  shape.num_blocks = num_blocks;
  shape.block_size = 16;
  shape.num_state_slots = num_slots;
  cache = std::make_unique<CacheStorage>(*backend, config, shape);
  runner = std::make_unique<ModelRunner>(*backend, config, load_weights(model_dir, config, *backend), *cache,
                                         max_tokens_per_step);
}

LoadedModel::Sequence LoadedModel::start_sequence(std::vector<int32_t> tokens) {
  Sequence s;
  s.tokens = std::move(tokens);
  s.slot = *slots.take_one();
  return s;
}

void LoadedModel::finish_sequence(Sequence& s) {
  blocks.give_back(s.blocks);
  slots.give_back(s.slot);
  s.blocks.clear();
}

std::vector<float> LoadedModel::step(std::vector<std::pair<Sequence*, int>> work, bool all_logits) {
  const int bs = cache->shape().block_size;
  std::vector<SequenceStep> steps;
  for (auto& [seq, count] : work) {
    const int needed = (seq->computed + count + bs - 1) / bs;
    while (int(seq->blocks.size()) < needed) seq->blocks.push_back(*blocks.take_one());
    SequenceStep st;
    st.tokens = std::span<const int32_t>(seq->tokens).subspan(size_t(seq->computed), size_t(count));
    st.context_before = seq->computed;
    st.block_table = seq->blocks;
    st.state_slot = seq->slot;
    st.all_logits = all_logits;
    steps.push_back(st);
  }
  std::vector<float> logits = runner->step(steps);
  for (auto& [seq, count] : work) seq->computed += count;
  return logits;
}

std::vector<int32_t> LoadedModel::greedy(const std::vector<int32_t>& prompt, size_t count) {
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

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

int argmax(const float* row, int64_t n) { return int(std::max_element(row, row + n) - row); }

}  // namespace dcu::testing
