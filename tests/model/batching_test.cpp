// The runner gives the same logits however a prompt is split into steps (one shot, one token per
// step, random chunk sizes) and whatever other sequences share the step.

#include <random>

#include <gtest/gtest.h>

#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

constexpr float kSplitTolerance = 1e-4f;
const std::string kModel = "tests/data/tiny-qwen35";

std::vector<int32_t> prompt0() { return Reference(kModel + "/reference.safetensors").ints("prompt0.input_ids"); }

// Logits of every position, computing the prompt in the given chunk sizes.
std::vector<float> run_in_chunks(LoadedModel& m, const std::vector<int32_t>& ids, const std::vector<int>& chunks) {
  auto seq = m.start_sequence(ids);
  std::vector<float> all;
  for (int n : chunks) {
    auto part = m.step({{&seq, n}}, true);
    all.insert(all.end(), part.begin(), part.end());
  }
  m.finish_sequence(seq);
  return all;
}

std::vector<int> random_chunks(int total, std::mt19937& rng, int max_chunk) {
  std::vector<int> chunks;
  while (total > 0) {
    int n = std::min(total, int(rng() % max_chunk) + 1);
    chunks.push_back(n);
    total -= n;
  }
  return chunks;
}

TEST(Batching, ChunkSizesDoNotChangeLogits) {
  LoadedModel m(kModel);
  const auto ids = prompt0();
  const int n = int(ids.size());
  const auto one_shot = run_in_chunks(m, ids, {n});
  const auto stepwise = run_in_chunks(m, ids, std::vector<int>(size_t(n), 1));
  EXPECT_LT(max_abs_diff(one_shot.data(), stepwise.data(), one_shot.size()), kSplitTolerance);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    const auto chunked = run_in_chunks(m, ids, random_chunks(n, rng, 80));
    EXPECT_LT(max_abs_diff(one_shot.data(), chunked.data(), one_shot.size()), kSplitTolerance) << "trial " << trial;
  }
}

TEST(Batching, SharingAStepWithOtherSequencesDoesNotChangeLogits) {
  LoadedModel m(kModel);
  const auto ids = prompt0();
  const int n = int(ids.size());
  const int64_t V = m.config.vocab_size;
  const auto alone = run_in_chunks(m, ids, {n});

  // Three copies of the prompt and a shorter neighbour, fed in different chunkings in the same steps.
  std::vector<int32_t> other(ids.begin(), ids.begin() + 40);
  auto a = m.start_sequence(ids), b = m.start_sequence(ids), c = m.start_sequence(other), d = m.start_sequence(ids);
  std::vector<float> got_a, got_b, got_d;
  std::mt19937 rng(11);
  auto take = [&](LoadedModel::Sequence& s, int max_chunk) {
    return std::min(int(s.tokens.size()) - s.computed, int(rng() % max_chunk) + 1);
  };
  while (a.computed < n || b.computed < n || d.computed < n) {
    std::vector<std::pair<LoadedModel::Sequence*, int>> work;
    std::vector<std::vector<float>*> sinks;
    if (d.computed < n) work.push_back({&d, 1}), sinks.push_back(&got_d);  // token by token
    if (a.computed < n) work.push_back({&a, take(a, 33)}), sinks.push_back(&got_a);
    if (c.computed < int(other.size())) work.push_back({&c, take(c, 7)}), sinks.push_back(nullptr);
    if (b.computed < n) work.push_back({&b, take(b, 64)}), sinks.push_back(&got_b);
    auto logits = m.step(work, true);
    size_t row = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      const size_t rows = size_t(work[i].second);
      if (sinks[i]) sinks[i]->insert(sinks[i]->end(), logits.begin() + long(row * V), logits.begin() + long((row + rows) * V));
      row += rows;
    }
  }
  EXPECT_LT(max_abs_diff(alone.data(), got_a.data(), alone.size()), kSplitTolerance);
  EXPECT_LT(max_abs_diff(alone.data(), got_b.data(), alone.size()), kSplitTolerance);
  EXPECT_LT(max_abs_diff(alone.data(), got_d.data(), alone.size()), kSplitTolerance);
}

}  // namespace
}  // namespace dcu::testing
