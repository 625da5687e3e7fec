// The demo model with int8 and int4 weights on the emulated GPU kernels (emulated_kernels.h), as
// gpu_golden_test's GpuQuantizedModel does on a GPU in its float32 mode, at this build's emulated warp
// width: the prefill logits of the reference chats (the expanded weights' tiled GEMM) and four decode
// steps of one chat (the GEMV with its folded norms). With f32 activations against the CPU backend with
// the same quantization, within 1e-3; with int8 activations (the quantize kernel and the integer GEMV)
// against the CPU's accuracy gate (logit_accuracy.h says why).

#include <gtest/gtest.h>

#include <cstdio>

#include "emulated_kernels.h"
#include "support/logit_accuracy.h"
#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

constexpr const char* kDemo = "models/dcuserve-demo";
constexpr int kDecodeSteps = 4;

using Param = std::tuple<WeightFormat, bool>;  // weight format, int8 activations

class EmulatedQuantizedModel : public ::testing::TestWithParam<Param> {
 protected:
  WeightFormat format() const { return std::get<0>(GetParam()); }
  bool int8_activations() const { return std::get<1>(GetParam()); }
  std::unique_ptr<LoadedModel> load(std::unique_ptr<Backend> backend) const {
    return std::make_unique<LoadedModel>(kDemo, 1024, 512, 8, std::move(backend),
                                         WeightOptions{std::nullopt, format()});
  }
  // The logits of the last kDecodeSteps tokens of `ids` [n], fed one per step after the rest as one prompt:
  // [kDecodeSteps, V].
  static std::vector<float> decode_logits(LoadedModel& model, const std::vector<int32_t>& ids) {
    auto seq = model.start_sequence(ids);
    model.step({{&seq, int(ids.size()) - kDecodeSteps}}, false);
    std::vector<float> logits;
    for (int i = 0; i < kDecodeSteps; ++i) {
      const std::vector<float> row = model.step({{&seq, 1}}, false);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    model.finish_sequence(seq);
    return logits;
  }
};

TEST_P(EmulatedQuantizedModel, MatchesTheCpu) {
  if (!logits_comparable_across_backends(format(), int8_activations()))
    GTEST_SKIP() << "int8 activations: MeetsTheAccuracyGate";
  auto cpu = load(make_cpu_backend({.int8_activations = int8_activations()}));
  auto emulated = load(std::make_unique<EmulatedKernels>(int8_activations()));
  const std::vector<ReferenceCase> cases = reference_cases(kDemo);
  for (const ReferenceCase& c : cases) {
    const std::vector<float> want = prompt_logits(*cpu, c.ids), got = prompt_logits(*emulated, c.ids);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(max_abs_diff(got.data(), want.data(), got.size()), 1e-3f) << c.key;
  }
  const std::vector<float> want = decode_logits(*cpu, cases[0].ids), got = decode_logits(*emulated, cases[0].ids);
  EXPECT_LT(max_abs_diff(got.data(), want.data(), got.size()), 1e-3f) << "decode steps";
}

// Int8 activations: the mean KLD from transformers' logits within the CPU's bound, over the reference
// chats' prefill and over the decode steps.
TEST_P(EmulatedQuantizedModel, MeetsTheAccuracyGate) {
  if (logits_comparable_across_backends(format(), int8_activations())) GTEST_SKIP() << "f32 activations: MatchesTheCpu";
  auto emulated = load(std::make_unique<EmulatedKernels>(int8_activations()));
  const double prefill = reference_chat_kld(*emulated, kDemo).mean;
  EXPECT_LE(prefill, mean_kld_bound(format())) << "prefill";
  const ReferenceCase c = reference_cases(kDemo)[0];
  const Reference reference_file(std::string(kDemo) + "/reference.safetensors");
  const std::vector<float> reference = reference_file.floats(c.key + ".logits");
  const std::vector<float> got = decode_logits(*emulated, c.ids);
  const int64_t V = emulated->config.vocab_size, first = int64_t(c.ids.size()) - kDecodeSteps;
  std::vector<double> klds;
  for (int i = 0; i < kDecodeSteps; ++i)
    klds.push_back(kl_divergence(&reference[size_t((first + i) * V)], &got[size_t(i * V)], V));
  const double decode = summarize(klds).mean;
  EXPECT_LE(decode, mean_kld_bound(format())) << "decode steps";
  std::printf("mean KLD from transformers: prefill %.3e, decode steps %.3e (bound %.0e)\n", prefill, decode,
              mean_kld_bound(format()));
}

INSTANTIATE_TEST_SUITE_P(Formats, EmulatedQuantizedModel,
                         ::testing::Combine(::testing::Values(WeightFormat::Int8, WeightFormat::Int4),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(weight_format_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_int8_activations" : "_f32_activations");
                         });

}  // namespace
}  // namespace dcu::testing
