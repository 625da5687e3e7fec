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
#include <deque>

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

float matmul_tolerance(DType w) { return w == DType::F16 ? 2e-3f : 1e-4f; }

TEST_P(GpuOps, Embed) { check_embed(*gpu, rng); }

TEST_P(GpuOps, RmsNormAndGatedRmsNorm) { check_norms(*gpu, rng); }

struct MatmulCase {
  int64_t T, K, N;
  DType w;
};

// y = x . w^T on `be` against the CPU for one random case; `where` names the configuration.
void check_matmul(Backend& be, const MatmulCase& c, std::mt19937& rng, const std::string& where = "") {
  HostTensor x(DType::F32, {c.T, c.K}), w(c.w, {c.N, c.K}), y(DType::F32, {c.T, c.N});
  x.random(rng), w.random(rng, -0.1f, 0.1f);
  cpu::matmul(x.t, w.t, y.t);
  DeviceTensor dx(be, x), dw(be, w), dy(be, y);
  be.matmul(dx.t, dw.t, dy.t);
  EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w))
      << "T=" << c.T << " K=" << c.K << " N=" << c.N << " " << dtype_name(c.w) << where;
}

TEST_P(GpuOps, Matmul) {
  const std::vector<MatmulCase> cases = {
      {1, 5120, 17408, DType::BF16},  // 27B gate/up projection, decode
      {1, 17408, 5120, DType::F16},   // 27B down projection, decode
      {3, 5120, 6144, DType::F16},    // GDN z projection, a few decode rows
      {8, 5120, 48, DType::BF16},     // GDN a/b projections
      {16, 5120, 1024, DType::BF16},  // k/v projections at batch 16 (widest GEMV)
      {11, 6144, 5121, DType::BF16},  // N not a multiple of the block's columns
      {13, 1001, 37, DType::F16},     // scalar GEMV past 8 rows
      {2, 256, 1024, DType::F32},     // tiny model lm_head
      {5, 77, 33, DType::BF16},       // odd K: scalar GEMV path
      {17, 5120, 520, DType::BF16},   // tiled path
      {40, 100, 50, DType::F32},      // tiled, odd sizes
      {70, 640, 300, DType::BF16},    // CUDA: cuBLAS path
      {70, 640, 300, DType::F16},
      {33, 131, 67, DType::F16},      // odd K past the GEMV range
  };
  for (const MatmulCase& c : cases) check_matmul(*gpu, c, rng);
}

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

// matmul_group: the projections of one input in one launch per kernel (the GEMV and the tensor-core
// kernel take the whole group). Each output against the CPU's matmul: the GDN layer's four input
// projections (two wide, two narrow: at 3..32 rows all four take tensor cores in the bf16 mode, at
// 3..16 rows of the f32 mode all the GEMV), attention q/k/v and the MLP's gate/up, at decode and
// prefill sizes, in both precision modes.
TEST_P(GpuOps, MatmulGroup) {
  struct GroupCase {
    int64_t T, K;
    std::vector<int64_t> N;
    DType w;
  };
  const std::vector<GroupCase> cases = {
      {1, 5120, {10240, 6144, 48, 48}, DType::BF16}, {2, 1024, {4096, 2048, 16, 16}, DType::BF16},
      {5, 5120, {10240, 6144, 48, 48}, DType::BF16}, {13, 640, {1200, 300, 7, 9}, DType::F16},
      {32, 1024, {2000, 256, 256}, DType::BF16},     {40, 640, {1100, 1100}, DType::BF16},
      {3, 77, {33, 5}, DType::F32},                   {1, 4096, {12288, 12288}, DType::BF16}};
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam()));
    for (const GroupCase& c : cases) {
      HostTensor x(DType::F32, {c.T, c.K});
      x.random(rng);
      DeviceTensor dx(*be, x);
      std::deque<HostTensor> ws, ys;  // deques: elements never move (the tensors point into them)
      std::deque<DeviceTensor> dws, dys;
      for (int64_t N : c.N) {
        ws.emplace_back(c.w, std::initializer_list<int64_t>{N, c.K}).random(rng, -0.1f, 0.1f);
        ys.emplace_back(DType::F32, std::initializer_list<int64_t>{c.T, N});
        dws.emplace_back(*be, ws.back()), dys.emplace_back(*be, ys.back());
      }
      std::vector<Linear> w_views;
      std::vector<Tensor> y_views;
      for (size_t i = 0; i < c.N.size(); ++i) w_views.push_back(dws[i].t), y_views.push_back(dys[i].t);
      be->matmul_group(dx.t, w_views, y_views);
      for (size_t i = 0; i < c.N.size(); ++i) {
        cpu::matmul(x.t, ws[i].t, ys[i].t);
        EXPECT_LT(relative_error(dys[i].floats(), ys[i].floats()), matmul_tolerance(c.w))
            << mode << " T=" << c.T << " K=" << c.K << " part " << i << " N=" << c.N[i];
      }
    }
  }
}

// gate_up_swiglu: one GEMV pass whose epilogue applies silu(gate) * up (1 and 2 rows, and narrow
// matrices up to 16 rows), or the two products and swiglu (more rows); against the CPU's two matmuls
// and swiglu, with the output written over the gate scratch as the model runner does.
TEST_P(GpuOps, GateUpSwiglu) {
  struct Case {
    int64_t T, K, N;
    DType w;
  };
  const std::vector<Case> cases = {{1, 5120, 17408, DType::BF16}, {2, 1024, 3584, DType::F16},
                                   {1, 77, 33, DType::F32},       {12, 640, 1000, DType::BF16},
                                   {5, 512, 2001, DType::BF16},   {40, 640, 300, DType::BF16}};
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam()));
    for (const Case& c : cases) {
      HostTensor x(DType::F32, {c.T, c.K}), gw(c.w, {c.N, c.K}), uw(c.w, {c.N, c.K});
      HostTensor gate(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N}), want(DType::F32, {c.T, c.N});
      x.random(rng), gw.random(rng, -0.1f, 0.1f), uw.random(rng, -0.1f, 0.1f);
      cpu::matmul(x.t, gw.t, gate.t);
      cpu::matmul(x.t, uw.t, up.t);
      cpu::swiglu(gate.t, up.t, want.t);
      DeviceTensor dx(*be, x), dgw(*be, gw), duw(*be, uw), dgate(*be, gate), dup(*be, up);
      be->gate_up_swiglu(dx.t, dgw.t, duw.t, dgate.t, dup.t, dgate.t);
      EXPECT_LT(relative_error(dgate.floats(), want.floats()), matmul_tolerance(c.w))
          << mode << " T=" << c.T << " K=" << c.K << " N=" << c.N;
    }
  }
}

// The decode-step fusions (fuses_norms: rows the GEMV takes): norm_matmul_group and
// norm_gate_up_swiglu against the CPU's rms_norm (1 + w) then matmuls, matmul_accumulate against
// y + matmul; 27B / 9B widths, odd sizes (the element-wise GEMV path), each weight dtype.
TEST_P(GpuOps, NormsFoldedIntoMatmuls) {
  struct Case {
    int64_t T, K, N;
    DType w, norm;
  };
  const std::vector<Case> cases = {{1, 5120, 6144, DType::BF16, DType::BF16}, {2, 4096, 3000, DType::BF16, DType::F32},
                                   {1, 77, 33, DType::F32, DType::BF16},      {5, 640, 1000, DType::F16, DType::F16},
                                   {16, 1024, 520, DType::BF16, DType::BF16}};
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = make_gpu_backend(0, gpu_options_for_dtype(mode, GetParam()));
    for (const Case& c : cases) {
      if (!be->fuses_norms(c.T)) continue;  // the bf16 mode's GEMV takes 2 rows
      const std::string what = std::string(mode) + " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K);
      HostTensor x(DType::F32, {c.T, c.K}), nw(c.norm, {c.K}), normed(DType::F32, {c.T, c.K});
      HostTensor w(c.w, {c.N, c.K}), up_w(c.w, {c.N, c.K}), y(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N});
      HostTensor acc(DType::F32, {c.T, c.N});
      x.random(rng, -3, 3), nw.random(rng, -0.5f, 0.5f), w.random(rng, -0.1f, 0.1f), up_w.random(rng, -0.1f, 0.1f);
      acc.random(rng);
      DeviceTensor dx(*be, x), dnw(*be, nw), dw(*be, w), dup_w(*be, up_w), dy(*be, y), dacc(*be, acc);
      cpu::rms_norm(x.t, nw.t, 1e-6f, true, normed.t);
      const Linear ws[] = {dw.t};
      const Tensor ys[] = {dy.t};
      be->norm_matmul_group(dx.t, dnw.t, 1e-6f, ws, ys);
      cpu::matmul(normed.t, w.t, y.t);
      EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w)) << what << " norm_matmul_group";
      be->norm_gate_up_swiglu(dx.t, dnw.t, 1e-6f, dw.t, dup_w.t, dy.t);
      cpu::matmul(normed.t, up_w.t, up.t);
      cpu::swiglu(y.t, up.t, y.t);
      EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w)) << what << " norm_gate_up_swiglu";
      be->matmul_accumulate(dx.t, dw.t, dacc.t);
      cpu::matmul(x.t, w.t, y.t);
      std::vector<float> expected = acc.floats();
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += y.floats()[i];
      EXPECT_LT(relative_error(dacc.floats(), expected), matmul_tolerance(c.w)) << what << " matmul_accumulate";
    }
  }
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
