#pragma once
// Checks of single Backend ops against the CPU reference on random inputs, for any backend that runs
// the GPU kernels: gpu_ops_test runs them on a GPU, kernel_emulation_test on the CPU's emulation of the
// kernels. Tolerances are gpu_ops_test's (its header says why).

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "gpu_test_util.h"

namespace dcu::testing {

// gpu_ops_test's matmul tolerances (its header says why).
inline float matmul_tolerance(DType w) { return w == DType::F16 ? 2e-3f : 1e-4f; }

struct MatmulCase {
  int64_t T, K, N;
  DType w;
};

// y = x . w^T on `be` against the CPU for one random case; `where` names the configuration.
inline void check_matmul(Backend& be, const MatmulCase& c, std::mt19937& rng, const std::string& where = "") {
  HostTensor x(DType::F32, {c.T, c.K}), w(c.w, {c.N, c.K}), y(DType::F32, {c.T, c.N});
  x.random(rng), w.random(rng, -0.1f, 0.1f);
  cpu::matmul(x.t, w.t, y.t);
  DeviceTensor dx(be, x), dw(be, w), dy(be, y);
  be.matmul(dx.t, dw.t, dy.t);
  EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w))
      << "T=" << c.T << " K=" << c.K << " N=" << c.N << " " << dtype_name(c.w) << where;
}

// One matmul at a time: decode rows (GEMV), odd sizes and prompt rows (tiled; cuBLAS on CUDA).
inline void check_matmuls(Backend& be, std::mt19937& rng) {
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
  for (const MatmulCase& c : cases) check_matmul(be, c, rng);
}

// matmul_group: the projections of one input in one launch per kernel (the GEMV and the tensor-core
// kernel take the whole group). Each output against the CPU's matmul: the GDN layer's four input
// projections (two wide, two narrow: at 3..32 rows all four take tensor cores in the bf16 mode, at
// 3..16 rows of the f32 mode all the GEMV), attention q/k/v and the MLP's gate/up, at decode and
// prefill sizes; `mode` names the backend's precision mode in messages.
inline void check_matmul_group(Backend& be, const std::string& mode, std::mt19937& rng) {
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
  for (const GroupCase& c : cases) {
    HostTensor x(DType::F32, {c.T, c.K});
    x.random(rng);
    DeviceTensor dx(be, x);
    std::deque<HostTensor> ws, ys;  // deques: elements never move (the tensors point into them)
    std::deque<DeviceTensor> dws, dys;
    for (int64_t N : c.N) {
      ws.emplace_back(c.w, std::initializer_list<int64_t>{N, c.K}).random(rng, -0.1f, 0.1f);
      ys.emplace_back(DType::F32, std::initializer_list<int64_t>{c.T, N});
      dws.emplace_back(be, ws.back()), dys.emplace_back(be, ys.back());
    }
    std::vector<Linear> w_views;
    std::vector<Tensor> y_views;
    for (size_t i = 0; i < c.N.size(); ++i) w_views.push_back(dws[i].t), y_views.push_back(dys[i].t);
    be.matmul_group(dx.t, w_views, y_views);
    for (size_t i = 0; i < c.N.size(); ++i) {
      cpu::matmul(x.t, ws[i].t, ys[i].t);
      EXPECT_LT(relative_error(dys[i].floats(), ys[i].floats()), matmul_tolerance(c.w))
          << mode << " T=" << c.T << " K=" << c.K << " part " << i << " N=" << c.N[i];
    }
  }
}

// gate_up_swiglu: one GEMV pass whose epilogue applies silu(gate) * up (1 and 2 rows, and narrow
// matrices up to 16 rows), or the two products and swiglu (more rows); against the CPU's two matmuls
// and swiglu, with the output written over the gate scratch as the model runner does.
inline void check_gate_up_swiglu(Backend& be, const std::string& mode, std::mt19937& rng) {
  struct Case {
    int64_t T, K, N;
    DType w;
  };
  const std::vector<Case> cases = {{1, 5120, 17408, DType::BF16}, {2, 1024, 3584, DType::F16},
                                   {1, 77, 33, DType::F32},       {12, 640, 1000, DType::BF16},
                                   {5, 512, 2001, DType::BF16},   {40, 640, 300, DType::BF16}};
  for (const Case& c : cases) {
    HostTensor x(DType::F32, {c.T, c.K}), gw(c.w, {c.N, c.K}), uw(c.w, {c.N, c.K});
    HostTensor gate(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N}), want(DType::F32, {c.T, c.N});
    x.random(rng), gw.random(rng, -0.1f, 0.1f), uw.random(rng, -0.1f, 0.1f);
    cpu::matmul(x.t, gw.t, gate.t);
    cpu::matmul(x.t, uw.t, up.t);
    cpu::swiglu(gate.t, up.t, want.t);
    DeviceTensor dx(be, x), dgw(be, gw), duw(be, uw), dgate(be, gate), dup(be, up);
    be.gate_up_swiglu(dx.t, dgw.t, duw.t, dgate.t, dup.t, dgate.t);
    EXPECT_LT(relative_error(dgate.floats(), want.floats()), matmul_tolerance(c.w))
        << mode << " T=" << c.T << " K=" << c.K << " N=" << c.N;
  }
}

// The decode-step fusions (fuses_norms: rows the GEMV takes): norm_matmul_group and
// norm_gate_up_swiglu against the CPU's rms_norm (1 + w) then matmuls, matmul_accumulate against
// y + matmul; 27B / 9B widths, odd sizes (the element-wise GEMV path), each weight dtype.
inline void check_norms_folded_into_matmuls(Backend& be, const std::string& mode, std::mt19937& rng) {
  struct Case {
    int64_t T, K, N;
    DType w, norm;
  };
  const std::vector<Case> cases = {
      {1, 5120, 6144, DType::BF16, DType::BF16}, {2, 4096, 3000, DType::BF16, DType::F32},
      {1, 77, 33, DType::F32, DType::BF16},      {5, 640, 1000, DType::F16, DType::F16},
      {16, 1024, 520, DType::BF16, DType::BF16}};
  for (const Case& c : cases) {
    if (!be.fuses_norms(c.T)) continue;  // the bf16 mode's GEMV takes 2 rows
    const std::string what = std::string(mode) + " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K);
    HostTensor x(DType::F32, {c.T, c.K}), nw(c.norm, {c.K}), normed(DType::F32, {c.T, c.K});
    HostTensor w(c.w, {c.N, c.K}), up_w(c.w, {c.N, c.K}), y(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N});
    HostTensor acc(DType::F32, {c.T, c.N});
    x.random(rng, -3, 3), nw.random(rng, -0.5f, 0.5f), w.random(rng, -0.1f, 0.1f), up_w.random(rng, -0.1f, 0.1f);
    acc.random(rng);
    DeviceTensor dx(be, x), dnw(be, nw), dw(be, w), dup_w(be, up_w), dy(be, y), dacc(be, acc);
    cpu::rms_norm(x.t, nw.t, 1e-6f, true, normed.t);
    const Linear ws[] = {dw.t};
    const Tensor ys[] = {dy.t};
    be.norm_matmul_group(dx.t, dnw.t, 1e-6f, ws, ys);
    cpu::matmul(normed.t, w.t, y.t);
    EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w)) << what << " norm_matmul_group";
    be.norm_gate_up_swiglu(dx.t, dnw.t, 1e-6f, dw.t, dup_w.t, dy.t);
    cpu::matmul(normed.t, up_w.t, up.t);
    cpu::swiglu(y.t, up.t, y.t);
    EXPECT_LT(relative_error(dy.floats(), y.floats()), matmul_tolerance(c.w)) << what << " norm_gate_up_swiglu";
    be.matmul_accumulate(dx.t, dw.t, dacc.t);
    cpu::matmul(x.t, w.t, y.t);
    std::vector<float> expected = acc.floats();
    for (size_t i = 0; i < expected.size(); ++i) expected[i] += y.floats()[i];
    EXPECT_LT(relative_error(dacc.floats(), expected), matmul_tolerance(c.w)) << what << " matmul_accumulate";
  }
}

// Attention heads: query heads, KV heads, head dim, rotary dims.
struct AttnShape {
  int nh, nkv, d, rotary;
};
inline const std::vector<AttnShape> kAttnShapes = {{24, 4, 256, 64}, {4, 2, 64, 16}, {6, 1, 80, 20}};

inline void check_embed(Backend& gpu, std::mt19937& rng) {
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (int64_t H : {5120, 77}) {
      HostTensor table(dt, {1000, H}), ids(DType::I32, {5}), out(DType::F32, {5, H});
      table.random(rng);
      for (int i = 0; i < 5; ++i) ids.t.as<int32_t>()[i] = (i * 397 + 11) % 1000;
      cpu::embed(table.t, ids.t, out.t);
      DeviceTensor d_table(gpu, table), d_ids(gpu, ids), d_out(gpu, out);
      gpu.embed(d_table.t, d_ids.t, d_out.t);
      EXPECT_EQ(relative_error(d_out.floats(), out.floats()), 0.0f) << dtype_name(dt) << " H=" << H;
    }
}

inline void check_norms(Backend& gpu, std::mt19937& rng) {
  for (DType wt : {DType::F32, DType::BF16})
    for (auto [R, n] : std::vector<std::pair<int64_t, int64_t>>{
             {5, 5120}, {3, 333}, {48 * 3, 128}, {2, 2048}, {3, 4096}, {2, 1024}, {2, 16384}, {7, 36}}) {
      HostTensor x(DType::F32, {R, n}), z(DType::F32, {R, n}), w(wt, {n}), out(DType::F32, {R, n});
      x.random(rng, -3, 3), z.random(rng, -4, 4), w.random(rng, -0.5f, 0.5f);
      DeviceTensor dx(gpu, x), dz(gpu, z), dw(gpu, w), dout(gpu, out);
      for (bool unit : {true, false}) {
        cpu::rms_norm(x.t, w.t, 1e-6f, unit, out.t);
        gpu.rms_norm(dx.t, dw.t, 1e-6f, unit, dout.t);
        EXPECT_LT(relative_error(dout.floats(), out.floats()), 2e-5f) << "rms_norm n=" << n << " unit=" << unit;
      }
      cpu::gated_rms_norm(x.t, z.t, w.t, 1e-6f, out.t);
      gpu.gated_rms_norm(dx.t, dz.t, dw.t, 1e-6f, dout.t);
      EXPECT_LT(relative_error(dout.floats(), out.floats()), 2e-5f) << "gated_rms_norm n=" << n;
      // the residual add fused with the norm: x is updated too
      {
        HostTensor x2 = x, y(DType::F32, {R, n});
        y.random(rng, -2, 2);
        DeviceTensor dx2(gpu, x2), dy(gpu, y), dout2(gpu, out);
        cpu::add_rms_norm(x2.t, y.t, w.t, 1e-6f, true, out.t);
        gpu.add_rms_norm(dx2.t, dy.t, dw.t, 1e-6f, true, dout2.t);
        EXPECT_LT(relative_error(dout2.floats(), out.floats()), 2e-5f) << "add_rms_norm n=" << n;
        EXPECT_EQ(relative_error(dx2.floats(), x2.floats()), 0.0f) << "add_rms_norm residual n=" << n;
      }
      // in place, as the model runner calls it for the final norm
      DeviceTensor dx2(gpu, x);
      cpu::rms_norm(x.t, w.t, 1e-6f, true, out.t);
      gpu.rms_norm(dx2.t, dw.t, 1e-6f, true, dx2.t);
      EXPECT_LT(relative_error(dx2.floats(), out.floats()), 2e-5f) << "in-place rms_norm n=" << n;
    }
}

inline void check_elementwise_and_gather(Backend& gpu, std::mt19937& rng) {
  for (int64_t n : {int64_t(7) * 17408, int64_t(1001)}) {
    HostTensor a(DType::F32, {n}), b(DType::F32, {n}), out(DType::F32, {n});
    a.random(rng, -6, 6), b.random(rng, -6, 6);
    DeviceTensor da(gpu, a), db(gpu, b), dout(gpu, out);
    cpu::swiglu(a.t, b.t, out.t);
    gpu.swiglu(da.t, db.t, dout.t);
    EXPECT_LT(relative_error(dout.floats(), out.floats()), 2e-5f) << "swiglu n=" << n;
    HostTensor ref = a;
    cpu::sigmoid_mul(ref.t, b.t);
    gpu.sigmoid_mul(da.t, db.t);
    EXPECT_LT(relative_error(da.floats(), ref.floats()), 2e-5f) << "sigmoid_mul n=" << n;
    cpu::add(ref.t, b.t);
    gpu.add(da.t, db.t);
    EXPECT_LT(relative_error(da.floats(), ref.floats()), 2e-5f) << "add n=" << n;
  }
  HostTensor x(DType::F32, {9, 5120}), rows(DType::I32, {3}), out(DType::F32, {3, 5120});
  x.random(rng);
  rows.t.as<int32_t>()[0] = 8, rows.t.as<int32_t>()[1] = 0, rows.t.as<int32_t>()[2] = 4;
  cpu::gather_rows(x.t, rows.t, out.t);
  DeviceTensor dx(gpu, x), drows(gpu, rows), dout(gpu, out);
  gpu.gather_rows(dx.t, drows.t, dout.t);
  EXPECT_EQ(relative_error(dout.floats(), out.floats()), 0.0f);
}

inline void check_attention_prep(Backend& gpu, std::mt19937& rng) {
  for (const AttnShape& s : kAttnShapes) {
    TestBatch batch(gpu, {{0, 4}, {900, 1}, {37, 2}}, 16, 128, 4, rng);
    const int64_t T = batch.host.num_tokens();
    HostTensor qg(DType::F32, {T, s.nh, 2 * s.d}), k(DType::F32, {T, s.nkv, s.d}), qn(DType::BF16, {s.d}),
        kn(DType::BF16, {s.d}), q(DType::F32, {T, s.nh, s.d}), gate(DType::F32, {T, s.nh, s.d});
    qg.random(rng, -2, 2), k.random(rng, -2, 2), qn.random(rng, -0.3f, 0.3f), kn.random(rng, -0.3f, 0.3f);
    DeviceTensor dqg(gpu, qg), dk(gpu, k), dqn(gpu, qn), dkn(gpu, kn), dq(gpu, q), dgate(gpu, gate);
    const RopeParams rope{s.rotary, 1e7f};
    cpu::attention_prep(qg.t, k.t, qn.t, kn.t, 1e-6f, rope, batch.host_layout, q.t, gate.t);
    gpu.attention_prep(dqg.t, dk.t, dqn.t, dkn.t, 1e-6f, rope, batch.device_layout, dq.t, dgate.t);
    EXPECT_LT(relative_error(dq.floats(), q.floats()), 2e-4f) << "q, nh=" << s.nh;
    EXPECT_LT(relative_error(dk.floats(), k.floats()), 2e-4f) << "k, nh=" << s.nh;
    EXPECT_EQ(relative_error(dgate.floats(), gate.floats()), 0.0f) << "gate, nh=" << s.nh;
  }
}

inline void check_gdn_conv_and_gates(Backend& gpu, std::mt19937& rng) {
  // (context before, rows): fresh and continued sequences, shorter than the taps, and longer than the
  // GPU's 16-row chunks (the first chunk alone reads and writes the state)
  for (auto [C, Kc] : std::vector<std::pair<int64_t, int>>{{10240, 4}, {192, 4}, {77, 3}}) {
    TestBatch batch(gpu, {{0, 7}, {12, 1}, {40, 3}, {0, 50}, {20, 37}, {5, 2}}, 16, 16, 8, rng);
    const int64_t T = batch.host.num_tokens();
    HostTensor mixed(DType::F32, {T, C}), w(DType::BF16, {C, Kc}), state(DType::F32, {8, C, Kc - 1}),
        out(DType::F32, {T, C});
    mixed.random(rng, -2, 2), w.random(rng, -0.5f, 0.5f), state.random(rng, -2, 2);
    DeviceTensor dmixed(gpu, mixed), dw(gpu, w), dstate(gpu, state), dout(gpu, out);
    GdnState cs{state.t, {}}, gs{dstate.t, {}};
    cpu::gdn_conv(mixed.t, w.t, cs, batch.host_layout, out.t);
    gpu.gdn_conv(dmixed.t, dw.t, gs, batch.device_layout, dout.t);
    EXPECT_LT(relative_error(dout.floats(), out.floats()), 2e-5f) << "conv C=" << C;
    EXPECT_EQ(relative_error(dstate.floats(), state.floats()), 0.0f) << "conv state C=" << C;
  }
  for (DType pt : {DType::F32, DType::BF16}) {
    const int64_t T = 7, Hv = 48;
    HostTensor a(DType::F32, {T, Hv}), b(DType::F32, {T, Hv}), alog(pt, {Hv}), bias(pt, {Hv}), g(DType::F32, {T, Hv}),
        beta(DType::F32, {T, Hv});
    a.random(rng, -30, 30), b.random(rng, -8, 8), alog.random(rng, -2, 2), bias.random(rng, -1, 1);
    DeviceTensor da(gpu, a), db(gpu, b), dalog(gpu, alog), dbias(gpu, bias), dg(gpu, g), dbeta(gpu, beta);
    cpu::gdn_gates(a.t, b.t, alog.t, bias.t, g.t, beta.t);
    gpu.gdn_gates(da.t, db.t, dalog.t, dbias.t, dg.t, dbeta.t);
    EXPECT_LT(relative_error(dg.floats(), g.floats()), 2e-5f) << dtype_name(pt);
    EXPECT_LT(relative_error(dbeta.floats(), beta.floats()), 2e-5f) << dtype_name(pt);
  }
}

// The delta rule over each head shape for a step of mixed prefill/decode (the recurrent walk, chunks of
// 8 tokens staged: 20 and 70 leave partial ones, 300 walks many) and one of decode only (the one-token
// kernel).
inline void check_gdn_delta_rule(Backend& gpu, const std::vector<GdnDims>& shapes, std::mt19937& rng) {
  const std::vector<std::vector<std::pair<int, int>>> batches = {{{10, 1}, {0, 20}, {5, 70}, {0, 1}, {3, 300}},
                                                                 {{10, 1}, {0, 1}, {300, 1}, {7, 1}, {1, 1}}};
  for (const auto& seqs : batches)
  for (const GdnDims& dims : shapes) {
    TestBatch batch(gpu, seqs, 16, 32, 6, rng);
    const int64_t T = batch.host.num_tokens(), C = dims.conv_channels(), Hv = dims.num_value_heads;
    HostTensor qkv(DType::F32, {T, C}), g(DType::F32, {T, Hv}), beta(DType::F32, {T, Hv}),
        state(DType::F32, {6, Hv, dims.key_dim, dims.value_dim}), out(DType::F32, {T, Hv, dims.value_dim});
    qkv.random(rng, -1, 1), g.random(rng, -0.7f, 0.0f), beta.random(rng, 0.0f, 1.0f), state.random(rng, -0.5f, 0.5f);
    DeviceTensor dqkv(gpu, qkv), dg(gpu, g), dbeta(gpu, beta), dstate(gpu, state), dout(gpu, out);
    GdnState cs{{}, state.t}, gs{{}, dstate.t};
    cpu::gdn_delta_rule(qkv.t, g.t, beta.t, dims, cs, batch.host_layout, out.t);
    gpu.gdn_delta_rule(dqkv.t, dg.t, dbeta.t, dims, gs, batch.device_layout, dout.t);
    EXPECT_LT(relative_error(dout.floats(), out.floats()), 1e-4f)
        << "out Hv=" << Hv << " dk=" << dims.key_dim << " seqs=" << seqs.size();
    EXPECT_LT(relative_error(dstate.floats(), state.floats()), 1e-4f)
        << "state Hv=" << Hv << " dk=" << dims.key_dim << " seqs=" << seqs.size();
  }
}

// A speculative verify step: sequences whose every row keeps its state in a slot of its own (the last
// row in the slot it read), next to ordinary ones. Every slot must match the CPU's, conv and delta rule,
// through the one-token, walking and chunked-conv paths.
inline void check_gdn_verify_rows(Backend& gpu, const GdnDims& dims, std::mt19937& rng) {
  const std::vector<std::pair<int, int>> seqs = {{10, 4}, {0, 1}, {30, 3}, {5, 20}, {7, 9}};
  const int slots = 32;
  TestBatch batch(gpu, seqs, 16, 32, slots, rng);
  std::vector<int32_t> spare;
  for (int32_t i = 0; i < slots; ++i)
    if (std::find(batch.host.state_slots.begin(), batch.host.state_slots.end(), i) == batch.host.state_slots.end())
      spare.push_back(i);
  size_t next_spare = 0;
  for (int s : {0, 2, 4}) {
    std::vector<int32_t> kept;
    for (int r = 0; r + 1 < batch.host.seq_rows(s); ++r) kept.push_back(spare[next_spare++]);
    kept.push_back(batch.host.state_slots[size_t(s)]);
    batch.keep_every_row(s, kept);
  }
  const int64_t T = batch.host.num_tokens(), C = dims.conv_channels(), Hv = dims.num_value_heads;
  const int Kc = dims.conv_kernel;
  HostTensor mixed(DType::F32, {T, C}), w(DType::BF16, {C, Kc}), conv(DType::F32, {slots, C, Kc - 1}),
      conv_out(DType::F32, {T, C});
  mixed.random(rng, -1, 1), w.random(rng, -0.5f, 0.5f), conv.random(rng, -1, 1);
  HostTensor g(DType::F32, {T, Hv}), beta(DType::F32, {T, Hv}),
      state(DType::F32, {slots, Hv, dims.key_dim, dims.value_dim}), out(DType::F32, {T, Hv, dims.value_dim});
  g.random(rng, -0.7f, 0.0f), beta.random(rng, 0.0f, 1.0f), state.random(rng, -0.5f, 0.5f);
  DeviceTensor dmixed(gpu, mixed), dw(gpu, w), dconv(gpu, conv), dconv_out(gpu, conv_out), dg(gpu, g),
      dbeta(gpu, beta), dstate(gpu, state), dout(gpu, out);
  GdnState cs{conv.t, state.t}, gs{dconv.t, dstate.t};
  cpu::gdn_conv(mixed.t, w.t, cs, batch.host_layout, conv_out.t);
  gpu.gdn_conv(dmixed.t, dw.t, gs, batch.device_layout, dconv_out.t);
  EXPECT_LT(relative_error(dconv_out.floats(), conv_out.floats()), 2e-5f);
  EXPECT_EQ(relative_error(dconv.floats(), conv.floats()), 0.0f) << "conv states";
  cpu::gdn_delta_rule(conv_out.t, g.t, beta.t, dims, cs, batch.host_layout, out.t);
  DeviceTensor dqkv(gpu, conv_out);  // the CPU's conv output, so that both walk the same inputs
  gpu.gdn_delta_rule(dqkv.t, dg.t, dbeta.t, dims, gs, batch.device_layout, dout.t);
  EXPECT_LT(relative_error(dout.floats(), out.floats()), 1e-4f);
  EXPECT_LT(relative_error(dstate.floats(), state.floats()), 1e-4f) << "recurrent states";
}

// Writes the step's K/V through the op under test, then attends over caches whose earlier positions
// hold random values (identical on both sides).
// The default batch mixes prefill and decode rows; a decode-only batch gets short context splits.
// `position_limit` pads the step's position limit as a step graph does (a power of two above it).
// Returns the GPU's output.
inline std::vector<float> check_paged_attention(
    Backend& gpu, const AttnShape& s, DType cache_type, std::mt19937& rng,
    const std::vector<std::pair<int, int>>& seqs = {{700, 1}, {0, 37}, {300, 5}, {15, 1}}, int position_limit = 0,
    float tolerance = 1e-4f) {
  const int bs = 16;
  int blocks = 8;
  for (auto [ctx, n] : seqs) blocks += (ctx + n + bs - 1) / bs;
  TestBatch batch(gpu, seqs, bs, blocks, int(seqs.size()), rng);
  batch.host.position_limit = std::max(batch.host.position_limit, position_limit);
  const int64_t T = batch.host.num_tokens();
  HostTensor kc(DType::F32, {blocks, bs, s.nkv, s.d}), vc(DType::F32, {blocks, bs, s.nkv, s.d});
  kc.random(rng, -2, 2), vc.random(rng, -2, 2);
  if (cache_type != DType::F32) {  // the CPU side sees exactly the values the 16-bit cache can hold
    for (HostTensor* c : {&kc, &vc})
      for (int64_t i = 0; i < c->t.numel(); ++i)
        c->set(i, cache_type == DType::F16 ? f16_to_f32(f32_to_f16(c->get(i))) : bf16_to_f32(f32_to_bf16(c->get(i))));
  }
  HostTensor kc_dev(cache_type, {blocks, bs, s.nkv, s.d}), vc_dev(cache_type, {blocks, bs, s.nkv, s.d});
  for (int64_t i = 0; i < kc.t.numel(); ++i) kc_dev.set(i, kc.get(i)), vc_dev.set(i, vc.get(i));
  HostTensor k(DType::F32, {T, s.nkv, s.d}), v(DType::F32, {T, s.nkv, s.d}), q(DType::F32, {T, s.nh, s.d}),
      out(DType::F32, {T, s.nh, s.d});
  k.random(rng, -2, 2), v.random(rng, -2, 2), q.random(rng, -2, 2);
  if (cache_type != DType::F32)
    for (HostTensor* c : {&k, &v})
      for (int64_t i = 0; i < c->t.numel(); ++i)
        c->set(i, cache_type == DType::F16 ? f16_to_f32(f32_to_f16(c->get(i))) : bf16_to_f32(f32_to_bf16(c->get(i))));
  DeviceTensor dkc(gpu, kc_dev), dvc(gpu, vc_dev), dk(gpu, k), dv(gpu, v), dq(gpu, q), dout(gpu, out);
  PagedKv cpu_cache{kc.t, vc.t, bs}, gpu_cache{dkc.t, dvc.t, bs};
  const float scale = 1.0f / std::sqrt(float(s.d));
  cpu::kv_cache_write(k.t, v.t, batch.host_layout, cpu_cache);
  cpu::paged_attention(q.t, cpu_cache, batch.host_layout, scale, out.t);
  gpu.kv_cache_write(dk.t, dv.t, batch.device_layout, gpu_cache);
  gpu.paged_attention(dq.t, gpu_cache, batch.device_layout, scale, dout.t);
  EXPECT_EQ(relative_error(dkc.floats(), kc.floats()), 0.0f) << "k cache " << dtype_name(cache_type);
  EXPECT_EQ(relative_error(dvc.floats(), vc.floats()), 0.0f) << "v cache " << dtype_name(cache_type);
  EXPECT_LT(relative_error(dout.floats(), out.floats()), tolerance)
      << "attention nh=" << s.nh << " nkv=" << s.nkv << " d=" << s.d << " " << dtype_name(cache_type);
  std::vector<float> first = dout.floats();
  gpu.paged_attention(dq.t, gpu_cache, batch.device_layout, scale, dout.t);
  EXPECT_TRUE(first == dout.floats()) << "a second run differs";
  return first;
}

// The 8-bit KV cache (--kv-cache-dtype int8) for one step: the GPU writes the codes and scales the CPU
// writes (a code may differ by one where x / scale lands on a rounding tie), and both attend alike over
// one CPU-written cache.
inline void check_int8_attention(Backend& gpu, const AttnShape& s, std::mt19937& rng,
                          const std::vector<std::pair<int, int>>& seqs) {
  const int bs = 16;
  int blocks = 8;
  for (auto [ctx, n] : seqs) blocks += (ctx + n + bs - 1) / bs;
  TestBatch batch(gpu, seqs, bs, blocks, int(seqs.size()), rng);
  const int64_t T = batch.host.num_tokens();
  HostTensor k(DType::F32, {T, s.nkv, s.d}), v(DType::F32, {T, s.nkv, s.d}), q(DType::F32, {T, s.nh, s.d}),
      out(DType::F32, {T, s.nh, s.d});
  k.random(rng, -2, 2), v.random(rng, -2, 2), q.random(rng, -2, 2);
  HostTensor kc(DType::I8, {blocks, bs, s.nkv, s.d}), vc(DType::I8, {blocks, bs, s.nkv, s.d});
  HostTensor ks(DType::F32, {blocks, bs, s.nkv}), vs(DType::F32, {blocks, bs, s.nkv});
  kc.random(rng, -127, 127), vc.random(rng, -127, 127), ks.random(rng, 0.001f, 0.02f), vs.random(rng, 0.001f, 0.02f);
  DeviceTensor dkc(gpu, kc), dvc(gpu, vc), dks(gpu, ks), dvs(gpu, vs), dk(gpu, k), dv(gpu, v), dq(gpu, q),
      dout(gpu, out);
  PagedKv cpu_cache{kc.t, vc.t, bs, ks.t, vs.t}, gpu_cache{dkc.t, dvc.t, bs, dks.t, dvs.t};
  cpu::kv_cache_write(k.t, v.t, batch.host_layout, cpu_cache);
  gpu.kv_cache_write(dk.t, dv.t, batch.device_layout, gpu_cache);
  for (auto [device, host] : {std::pair{&dkc, &kc}, std::pair{&dvc, &vc}}) {
    const std::vector<float> got = device->floats(), want = host->floats();
    float most = 0;
    for (size_t i = 0; i < got.size(); ++i) most = std::max(most, std::fabs(got[i] - want[i]));
    EXPECT_LE(most, 1.0f) << "codes, nh=" << s.nh;
  }
  EXPECT_LT(relative_error(dks.floats(), ks.floats()), 1e-6f) << "k scales, nh=" << s.nh;
  EXPECT_LT(relative_error(dvs.floats(), vs.floats()), 1e-6f) << "v scales, nh=" << s.nh;
  DeviceTensor ekc(gpu, kc), evc(gpu, vc), eks(gpu, ks), evs(gpu, vs);
  const PagedKv same{ekc.t, evc.t, bs, eks.t, evs.t};
  const float scale = 1.0f / std::sqrt(float(s.d));
  cpu::paged_attention(q.t, cpu_cache, batch.host_layout, scale, out.t);
  gpu.paged_attention(dq.t, same, batch.device_layout, scale, dout.t);
  EXPECT_LT(relative_error(dout.floats(), out.floats()), 1e-4f) << "attention nh=" << s.nh << " d=" << s.d << " T=" << T;
  const std::vector<float> first = dout.floats();
  gpu.paged_attention(dq.t, same, batch.device_layout, scale, dout.t);
  EXPECT_TRUE(first == dout.floats()) << "a second run differs";
}

// A step graph pads the position limit to a power of two: the split decode kernel must give the same
// bits with and without the padding (graph replays agree with eager steps).
inline void check_decode_attention_ignores_graph_padding(Backend& gpu, const AttnShape& shape) {
  for (const std::vector<std::pair<int, int>>& seqs :
       std::vector<std::vector<std::pair<int, int>>>{{{5000, 1}, {300, 3}}, {{40000, 1}}, {{70, 2}, {9, 1}}}) {
    int limit = 64;
    for (auto [ctx, n] : seqs) while (limit < ctx + n) limit *= 2;
    std::mt19937 a(11), b(11);
    const std::vector<float> exact = check_paged_attention(gpu, shape, DType::BF16, a, seqs);
    const std::vector<float> padded = check_paged_attention(gpu, shape, DType::BF16, b, seqs, limit);
    EXPECT_TRUE(exact == padded) << "limit " << limit;
  }
}

// Sampling's logit ops: the summary must pick the same ids in the same order as the CPU (exact
// values, ties by lower id), with sums within 1e-5; adjustments, masks and column copies are exact.
inline void check_logit_ops(Backend& gpu, std::mt19937& rng) {
  for (int64_t V : {248320, 50001, 1001, 64}) {  // 248320, 50001: several segments per row
    const int64_t R = 5;
    HostTensor logits(DType::F32, {R, V});
    logits.random(rng, -20, 20);
    for (int64_t j = 0; j < V; ++j) {
      float& x = logits.t.as<float>()[V + j];  // row 1: quarter steps, ties everywhere
      x = std::round(x * 4) / 4;
      logits.t.as<float>()[2 * V + j] = 0.5f;  // row 2: all equal
      if (j % 3 == 0) logits.t.as<float>()[3 * V + j] = -INFINITY;  // row 3: bans
    }
    logits.t.as<float>()[4 * V + V / 2] = -0.0f;  // equal to +0
    logits.t.as<float>()[4 * V + V / 3] = 0.0f;

    // Adjustments on distinct (row, id) pairs, bans included.
    const int64_t E = 40;
    HostTensor targets(DType::I32, {E, 2}), factors(DType::F32, {E, 2});
    for (int64_t e = 0; e < E; ++e) {
      targets.t.as<int32_t>()[2 * e] = int32_t(e % R);
      targets.t.as<int32_t>()[2 * e + 1] = int32_t((e / R) * (V / 8) + e % 3);
      factors.t.as<float>()[2 * e] = 1.0f + float(e % 4) * 0.25f;
      factors.t.as<float>()[2 * e + 1] = e % 7 == 0 ? INFINITY : float(e % 5) * 0.3f;
    }
    DeviceTensor d_logits(gpu, logits), d_targets(gpu, targets), d_factors(gpu, factors);
    cpu::adjust_logits(logits.t, targets.t, factors.t);
    gpu.adjust_logits(d_logits.t, d_targets.t, d_factors.t);
    EXPECT_TRUE(d_logits.floats() == logits.floats()) << "adjust_logits V=" << V;  // bit-equal, infinities too

    // Structured-output masks on rows 0 and 3 (random bits; row 0 also keeps only ids below 64).
    const int64_t words = (V + 31) / 32;
    HostTensor mask_rows(DType::I32, {2}), allowed(DType::I32, {2, words});
    mask_rows.t.as<int32_t>()[0] = 3, mask_rows.t.as<int32_t>()[1] = 0;
    for (int64_t i = 0; i < words; ++i) {
      allowed.t.as<int32_t>()[i] = int32_t(rng());
      allowed.t.as<int32_t>()[words + i] = i < 2 ? int32_t(rng()) : 0;
    }
    DeviceTensor d_mask_rows(gpu, mask_rows), d_allowed(gpu, allowed);
    cpu::mask_logits(logits.t, mask_rows.t, allowed.t);
    gpu.mask_logits(d_logits.t, d_mask_rows.t, d_allowed.t);
    EXPECT_TRUE(d_logits.floats() == logits.floats()) << "mask_logits V=" << V;

    for (int64_t k : {1, 2, 20, 256, 1000, 1024}) {
      if (k > V) continue;
      const int64_t n = 4;
      HostTensor rows(DType::I32, {n}), inv_t(DType::F32, {n}), values(DType::F32, {n, k}), ids(DType::I32, {n, k}),
          stats(DType::F32, {n, 2});
      const int32_t pick[n] = {4, 1, 2, 3};
      const float temperature_inv[n] = {1.0f, 1.0f / 0.7f, 2.0f, 0.5f};
      for (int64_t i = 0; i < n; ++i) rows.t.as<int32_t>()[i] = pick[i], inv_t.t.as<float>()[i] = temperature_inv[i];
      DeviceTensor d_rows(gpu, rows), d_inv_t(gpu, inv_t), d_values(gpu, values), d_ids(gpu, ids),
          d_stats(gpu, stats);
      cpu::logit_summary(logits.t, rows.t, inv_t.t, values.t, ids.t, stats.t);
      gpu.logit_summary(d_logits.t, d_rows.t, d_inv_t.t, d_values.t, d_ids.t, d_stats.t);
      std::vector<int32_t> got_ids(size_t(n * k));
      gpu.download(got_ids.data(), d_ids.t.data, got_ids.size() * 4);
      for (int64_t i = 0; i < n * k; ++i)
        ASSERT_EQ(got_ids[size_t(i)], ids.t.as<int32_t>()[i]) << "V=" << V << " k=" << k << " at " << i;
      EXPECT_TRUE(d_values.floats() == values.floats()) << "V=" << V << " k=" << k;
      const std::vector<float> got = d_stats.floats(), want = stats.floats();
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::abs(want[i])))
            << "stats V=" << V << " k=" << k << " " << i;
    }

    HostTensor block(DType::F32, {R, 7}), out(DType::F32, {R, V + 9});
    block.random(rng), out.random(rng);
    DeviceTensor d_block(gpu, block), d_out(gpu, out);
    cpu::copy_columns(block.t, out.t, V + 2);
    gpu.copy_columns(d_block.t, d_out.t, V + 2);
    EXPECT_TRUE(d_out.floats() == out.floats()) << "copy_columns V=" << V;
  }
}

}  // namespace dcu::testing
