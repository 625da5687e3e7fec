// Speculative decoding with the demo model's MTP block, end to end through the engine on the CPU: it
// must be lossless. Greedy outputs equal transformers' references and the outputs without speculation
// (k = 1, 2, 3; one rank and two simulated ranks), under a mixed load with long prompts arriving
// mid-run, cancellations, stop ids, min_tokens and max_tokens; seeded sampled outputs are reproducible
// and the sampled distribution at a position is the one without speculation (chi-square).

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "backend/gpu_backend_api.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "engine/speculative_config.h"
#include "support/event_collector.h"
#include "support/fixed_constraint.h"
#include "support/model_fixture.h"

namespace dcu {
namespace {

const std::string kDemo = "models/dcuserve-demo";

// The CPU; DCUSERVE_TEST_DEVICE=cuda (or hip) runs the same checks on GPUs.
std::string test_device() {
  const char* device = std::getenv("DCUSERVE_TEST_DEVICE");
  return device ? device : "cpu";
}

std::unique_ptr<Engine> make_engine(int k, int tensor_parallel_size = 1, int max_batched = 64,
                                    std::optional<int64_t> cache_bytes = std::nullopt) {
  EngineOptions o;
  o.kv_cache_memory_bytes = cache_bytes;
  o.model_dir = kDemo;
  o.device = test_device();
  o.tensor_parallel_size = tensor_parallel_size;
  o.max_model_len = 512;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = max_batched;  // long prompts are prefilled in chunks next to verify steps
  o.num_speculative_tokens = k;
  return create_engine(o);
}

GenerationRequest greedy(std::vector<int32_t> prompt, int max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  return r;
}

struct Submitted {
  std::unique_ptr<testing::EventCollector> out = std::make_unique<testing::EventCollector>();
  RequestId id = 0;
};

Submitted submit(Engine& e, GenerationRequest r) {
  Submitted s;
  auto res = e.submit(std::move(r), s.out->callback());
  EXPECT_TRUE(std::holds_alternative<RequestId>(res));
  if (auto* id = std::get_if<RequestId>(&res)) s.id = *id;
  return s;
}

TEST(SpeculativeEngine, GreedyAnswersEqualTheReferenceAtEveryK) {
  const auto cases = testing::reference_cases(kDemo);
  ASSERT_EQ(cases.size(), 6u);
  for (int k : {1, 2, 3}) {
    auto engine = make_engine(k);
    std::vector<Submitted> runs;
    for (const auto& c : cases) {
      GenerationRequest r = greedy(c.ids, int(c.greedy.size()));
      r.sampling.ignore_eos = true;
      runs.push_back(submit(*engine, std::move(r)));
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      runs[i].out->wait();
      EXPECT_EQ(runs[i].out->ids, cases[i].greedy) << cases[i].key << " k=" << k;
    }
    const EngineStats st = engine->stats();
    std::printf("k=%d: %llu verify steps, %.1f%% of drafts accepted, %.2f tokens per step; first draft accepted %.1f%%\n", k,
                (unsigned long long)st.spec_drafts, 100.0 * double(st.spec_accepted_tokens) / double(st.spec_draft_tokens),
                1.0 + double(st.spec_accepted_tokens) / double(st.spec_drafts),
                100.0 * double(st.spec_accepted_per_position[0]) / double(st.spec_drafts));
    // Every draft position is counted; position i can only be accepted when i - 1 was.
    ASSERT_EQ(st.spec_accepted_per_position.size(), size_t(k));
    EXPECT_GT(st.spec_drafts, 0u);
    EXPECT_LE(st.spec_accepted_tokens, st.spec_draft_tokens);
    uint64_t sum = 0;
    for (int i = 0; i < k; ++i) {
      sum += st.spec_accepted_per_position[size_t(i)];
      if (i > 0) {
        EXPECT_LE(st.spec_accepted_per_position[size_t(i)], st.spec_accepted_per_position[size_t(i) - 1]);
      }
    }
    EXPECT_EQ(sum, st.spec_accepted_tokens);
    // The demo's MTP head was trained: most first drafts agree (its README: 74-100 % on these chats).
    EXPECT_GT(double(st.spec_accepted_per_position[0]) / double(st.spec_drafts), 0.6) << "k=" << k;
  }
}

// 64 requests: the six chats with max_tokens cut at different points, stop ids, min_tokens and eos, plus
// long prompts (chats repeated) submitted while the others decode, and some cancelled. Every finished
// output must be the same with and without speculation; a cancelled one a prefix of it.
struct MixedLoad {
  std::vector<GenerationRequest> requests;
  std::vector<bool> late, cancelled;
};

MixedLoad mixed_load() {
  const auto cases = testing::reference_cases(kDemo);
  MixedLoad m;
  for (int i = 0; i < 64; ++i) {
    const auto& c = cases[size_t(i) % cases.size()];
    std::vector<int32_t> prompt = c.ids;
    const bool long_prompt = i % 8 == 5;
    if (long_prompt)  // about 300 tokens: several prefill chunks next to the others' verify steps
      while (prompt.size() < 300) prompt.insert(prompt.end(), c.ids.begin(), c.ids.end());
    GenerationRequest r = greedy(prompt, 8 + (i * 7) % 40);
    if (i % 5 == 1) r.sampling.stop_token_ids = {c.greedy[size_t(i) % c.greedy.size()]};
    if (i % 6 == 2) r.sampling.min_tokens = 5;
    if (i % 9 == 3) r.sampling.ignore_eos = true;
    m.requests.push_back(std::move(r));
    m.late.push_back(long_prompt || i >= 48);
    m.cancelled.push_back(i % 11 == 7);
  }
  return m;
}

std::vector<testing::EventCollector*> run_mixed(Engine& engine, const MixedLoad& m, std::vector<Submitted>& runs) {
  for (size_t i = 0; i < m.requests.size(); ++i) {
    if (!m.late[i]) runs.push_back(submit(engine, m.requests[i]));
    else runs.emplace_back();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the first ones are decoding
  for (size_t i = 0; i < m.requests.size(); ++i)
    if (m.late[i]) runs[i] = submit(engine, m.requests[i]);
  for (size_t i = 0; i < m.requests.size(); ++i)
    if (m.cancelled[i]) engine.cancel(runs[i].id);
  std::vector<testing::EventCollector*> out;
  for (auto& r : runs) {
    r.out->wait();
    out.push_back(r.out.get());
  }
  return out;
}

bool is_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

TEST(SpeculativeEngine, MixedLoadIsLosslessOnOneAndTwoRanks) {
  const MixedLoad m = mixed_load();
  // The reference: the same load without speculation and without cancellations.
  std::vector<std::vector<int32_t>> expected;
  std::vector<FinishReason> reasons;
  {
    auto plain = make_engine(0);
    MixedLoad uncancelled = m;
    uncancelled.cancelled.assign(m.requests.size(), false);
    std::vector<Submitted> runs;
    for (const auto* out : run_mixed(*plain, uncancelled, runs)) {
      expected.push_back(out->ids);
      reasons.push_back(*out->finished);
    }
  }
  struct Setup { int k, ranks; };
  for (Setup setup : {Setup{1, 1}, Setup{3, 1}, Setup{2, 2}}) {
    if (setup.ranks > 1 && test_device() != "cpu" && list_gpu_devices().size() < 2) {
      std::printf("two ranks skipped: one GPU\n");
      continue;
    }
    auto engine = make_engine(setup.k, setup.ranks);
    std::vector<Submitted> runs;
    const auto outputs = run_mixed(*engine, m, runs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string what = "request " + std::to_string(i) + " k=" + std::to_string(setup.k) +
                               " ranks=" + std::to_string(setup.ranks);
      if (*outputs[i]->finished == FinishReason::Abort) {
        EXPECT_TRUE(m.cancelled[i]) << what;
        EXPECT_TRUE(is_prefix(outputs[i]->ids, expected[i])) << what;
        continue;
      }
      EXPECT_EQ(outputs[i]->ids, expected[i]) << what;
      EXPECT_EQ(*outputs[i]->finished, reasons[i]) << what;
    }
    EXPECT_GT(engine->stats().spec_accepted_tokens, 0u);
  }
}

// A cache too small for the load: speculating sequences are preempted (drafts dropped, both caches
// recomputed) and still produce the outputs of a roomy engine without speculation.
TEST(SpeculativeEngine, PreemptedSpeculatingSequencesAreLossless) {
  const auto cases = testing::reference_cases(kDemo);
  std::vector<std::vector<int32_t>> outputs[2];
  uint64_t preemptions = 0;
  for (int k : {0, 2}) {
    auto engine = k ? make_engine(k, 1, 64, int64_t(8) << 20) : make_engine(0);
    std::vector<Submitted> runs;
    for (const auto& c : cases) {  // 420-token prompts and 90 tokens each: three sequences overflow the pages
      std::vector<int32_t> prompt = c.ids;
      while (prompt.size() < 420) prompt.insert(prompt.end(), c.ids.begin(), c.ids.end());
      GenerationRequest r = greedy(std::vector<int32_t>(prompt.begin(), prompt.begin() + 420), 90);
      r.sampling.ignore_eos = true;
      runs.push_back(submit(*engine, std::move(r)));
    }
    for (auto& r : runs) {
      r.out->wait();
      outputs[k ? 1 : 0].push_back(r.out->ids);
    }
    if (k) preemptions = engine->stats().preemptions;
  }
  EXPECT_GT(preemptions, 0u) << "the cache should be too small for the load";
  EXPECT_EQ(outputs[1], outputs[0]);
}

size_t token_count(testing::EventCollector& c) {
  std::lock_guard lock(c.mutex);
  return c.ids.size();
}

// Structured output with a mask budget: chat i's constraint allows every token (so the greedy answer is
// the reference) but holds its masks after the first 2 + i until opened, so the late mask falls on
// different verify rounds. Once the held chat has sent its free tokens (drafts accepted before the late
// row included), a free request decodes to its reference while it sends nothing more; once opened its
// answer is the reference too. One held chat at a time: a held mask keeps its mask worker.
TEST(SpeculativeEngine, ALateMaskStopsOnlyItsOwnSequenceAndKeepsTheAnswerExact) {
  const auto cases = testing::reference_cases(kDemo);
  EngineOptions o;
  o.model_dir = kDemo;
  o.device = test_device();
  o.max_model_len = 512;
  o.num_speculative_tokens = 2;
  o.mask_budget_ms = 1;
  auto engine = create_engine(o);
  std::vector<int32_t> every_token(size_t(engine->vocab_size()));
  std::iota(every_token.begin(), every_token.end(), 0);
  const auto& free_case = cases.back();
  for (size_t i = 0; i + 1 < cases.size(); ++i) {
    const size_t free_masks = 2 + i;
    auto gate = std::make_shared<test::GatedConstraint>(every_token, int(free_masks));
    GenerationRequest r = greedy(cases[i].ids, int(cases[i].greedy.size()));
    r.sampling.ignore_eos = true;
    r.sampling.constraint = gate;
    Submitted held = submit(*engine, std::move(r));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (token_count(*held.out) < free_masks && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));

    GenerationRequest free_request = greedy(free_case.ids, int(free_case.greedy.size()));
    free_request.sampling.ignore_eos = true;
    Submitted free_run = submit(*engine, std::move(free_request));
    free_run.out->wait();
    EXPECT_EQ(free_run.out->ids, free_case.greedy);
    {
      std::lock_guard lock(held.out->mutex);
      EXPECT_FALSE(held.out->finished.has_value()) << cases[i].key;
      EXPECT_EQ(held.out->ids, std::vector<int32_t>(cases[i].greedy.begin(), cases[i].greedy.begin() + long(free_masks)))
          << cases[i].key;
    }
    gate->open();
    held.out->wait();
    EXPECT_EQ(held.out->ids, cases[i].greedy) << cases[i].key;
    EXPECT_EQ(gate->accepted, cases[i].greedy) << cases[i].key;
  }
  EXPECT_GT(engine->stats().spec_accepted_tokens, 0u);
}

GenerationRequest sampled(const std::vector<int32_t>& prompt, uint64_t seed) {
  GenerationRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = seed;
  r.sampling.max_tokens = 12;
  r.sampling.ignore_eos = true;
  return r;
}

// Seeded requests: the same tokens on every run with speculation, and the same as without it (each
// emitted token takes one random number from the request's generator, as without drafts).
TEST(SpeculativeEngine, SeededSamplingIsReproducible) {
  const auto cases = testing::reference_cases(kDemo);
  auto plain = make_engine(0), spec = make_engine(2);
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const auto& prompt = cases[seed % cases.size()].ids;
    std::vector<std::vector<int32_t>> outs;
    for (Engine* e : {plain.get(), spec.get(), spec.get()}) {
      Submitted s = submit(*e, sampled(prompt, seed));
      s.out->wait();
      outs.push_back(s.out->ids);
    }
    EXPECT_EQ(outs[1], outs[2]) << "seed " << seed;
    EXPECT_EQ(outs[0], outs[1]) << "seed " << seed;
  }
}

// The token at output position 6 of one chat (the answer's first word, after the empty think block) over
// 300 seeds, with and without speculation: Pearson's two-sample chi-square statistic stays below the 0.1 %
// critical value for its degrees of freedom.
TEST(SpeculativeEngine, SampledDistributionMatchesWithoutSpeculation) {
  const auto prompt = testing::reference_cases(kDemo)[0].ids;
  std::map<int32_t, int> counts[2];
  for (int k : {0, 3}) {
    auto engine = make_engine(k);
    std::vector<Submitted> runs;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      GenerationRequest r = sampled(prompt, 1000 + seed);
      r.sampling.temperature = 1.5f;  // a spread-out distribution: many tokens take part
      r.sampling.top_p = 1.0f;
      r.sampling.max_tokens = 7;
      runs.push_back(submit(*engine, std::move(r)));
    }
    for (auto& r : runs) {
      r.out->wait();
      ASSERT_EQ(r.out->ids.size(), 7u);
      ++counts[k ? 1 : 0][r.out->ids[6]];
    }
  }
  std::map<int32_t, std::pair<int, int>> table;
  for (auto [id, n] : counts[0]) table[id].first = n;
  for (auto [id, n] : counts[1]) table[id].second = n;
  ASSERT_GT(table.size(), 3u) << "the position should not be nearly deterministic";
  double chi2 = 0;
  for (auto [id, n] : table) {
    const double total = n.first + n.second, expected = total / 2;  // equal sample sizes
    chi2 += (n.first - expected) * (n.first - expected) / expected + (n.second - expected) * (n.second - expected) / expected;
  }
  const double dof = double(table.size() - 1);
  // Wilson-Hilferty: the chi-square quantile at 1 - 0.001 (z = 3.09).
  const double z = 3.09, critical = dof * std::pow(1 - 2 / (9 * dof) + z * std::sqrt(2 / (9 * dof)), 3);
  EXPECT_LT(chi2, critical) << table.size() << " distinct tokens";
}

TEST(SpeculativeEngine, ModelWithoutMtpBlockIsAClearError) {
  EngineOptions o;
  o.model_dir = "tests/data/tiny-qwen35";
  o.device = "cpu";
  o.max_model_len = 64;
  o.num_speculative_tokens = 2;
  try {
    create_engine(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no MTP block"), std::string::npos) << e.what();
  }
}

TEST(SpeculativeConfig, ParsesVllmsFlagAndRejectsBadInput) {
  for (const char* method : {"mtp", "qwen3_5_mtp", "qwen3_next_mtp"})
    EXPECT_EQ(parse_speculative_config(std::string("{\"method\": \"") + method + "\", \"num_speculative_tokens\": 3}")
                  .num_speculative_tokens,
              3);
  auto error_of = [](const std::string& text) {
    try {
      parse_speculative_config(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("mtp").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "eagle", "num_speculative_tokens": 2})").find("\"eagle\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method": "mtp", "num_speculative_tokens": 0})").find("from 1 to 8"), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "mtp", "num_speculative_tokens": 9})").find("from 1 to 8"), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "mtp", "num_speculative_tokens": "2"})").find("an integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "mtp"})").find("num_speculative_tokens"), std::string::npos);
  EXPECT_NE(error_of(R"({"num_speculative_tokens": 2})").find("\"method\""), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "mtp", "num_speculative_tokens": 2, "model": "x"})").find("unknown key \"model\""),
            std::string::npos);
}

}  // namespace
}  // namespace dcu
