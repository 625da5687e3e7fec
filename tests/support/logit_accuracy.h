#pragma once
// Accuracy of a model's next-token distributions against reference logits: per-position KL divergence
// and its summary, and the bounds quantized weights are held to (tests/model/quantized_model_test.cpp
// prints the table of docs/QUANTIZATION.md from them).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/linear.h"
#include "support/model_fixture.h"

namespace dcu::testing {

// KL(p || q) of two logit rows, in double.
double kl_divergence(const float* p_logits, const float* q_logits, int64_t V);

struct KldSummary {
  double mean = 0, p99 = 0, max = 0;
  size_t positions = 0;
};
KldSummary summarize(std::vector<double> klds);

// The bound on the mean KLD from the 16-bit model: the int8 gate (1e-3); for int4 and FP8 one
// that only a broken kernel or layout would cross (FP8, E4M3's 3 mantissa bits against int8's 7 under a
// scale per 128 k, measured 1.7e-3 and 4.2e-3).
double mean_kld_bound(WeightFormat weights);

// Prefill logits of every position of `ids` (one sequence, one step).
std::vector<float> prompt_logits(LoadedModel& model, const std::vector<int32_t>& ids);

// Whether a model's logits can be held close to the CPU's on another backend: not where int8 and int4
// weights multiply int8 activations. The other backend's norms and sums differ from the CPU's in their
// last bits, which now and then moves an activation across a rounding boundary; that code's step (1/127
// of its block's largest value) spreads through the next layers, and within a few layers the two
// roundings are about as far apart as either is from f32 activations (the demo model, the emulated GPU
// kernels against the CPU: 0.09-0.29 in the prefill logits, where int8 activations move the CPU's own by
// 0.2-0.4). Such runs are held to the CPU's accuracy gate instead (reference_chat_kld, mean_kld_bound).
inline bool logits_comparable_across_backends(WeightFormat weights, bool int8_activations) {
  return !int8_activations || weights == WeightFormat::Fp8;  // FP8 keeps f32 activations
}

// The mean KLD of `model`'s prefill logits from transformers' float32 logits over the reference chats of
// `model_dir` (reference.safetensors).
KldSummary reference_chat_kld(LoadedModel& model, const std::string& model_dir);

}  // namespace dcu::testing
