// The engine end to end on the tiny fixture: greedy outputs equal the transformers reference however
// many requests share the batch (also under preemption), prompt logprobs equal the reference's
// log-softmax, cancellation and queue limits behave.

#include <condition_variable>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/gpu_backend_api.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "support/event_collector.h"
#include "support/fixed_constraint.h"
#include "support/model_fixture.h"

namespace dcu {
namespace {

const std::string kModel = "tests/data/tiny-qwen35";

GenerationRequest greedy_request(const testing::ReferenceCase& c) {
  GenerationRequest r;
  r.prompt = c.ids;
  r.sampling.temperature = 0;
  r.sampling.max_tokens = int(c.greedy.size());
  r.sampling.ignore_eos = true;
  return r;
}

std::unique_ptr<Engine> make_engine(std::optional<int64_t> cache_bytes = std::nullopt, int max_waiting = 64,
                                    int max_batched = 64) {
  EngineOptions o;
  o.model_dir = kModel;
  o.device = "cpu";
  o.max_model_len = 256;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = max_batched;
  o.kv_cache_memory_bytes = cache_bytes;
  o.max_waiting_requests = max_waiting;
  return create_engine(o);
}

RequestId submit_ok(Engine& e, GenerationRequest r, testing::EventCollector& c) {
  auto res = e.submit(std::move(r), c.callback());
  EXPECT_TRUE(std::holds_alternative<RequestId>(res));
  return std::get<RequestId>(res);
}

TEST(Engine, ConcurrentGreedyRequestsMatchTheReference) {
  auto engine = make_engine();
  auto cases = testing::reference_cases(kModel, 200);
  std::vector<std::unique_ptr<testing::EventCollector>> out;
  for (int copy = 0; copy < 3; ++copy)
    for (const auto& c : cases) {
      out.push_back(std::make_unique<testing::EventCollector>());
      submit_ok(*engine, greedy_request(c), *out.back());
    }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i]->wait();
    EXPECT_EQ(*out[i]->finished, FinishReason::Length);
    EXPECT_EQ(out[i]->ids, cases[i % cases.size()].greedy) << cases[i % cases.size()].key;
  }
}

TEST(Engine, PreemptionUnderMemoryPressureKeepsOutputsExact) {
  // 900 kB: two GDN state slots (170 kB each) and 17 KV pages of 16 tokens, while two copies of
  // prompt0 (110 + 24 tokens) need 9 pages each: the newer one is preempted and recomputed.
  auto engine = make_engine(900000);
  auto cases = testing::reference_cases(kModel, 200);
  std::vector<std::unique_ptr<testing::EventCollector>> out;
  std::vector<const testing::ReferenceCase*> expected;
  for (int copy = 0; copy < 3; ++copy)
    for (const testing::ReferenceCase* c : {&cases[0], &cases[4], &cases[0]}) {
      out.push_back(std::make_unique<testing::EventCollector>());
      expected.push_back(c);
      submit_ok(*engine, greedy_request(*c), *out.back());
    }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i]->wait();
    EXPECT_EQ(out[i]->ids, expected[i]->greedy) << expected[i]->key;
  }
  EXPECT_GT(engine->stats().preemptions, 0u);
}

// A structured-output mask that overruns its budget holds back only its own sequence: the others
// decode to the end meanwhile, and it finishes, within its constraint, once the mask is done.
TEST(Engine, ALateMaskDelaysOnlyItsOwnSequence) {
  EngineOptions o;
  o.model_dir = kModel;
  o.device = "cpu";
  o.max_model_len = 256;
  o.max_num_seqs = 4;
  o.mask_budget_ms = 100;
  auto engine = create_engine(o);
  const auto cases = testing::reference_cases(kModel, 200);
  const std::vector<int32_t> allowed = {5, 7, 9};
  auto gated = std::make_shared<test::GatedConstraint>(allowed);
  GenerationRequest slow = greedy_request(cases[0]);
  slow.sampling.max_tokens = 3;
  slow.sampling.constraint = gated;
  testing::EventCollector slow_events, free_events;
  submit_ok(*engine, std::move(slow), slow_events);
  submit_ok(*engine, greedy_request(cases[1]), free_events);
  free_events.wait();
  EXPECT_EQ(free_events.ids, cases[1].greedy);
  {
    std::lock_guard lock(slow_events.mutex);
    EXPECT_FALSE(slow_events.finished.has_value());
    EXPECT_TRUE(slow_events.ids.empty());
  }
  gated->open();
  slow_events.wait();
  EXPECT_EQ(slow_events.finished, FinishReason::Length);
  ASSERT_EQ(slow_events.ids.size(), 3u);
  for (int32_t id : slow_events.ids) EXPECT_TRUE(std::find(allowed.begin(), allowed.end(), id) != allowed.end()) << id;
  EXPECT_EQ(gated->accepted, slow_events.ids);
}

TEST(Engine, PromptLogprobsEqualTheReferenceLogSoftmax) {
  auto engine = make_engine();
  testing::Reference ref(kModel + "/reference.safetensors");
  auto ids = ref.ints("prompt0.input_ids");
  std::vector<int64_t> shape;
  auto logits = ref.floats("prompt0.logits", &shape);
  const int64_t V = shape[1];
  GenerationRequest r;
  r.prompt = ids;
  r.sampling.max_tokens = 0;
  r.sampling.prompt_logprobs = 2;
  testing::EventCollector c;
  submit_ok(*engine, r, c);
  c.wait();
  ASSERT_EQ(c.prompt_logprobs.size(), ids.size());
  EXPECT_FALSE(c.prompt_logprobs[0].has_value());
  for (size_t i = 1; i < ids.size(); ++i) {
    const float* row = &logits[(i - 1) * size_t(V)];
    double max = *std::max_element(row, row + V), sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - max);
    const double expected = double(row[ids[i]]) - max - std::log(sum);
    ASSERT_TRUE(c.prompt_logprobs[i].has_value());
    EXPECT_NEAR(c.prompt_logprobs[i]->logprob, expected, 1e-3) << "position " << i;
    EXPECT_EQ(c.prompt_logprobs[i]->top.size(), 2u);
  }
}

TEST(Engine, CancelEndsOneRequestAndLeavesTheOthers) {
  auto engine = make_engine();
  auto cases = testing::reference_cases(kModel, 200);
  GenerationRequest long_req = greedy_request(cases[0]);
  long_req.sampling.max_tokens = 100;
  testing::EventCollector victim, other;
  RequestId id = submit_ok(*engine, long_req, victim);
  submit_ok(*engine, greedy_request(cases[1]), other);
  engine->cancel(id);
  victim.wait();
  other.wait();
  EXPECT_EQ(*victim.finished, FinishReason::Abort);
  EXPECT_LT(victim.ids.size(), 100u);
  EXPECT_EQ(other.ids, cases[1].greedy);
  engine->cancel(id);  // unknown by now: ignored
  EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
}

TEST(Engine, StopTokenIdsAndLengthLimits) {
  auto engine = make_engine();
  auto c0 = testing::reference_cases(kModel, 200)[0];
  GenerationRequest r = greedy_request(c0);
  r.sampling.stop_token_ids = {c0.greedy[3]};
  testing::EventCollector c;
  submit_ok(*engine, r, c);
  c.wait();
  EXPECT_EQ(*c.finished, FinishReason::Stop);
  EXPECT_EQ(c.ids, std::vector<int32_t>(c0.greedy.begin(), c0.greedy.begin() + 4));

  GenerationRequest too_long;
  too_long.prompt.assign(300, 5);
  auto res = engine->submit(too_long, [](GenerationEvent&&) {});
  ASSERT_TRUE(std::holds_alternative<SubmitError>(res));
  EXPECT_NE(std::get<SubmitError>(res).message.find("context length is 256"), std::string::npos);

  GenerationRequest bad_id;
  bad_id.prompt = {1, 5000};
  res = engine->submit(bad_id, [](GenerationEvent&&) {});
  ASSERT_TRUE(std::holds_alternative<SubmitError>(res));
}

TEST(Engine, FullWaitingQueueAsksToRetryLater) {
  auto engine = make_engine(std::nullopt, /*max_waiting=*/2, /*max_batched=*/16);
  auto c0 = testing::reference_cases(kModel, 200)[0];
  std::vector<std::unique_ptr<testing::EventCollector>> accepted;
  bool rejected = false;
  for (int i = 0; i < 40 && !rejected; ++i) {
    auto col = std::make_unique<testing::EventCollector>();
    auto res = engine->submit(greedy_request(c0), col->callback());
    if (auto* e = std::get_if<SubmitError>(&res)) {
      rejected = true;
      EXPECT_GT(e->retry_after_seconds, 0);
    } else {
      accepted.push_back(std::move(col));
    }
  }
  EXPECT_TRUE(rejected);
  for (auto& c : accepted) c->wait();
}

// Two multi-sequence requests that each fit the queue alone: one is admitted whole and the other
// refused whole (before, each was admitted sequence by sequence and both could run out of room and be
// rolled back); a group larger than the queue can ever hold is refused for good.
TEST(Engine, GroupsAreAdmittedWholeOrRefusedWhole) {
  auto engine = make_engine(std::nullopt, /*max_waiting=*/8, /*max_batched=*/16);  // holds 8 + 16 sequences
  const auto c0 = testing::reference_cases(kModel, 200)[0];
  auto group = [&](int size, std::vector<std::unique_ptr<testing::EventCollector>>& out) {
    std::vector<GenerationRequest> requests;
    std::vector<EventCallback> callbacks;
    for (int i = 0; i < size; ++i) {
      out.push_back(std::make_unique<testing::EventCollector>());
      requests.push_back(greedy_request(c0));
      requests.back().prompt.resize(8);
      requests.back().sampling.max_tokens = 2;
      callbacks.push_back(out.back()->callback());
    }
    return engine->submit_all(std::move(requests), std::move(callbacks));
  };
  std::vector<std::unique_ptr<testing::EventCollector>> first, second, huge;
  auto a = group(20, first);
  ASSERT_TRUE(std::holds_alternative<std::vector<RequestId>>(a));
  EXPECT_EQ(std::get<std::vector<RequestId>>(a).size(), 20u);
  auto b = group(20, second);
  ASSERT_TRUE(std::holds_alternative<SubmitError>(b)) << "the second group does not fit beside the first";
  EXPECT_GT(std::get<SubmitError>(b).retry_after_seconds, 0);
  auto c = group(25, huge);
  ASSERT_TRUE(std::holds_alternative<SubmitError>(c));
  EXPECT_EQ(std::get<SubmitError>(c).retry_after_seconds, 0) << "a group that can never fit is not retried";
  for (auto& col : first) col->wait();
  second.clear();
  auto again = group(20, second);  // room again once the first group finished
  ASSERT_TRUE(std::holds_alternative<std::vector<RequestId>>(again));
  for (auto& col : second) col->wait();
}

TEST(Engine, SeededSamplingDoesNotDependOnTheBatch) {
  auto engine = make_engine();
  auto c0 = testing::reference_cases(kModel, 200)[1];
  auto sampled = [&](int neighbours) {
    std::vector<std::unique_ptr<testing::EventCollector>> others;
    for (int i = 0; i < neighbours; ++i) {
      others.push_back(std::make_unique<testing::EventCollector>());
      GenerationRequest n = greedy_request(testing::reference_cases(kModel, 200)[0]);
      n.sampling.temperature = 1.0f;
      submit_ok(*engine, n, *others.back());
    }
    GenerationRequest r = greedy_request(c0);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 99;
    testing::EventCollector c;
    submit_ok(*engine, r, c);
    c.wait();
    for (auto& o : others) o->wait();
    return c.ids;
  };
  EXPECT_EQ(sampled(0), sampled(5));
}

TEST(Engine, TensorParallelWithoutEnoughGpusIsAClearError) {
  if (gpu_backend_compiled() && list_gpu_devices().size() >= 2) GTEST_SKIP() << "this machine has the GPUs";
  EngineOptions o;
  o.model_dir = kModel;
  o.tensor_parallel_size = 2;  // device auto: GPUs wanted, none here
  try {
    create_engine(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tensor-parallel-size 2 needs 2 GPUs"), std::string::npos) << e.what();
  }
}

// Out of memory at start-up: a cache budget that cannot hold one sequence of --max-model-len tokens is
// refused with the sizes (so that every request within the context length fits the cache on its own).
TEST(Engine, CacheBudgetBelowOneWholeSequenceIsAClearError) {
  try {
    make_engine(20000);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the cache budget of 20 KiB cannot hold one sequence of 256 tokens (it needs "), std::string::npos)
        << what;
    EXPECT_NE(what.find("--kv-cache-memory-bytes"), std::string::npos) << what;
  }
}

TEST(Engine, PrecisionOptionErrorsAreClear) {
  for (const auto& [dtype, precision, activations, message] :
       {std::tuple<std::string, std::string, std::string, std::string>{"float32", "medium", "auto",
                                                                       "needs a 16-bit --dtype"},
        {"auto", "low", "auto", "choose high or medium"},
        {"float64", "high", "auto", "choose auto, bfloat16, float16 or float32"},
        {"auto", "high", "fp8", "--activation-quantization \"fp8\": choose auto, int8 or none"}}) {
    EngineOptions o;
    o.model_dir = kModel;
    o.device = "cpu";
    o.dtype = dtype;
    o.matmul_precision = precision;
    o.activation_quantization = activations;
    try {
      create_engine(o);
      ADD_FAILURE() << dtype << " " << precision << ": expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dcu
