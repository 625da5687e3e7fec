// The Backend ops that need no state of the backend's (kernel_ops.h).

#include "backend/gpu/kernel_ops.h"

#include <algorithm>
#include <array>

#include "core/error.h"

namespace dcu::gpu {
namespace {

bool f32(const Tensor& t) { return t.dtype == DType::F32; }

GdnBatch gdn_batch(const BatchLayout& b) {
  return {b.seq_row_begin, b.seq_context_before, b.state_slots, b.state_write_slots, b.num_seqs(),
          b.host->max_seq_rows()};
}

// No act-order weight among ws: the fused decode ops read x as it is (the model runner does not fold
// norms for models with act-order weights).
bool in_input_order(std::span<const Linear> ws) {
  return std::none_of(ws.begin(), ws.end(), [](const Linear& w) { return !w.k_order.empty(); });
}

// x [T, K] gathered into `order` (an act-order weight's), in `ordered`.
Tensor in_column_order(const Launch& l, Scratch& ordered, const Tensor& x, const Tensor& order) {
  DCU_CHECK(f32(x) && order.dtype == DType::I32 && order.numel() == x.cols());
  Tensor out(ordered.get(x.bytes()), DType::F32, {x.rows(), x.cols()});
  launch_gather_columns(l, x.as<float>(), order.as<int32_t>(), out.as<float>(), x.rows(), x.cols());
  return out;
}

// ys[i] = x . ws[i]^T as the kernels' arguments, shapes checked.
std::array<MatmulArgs, kMaxMatmulGroup> matmul_args(const Tensor& x, std::span<const Linear> ws,
                                                    std::span<const Tensor> ys) {
  DCU_CHECK(ws.size() == ys.size() && !ws.empty() && ws.size() <= kMaxMatmulGroup && f32(x));
  static_assert(kMaxMatmulGroup == int(dcu::kMaxMatmulGroup));
  const int64_t T = x.rows(), K = x.cols();
  std::array<MatmulArgs, kMaxMatmulGroup> group{};
  for (size_t i = 0; i < ws.size(); ++i) {
    const Linear& w = ws[i];
    const Tensor& y = ys[i];
    DCU_CHECK(f32(y) && w.cols() == K && y.rows() == T && y.cols() == w.rows());
    group[i] = {x.as<float>(), w.weight.data, w.weight.dtype, y.as<float>(), T, K, w.rows(), w.format,
                w.scales.empty() ? nullptr : w.scales.as<float>(), w.zeros.empty() ? nullptr : w.zeros.as<uint8_t>(),
                w.group};
  }
  return group;
}

// Whether two matmuls can share a launch: one kernel reads both weights.
bool same_kernel(const MatmulArgs& a, const MatmulArgs& b) {
  return a.format == b.format && a.group == b.group && (a.format != WeightFormat::Dense || a.w_type == b.w_type);
}

// Calls run(group, count) on each run of consecutive matmuls that share a kernel (a GDN layer's
// quantized projections and its 16-bit in_proj_a/b are two launches).
template <typename Run>
void for_each_kernel_group(const std::array<MatmulArgs, kMaxMatmulGroup>& args, int count, Run&& run) {
  for (int begin = 0; begin < count;) {
    int end = begin + 1;
    while (end < count && same_kernel(args[size_t(begin)], args[size_t(end)])) ++end;
    run(args.data() + begin, end - begin);
    begin = end;
  }
}

}  // namespace

void embed(const Launch& l, const Tensor& table, const Tensor& ids, Tensor out) {
  const int64_t T = ids.numel(), H = table.cols();
  DCU_CHECK(ids.dtype == DType::I32 && out.dtype == DType::F32 && out.rows() == T && out.cols() == H);
  launch_embed(l, table.data, table.dtype, ids.as<int32_t>(), out.as<float>(), T, H);
}

void matmul_group(const Launch& l, Scratch& scratch, Scratch& ordered, const Tensor& x, std::span<const Linear> ws,
                  std::span<const Tensor> ys) {
  if (!in_input_order(ws)) {
    // Act-order weights read the activations in their own column orders: one launch each.
    for (size_t i = 0; i < ws.size(); ++i) {
      const Linear one[] = {ws[i]};
      const Tensor y[] = {ys[i]};
      const auto args = matmul_args(ws[i].k_order.empty() ? x : in_column_order(l, ordered, x, ws[i].k_order), one, y);
      launch_matmul_group(l, args.data(), 1, scratch);
    }
    return;
  }
  const auto args = matmul_args(x, ws, ys);
  for_each_kernel_group(args, int(ws.size()),
                        [&](const MatmulArgs* group, int count) { launch_matmul_group(l, group, count, scratch); });
}

void gate_up_swiglu(const Launch& l, Scratch& scratch, const Tensor& x, const Linear& gate_w, const Linear& up_w,
                    Tensor gate, Tensor up, Tensor out) {
  DCU_CHECK(f32(out) && up_w.rows() == gate_w.rows() && out.numel() == gate.numel() && up.numel() == gate.numel());
  const Linear ws[] = {gate_w, up_w};
  DCU_CHECK(in_input_order(ws));
  const Tensor ys[] = {gate, up};
  const auto args = matmul_args(x, ws, ys);
  DCU_CHECK(same_kernel(args[0], args[1]));
  launch_gate_up_swiglu(l, args[0], args[1], out.as<float>(), scratch);
}

void norm_matmul_group(const Launch& l, const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                       std::span<const Tensor> ys) {
  DCU_CHECK(norm_w.numel() == x.cols() && in_input_order(ws));
  const auto args = matmul_args(x, ws, ys);
  for_each_kernel_group(args, int(ws.size()), [&](const MatmulArgs* group, int count) {
    launch_norm_matmul_group(l, group, count, false, {norm_w.data, norm_w.dtype, eps, false});
  });
}

void norm_gate_up_swiglu(const Launch& l, const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w,
                         const Linear& up_w, Tensor out) {
  DCU_CHECK(norm_w.numel() == x.cols() && up_w.rows() == gate_w.rows());
  const Linear ws[] = {gate_w, up_w};
  DCU_CHECK(in_input_order(ws));
  const Tensor ys[] = {out, out};  // the fused GEMV writes the first output only
  const auto args = matmul_args(x, ws, ys);
  DCU_CHECK(same_kernel(args[0], args[1]));
  launch_norm_matmul_group(l, args.data(), 2, true, {norm_w.data, norm_w.dtype, eps, false});
}

void matmul_accumulate(const Launch& l, const Tensor& x, const Linear& w, Tensor y) {
  const Linear ws[] = {w};
  DCU_CHECK(in_input_order(ws));
  const Tensor ys[] = {y};
  launch_matmul_accumulate(l, matmul_args(x, ws, ys)[0]);
}

void rms_norm(const Launch& l, const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) {
  DCU_CHECK(f32(x) && f32(out) && w.numel() == x.cols() && out.numel() == x.numel());
  launch_rms_norm(l, x.as<float>(), w.data, w.dtype, eps, unit_offset, out.as<float>(), x.rows(), x.cols());
}

void add_rms_norm(const Launch& l, Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset,
                  Tensor out) {
  DCU_CHECK(f32(x) && f32(y) && f32(out) && w.numel() == x.cols() && y.numel() == x.numel() &&
            out.numel() == x.numel());
  launch_add_rms_norm(l, x.as<float>(), y.as<float>(), w.data, w.dtype, eps, unit_offset, out.as<float>(), x.rows(),
                      x.cols());
}

void gated_rms_norm(const Launch& l, const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) {
  DCU_CHECK(f32(x) && f32(z) && f32(out) && w.numel() == x.cols() && z.numel() == x.numel() &&
            out.numel() == x.numel());
  launch_gated_rms_norm(l, x.as<float>(), z.as<float>(), w.data, w.dtype, eps, out.as<float>(), x.rows(), x.cols());
}

void add(const Launch& l, Tensor x, const Tensor& y) {
  DCU_CHECK(f32(x) && f32(y) && x.numel() == y.numel());
  launch_add(l, x.as<float>(), y.as<float>(), x.numel());
}

void swiglu(const Launch& l, const Tensor& gate, const Tensor& up, Tensor out) {
  DCU_CHECK(f32(gate) && f32(up) && f32(out) && gate.numel() == up.numel() && out.numel() == gate.numel());
  launch_swiglu(l, gate.as<float>(), up.as<float>(), out.as<float>(), gate.numel());
}

void sigmoid_mul(const Launch& l, Tensor x, const Tensor& gate) {
  DCU_CHECK(f32(x) && f32(gate) && x.numel() == gate.numel());
  launch_sigmoid_mul(l, x.as<float>(), gate.as<float>(), x.numel());
}

void gather_rows(const Launch& l, const Tensor& x, const Tensor& rows, Tensor out) {
  const int64_t R = rows.numel(), H = x.cols();
  DCU_CHECK(f32(x) && f32(out) && rows.dtype == DType::I32 && out.rows() == R && out.cols() == H);
  launch_gather_rows(l, x.as<float>(), rows.as<int32_t>(), out.as<float>(), R, H);
}

void attention_prep(const Launch& l, const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                    const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) {
  AttentionPrepArgs a;
  a.T = int(qg.dim(0)), a.nh = int(qg.dim(1)), a.d = int(qg.dim(2)) / 2, a.nkv = int(k.dim(1));
  DCU_CHECK(f32(qg) && f32(k) && f32(q) && f32(gate) && k.dim(2) == a.d);
  DCU_CHECK(q.numel() == int64_t(a.T) * a.nh * a.d && gate.numel() == q.numel());
  DCU_CHECK(q_norm.numel() == a.d && k_norm.numel() == a.d && rope.rotary_dim <= a.d && rope.rotary_dim % 2 == 0);
  a.qg = qg.as<float>(), a.k = k.as<float>(), a.q = q.as<float>(), a.gate = gate.as<float>();
  a.q_norm = q_norm.data, a.k_norm = k_norm.data, a.q_norm_type = q_norm.dtype, a.k_norm_type = k_norm.dtype;
  a.eps = eps, a.rotary_dim = rope.rotary_dim, a.theta = rope.theta, a.positions = batch.positions;
  launch_attention_prep(l, a);
}

void kv_cache_write(const Launch& l, const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) {
  const int64_t T = k.dim(0), row = k.numel() / std::max<int64_t>(T, 1);
  DCU_CHECK(f32(k) && f32(v) && v.numel() == k.numel() && cache.k.dtype == cache.v.dtype);
  DCU_CHECK(cache.k.dim(2) * cache.k.dim(3) == row);
  DCU_CHECK(cache.k.dtype != DType::I8 || (cache.k_scale.data && cache.v_scale.data));
  launch_kv_cache_write(l, k.as<float>(), v.as<float>(), batch.slot_mapping, cache.k.data, cache.v.data,
                        cache.k_scale.as<float>(), cache.v_scale.as<float>(), cache.k.dtype, T, int(cache.k.dim(2)),
                        int(cache.k.dim(3)));
}

void paged_attention(const Launch& l, Scratch& scratch, const Tensor& q, const PagedKv& cache, const BatchLayout& batch,
                     float scale, Tensor out) {
  PagedAttentionArgs a;
  a.T = int(q.dim(0)), a.nh = int(q.dim(1)), a.d = int(q.dim(2)), a.nkv = int(cache.k.dim(2));
  DCU_CHECK(f32(q) && f32(out) && out.numel() == q.numel() && cache.k.dim(3) == a.d && a.nh % a.nkv == 0);
  DCU_CHECK(a.T == batch.num_tokens());
  a.max_position = std::max(0, batch.host->position_limit - 1);
  a.max_seq_rows = batch.host->max_seq_rows();
  a.q = q.as<float>(), a.out = out.as<float>();
  a.k_cache = cache.k.data, a.v_cache = cache.v.data, a.cache_type = cache.k.dtype, a.block_size = cache.block_size;
  a.k_scale = cache.k_scale.as<float>(), a.v_scale = cache.v_scale.as<float>();
  a.block_tables = batch.block_tables, a.max_blocks = batch.max_blocks_per_seq();
  a.seq_row_begin = batch.seq_row_begin, a.num_seqs = batch.num_seqs(), a.positions = batch.positions;
  a.scale = scale;
  launch_paged_attention(l, a, scratch);
}

void gdn_conv(const Launch& l, const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
              Tensor out) {
  const int64_t C = mixed.cols();
  const int Kc = int(weight.numel() / C);
  DCU_CHECK(f32(mixed) && f32(out) && f32(state.conv) && weight.numel() == C * Kc);
  DCU_CHECK(state.conv.numel() / state.conv.dim(0) == C * (Kc - 1));
  launch_gdn_conv(l, mixed.as<float>(), weight.data, weight.dtype, state.conv.as<float>(), gdn_batch(batch),
                  out.as<float>(), C, Kc);
}

void gdn_gates(const Launch& l, const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
               Tensor beta) {
  const int Hv = int(a.cols());
  DCU_CHECK(f32(a) && f32(b) && f32(g) && f32(beta) && A_log.numel() == Hv && dt_bias.numel() == Hv);
  launch_gdn_gates(l, a.as<float>(), b.as<float>(), A_log.data, A_log.dtype, dt_bias.data, dt_bias.dtype,
                   g.as<float>(), beta.as<float>(), a.rows(), Hv);
}

void gdn_delta_rule(const Launch& l, const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims,
                    GdnState& state, const BatchLayout& batch, Tensor out) {
  DCU_CHECK(f32(qkv) && f32(g) && f32(beta) && f32(out) && f32(state.recurrent));
  DCU_CHECK(qkv.cols() == dims.conv_channels());
  DeltaRuleArgs a;
  a.qkv = qkv.as<float>(), a.g = g.as<float>(), a.beta = beta.as<float>();
  a.state = state.recurrent.as<float>(), a.out = out.as<float>();
  a.Hk = dims.num_key_heads, a.Hv = dims.num_value_heads, a.dk = dims.key_dim, a.dv = dims.value_dim;
  launch_gdn_delta_rule(l, a, gdn_batch(batch));
}

void adjust_logits(const Launch& l, Tensor logits, const Tensor& targets, const Tensor& factors) {
  DCU_CHECK(f32(logits) && targets.dtype == DType::I32 && f32(factors) && targets.cols() == 2 &&
            factors.cols() == 2 && factors.rows() == targets.rows());
  launch_adjust_logits(l, logits.as<float>(), logits.cols(), targets.as<int32_t>(), factors.as<float>(),
                       targets.rows());
}

void mask_logits(const Launch& l, Tensor logits, const Tensor& rows, const Tensor& allowed) {
  DCU_CHECK(f32(logits) && rows.dtype == DType::I32 && allowed.dtype == DType::I32 &&
            allowed.rows() == rows.numel() && allowed.cols() == (logits.cols() + 31) / 32);
  launch_mask_logits(l, logits.as<float>(), logits.cols(), rows.as<int32_t>(),
                     reinterpret_cast<const uint32_t*>(allowed.as<int32_t>()), rows.numel());
}

void logit_summary(const Launch& l, Scratch& scratch, const Tensor& logits, const Tensor& rows,
                   const Tensor& inv_temperature, Tensor top_values, Tensor top_ids, Tensor stats) {
  static_assert(kMaxLogitCandidates == kMaxSummaryCandidates);
  const int64_t n = rows.numel(), k = top_values.cols();
  DCU_CHECK(f32(logits) && rows.dtype == DType::I32 && f32(inv_temperature) && inv_temperature.numel() == n);
  DCU_CHECK(f32(top_values) && top_values.rows() == n && top_ids.dtype == DType::I32 && top_ids.rows() == n &&
            top_ids.cols() == k && f32(stats) && stats.numel() == 2 * n);
  DCU_CHECK(k >= 1 && k <= std::min<int64_t>(logits.cols(), kMaxLogitCandidates));
  launch_logit_summary(l, logits.as<float>(), logits.cols(), rows.as<int32_t>(), inv_temperature.as<float>(), n,
                       int(k), top_values.as<float>(), top_ids.as<int32_t>(), stats.as<float>(), scratch);
}

void copy_columns(const Launch& l, const Tensor& x, Tensor out, int64_t column) {
  DCU_CHECK(f32(x) && f32(out) && out.rows() == x.rows() && column >= 0 && column + x.cols() <= out.cols());
  launch_copy_columns(l, x.as<float>(), x.rows(), x.cols(), out.as<float>(), out.cols(), column);
}

}  // namespace dcu::gpu
