// The device way of sampling (BatchSampler: adjustments and summaries through the backend's logit ops)
// against the host way (Sampler::sample on the whole row), and the CPU logit ops against their
// definitions. The GPU logit ops are compared with these CPU ops in tests/backend/gpu_ops_test.cpp.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "sampling/batch_sampler.h"
#include "support/fixed_constraint.h"

namespace dcu {
namespace {

// Host memory standing in for backend memory (the CPU backend's allocate is malloc).
struct Rows {
  std::vector<float> data;
  Tensor t;
  Rows(int R, int V) : data(size_t(R) * size_t(V)), t(data.data(), DType::F32, {R, V}) {}
  std::span<float> row(int r) { return {data.data() + size_t(r) * size_t(t.cols()), size_t(t.cols())}; }
};

SamplingParams params(float temperature, int top_k = -1, float top_p = 1.0f, float min_p = 0.0f, int logprobs = -1) {
  SamplingParams p;
  p.temperature = temperature, p.top_k = top_k, p.top_p = top_p, p.min_p = min_p, p.logprobs = logprobs;
  return p;
}

TEST(BatchSampler, ChoosesWhatTheWholeRowChooses) {
  std::vector<SamplingParams> cases = {
      params(0.0f), params(0.0f, -1, 1.0f, 0.0f, 3), params(0.8f), params(1.0f, -1, 1.0f, 0.0f, 2),
      params(0.7f, 20, 0.8f), params(0.7f, -1, 0.9f), params(1.5f, -1, 0.99f), params(1.0f, -1, 1.0f, 0.05f),
      params(1.0f, -1, 0.95f, 0.02f), params(1.0f, 2000),  // top_k beyond the summary: whole rows
  };
  SamplingParams penalised = params(0.9f, 50);
  penalised.repetition_penalty = 1.3f, penalised.frequency_penalty = 0.5f, penalised.presence_penalty = 0.2f;
  cases.push_back(penalised);
  penalised.logprobs = 2;  // raw logprobs under penalties: whole rows
  cases.push_back(penalised);
  SamplingParams late_eos = params(1.0f, -1, 0.9f);
  late_eos.min_tokens = 1000;
  cases.push_back(late_eos);
  // Structured output: the mask is applied on the backend before the summary.
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < 3000; id += 7) allowed.push_back(id);
  auto sparse = std::make_shared<test::FixedConstraint>(allowed);
  for (SamplingParams p : {params(0.0f), params(0.8f), params(0.7f, 20, 0.8f), params(1.0f, -1, 1.0f, 0.0f, 4)}) {
    p.constraint = sparse;
    cases.push_back(p);
  }
  SamplingParams penalised_constrained = penalised;  // with raw logprobs: a whole row, masked on the host
  penalised_constrained.constraint = sparse;
  cases.push_back(penalised_constrained);
  // Only banned tokens allowed: the bans give way, the grammar decides.
  SamplingParams only_banned = late_eos;
  only_banned.constraint = std::make_shared<test::FixedConstraint>(std::vector<int32_t>{1, 2});
  cases.push_back(only_banned);

  const int V = 3000, R = int(cases.size());
  const std::vector<int32_t> prompt = {5, 17, 17, 2999, 40};
  const std::vector<int32_t> banned = {0, 1, 2};  // for late_eos
  std::vector<Sampler> host, device;
  for (const auto& p : cases) host.emplace_back(p, prompt, 7), device.emplace_back(p, prompt, 7);
  auto backend = make_cpu_backend();
  BatchSampler batch(*backend);
  std::mt19937 rng(3);
  std::normal_distribution<float> wide(0.0f, 1.5f);  // flat enough that tails beyond 256 tokens matter
  for (int step = 0; step < 60; ++step) {
    Rows logits(R, V);
    for (float& x : logits.data) x = std::round(wide(rng) * 64) / 64;  // many equal values
    std::vector<SamplingJob> jobs;
    std::vector<SampledToken> want;
    for (int r = 0; r < R; ++r) {
      const std::span<const int32_t> ban = cases[size_t(r)].min_tokens > 0 ? std::span<const int32_t>(banned) : std::span<const int32_t>();
      std::vector<float> row(logits.row(r).begin(), logits.row(r).end());
      want.push_back(host[size_t(r)].sample(row, ban));
      jobs.push_back({&device[size_t(r)], r, ban});
    }
    std::vector<SampledToken> got = batch.sample(logits.t, jobs);
    ASSERT_EQ(got.size(), want.size());
    for (int r = 0; r < R; ++r) {
      ASSERT_EQ(got[size_t(r)].id, want[size_t(r)].id) << "case " << r << " step " << step;
      EXPECT_NEAR(got[size_t(r)].logprob, want[size_t(r)].logprob, 1e-4) << "case " << r;
      ASSERT_EQ(got[size_t(r)].top.size(), want[size_t(r)].top.size()) << "case " << r;
      for (size_t i = 0; i < got[size_t(r)].top.size(); ++i) {
        EXPECT_EQ(got[size_t(r)].top[i].id, want[size_t(r)].top[i].id) << "case " << r;
        EXPECT_NEAR(got[size_t(r)].top[i].logprob, want[size_t(r)].top[i].logprob, 1e-4) << "case " << r;
      }
      if (cases[size_t(r)].constraint) {
        const int32_t id = got[size_t(r)].id;
        EXPECT_TRUE(cases[size_t(r)].constraint == sparse ? id % 7 == 0 : id == 1 || id == 2) << "case " << r;
      } else if (cases[size_t(r)].min_tokens > 0) {
        EXPECT_GT(got[size_t(r)].id, 2);
      }
      host[size_t(r)].accept(want[size_t(r)].id);
      device[size_t(r)].accept(got[size_t(r)].id);
    }
  }
}

// A mask that overruns the budget leaves its job out of the step (the others get their tokens) and,
// once done, chooses what sampling the whole row with that constraint chooses.
TEST(BatchSampler, ALateMaskLeavesItsRowForLaterAndTheOthersGoOn) {
  const int V = 300;
  std::vector<int32_t> allowed;
  for (int32_t id = 3; id < V; id += 11) allowed.push_back(id);
  auto gated = std::make_shared<test::GatedConstraint>(allowed);
  SamplingParams free = params(0.8f), late_params = params(0.9f, 40, 0.95f);
  SamplingParams on_time = params(0.0f);
  on_time.constraint = std::make_shared<test::FixedConstraint>(allowed);
  late_params.constraint = gated;
  SamplingParams reference_params = late_params;
  reference_params.constraint = std::make_shared<test::FixedConstraint>(allowed);
  const std::vector<int32_t> prompt = {1, 2};
  Sampler free_sampler(free, prompt, 7), on_time_sampler(on_time, prompt, 7), late_sampler(late_params, prompt, 7);
  Sampler free_reference(free, prompt, 7), on_time_reference(on_time, prompt, 7), late_reference(reference_params, prompt, 7);

  Rows logits(3, V);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& x : logits.data) x = normal(rng);
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 3; ++r) rows.emplace_back(logits.row(r).begin(), logits.row(r).end());

  auto backend = make_cpu_backend();
  BatchSampler batch(*backend, std::chrono::milliseconds(250));  // the on-time mask is surely done by then
  const std::vector<SamplingJob> jobs = {{&free_sampler, 0, {}}, {&late_sampler, 1, {}}, {&on_time_sampler, 2, {}}};
  std::vector<LateChoice> late;
  const std::vector<SampledToken> got = batch.sample(logits.t, jobs, &late);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].job, 1u);
  EXPECT_EQ(got[0].id, free_reference.sample(rows[0]).id);
  EXPECT_EQ(got[2].id, on_time_reference.sample(rows[2]).id);
  EXPECT_FALSE(batch.ready(late[0]));
  gated->open();
  const SampledToken chosen = batch.finish(late[0], late_sampler);
  const SampledToken want = late_reference.sample(rows[1]);
  EXPECT_EQ(chosen.id, want.id);
  EXPECT_NEAR(chosen.logprob, want.logprob, 1e-5);
  EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), chosen.id) != allowed.end());
}

TEST(BatchSampler, PlainTemperatureFollowsTheSoftmaxThroughTheTail) {
  // One dominant token and a long flat tail: most draws land outside the 256 candidates, where the
  // whole row decides.
  const int V = 5000, draws = 4000;
  Rows logits(1, V);
  Sampler sampler(params(1.0f), {}, 11);
  auto backend = make_cpu_backend();
  BatchSampler batch(*backend);
  int top = 0;
  for (int i = 0; i < draws; ++i) {
    std::fill(logits.data.begin(), logits.data.end(), 0.0f);
    logits.data[7] = std::log(float(V));  // p(7) = V / (V + V - 1) ~ 0.5
    const SamplingJob job{&sampler, 0, {}};
    top += batch.sample(logits.t, std::span<const SamplingJob>(&job, 1))[0].id == 7;
  }
  const double p = double(V) / double(2 * V - 1), sigma = std::sqrt(p * (1 - p) / draws);
  EXPECT_NEAR(double(top) / draws, p, 5 * sigma);
}

TEST(CpuLogitOps, SummaryIsTheSortedTopAndTheSoftmaxSums) {
  const int R = 3, V = 500;
  Rows logits(R, V);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> level(-40, 40);
  for (float& x : logits.data) x = float(level(rng)) / 8;  // ties everywhere
  logits.data[size_t(V) + 9] = -std::numeric_limits<float>::infinity();
  auto backend = make_cpu_backend();
  for (int k : {1, 7, 500}) {
    std::vector<int32_t> rows = {2, 0, 1};
    std::vector<float> inv_t = {1.0f, 2.0f, 0.5f}, values(size_t(3 * k)), stats(6);
    std::vector<int32_t> ids(size_t(3 * k));
    backend->logit_summary(logits.t, Tensor(rows.data(), DType::I32, {3}), Tensor(inv_t.data(), DType::F32, {3}),
                           Tensor(values.data(), DType::F32, {3, k}), Tensor(ids.data(), DType::I32, {3, k}),
                           Tensor(stats.data(), DType::F32, {3, 2}));
    for (int i = 0; i < 3; ++i) {
      std::span<float> row = logits.row(rows[size_t(i)]);
      std::vector<int32_t> order(static_cast<size_t>(V));
      for (int j = 0; j < V; ++j) order[size_t(j)] = j;
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
      for (int j = 0; j < k; ++j) {
        EXPECT_EQ(ids[size_t(i * k + j)], order[size_t(j)]) << "row " << i << " k " << k;
        EXPECT_EQ(values[size_t(i * k + j)], row[size_t(order[size_t(j)])]);
      }
      const double max = row[size_t(order[0])];
      double sum = 0, mass = 0;
      for (float x : row) sum += std::exp(double(x) - max), mass += std::exp((double(x) - max) * inv_t[size_t(i)]);
      EXPECT_NEAR(stats[size_t(2 * i)], max + std::log(sum), 1e-5);
      EXPECT_NEAR(stats[size_t(2 * i + 1)], mass, 1e-5 * mass);
    }
  }
}

TEST(CpuLogitOps, MaskSetsTheDisallowedToMinusInfinity) {
  const int V = 70;  // three mask words, the last one partly used
  Rows logits(3, V);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < V; ++i) logits.row(r)[size_t(i)] = float(r * 100 + i);
  std::vector<int32_t> rows = {2, 0};
  std::vector<uint32_t> allowed = {0x1u, 0x80000000u, 0x20u,  // row 2: ids 0, 63, 69
                                   0x0u, 0x0u, 0x3u};         // row 0: ids 64, 65
  auto backend = make_cpu_backend();
  backend->mask_logits(logits.t, Tensor(rows.data(), DType::I32, {2}),
                       Tensor(reinterpret_cast<int32_t*>(allowed.data()), DType::I32, {2, 3}));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < V; ++i) {
    EXPECT_EQ(logits.row(2)[size_t(i)], i == 0 || i == 63 || i == 69 ? float(200 + i) : minus_inf) << i;
    EXPECT_EQ(logits.row(0)[size_t(i)], i == 64 || i == 65 ? float(i) : minus_inf) << i;
    EXPECT_EQ(logits.row(1)[size_t(i)], float(100 + i)) << i;  // not listed: untouched
  }
}

TEST(CpuLogitOps, AdjustmentsScaleBySignThenSubtract) {
  Rows logits(2, 4);
  logits.data = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f, -1.0f, 4.0f, 0.0f};
  std::vector<int32_t> targets = {0, 0, 0, 1, 1, 2, 1, 3};
  std::vector<float> factors = {2.0f, 0.0f, 2.0f, 0.5f, 1.0f, std::numeric_limits<float>::infinity(), 1.0f, 0.25f};
  make_cpu_backend()->adjust_logits(logits.t, Tensor(targets.data(), DType::I32, {4, 2}),
                                    Tensor(factors.data(), DType::F32, {4, 2}));
  EXPECT_EQ(logits.data[0], 1.0f);    // 2 / 2
  EXPECT_EQ(logits.data[1], -4.5f);   // -2 * 2 - 0.5
  EXPECT_EQ(logits.data[6], -std::numeric_limits<float>::infinity());  // banned
  EXPECT_EQ(logits.data[7], -0.25f);
  EXPECT_EQ(logits.data[2], 1.0f);    // untouched
}

TEST(CpuLogitOps, CopyColumnsPlacesABlock) {
  Rows out(2, 5), x(2, 2);
  x.data = {1, 2, 3, 4};
  make_cpu_backend()->copy_columns(x.t, out.t, 3);
  EXPECT_EQ(out.data, (std::vector<float>{0, 0, 0, 1, 2, 0, 0, 0, 3, 4}));
}

}  // namespace
}  // namespace dcu
