// Sampling against the definitions (softmax, top-k/top-p/min-p truncation, vLLM's penalties), with
// statistical checks of the sampled frequencies.

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "sampling/sampler.h"
#include "support/fixed_constraint.h"

namespace dcu {
namespace {

std::vector<double> softmax(const std::vector<float>& logits, double temperature = 1.0) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp((logits[i] - max) / temperature);
  for (double& x : p) x /= sum;
  return p;
}

std::map<int, int> histogram(SamplingParams params, const std::vector<float>& logits, int draws) {
  Sampler sampler(params, {}, 1234);
  std::map<int, int> counts;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> row = logits;
    ++counts[sampler.sample(row).id];
  }
  return counts;
}

const std::vector<float> kLogits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f, 2.5f};

TEST(Sampler, GreedyPicksTheArgmax) {
  SamplingParams p;
  p.temperature = 0;
  auto counts = histogram(p, kLogits, 50);
  EXPECT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts.begin()->first, 3);
}

TEST(Sampler, TemperatureSamplingFollowsTheSoftmax) {
  SamplingParams p;
  p.temperature = 0.8f;
  const int draws = 40000;
  auto counts = histogram(p, kLogits, draws);
  auto expected = softmax(kLogits, 0.8);
  for (size_t i = 0; i < kLogits.size(); ++i) {
    const double freq = double(counts[int(i)]) / draws;
    const double sigma = std::sqrt(expected[i] * (1 - expected[i]) / draws);
    EXPECT_NEAR(freq, expected[i], 5 * sigma + 1e-4) << "token " << i;
  }
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  SamplingParams p;
  p.top_k = 2;
  const int draws = 20000;
  auto counts = histogram(p, kLogits, draws);
  EXPECT_EQ(counts.size(), 2u);
  // Renormalized over tokens 3 and 5: e^3 / (e^3 + e^2.5).
  const double p3 = 1.0 / (1.0 + std::exp(-0.5));
  EXPECT_NEAR(double(counts[3]) / draws, p3, 5 * std::sqrt(p3 * (1 - p3) / draws));
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  auto probs = softmax(kLogits);  // sorted: 3 (0.43), 5 (0.26), 1 (0.16), 0 (0.06) ...
  SamplingParams p;
  p.top_p = float(probs[3] + probs[5] + 0.01);  // needs the third token too
  auto counts = histogram(p, kLogits, 5000);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_TRUE(counts.count(3) && counts.count(5) && counts.count(1));
  p.top_p = float(probs[3] - 0.01);
  EXPECT_EQ(histogram(p, kLogits, 200).size(), 1u);
}

TEST(Sampler, MinPDropsTokensBelowTheFractionOfTheBest) {
  auto probs = softmax(kLogits);
  SamplingParams p;
  p.min_p = float(probs[1] / probs[3]) + 0.001f;  // token 1 falls just below the floor
  auto counts = histogram(p, kLogits, 5000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_FALSE(counts.count(1));
}

TEST(Sampler, SeededRequestsRepeat) {
  SamplingParams p;
  p.seed = 42;
  auto draw = [&](uint64_t default_seed) {
    Sampler s(p, {}, default_seed);
    std::vector<int> ids;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> row = kLogits;
      ids.push_back(s.sample(row).id);
    }
    return ids;
  };
  EXPECT_EQ(draw(1), draw(2));  // the request's seed wins over the engine default
  p.seed = 43;
  auto other = draw(1);
  p.seed = 42;
  EXPECT_NE(draw(1), other);
}

TEST(Sampler, PenaltiesFollowVllmDefinitions) {
  // repetition_penalty 2 divides positive logits (and multiplies negative ones) of prompt and output
  // tokens; frequency adds -f * count, presence -p once per seen output token.
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  std::vector<int32_t> prompt = {3};
  Sampler s(p, prompt, 0);
  std::vector<float> row = kLogits;  // token 3: 3.0 -> 1.5; token 5 (2.5) wins
  EXPECT_EQ(s.sample(row).id, 5);

  SamplingParams q;
  q.temperature = 0;
  q.frequency_penalty = 0.3f;
  q.presence_penalty = 0.1f;
  Sampler t(q, {}, 0);
  t.accept(3);
  t.accept(3);
  std::vector<float> row2 = kLogits;  // token 3: 3.0 - 0.6 - 0.1 = 2.3 < 2.5
  EXPECT_EQ(t.sample(row2).id, 5);
  EXPECT_NEAR(row2[3], 2.3f, 1e-6);
}

TEST(Sampler, LogprobsAreOfTheRawLogits) {
  SamplingParams p;
  p.temperature = 0.5f;
  p.logprobs = 3;
  Sampler s(p, {}, 0);
  std::vector<float> row = kLogits;
  SampledToken t = s.sample(row);
  auto probs = softmax(kLogits);
  EXPECT_NEAR(t.logprob, std::log(probs[size_t(t.id)]), 1e-5);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].id, 3);
  EXPECT_EQ(t.top[1].id, 5);
  EXPECT_EQ(t.top[2].id, 1);
  EXPECT_NEAR(t.top[0].logprob, std::log(probs[3]), 1e-5);
}

TEST(Sampler, BannedTokensAreNeverSampled) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p, {}, 0);
  std::vector<float> row = kLogits;
  std::vector<int32_t> banned = {3, 5};
  EXPECT_EQ(s.sample(row, banned).id, 1);
}

}  // namespace
}  // namespace dcu

namespace dcu {
namespace {

using test::FixedConstraint;

TEST(SamplerConstraint, MasksTheRowAndAdvancesWithEachToken) {
  auto constraint = std::make_shared<FixedConstraint>(std::vector<int32_t>{3, 40});
  SamplingParams p;
  p.temperature = 0.0f;
  p.constraint = constraint;
  Sampler sampler(p, {}, 0);
  EXPECT_TRUE(sampler.constrained());
  EXPECT_FALSE(sampler.needs_whole_row(false));  // the mask is applied where the row is (BatchSampler)
  std::vector<float> logits(50, 0.0f);
  logits[7] = 9.0f;  // the likeliest token is not allowed
  logits[40] = 1.0f;
  EXPECT_EQ(sampler.sample(logits).id, 40);
  sampler.accept(40);
  EXPECT_EQ(constraint->accepted, std::vector<int32_t>{40});
  // Bans that would leave nothing allowed give way to the constraint.
  std::vector<float> again(50, 0.0f);
  const int32_t banned[] = {3, 40};
  const int32_t chosen = sampler.sample(again, banned).id;
  EXPECT_TRUE(chosen == 3 || chosen == 40);
}

}  // namespace
}  // namespace dcu
