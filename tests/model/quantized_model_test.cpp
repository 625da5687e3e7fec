// Load-time int8 / int4 / fp8 quantization (--quantization) of the bundled demo model (a trained model: the
// random-weight fixtures' peaked logits say nothing about accuracy), against the 16-bit model: the per-position KL divergence of the next-token
// distributions, KL(p_16bit || p_quantized), and greedy answers. The numbers are printed (they are
// the accuracy table of docs/QUANTIZATION.md); the bounds are the int8 gate (mean KLD at most
// 1e-3) and, for int4 and fp8, a bound that only a broken kernel or layout would cross.
//   - the six reference chats against transformers' float32 logits (reference.safetensors);
//   - a 2k-token corpus: 40 chats of the demo model's own kind ("What does X mean?") with the 16-bit
//     model's greedy answers, against the 16-bit engine.

#include <gtest/gtest.h>

#include <cstdio>

#include "support/logit_accuracy.h"
#include "support/model_fixture.h"
#include "text/tokenizer.h"

namespace dcu::testing {
namespace {

constexpr const char* kDemo = "models/dcuserve-demo";

// Quantized weights, with f32 activations (W8A16, W4A16) or int8 ones (W8A8, W4A8:
// backend/activation_quantization.h).
struct Scheme {
  WeightFormat weights;
  bool int8_activations;
  std::string name() const {
    const char* w = weights == WeightFormat::Int8 ? "W8" : weights == WeightFormat::Int4 ? "W4" : "FP8";
    return std::string(w) + (int8_activations ? "A8" : "A16");
  }
};
// (FP8 weights keep f32 activations: int8 activations are for integer codes.)
const Scheme kSchemes[] = {{WeightFormat::Int8, false}, {WeightFormat::Int4, false}, {WeightFormat::Fp8, false},
                           {WeightFormat::Int8, true},  {WeightFormat::Int4, true}};

void report(const char* what, const Scheme& scheme, const KldSummary& s) {
  std::printf("KLD %-34s %-6s positions %5zu  mean %.3e  p99 %.3e  max %.3e\n", what, scheme.name().c_str(),
              s.positions, s.mean, s.p99, s.max);
}

LoadedModel quantized(const std::string& dir, const Scheme& scheme) {
  return LoadedModel(dir, 1024, 512, 8, make_cpu_backend({.int8_activations = scheme.int8_activations}),
                     WeightOptions{std::nullopt, scheme.weights});
}

TEST(QuantizedModel, ReferenceChatsAgainstTransformers) {
  for (const Scheme& scheme : kSchemes) {
    LoadedModel model = quantized(kDemo, scheme);
    const KldSummary s = reference_chat_kld(model, kDemo);
    report("demo, six reference chats", scheme, s);
    EXPECT_LE(s.mean, mean_kld_bound(scheme.weights)) << scheme.name();
  }
}

// The gate: int8's greedy answers to the demo chats are transformers' answers, with f32 and with
// int8 activations.
TEST(QuantizedModel, Int8GreedyAnswersOfTheDemoChatsAreTheReference) {
  for (bool int8_activations : {false, true}) {
    LoadedModel model = quantized(kDemo, {WeightFormat::Int8, int8_activations});
    for (const ReferenceCase& c : reference_cases(kDemo))
      EXPECT_EQ(model.greedy(c.ids, c.greedy.size()), c.greedy) << c.key << (int8_activations ? " W8A8" : " W8A16");
  }
}

TEST(QuantizedModel, TwoThousandTokensOfDemoChats) {
  const char* words[] = {"harbor",  "compiler", "river",   "lantern", "garden",  "anchor",  "silver",  "thunder",
                         "meadow",  "engine",   "whisper", "castle",  "orbit",   "pepper",  "violin",  "glacier",
                         "ladder",  "mirror",   "candle",  "forest",  "bridge",  "falcon",  "harvest", "marble",
                         "shadow",  "velvet",   "kettle",  "island",  "feather", "compass", "lemon",   "saddle",
                         "thimble", "quarry",   "tundra",  "walnut",  "beacon",  "cobweb",  "drizzle", "estuary"};
  const text::Tokenizer tokenizer = text::Tokenizer::load(kDemo);
  LoadedModel base(kDemo);
  std::vector<std::vector<int32_t>> chats;
  size_t total = 0;
  for (const char* w : words) {
    std::vector<int32_t> ids = tokenizer.encode(std::string("<|im_start|>user\nWhat does \"") + w +
                                                "\" mean?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    const std::vector<int32_t> answer = base.greedy(ids, 40);
    ids.insert(ids.end(), answer.begin(), answer.end());
    total += ids.size();
    chats.push_back(std::move(ids));
  }
  ASSERT_GE(total, 2000u);
  const int64_t V = base.config.vocab_size;
  std::vector<std::vector<float>> base_logits;
  for (const auto& ids : chats) base_logits.push_back(prompt_logits(base, ids));
  for (const Scheme& scheme : kSchemes) {
    LoadedModel model = quantized(kDemo, scheme);
    std::vector<double> klds;
    size_t agree = 0;
    for (size_t i = 0; i < chats.size(); ++i) {
      const std::vector<float> got = prompt_logits(model, chats[i]);
      for (size_t p = 0; p < chats[i].size(); ++p) {
        klds.push_back(kl_divergence(&base_logits[i][p * V], &got[p * V], V));
        agree += argmax(&base_logits[i][p * V], V) == argmax(&got[p * V], V);
      }
    }
    const KldSummary s = summarize(klds);
    report("demo, 40 chats (2k tokens)", scheme, s);
    std::printf("    top-1 agreement with the 16-bit model: %.2f %%\n", 100.0 * double(agree) / double(s.positions));
    EXPECT_LE(s.mean, mean_kld_bound(scheme.weights)) << scheme.name();
  }
}

}  // namespace
}  // namespace dcu::testing
