// Every GPU op against the CPU reference on random inputs, over the 27B layer shapes, the tiny model's
// shapes and odd sizes, for each weight dtype. Each suite runs twice: with the device's own warp width
// and with a 64-lane logical warp (gfx906's wave64; on NVIDIA two warps joined through shared memory).
// Skips when no GPU is present.
//
// Tolerances (max |gpu - cpu| / max(1, max |cpu|)):
//   exact copies and conversions (embed, gather, KV writes): 0
//   elementwise, norms (the residual add fused into a norm: its sum exact), gates, conv: 2e-5
//     (expf / rsqrt / summation order)
//   matmul with F32 or BF16 weights: 1e-4 (f32 accumulation in another order; the cuBLAS path of the
//     bf16/f16 precision mode: activations split into two bf16 parts, tensor-core accumulation)
//   matmul with F16 weights: 2e-3 (gfx906's v_dot2_f32_f16 rounds activations to f16)
//   attention_prep: 2e-4 (powf/sincosf ulps times positions up to ~1000)
//   paged attention, delta rule (outputs and state): 1e-4 (the CPU prefill uses the chunked form)

#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cpu/cpu_ops.h"
#include "gpu_test_util.h"
#include "op_checks.h"

namespace dcu::testing {
namespace {

class GpuOps : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (list_gpu_devices().empty()) GTEST_SKIP() << "no GPU present";
    gpu = make_gpu_backend(0, gpu_options_for_dtype("float32", GetParam()));
  }
  std::unique_ptr<Backend> gpu;
  std::mt19937 rng{1234};
};


TEST_P(GpuOps, Embed) { check_embed(*gpu, rng); }

TEST_P(GpuOps, RmsNormAndGatedRmsNorm) { check_norms(*gpu, rng); }



TEST_P(GpuOps, Matmul) { check_matmuls(*gpu, rng); }

// The bf16/f16 precision mode: tensor cores on CUDA builds (activations split into two 16-bit parts,
// f32 accumulation); elsewhere the same portable kernels run. Two GEMV batch limits are covered; at
// limit 4 the 8- and 16-row cases take tensor cores, or with them off the GEMV on narrow matrices
// (N <= 1024) and cuBLAS on wider ones (N = 1100).
// On CUDA, up to 32 rows of 16-bit weights whose K is a multiple of 64 take the tensor-core kernel
// (matmul_tensor_core.cu) above the GEMV: row counts that leave partial tiles, 1, 2 and 4 token tiles,
// K split over blocks or not; with tensor_core_decode off the same cases go to cuBLAS.
TEST_P(GpuOps, MatmulWithVendorBlas) {
  const std::vector<MatmulCase> cases = {
      {70, 640, 300, DType::BF16},  {300, 5120, 1000, DType::BF16}, {33, 131, 67, DType::F16},
      {8, 5120, 1024, DType::BF16}, {8, 640, 1100, DType::BF16},    {16, 5120, 48, DType::BF16},
      {5, 512, 16400, DType::BF16}, {8, 5120, 1100, DType::BF16},   {13, 768, 300, DType::F16},
      {32, 17408, 640, DType::BF16}, {17, 1024, 2000, DType::F16},  {32, 256, 17000, DType::F16},
      {2, 5120, 2048, DType::BF16}, {6, 512, 70000, DType::BF16}};  // the last: no K split
  for (int gemv_max : {16, 4})
    for (bool tensor_cores : {true, false}) {
      GpuBackendOptions o = gpu_options_for_dtype("bfloat16", GetParam());
      o.gemv_max_tokens = gemv_max;
      o.tensor_core_decode = tensor_cores;
      auto blas = make_gpu_backend(0, o);
      for (const MatmulCase& c : cases)
        check_matmul(*blas, c, rng, " gemv_max " + std::to_string(gemv_max) + " tensor cores " + std::to_string(tensor_cores));
    }
}

TEST_P(GpuOps, MatmulGroup) {  // in both precision modes
  for (const char* mode : {"float32", "bfloat16"})
    check_matmul_group(*make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam())), mode, rng);
}

TEST_P(GpuOps, GateUpSwiglu) {  // in both precision modes
  for (const char* mode : {"float32", "bfloat16"})
    check_gate_up_swiglu(*make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam())), mode, rng);
}

TEST_P(GpuOps, NormsFoldedIntoMatmuls) {  // in both precision modes
  for (const char* mode : {"float32", "bfloat16"})
    check_norms_folded_into_matmuls(*make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam())), mode, rng);
}

TEST_P(GpuOps, ElementwiseAndGather) { check_elementwise_and_gather(*gpu, rng); }

TEST_P(GpuOps, AttentionPrep) { check_attention_prep(*gpu, rng); }

TEST_P(GpuOps, KvCacheWriteAndPagedAttention) {
  for (const AttnShape& s : kAttnShapes) check_paged_attention(*gpu, s, DType::F32, rng);
  check_paged_attention(*gpu, kAttnShapes[0], DType::F16, rng);
  check_paged_attention(*gpu, kAttnShapes[1], DType::BF16, rng);
  for (const AttnShape& s : kAttnShapes) check_paged_attention(*gpu, s, DType::BF16, rng, {{700, 1}, {15, 1}, {300, 1}});
}

// The split decode kernel at contexts from one split to the most (a grid of two blocks per SM), up
// to 256k positions; verify steps (1 + k rows of a sequence share a block); graph-padded limits.
TEST_P(GpuOps, DecodeAttentionAtLongContexts) {
  const std::vector<AttnShape> shapes = {{8, 2, 64, 16}, {12, 2, 128, 32}};
  for (const AttnShape& s : shapes)
    for (int ctx : {50, 129, 1000, 5000, 40000, 262143})
      check_paged_attention(*gpu, s, DType::BF16, rng, {{ctx, 1}});
  for (const AttnShape& s : shapes) {
    check_paged_attention(*gpu, s, DType::BF16, rng, {{30000, 4}, {777, 3}, {12, 9}, {4000, 1}});
    check_paged_attention(*gpu, s, DType::BF16, rng, {{3000, 3}, {100, 3}}, 8192);
    check_paged_attention(*gpu, s, DType::F16, rng, {{70000, 2}, {5, 2}});
  }
  check_paged_attention(*gpu, kAttnShapes[0], DType::BF16, rng, {{60000, 4}, {20000, 4}});
}

// The int8 cache in the decode kernel and in the prefill kernel.
TEST_P(GpuOps, Int8KvCache) {
  const std::vector<std::vector<std::pair<int, int>>> steps = {{{700, 1}, {0, 37}, {3000, 3}, {15, 1}},
                                                               {{0, 600}, {100, 300}}};
  for (const AttnShape& s : {kAttnShapes[0], kAttnShapes[1]})
    for (const auto& seqs : steps) check_int8_attention(*gpu, s, rng, seqs);
}

// A step graph pads the position limit to a power of two: the split decode kernel must give the same
// bits with and without the padding (graph replays agree with eager steps).
TEST_P(GpuOps, DecodeAttentionIgnoresGraphPadding) {
  check_decode_attention_ignores_graph_padding(*gpu, kAttnShapes[0]);
}

// Long prompts, a chunked continuation and decode rows in one step: the tiled prefill kernel, whose
// row tiles here also straddle sequence boundaries.
TEST_P(GpuOps, PrefillAttention) {
  const std::vector<std::pair<int, int>> seqs = {{0, 600}, {100, 300}, {700, 1}, {40, 9}};
  for (const AttnShape& s : kAttnShapes) check_paged_attention(*gpu, s, DType::F32, rng, seqs);
  check_paged_attention(*gpu, kAttnShapes[0], DType::BF16, rng, seqs);
  check_paged_attention(*gpu, kAttnShapes[2], DType::F16, rng, {{0, 77}, {5, 70}});
}

// The prefill kernel's tensor-core form (NVIDIA, native warps; the 64-lane run checks the portable
// kernel on the same steps) at each head dim and 16-bit or int8 cache: a 2000-token prompt, chunked
// continuations (context before + new rows), and short sequences whose rows share the kernel's blocks
// (bq = 64 / G token rows each: 16 at G = 4, 10 at G = 6).
TEST_P(GpuOps, PrefillAttentionHeadDimsAndCacheTypes) {
  const std::vector<AttnShape> shapes = {{8, 2, 64, 16}, {12, 2, 128, 32}, kAttnShapes[0]};
  const std::vector<std::vector<std::pair<int, int>>> steps = {
      {{0, 2000}},
      {{1500, 300}, {40, 100}},
      {{0, 37}, {5, 3}, {100, 70}, {20, 2}, {9, 1}, {0, 17}}};
  for (const AttnShape& s : shapes)
    for (const auto& seqs : steps) {
      check_paged_attention(*gpu, s, DType::BF16, rng, seqs);
      check_paged_attention(*gpu, s, DType::F16, rng, seqs);
      check_int8_attention(*gpu, s, rng, seqs);
    }
}

// The medium matmul precision's tensor-core prefill: Q and P rounded to one bf16 part (2^-9 relative),
// one product each. Scores of |q|, |k| <= 2 over d = 256 then move by ~1e-2 and the outputs by a few
// 1e-3 of their scale; a broken kernel errs by the outputs' size. The 64-lane run takes the f32 kernel.
TEST_P(GpuOps, PrefillAttentionInMediumPrecision) {
  auto medium = make_gpu_backend(0, gpu_options_for_dtype("bfloat16", GetParam(), "medium"));
  const std::vector<std::vector<std::pair<int, int>>> steps = {{{0, 2000}}, {{1500, 300}, {40, 100}, {9, 1}}};
  for (const AttnShape& s : {AttnShape{8, 2, 64, 16}, kAttnShapes[0]})
    for (const auto& seqs : steps) check_paged_attention(*medium, s, DType::BF16, rng, seqs, 0, 2e-2f);
}

TEST_P(GpuOps, GdnConvAndGates) { check_gdn_conv_and_gates(*gpu, rng); }

TEST_P(GpuOps, GdnDeltaRule) {
  check_gdn_delta_rule(*gpu, {{16, 48, 128, 128, 4}, {2, 6, 32, 32, 4}, {3, 6, 40, 24, 4}}, rng);
}

TEST_P(GpuOps, GdnVerifyRowsKeepTheirStates) { check_gdn_verify_rows(*gpu, {16, 48, 128, 128, 4}, rng); }

TEST_P(GpuOps, LogitOps) { check_logit_ops(*gpu, rng); }

// 0: the device's own warp width; 64: the wave64 code paths (gfx906's width) on any GPU.
INSTANTIATE_TEST_SUITE_P(Lanes, GpuOps, ::testing::Values(0, 64),
                         [](const auto& info) { return info.param == 0 ? std::string("native") : std::string("wave64"); });

}  // namespace
}  // namespace dcu::testing
