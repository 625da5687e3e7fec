// The GPU kernels run on the CPU (backend/gpu/emulation.h) against the CPU reference: their indexing,
// barriers and shuffles, on machines without a GPU, at this build's emulated warp width (32 as on
// NVIDIA, 64 as on gfx906). Emulated: the elementwise, norm, matmul (GEMV with its fusions, tiled GEMM,
// weight expansion, int8-activation GEMV), attention (prep, KV writes, split decode, tiled prefill),
// Gated DeltaNet and logit kernel files, as a HIP build without rocBLAS compiles them except for
// gfx906's own builtins (the f16 GEMV's v_dot2: the emulation takes the portable path) and the
// CUDA-only tensor-core kernels (their launchers answer "does not apply" here).
// The ops go through the GPU backend's own argument marshalling (kernel_ops.h). The checks are
// gpu_ops_test's (op_checks.h), with contexts up to 40k rather than 256k and prompts of hundreds of
// tokens rather than thousands, and gpu_quantized_ops_test's (quantized_op_checks.h).

#include <gtest/gtest.h>

#include "core/error.h"
#include "emulated_kernels.h"
#include "op_checks.h"
#include "quantized_op_checks.h"

namespace dcu::gpu {
[[noreturn]] void fail_call(const char* expr, const char* file, int line, const char* what) {
  throw Error(std::string(expr) + " at " + file + ":" + std::to_string(line) + ": " + what);
}
}  // namespace dcu::gpu

namespace dcu::testing {
namespace {

class KernelEmulation : public ::testing::Test {
 protected:
  EmulatedKernels gpu;
  std::mt19937 rng{1234};
};

// The emulation's shuffles under divergence, on one warp: lanes below `active` exchange with their pair
// three times in a loop the others skip (those wait, inactive, at the reduction after it, as on
// hardware), then the whole warp sums. `unpaired_lane` then shuffles alone: its partner exits first.
void diverged_shuffles(const float* in, int active, int unpaired_lane, float* sums, float* unpaired) {
  const int lane = int(threadIdx.x);
  float v = in[lane];
  for (int i = 0; lane < active && i < 3; ++i) v += __shfl_xor_sync(0xffffffffu, v, 1, WARP_SIZE);
  sums[lane] = gpu::physical_reduce<WARP_SIZE>(v, gpu::SumOp{});
  if (lane == (unpaired_lane ^ 1)) return;
  if (lane == unpaired_lane) *unpaired = __shfl_xor_sync(0xffffffffu, v, 1, WARP_SIZE);
}

TEST(KernelEmulationItself, ShufflesOfDivergedLanes) {
  std::vector<float> in(WARP_SIZE), sums(WARP_SIZE);
  float want = 0.0f, unpaired = 0.0f;
  const int active = WARP_SIZE / 2;
  for (int lane = 0; lane < WARP_SIZE; ++lane) {
    in[size_t(lane)] = float(lane + 1);
    // a pair (a, b) ends as 4 (a + b) in both lanes
    want += lane < active ? 8.0f * in[size_t(lane)] : in[size_t(lane)];
  }
  gpu::emulation::launch(1, WARP_SIZE, 0, diverged_shuffles, in.data(), active, 4, sums.data(), &unpaired);
  for (int lane = 0; lane < WARP_SIZE; ++lane) EXPECT_EQ(sums[size_t(lane)], want) << "lane " << lane;
  EXPECT_TRUE(std::isnan(unpaired)) << "a partner that has exited gives no value";
}

TEST_F(KernelEmulation, Embed) { check_embed(gpu, rng); }
TEST_F(KernelEmulation, Matmul) { check_matmuls(gpu, rng); }
TEST_F(KernelEmulation, MatmulGroup) { check_matmul_group(gpu, "emulated", rng); }
TEST_F(KernelEmulation, GateUpSwiglu) { check_gate_up_swiglu(gpu, "emulated", rng); }
TEST_F(KernelEmulation, NormsFoldedIntoMatmuls) { check_norms_folded_into_matmuls(gpu, "emulated", rng); }
TEST_F(KernelEmulation, RmsNormAndGatedRmsNorm) { check_norms(gpu, rng); }
TEST_F(KernelEmulation, ElementwiseAndGather) { check_elementwise_and_gather(gpu, rng); }
TEST_F(KernelEmulation, AttentionPrep) { check_attention_prep(gpu, rng); }

// Decode rows split over the context and merged (one split to many), and verify steps, at every cache
// type.
TEST_F(KernelEmulation, DecodeAttention) {
  for (const AttnShape& s : kAttnShapes) check_paged_attention(gpu, s, DType::F32, rng);
  check_paged_attention(gpu, kAttnShapes[0], DType::F16, rng);
  check_paged_attention(gpu, kAttnShapes[1], DType::BF16, rng);
  for (int ctx : {50, 129, 1000, 5000, 40000}) check_paged_attention(gpu, {8, 2, 64, 16}, DType::BF16, rng, {{ctx, 1}});
  check_paged_attention(gpu, {12, 2, 128, 32}, DType::BF16, rng, {{9000, 4}, {777, 3}, {12, 9}, {4000, 1}});
}

TEST_F(KernelEmulation, DecodeAttentionIgnoresGraphPadding) {
  check_decode_attention_ignores_graph_padding(gpu, {8, 2, 64, 16});
}

// The tiled prefill kernel: prompts, a chunked continuation and decode rows in one step, row tiles
// straddling sequences.
TEST_F(KernelEmulation, PrefillAttention) {
  const std::vector<std::pair<int, int>> seqs = {{0, 300}, {100, 150}, {700, 1}, {40, 9}};
  for (const AttnShape& s : kAttnShapes) check_paged_attention(gpu, s, DType::F32, rng, seqs);
  check_paged_attention(gpu, kAttnShapes[1], DType::BF16, rng, seqs);
  check_paged_attention(gpu, kAttnShapes[2], DType::F16, rng, {{0, 77}, {5, 70}});
}

TEST_F(KernelEmulation, Int8KvCache) {
  const std::vector<std::vector<std::pair<int, int>>> steps = {{{700, 1}, {0, 37}, {3000, 3}, {15, 1}},
                                                               {{0, 300}, {100, 150}}};
  for (const AttnShape& s : {kAttnShapes[0], kAttnShapes[1]})
    for (const auto& seqs : steps) check_int8_attention(gpu, s, rng, seqs);
}

TEST_F(KernelEmulation, LogitOps) { check_logit_ops(gpu, rng); }

TEST_F(KernelEmulation, GdnConvAndGates) { check_gdn_conv_and_gates(gpu, rng); }

// The 27B's heads and every state-row count the walk instantiates (dk up to 16, 32, 64 and 128 at either
// warp width), columns that do not fill a block (dv 24, 36), several value heads per key head.
TEST_F(KernelEmulation, GdnDeltaRule) {
  check_gdn_delta_rule(gpu, {{16, 48, 128, 128, 4}, {2, 6, 16, 32, 4}, {3, 6, 40, 24, 4}, {1, 2, 128, 36, 4}}, rng);
}

TEST_F(KernelEmulation, GdnVerifyRowsKeepTheirStates) {
  for (const GdnDims& dims : {GdnDims{16, 48, 128, 128, 4}, GdnDims{2, 6, 32, 32, 4}, GdnDims{1, 2, 128, 36, 4}})
    check_gdn_verify_rows(gpu, dims, rng);
}

// Quantized weights (int8 and int4; FP8 cases skip, as on HIP GPUs, which load FP8 as int8): the GEMV
// with its fusions and the expanded path, with f32 activations and with int8 ones (the int8-activation
// GEMV).
class QuantizedKernelEmulation : public ::testing::TestWithParam<bool> {
 protected:
  EmulatedKernels gpu{GetParam()};
  QuantizedTarget target{gpu, GetParam(), GetParam() ? "int8 activations" : "f32 activations"};
  std::mt19937 rng{99};
};

TEST_P(QuantizedKernelEmulation, Matmul) { check_quantized_matmuls(target, rng); }
TEST_P(QuantizedKernelEmulation, MatmulGroupOfMixedFormats) {
  check_quantized_matmul_group_of_mixed_formats(target, rng);
}
TEST_P(QuantizedKernelEmulation, GateUpSwiglu) { check_quantized_gate_up_swiglu(target, rng); }
TEST_P(QuantizedKernelEmulation, NormsFoldedIntoMatmuls) { check_quantized_norms_folded_into_matmuls(target, rng); }
TEST_P(QuantizedKernelEmulation, ActOrder) { check_quantized_act_order(target, rng); }

INSTANTIATE_TEST_SUITE_P(Activations, QuantizedKernelEmulation, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "int8" : "f32"; });

}  // namespace
}  // namespace dcu::testing
