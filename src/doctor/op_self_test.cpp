// Every Backend op on small random inputs, device against reference. Shapes are the tiny model's and
// odd sizes: small enough for a few milliseconds per op, large enough to take each kernel's main path
// (one-row GEMV, a few rows, tiled or vendor-BLAS matmuls; prefill and decode attention; chunked and
// one-token Gated DeltaNet).

#include <cmath>
#include <functional>

#include "doctor/self_test.h"
#include "doctor/twin_tensor.h"
#include "model/host_linear.h"
#include "model/quantize.h"

namespace dcu::doctor {
namespace {

using Shape = std::initializer_list<int64_t>;

constexpr float kEps = 1e-6f;
// Ten times gpu_ops_test.cpp's tolerances (self_test.h says why).
constexpr double kExact = 0, kElementwise = 2e-4, kMatmul = 1e-3, kMatmulF16 = 2e-2, kExpanded = 4e-2, kRope = 2e-3,
                 kAttention = 1e-3;

struct Case {
  std::string name;
  double tolerance;
  std::function<double(BackendPair&)> run;  // the largest error over the op's outputs
};

double worst(std::initializer_list<double> errors) {
  double m = 0;
  for (double e : errors) m = std::max(m, e);
  return m;
}

double embed(BackendPair& p) {
  Twin table(p, DType::BF16, Shape{100, 64}), ids(p, DType::I32, Shape{5}), out(p, DType::F32, Shape{5, 64});
  table.random(), ids.assign({3, 99, 0, 42, 3});
  p.run([&](Backend& b, Side s) { b.embed(table[s], ids[s], out[s]); });
  return out.error();
}

double norms(BackendPair& p) {
  Twin x(p, DType::F32, Shape{5, 333}), y(p, DType::F32, Shape{5, 333}), w(p, DType::BF16, Shape{333});
  Twin out(p, DType::F32, Shape{5, 333}), plain(p, DType::F32, Shape{5, 333}), fused(p, DType::F32, Shape{5, 333});
  x.random(-3, 3), y.random(-2, 2), w.random(-0.5f, 0.5f);
  p.run([&](Backend& b, Side s) {
    b.rms_norm(x[s], w[s], kEps, true, out[s]);
    b.rms_norm(x[s], w[s], kEps, false, plain[s]);
    b.add_rms_norm(x[s], y[s], w[s], kEps, true, fused[s]);  // x += y
  });
  return worst({out.error(), plain.error(), fused.error(), x.error()});
}

double gated_norm(BackendPair& p) {
  Twin x(p, DType::F32, Shape{12, 32}), z(p, DType::F32, Shape{12, 32}), w(p, DType::F32, Shape{32}),
      out(p, DType::F32, Shape{12, 32});
  x.random(-3, 3), z.random(-4, 4), w.random(-0.5f, 0.5f);
  p.run([&](Backend& b, Side s) { b.gated_rms_norm(x[s], z[s], w[s], kEps, out[s]); });
  return out.error();
}

double elementwise(BackendPair& p) {
  Twin a(p, DType::F32, Shape{1001}), c(p, DType::F32, Shape{1001}), out(p, DType::F32, Shape{1001});
  a.random(-6, 6), c.random(-6, 6);
  p.run([&](Backend& b, Side s) {
    b.swiglu(a[s], c[s], out[s]);
    b.sigmoid_mul(a[s], c[s]);
    b.add(a[s], c[s]);
  });
  return worst({out.error(), a.error()});
}

double gather(BackendPair& p) {
  Twin x(p, DType::F32, Shape{9, 300}), rows(p, DType::I32, Shape{3}), out(p, DType::F32, Shape{3, 300});
  x.random(), rows.assign({8, 0, 4});
  p.run([&](Backend& b, Side s) { b.gather_rows(x[s], rows[s], out[s]); });
  return out.error();
}

double dense_matmul(BackendPair& p, DType w_type, int64_t T) {
  const int64_t K = 256, N = 96;
  Twin x(p, DType::F32, Shape{T, K}), w(p, w_type, Shape{N, K}), y(p, DType::F32, Shape{T, N});
  x.random(), w.random(-0.1f, 0.1f);
  p.run([&](Backend& b, Side s) { b.matmul(x[s], w[s], y[s]); });
  return y.error();
}

// A quantized weight uploaded to both sides (backend/linear.h layouts, random codes and scales).
class TwinLinear {
 public:
  TwinLinear(BackendPair& p, WeightFormat format, int64_t N, int64_t K, int64_t group) : p_(p) {
    HostLinear h;
    h.format = format, h.rows = N, h.cols = K, h.group = group;
    std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
    std::uniform_real_distribution<float> scale(0.001f, 0.01f);
    h.codes.resize(size_t(format == WeightFormat::Int4 ? N * K / 2 : N * K));
    for (auto& c : h.codes) c = uint8_t(byte(p.rng));
    if (format == WeightFormat::Fp8)  // E4M3 without its NaN bytes 0x7F, 0xFF
      for (auto& c : h.codes)
        if ((c & 0x7F) == 0x7F) c ^= 1;
    h.scales.resize(size_t(N * (K / group)));
    for (auto& s : h.scales) s = scale(p.rng);
    if (format == WeightFormat::Int4) {
      h.zeros.resize(h.scales.size());
      for (auto& z : h.zeros) z = uint8_t(nibble(p.rng));
    }
    reference = upload_linear(h, p.reference, [this](size_t n) { return ref_.emplace_back(p_.reference.allocate(n)); });
    device = upload_linear(h, p.device, [this](size_t n) { return dev_.emplace_back(p_.device.allocate(n)); });
  }
  ~TwinLinear() {
    for (void* m : ref_) p_.reference.release(m);
    for (void* m : dev_) p_.device.release(m);
  }
  TwinLinear(const TwinLinear&) = delete;
  TwinLinear& operator=(const TwinLinear&) = delete;
  const Linear& operator[](Side s) const { return s == Side::Reference ? reference : device; }
  Linear reference, device;

 private:
  BackendPair& p_;
  std::vector<void*> ref_, dev_;
};

double quantized_matmul(BackendPair& p, WeightFormat format, int64_t T) {
  const int64_t K = 256, N = 80;
  TwinLinear w(p, format, N, K, 64);
  Twin x(p, DType::F32, Shape{T, K}), y(p, DType::F32, Shape{T, N});
  x.random();
  p.run([&](Backend& b, Side s) { b.matmul(x[s], w[s], y[s]); });
  return y.error();
}

// matmul_group and gate_up_swiglu: the projections of one input in as few passes as the device makes.
double grouped_matmuls(BackendPair& p, int64_t T) {
  const int64_t K = 128;
  Twin x(p, DType::F32, Shape{T, K}), w0(p, DType::BF16, Shape{200, K}), w1(p, DType::BF16, Shape{16, K});
  Twin y0(p, DType::F32, Shape{T, 200}), y1(p, DType::F32, Shape{T, 16});
  Twin gate(p, DType::F32, Shape{T, 200}), up(p, DType::F32, Shape{T, 200}), up_w(p, DType::BF16, Shape{200, K});
  x.random(), w0.random(-0.1f, 0.1f), w1.random(-0.1f, 0.1f), up_w.random(-0.1f, 0.1f);
  p.run([&](Backend& b, Side s) {
    const Linear ws[] = {w0[s], w1[s]};
    const Tensor ys[] = {y0[s], y1[s]};
    b.matmul_group(x[s], ws, ys);
    b.gate_up_swiglu(x[s], w0[s], up_w[s], gate[s], up[s], gate[s]);
  });
  return worst({y0.error(), y1.error(), gate.error()});
}

// Decode steps with the norms folded into the matmuls (devices whose fuses_norms(1) is true): the
// reference normalises first, then multiplies.
double folded_norms(BackendPair& p) {
  const int64_t T = 1, K = 128, N = 96;
  Twin x(p, DType::F32, Shape{T, K}), nw(p, DType::BF16, Shape{K}), normed(p, DType::F32, Shape{T, K});
  Twin w(p, DType::BF16, Shape{N, K}), up_w(p, DType::BF16, Shape{N, K}), y(p, DType::F32, Shape{T, N});
  Twin act(p, DType::F32, Shape{T, N}), up(p, DType::F32, Shape{T, N}), acc(p, DType::F32, Shape{T, N}),
      product(p, DType::F32, Shape{T, N});
  x.random(-3, 3), nw.random(-0.5f, 0.5f), w.random(-0.1f, 0.1f), up_w.random(-0.1f, 0.1f), acc.random();
  const Side R = Side::Reference, D = Side::Device;
  Backend& r = p.reference;
  r.rms_norm(x[R], nw[R], kEps, true, normed[R]);
  r.matmul(normed[R], w[R], y[R]);
  r.gate_up_swiglu(normed[R], w[R], up_w[R], act[R], up[R], act[R]);
  r.matmul(x[R], w[R], product[R]);
  r.add(acc[R], product[R]);
  Backend& d = p.device;
  const Linear ws[] = {w[D]};
  const Tensor ys[] = {y[D]};
  d.norm_matmul_group(x[D], nw[D], kEps, ws, ys);
  d.norm_gate_up_swiglu(x[D], nw[D], kEps, w[D], up_w[D], act[D]);
  d.matmul_accumulate(x[D], w[D], acc[D]);
  return worst({y.error(), act.error(), acc.error()});
}

double attention_prep(BackendPair& p) {
  const int nh = 4, nkv = 2, d = 64;
  TwinBatch batch(p, {{0, 4}, {37, 2}, {300, 1}}, 16);
  const int64_t T = batch.tokens();
  Twin qg(p, DType::F32, Shape{T, nh, 2 * d}), k(p, DType::F32, Shape{T, nkv, d}), qn(p, DType::BF16, Shape{d}),
      kn(p, DType::BF16, Shape{d}), q(p, DType::F32, Shape{T, nh, d}), gate(p, DType::F32, Shape{T, nh, d});
  qg.random(-2, 2), k.random(-2, 2), qn.random(-0.3f, 0.3f), kn.random(-0.3f, 0.3f);
  const RopeParams rope{16, 1e7f};
  p.run([&](Backend& b, Side s) { b.attention_prep(qg[s], k[s], qn[s], kn[s], kEps, rope, batch[s], q[s], gate[s]); });
  return worst({q.error(), k.error(), gate.error()});
}

// kv_cache_write, then paged attention over caches whose earlier positions hold random values; the
// device's cache in `cache_type` (the server's bf16 on GPUs), the reference's in f32 with the same values.
double paged_attention(BackendPair& p, DType cache_type, const std::vector<std::pair<int, int>>& seqs) {
  const int nh = 4, nkv = 2, d = 64, bs = 16;
  TwinBatch batch(p, seqs, bs);
  const int64_t T = batch.tokens(), blocks = batch.blocks_used();
  Twin kc(p, DType::F32, cache_type, Shape{blocks, bs, nkv, d}),
      vc(p, DType::F32, cache_type, Shape{blocks, bs, nkv, d});
  Twin k(p, DType::F32, Shape{T, nkv, d}), v(p, DType::F32, Shape{T, nkv, d}), q(p, DType::F32, Shape{T, nh, d}),
      out(p, DType::F32, Shape{T, nh, d});
  kc.random(-2, 2), vc.random(-2, 2), q.random(-2, 2);
  // New K/V values the cache type holds exactly, so that both caches end equal.
  Twin k16(p, DType::F32, cache_type, Shape{T, nkv, d}), v16(p, DType::F32, cache_type, Shape{T, nkv, d});
  k16.random(-2, 2), v16.random(-2, 2);
  k.assign(k16.read(Side::Device)), v.assign(v16.read(Side::Device));
  p.run([&](Backend& b, Side s) {
    PagedKv cache{kc[s], vc[s], bs};
    b.kv_cache_write(k[s], v[s], batch[s], cache);
    b.paged_attention(q[s], cache, batch[s], 1.0f / std::sqrt(float(d)), out[s]);
  });
  if (kc.error() != 0 || vc.error() != 0) return INFINITY;  // the cache write is exact
  return out.error();
}

double gdn_conv(BackendPair& p) {
  const int64_t C = 96;
  const int Kc = 4;
  TwinBatch batch(p, {{0, 7}, {12, 1}, {5, 20}}, 16);
  const int64_t T = batch.tokens();
  Twin mixed(p, DType::F32, Shape{T, C}), w(p, DType::BF16, Shape{C, Kc}), state(p, DType::F32, Shape{3, C, Kc - 1}),
      out(p, DType::F32, Shape{T, C});
  mixed.random(-2, 2), w.random(-0.5f, 0.5f), state.random(-2, 2);
  p.run([&](Backend& b, Side s) {
    GdnState st{state[s], {}};
    b.gdn_conv(mixed[s], w[s], st, batch[s], out[s]);
  });
  return worst({out.error(), state.error()});
}

double gdn_gates(BackendPair& p) {
  const int64_t T = 7, Hv = 6;
  Twin a(p, DType::F32, Shape{T, Hv}), bb(p, DType::F32, Shape{T, Hv}), alog(p, DType::F32, Shape{Hv}),
      bias(p, DType::F32, Shape{Hv}), g(p, DType::F32, Shape{T, Hv}), beta(p, DType::F32, Shape{T, Hv});
  a.random(-30, 30), bb.random(-8, 8), alog.random(-2, 2), bias.random(-1, 1);
  p.run([&](Backend& b, Side s) { b.gdn_gates(a[s], bb[s], alog[s], bias[s], g[s], beta[s]); });
  return worst({g.error(), beta.error()});
}

double gdn_delta_rule(BackendPair& p, const std::vector<std::pair<int, int>>& seqs) {
  const GdnDims dims{2, 6, 32, 32, 4};
  TwinBatch batch(p, seqs, 16);
  const int64_t T = batch.tokens(), C = dims.conv_channels(), Hv = dims.num_value_heads, S = int64_t(seqs.size());
  Twin qkv(p, DType::F32, Shape{T, C}), g(p, DType::F32, Shape{T, Hv}), beta(p, DType::F32, Shape{T, Hv}),
      state(p, DType::F32, Shape{S, Hv, dims.key_dim, dims.value_dim}),
      out(p, DType::F32, Shape{T, Hv, dims.value_dim});
  qkv.random(), g.random(-0.7f, 0.0f), beta.random(0.0f, 1.0f), state.random(-0.5f, 0.5f);
  p.run([&](Backend& b, Side s) {
    GdnState st{{}, state[s]};
    b.gdn_delta_rule(qkv[s], g[s], beta[s], dims, st, batch[s], out[s]);
  });
  return worst({out.error(), state.error()});
}

// Penalties, the top-k summary sampling reads (ids in order, exact values) and the column copy.
double logit_ops(BackendPair& p) {
  const int64_t R = 3, V = 1001, k = 20, E = 6;
  Twin logits(p, DType::F32, Shape{R, V}), targets(p, DType::I32, Shape{E, 2}), factors(p, DType::F32, Shape{E, 2});
  logits.random(-20, 20);
  targets.assign({0, 5, 0, 900, 1, 17, 1, 3, 2, 1000, 2, 0});
  factors.assign({1.5f, 0.0f, 1.0f, INFINITY, 2.0f, 0.3f, 1.25f, 0.0f, 1.0f, 0.9f, 1.0f, INFINITY});
  Twin rows(p, DType::I32, Shape{R}), inv_t(p, DType::F32, Shape{R}), values(p, DType::F32, Shape{R, k}),
      ids(p, DType::I32, Shape{R, k}), stats(p, DType::F32, Shape{R, 2});
  rows.assign({2, 0, 1}), inv_t.assign({1.0f, 1.0f / 0.7f, 2.0f});
  Twin block(p, DType::F32, Shape{R, 7}), wide(p, DType::F32, Shape{R, 30});
  block.random(), wide.random();
  p.run([&](Backend& b, Side s) {
    b.adjust_logits(logits[s], targets[s], factors[s]);
    b.logit_summary(logits[s], rows[s], inv_t[s], values[s], ids[s], stats[s]);
    b.copy_columns(block[s], wide[s], 20);
  });
  return worst({logits.error(), ids.error(), values.error(), stats.error(), wide.error()});
}

std::vector<Case> cases(const Backend& device) {
  std::vector<Case> out = {
      {"embed", kExact, embed},
      {"rms_norm, add_rms_norm", kElementwise, norms},
      {"gated_rms_norm", kElementwise, gated_norm},
      {"swiglu, sigmoid_mul, add", kElementwise, elementwise},
      {"gather_rows", kExact, gather},
  };
  for (DType w : {DType::F32, DType::BF16, DType::F16})
    for (int64_t T : {1, 3, 40})
      out.push_back({fmt::format("matmul {} T={}", dtype_name(w), T), w == DType::F16 ? kMatmulF16 : kMatmul,
                     [w, T](BackendPair& p) { return dense_matmul(p, w, T); }});
  std::vector<WeightFormat> formats = {WeightFormat::Int8, WeightFormat::Int4};
  if (device.reads_fp8_weights()) formats.push_back(WeightFormat::Fp8);
  for (WeightFormat f : formats)
    for (int64_t T : {1, 8, 40})  // the GEMV, CUDA's tensor-core decode kernel (bf16 mode), the expanded path
      out.push_back({fmt::format("matmul {} T={}", weight_format_name(f), T), T > 16 ? kExpanded : kMatmul,
                     [f, T](BackendPair& p) { return quantized_matmul(p, f, T); }});
  for (int64_t T : {1, 20})
    out.push_back({fmt::format("matmul_group, gate_up_swiglu T={}", T), kMatmul,
                   [T](BackendPair& p) { return grouped_matmuls(p, T); }});
  if (device.fuses_norms(1)) out.push_back({"norms folded into matmuls", kMatmul, folded_norms});
  out.push_back({"attention_prep", kRope, attention_prep});
  const std::vector<std::pair<int, int>> mixed = {{0, 37}, {300, 1}, {40, 5}}, decode = {{300, 1}, {15, 1}, {70, 1}};
  // The CPU's attention reads f32 caches only; GPUs serve with 16-bit ones.
  const std::vector<DType> caches =
      device.kind() == DeviceKind::Cpu ? std::vector<DType>{DType::F32} : std::vector<DType>{DType::F32, DType::BF16};
  for (DType cache : caches) {
    out.push_back({fmt::format("paged_attention prefill {} cache", dtype_name(cache)), kAttention,
                   [cache, mixed](BackendPair& p) { return paged_attention(p, cache, mixed); }});
    out.push_back({fmt::format("paged_attention decode {} cache", dtype_name(cache)), kAttention,
                   [cache, decode](BackendPair& p) { return paged_attention(p, cache, decode); }});
  }
  out.push_back({"gdn_conv", kElementwise, gdn_conv});
  out.push_back({"gdn_gates", kElementwise, gdn_gates});
  out.push_back({"gdn_delta_rule prefill", kAttention, [mixed](BackendPair& p) { return gdn_delta_rule(p, mixed); }});
  out.push_back({"gdn_delta_rule decode", kAttention, [decode](BackendPair& p) { return gdn_delta_rule(p, decode); }});
  // Ids, values and copies are exact (a wrong id is an error of at least 1 / V); the sums within 1e-5.
  out.push_back({"adjust_logits, logit_summary, copy_columns", 1e-5, logit_ops});
  return out;
}

}  // namespace

std::vector<OpResult> compare_ops(Backend& reference, Backend& device) {
  const OneOpenMpThread serial;
  BackendPair pair{reference, device};
  std::vector<OpResult> out;
  for (const Case& c : cases(device)) {
    OpResult r{c.name, 0, c.tolerance, ""};
    try {
      r.error = c.run(pair);
    } catch (const std::exception& e) {
      r.failure = e.what();
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dcu::doctor
