// gpu_kernel_bench: per-kernel speed of the GPU backend on the Qwen3.5-27B shapes, through the Backend
// interface (what the model runner calls). Not a test: prints tables for docs/PERFORMANCE_GPU.md.
//   copy bandwidth (read + write) as the ceiling; matmul GB/s for decode (T = 1, 8, 16) and TFLOP/s for
//   prefill (T = 2048, both precision modes); paged attention and the delta rule at decode and prefill;
//   prefill attention's TFLOP/s (bf16 and int8 KV); the small per-layer ops; the sum of kernel times of
//   one 27B decode step at batch 1; and the logit summary that sampling runs every step.
// Usage: gpu_kernel_bench [device index] [sampling | decode | attention] (one table only). Weights are rotated through >= 512 MB of copies so that
// repeated calls stream from HBM, not from L2.

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "gpu_test_util.h"

namespace dcu::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Mean wall time of one call (microseconds) over back-to-back calls after a warm-up.
double time_us(Backend& be, const std::function<void(int)>& call, int iters) {
  call(0);
  be.synchronize();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) call(i);
  be.synchronize();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
}

// Zero-filled device buffers (the kernels do the same work whatever the values).
struct Buffer {
  Backend* be;
  Tensor t;
  Buffer(Backend& b, DType dtype, std::initializer_list<int64_t> shape) : be(&b), t(nullptr, dtype, shape) {
    t.data = b.allocate(t.bytes());
    b.fill_zero(t.data, t.bytes());
  }
  Buffer(const Buffer&) = delete;
  ~Buffer() { be->release(t.data); }
};

double copy_bandwidth(Backend& be) {
  const size_t bytes = size_t(1) << 30;
  void* a = be.allocate(bytes);
  void* b = be.allocate(bytes);
  be.fill_zero(a, bytes), be.fill_zero(b, bytes);
  const double us = time_us(be, [&](int) { be.copy(b, a, bytes); }, 10);
  be.release(a), be.release(b);
  return 2.0 * double(bytes) / (us * 1e-6);
}

struct Shape {
  const char* name;
  int64_t N, K;
};
const Shape kShapes27B[] = {{"attn q_proj", 12288, 5120}, {"attn k/v_proj", 1024, 5120},   {"attn o_proj", 5120, 6144},
                            {"gdn in_proj_qkv", 10240, 5120}, {"gdn in_proj_z", 6144, 5120}, {"gdn in_proj_a/b", 48, 5120},
                            {"gdn out_proj", 5120, 6144},  {"mlp gate/up", 17408, 5120},   {"mlp down", 5120, 17408},
                            {"lm_head", 248320, 5120}};

// Copies of one weight matrix, >= 512 MB in all, so that rotating through them always reads HBM.
struct Weights {
  std::vector<std::unique_ptr<Buffer>> copies;
  Weights(Backend& be, int64_t N, int64_t K, DType wt) {
    const int n = int(std::max(1.0, std::ceil(512e6 / (double(N) * K * dtype_size(wt)))));
    for (int i = 0; i < n; ++i) copies.push_back(std::make_unique<Buffer>(be, wt, std::initializer_list<int64_t>{N, K}));
  }
  const Tensor& operator[](int i) const { return copies[size_t(i) % copies.size()]->t; }
};

// Time of y = x . w^T.
double matmul_us(Backend& be, int64_t T, const Weights& w, int iters) {
  const int64_t N = w[0].rows(), K = w[0].cols();
  Buffer x(be, DType::F32, {T, K}), y(be, DType::F32, {T, N});
  return time_us(be, [&](int i) { be.matmul(x.t, w[i], y.t); }, iters);
}

// Copies of one quantized [N, K] matrix (zero codes, unit scales), >= 512 MB in all.
struct QuantizedWeights {
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<Linear> copies;
  QuantizedWeights(Backend& be, int64_t N, int64_t K, WeightFormat f, int64_t group) {
    const int64_t code_cols = f == WeightFormat::Int4 ? K / 2 : K;
    const int n = int(std::max(1.0, std::ceil(512e6 / (double(N) * double(code_cols)))));
    for (int i = 0; i < n; ++i) {
      Linear w;
      w.format = f, w.in_features = K, w.group = group;
      buffers.push_back(std::make_unique<Buffer>(be, f == WeightFormat::Int8 ? DType::I8 : DType::U8,
                                                 std::initializer_list<int64_t>{N, code_cols}));
      w.weight = buffers.back()->t;
      buffers.push_back(std::make_unique<Buffer>(be, DType::F32, std::initializer_list<int64_t>{N, K / group}));
      w.scales = buffers.back()->t;
      copies.push_back(w);
    }
  }
};

// The quantized decode matmuls on the 27B shapes: bytes read (codes, scales, activations), time,
// bandwidth and what gfx906's 1,024 GB/s would take for the same bytes. `path` names the kernel the
// backend's mode picks (the GEMV in the f32 mode, which gfx906 runs too; tensor cores in CUDA's bf16 mode;
// with int8 activations the integer GEMV, and from 3 rows the quantize kernel before it, timed together).
// fp8: FP8 rows too (where the backend reads FP8; their activations stay f32, so not in the int8 tables).
void quantized_matmul_table(Backend& be, double copy_bw, const char* path, bool fp8 = false) {
  std::printf("\n## Decode matmul, quantized weights: %s\n\n", path);
  std::printf("| shape [N, K] | what | format | T | weight MB | time us | GB/s | of copy bw | Z100 us at 1024 GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : kShapes27B)
    for (auto [f, group] : {std::pair{WeightFormat::Int8, s.K}, std::pair{WeightFormat::Int4, int64_t(128)},
                            std::pair{WeightFormat::Fp8, int64_t(128)}}) {
      if (f == WeightFormat::Fp8 && !(fp8 && be.reads_fp8_weights())) continue;
      const QuantizedWeights w(be, s.N, s.K, f, group);
      for (int64_t T : {1, 2, 3, 4, 8, 16}) {
        Buffer x(be, DType::F32, {T, s.K}), y(be, DType::F32, {T, s.N});
        const double us = time_us(be, [&](int i) { be.matmul(x.t, w.copies[size_t(i) % w.copies.size()], y.t); },
                                  s.N > 100000 ? 20 : 100);
        const double weight = double(w.copies[0].bytes()), bytes = weight + 4.0 * T * (s.K + s.N);
        std::printf("| [%ld, %ld] | %s | %s | %ld | %.1f | %.1f | %.0f | %.0f%% | %.1f |\n", long(s.N), long(s.K), s.name,
                    std::string(weight_format_name(f)).c_str(), long(T), weight / 1e6, us, bytes / us / 1e3,
                    100.0 * bytes / us / 1e3 / (copy_bw / 1e9), bytes / 1024e9 * 1e6);
      }
    }
}

void matmul_tables(Backend& exact, Backend& fast, double copy_bw) {
  std::printf("\n## Decode matmul (GEMV), BF16 weights, f32 activations\n\n");
  std::printf("| shape [N, K] | what | T | weight MB | time us | GB/s | of copy bw | Z100 us at 1024 GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : kShapes27B) {
    Weights w(exact, s.N, s.K, DType::BF16);
    for (int64_t T : {1, 8, 16}) {
      const double bytes = double(s.N) * s.K * 2 + 4.0 * T * (s.K + s.N);
      const double us = matmul_us(exact, T, w, s.N > 100000 ? 20 : 100);
      std::printf("| [%ld, %ld] | %s | %ld | %.1f | %.1f | %.0f | %.0f%% | %.1f |\n", long(s.N), long(s.K), s.name,
                  long(T), double(s.N) * s.K * 2 / 1e6, us, bytes / us / 1e3, 100.0 * bytes / us / 1e3 / (copy_bw / 1e9),
                  bytes / 1024e9 * 1e6);
    }
  }
  std::printf("\n## Decode matmul, F16 weights (T = 1)\n\n| shape [N, K] | time us | GB/s |\n|---|---|---|\n");
  for (const Shape& s : {kShapes27B[7], kShapes27B[8]}) {
    const double us = matmul_us(exact, 1, Weights(exact, s.N, s.K, DType::F16), 100);
    std::printf("| [%ld, %ld] | %.1f | %.0f |\n", long(s.N), long(s.K), us, double(s.N) * s.K * 2 / us / 1e3);
  }
  // Where cuBLAS (bf16 mode, hi + lo) overtakes the GEMV: sets gpu_options_for_dtype's gemv_max_tokens.
  std::printf("\n## GEMV vs cuBLAS (bf16 mode, hi + lo), us: GEMV / cuBLAS\n\n| shape [N, K] | what |");
  const int64_t sweep[] = {2, 4, 5, 6, 8, 12, 16, 32};
  for (int64_t T : sweep) std::printf(" T=%ld |", long(T));
  std::printf("\n|---|---|---|---|---|---|---|---|---|---|\n");
  GpuBackendOptions o = gpu_options_for_dtype("bfloat16");
  o.gemv_max_tokens = 1;
  auto blas_only = make_gpu_backend(0, o);
  for (const Shape& s : {kShapes27B[0], kShapes27B[1], kShapes27B[2], kShapes27B[7], kShapes27B[8]}) {
    Weights w(exact, s.N, s.K, DType::BF16);
    std::printf("| [%ld, %ld] | %s |", long(s.N), long(s.K), s.name);
    for (int64_t T : sweep)
      std::printf(" %s / %.1f |", T <= 16 ? fmt::format("{:.1f}", matmul_us(exact, T, w, 20)).c_str() : "-",
                  matmul_us(*blas_only, T, w, 20));
    std::printf("\n");
  }
  std::printf("\n## Prefill matmul, T = 2048, BF16 weights\n\n");
  std::printf("| shape [N, K] | what | f32 tiled us | f32 TFLOP/s | bf16 cuBLAS us | bf16 TFLOP/s |\n|---|---|---|---|---|---|\n");
  for (const Shape& s : kShapes27B) {
    if (s.N > 100000) continue;
    const double flops = 2.0 * 2048 * s.N * s.K;
    Weights w(exact, s.N, s.K, DType::BF16);
    const double te = matmul_us(exact, 2048, w, 3), tf = matmul_us(fast, 2048, w, 10);
    std::printf("| [%ld, %ld] | %s | %.0f | %.1f | %.0f | %.1f |\n", long(s.N), long(s.K), s.name, te, flops / te / 1e6,
                tf, flops / tf / 1e6);
  }
}

// Paged attention with the 27B layout (nh 24, nkv 4, d 256), bf16 or int8 cache, every sequence at
// `ctx`; the share of the copy bandwidth, and the Z100 time of one TP4 rank (one KV head, a quarter of
// the bytes) at ~1 TB/s and the same share. Bytes: codes or 16-bit elements, plus int8's f32 scales.
void attention_tables(Backend& be, double copy_bw) {
  std::printf("\n## Paged attention (nh 24, nkv 4, d 256)\n\n");
  std::printf("| case | KV | time us | KV MB read | GB/s | of copy bw | Z100 TP4 us |\n|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(3);
  auto run = [&](int seqs, int ctx, int rows, DType type) {
    const int bs = 16, blocks = seqs * ((ctx + rows + bs - 1) / bs + 1);
    std::vector<std::pair<int, int>> shape(static_cast<size_t>(seqs), {ctx, rows});
    TestBatch batch(be, shape, bs, blocks, seqs, rng);
    const int64_t T = batch.host.num_tokens();
    Buffer kc(be, type, {blocks, bs, 4, 256}), vc(be, type, {blocks, bs, 4, 256});
    Buffer ks(be, DType::F32, {blocks, bs, 4}), vs(be, DType::F32, {blocks, bs, 4});
    Buffer q(be, DType::F32, {T, 24, 256}), out(be, DType::F32, {T, 24, 256});
    const PagedKv cache = type == DType::I8 ? PagedKv{kc.t, vc.t, bs, ks.t, vs.t} : PagedKv{kc.t, vc.t, bs};
    const double us = time_us(be, [&](int) { be.paged_attention(q.t, cache, batch.device_layout, 0.0625f, out.t); },
                              rows > 16 ? 3 : 50);
    const double per_element = type == DType::I8 ? 1.0 + 4.0 / 256 : 2.0;
    const double kv = double(seqs) * (ctx + rows) * 4 * 256 * 2 * per_element;
    const double share = kv / (us * 1e-6) / copy_bw;
    std::printf("| %d seq x %d new tokens at context %d | %s | %.1f | %.1f | %.0f | %.0f %% | %.0f |\n", seqs, rows, ctx,
                std::string(dtype_name(type)).c_str(), us, kv / 1e6, kv / us / 1e3, 100 * share,
                kv / 4 / (1e12 * share) * 1e6);
  };
  for (DType type : {DType::BF16, DType::I8}) {
    for (int b : {1, 8, 32}) run(b, 128, 1, type);
    for (int b : {1, 32}) run(b, 4096, 1, type);
    for (int b : {1, 8}) run(b, 32768, 1, type);
    run(1, 131072, 1, type);
    run(1, 262143, 1, type);
    for (int b : {1, 8}) run(b, 32768, 3, type);  // speculative verify steps, k = 2
  }
  run(1, 0, 2048, DType::BF16);  // prefill
}

// Prefill attention with the 27B layout for each server KV cache type: prompts from position 0 and a
// chunk after a long context. Causal flops: 4 nh d per (query row, visible position), Q K^T and P V.
void prefill_attention_table(Backend& be) {
  std::printf("\n## Prefill attention (nh 24, nkv 4, d 256)\n\n");
  std::printf("| case | KV | time us | TFLOP/s |\n|---|---|---|---|\n");
  std::mt19937 rng(4);
  auto run = [&](int ctx, int rows, DType type) {
    const int bs = 16, blocks = (ctx + rows + bs - 1) / bs + 1;
    TestBatch batch(be, {{ctx, rows}}, bs, blocks, 1, rng);
    const int64_t T = batch.host.num_tokens();
    Buffer kc(be, type, {blocks, bs, 4, 256}), vc(be, type, {blocks, bs, 4, 256});
    Buffer ks(be, DType::F32, {blocks, bs, 4}), vs(be, DType::F32, {blocks, bs, 4});
    Buffer q(be, DType::F32, {T, 24, 256}), out(be, DType::F32, {T, 24, 256});
    const PagedKv cache = type == DType::I8 ? PagedKv{kc.t, vc.t, bs, ks.t, vs.t} : PagedKv{kc.t, vc.t, bs};
    const double us = time_us(be, [&](int) { be.paged_attention(q.t, cache, batch.device_layout, 0.0625f, out.t); }, 3);
    const double flops = 4.0 * 24 * 256 * (double(rows) * (ctx + 1) + double(rows) * (rows - 1) / 2);
    std::printf("| %d new tokens at context %d | %s | %.0f | %.1f |\n", rows, ctx, std::string(dtype_name(type)).c_str(), us,
                flops / us / 1e6);
  };
  for (DType type : {DType::BF16, DType::I8}) {
    run(0, 2048, type);
    run(0, 8192, type);
    run(30000, 2048, type);  // a chunk of a long prompt
  }
}

// The delta rule with the 27B GDN dims (Hk 16, Hv 48, dk = dv = 128).
void delta_rule_tables(Backend& be) {
  std::printf("\n## Gated delta rule (Hk 16, Hv 48, dk = dv = 128, f32 state)\n\n");
  std::printf("| case | time us | state MB read+written | GB/s |\n|---|---|---|---|\n");
  std::mt19937 rng(5);
  const GdnDims dims{16, 48, 128, 128, 4};
  auto run = [&](int seqs, int rows) {
    std::vector<std::pair<int, int>> shape(static_cast<size_t>(seqs), {rows == 1 ? 100 : 0, rows});
    TestBatch batch(be, shape, 16, seqs * (rows / 16 + 10), seqs, rng);
    const int64_t T = batch.host.num_tokens();
    Buffer qkv(be, DType::F32, {T, dims.conv_channels()}), g(be, DType::F32, {T, 48}), beta(be, DType::F32, {T, 48});
    Buffer st(be, DType::F32, {seqs, 48, 128, 128}), out(be, DType::F32, {T, 48, 128});
    GdnState state{{}, st.t};
    const double us = time_us(be, [&](int) { be.gdn_delta_rule(qkv.t, g.t, beta.t, dims, state, batch.device_layout, out.t); },
                              rows > 1 ? 3 : 100);
    const double bytes = 2.0 * seqs * 48 * 128 * 128 * 4;
    std::printf("| %d seq x %d tokens | %.1f | %.1f | %.0f |\n", seqs, rows, us, bytes / 1e6, bytes / us / 1e3);
  };
  for (int b : {1, 8, 32}) run(b, 1);
  run(1, 2048);
}

// Small per-layer ops at decode size (one token, 27B widths) and the sum for one 27B decode step.
void step_sum(Backend& be, Backend& exact) {
  std::printf("\n## Small ops, one token (27B widths)\n\n| op | time us |\n|---|---|\n");
  std::map<std::string, double> t;
  Buffer h(be, DType::F32, {1, 5120}), h2(be, DType::F32, {1, 5120}), w(be, DType::BF16, {5120});
  Buffer gu(be, DType::F32, {1, 17408}), gu2(be, DType::F32, {1, 17408});
  t["rms_norm"] = time_us(be, [&](int) { be.rms_norm(h.t, w.t, 1e-6f, true, h2.t); }, 200);
  t["add"] = time_us(be, [&](int) { be.add(h.t, h2.t); }, 200);
  Buffer h3(be, DType::F32, {1, 5120});
  t["add_rms_norm"] = time_us(be, [&](int) { be.add_rms_norm(h.t, h2.t, w.t, 1e-6f, true, h3.t); }, 200);
  t["swiglu"] = time_us(be, [&](int) { be.swiglu(gu.t, gu2.t, gu.t); }, 200);
  Buffer ga(be, DType::F32, {1, 48}), gb(be, DType::F32, {1, 48}), al(be, DType::F32, {48}), dt(be, DType::F32, {48});
  Buffer gg(be, DType::F32, {1, 48}), gbeta(be, DType::F32, {1, 48});
  t["gdn_gates"] = time_us(be, [&](int) { be.gdn_gates(ga.t, gb.t, al.t, dt.t, gg.t, gbeta.t); }, 200);
  Buffer core(be, DType::F32, {48, 128}), z(be, DType::F32, {48, 128}), nw(be, DType::F32, {128});
  t["gated_rms_norm"] = time_us(be, [&](int) { be.gated_rms_norm(core.t, z.t, nw.t, 1e-6f, core.t); }, 200);
  std::mt19937 rng(9);
  TestBatch batch(be, {{128, 1}}, 16, 16, 1, rng);
  Buffer mixed(be, DType::F32, {1, 10240}), cw(be, DType::BF16, {10240, 4}), cst(be, DType::F32, {1, 10240, 3}),
      cout(be, DType::F32, {1, 10240});
  GdnState cs{cst.t, {}};
  t["gdn_conv"] = time_us(be, [&](int) { be.gdn_conv(mixed.t, cw.t, cs, batch.device_layout, cout.t); }, 200);
  Buffer qg(be, DType::F32, {1, 24, 512}), k(be, DType::F32, {1, 4, 256}), v(be, DType::F32, {1, 4, 256}),
      qn(be, DType::F32, {256}), q(be, DType::F32, {1, 24, 256}), gate(be, DType::F32, {1, 24, 256});
  t["attention_prep"] = time_us(
      be, [&](int) { be.attention_prep(qg.t, k.t, qn.t, qn.t, 1e-6f, {64, 1e7f}, batch.device_layout, q.t, gate.t); }, 200);
  Buffer kc(be, DType::BF16, {16, 16, 4, 256}), vc(be, DType::BF16, {16, 16, 4, 256});
  PagedKv cache{kc.t, vc.t, 16};
  t["kv_cache_write"] = time_us(be, [&](int) { be.kv_cache_write(k.t, v.t, batch.device_layout, cache); }, 200);
  t["paged_attention"] = time_us(be, [&](int) { be.paged_attention(q.t, cache, batch.device_layout, 0.0625f, gate.t); }, 200);
  Buffer qkv(be, DType::F32, {1, 10240}), dg(be, DType::F32, {1, 48}), db(be, DType::F32, {1, 48}),
      rst(be, DType::F32, {1, 48, 128, 128}), dout(be, DType::F32, {1, 48, 128});
  GdnState rs{{}, rst.t};
  const GdnDims dims{16, 48, 128, 128, 4};
  t["gdn_delta_rule"] = time_us(be, [&](int) { be.gdn_delta_rule(qkv.t, dg.t, db.t, dims, rs, batch.device_layout, dout.t); }, 200);
  for (const auto& [name, us] : t) std::printf("| %s | %.2f |\n", name.c_str(), us);

  // One 27B decode step at batch 1: 48 GDN layers, 16 attention layers, the lm_head.
  auto mm = [&](int64_t N, int64_t K) { return matmul_us(exact, 1, Weights(exact, N, K, DType::BF16), 50); };
  // As the runner calls them: each residual add fused with the next norm.
  const double common = 2 * t["add_rms_norm"] + t["swiglu"] + 2 * mm(17408, 5120) + mm(5120, 17408);
  const double gdn = mm(10240, 5120) + mm(6144, 5120) + 2 * mm(48, 5120) + t["gdn_conv"] + t["gdn_gates"] +
                     t["gdn_delta_rule"] + t["gated_rms_norm"] + mm(5120, 6144);
  const double attn = mm(12288, 5120) + 2 * mm(1024, 5120) + t["attention_prep"] + t["kv_cache_write"] +
                      t["paged_attention"] + t["add"] /* sigmoid_mul, same size class */ + mm(5120, 6144);
  const double total = 64 * common + 48 * gdn + 16 * attn + mm(248320, 5120) + t["rms_norm"];
  std::printf("\n27B decode step, batch 1, context 128: %d kernel launches, sum of back-to-back kernel times %.2f ms "
              "(%.1f tok/s if nothing else costs time)\n",
              64 * 6 + 48 * 9 + 16 * 8 + 4, total / 1e3, 1e6 / total);
}

// Decode batches above the GEMV: the GEMV, cuBLAS hi + lo (two GEMMs) and the tensor-core kernel
// (weights read once), BF16 weights, on the large 27B matrices.
void decode_paths_table(int device, double copy_bw) {
  auto options = [](int gemv_max, bool tensor_cores) {
    GpuBackendOptions o = gpu_options_for_dtype("bfloat16");
    o.gemv_max_tokens = gemv_max;
    o.tensor_core_decode = tensor_cores;
    return o;
  };
  auto gemv = make_gpu_backend(device, options(16, false));
  auto blas = make_gpu_backend(device, options(1, false));
  auto tensor = make_gpu_backend(device, options(1, true));
  std::printf("\n## Decode batches: GEMV vs cuBLAS hi + lo vs tensor-core kernel (BF16, time us, %% of copy bw)\n\n");
  std::printf("| shape [N, K] | T | GEMV | cuBLAS | tensor cores |\n|---|---|---|---|---|\n");
  for (const Shape& s : kShapes27B) {
    if (s.N <= 1024 || s.N > 100000) continue;  // narrow ones stay on the GEMV; lm_head as gate/up
    Weights w(*gemv, s.N, s.K, DType::BF16);
    for (int64_t T : {2, 3, 4, 8, 16, 32}) {
      const double bytes = double(s.N) * s.K * 2 + 4.0 * T * (s.K + s.N);
      auto cell = [&](Backend& be) {
        if (&be == gemv.get() && T > 16) return std::string("-");
        const double us = matmul_us(be, T, w, 50);
        return fmt::format("{:.1f} ({:.0f}%)", us, 100.0 * bytes / us / 1e3 / (copy_bw / 1e9));
      };
      std::printf("| [%ld, %ld] | %ld | %s | %s | %s |\n", long(s.N), long(s.K), long(T), cell(*gemv).c_str(),
                  cell(*blas).c_str(), cell(*tensor).c_str());
    }
  }
}

// Sampling's per-step cost: logit_summary over vocabulary rows (Qwen3.5: 248,320) for the candidate
// counts the samplers ask for (1 greedy, 20 a typical top_k, 256 top-p without top_k).
void sampling_table(Backend& be) {
  std::printf("\n## logit_summary, V = 248320\n\n| rows | k | time us |\n|---|---|---|\n");
  const int64_t V = 248320;
  std::mt19937 rng(3);
  for (int64_t n : {1, 8, 32}) {
    HostTensor logits(DType::F32, {n, V}), rows(DType::I32, {n}), inv_t(DType::F32, {n});
    logits.random(rng, -12, 12);
    for (int64_t i = 0; i < n; ++i) rows.t.as<int32_t>()[i] = int32_t(i), inv_t.t.as<float>()[i] = 1.0f / 0.7f;
    DeviceTensor d_logits(be, logits), d_rows(be, rows), d_inv_t(be, inv_t);
    for (int64_t k : {1, 20, 256, 1024}) {
      Buffer values(be, DType::F32, {n, k}), ids(be, DType::I32, {n, k}), stats(be, DType::F32, {n, 2});
      const double us = time_us(be, [&](int) { be.logit_summary(d_logits.t, d_rows.t, d_inv_t.t, values.t, ids.t, stats.t); }, 50);
      std::printf("| %lld | %lld | %.1f |\n", (long long)n, (long long)k, us);
    }
  }
}

}  // namespace
}  // namespace dcu::testing

// What CUDA runs by default for quantized weights.
constexpr const char* kInt8TensorPath =
    "int8 activations, bf16 mode: integer GEMV to 4 rows, then tensor cores on the rounded activations";

int main(int argc, char** argv) {
  using namespace dcu;
  using namespace dcu::testing;
  const int device = argc > 1 ? std::atoi(argv[1]) : 0;
  // "sampling", "attention", "delta", "decode", "quantized": that table only
  const std::string only = argc > 2 ? argv[2] : "";
  if (list_gpu_devices().size() <= size_t(device)) {
    std::printf("no GPU %d\n", device);
    return 1;
  }
  auto exact = make_gpu_backend(device, gpu_options_for_dtype("float32"));
  auto fast = make_gpu_backend(device, gpu_options_for_dtype("bfloat16"));
  GpuBackendOptions int8_options = gpu_options_for_dtype("float32");  // no tensor cores: the GEMV's 16 rows, as on gfx906
  int8_options.int8_activations = true;
  auto int8 = make_gpu_backend(device, int8_options);
  GpuBackendOptions int8_tensor_options = gpu_options_for_dtype("bfloat16");
  int8_tensor_options.int8_activations = true;
  auto int8_tensor = make_gpu_backend(device, int8_tensor_options);
  std::printf("# gpu_kernel_bench on %s\n", exact->name().c_str());
  if (only == "sampling") {
    sampling_table(*exact);
    return 0;
  }
  if (only == "attention") {
    attention_tables(*exact, copy_bandwidth(*exact));
    prefill_attention_table(*exact);
    return 0;
  }
  if (only == "delta") {
    delta_rule_tables(*exact);
    return 0;
  }
  if (only == "quantized") {
    const double bw = copy_bandwidth(*exact);
    quantized_matmul_table(*exact, bw, "f32 activations, GEMV (f32 mode)", true);
    quantized_matmul_table(*fast, bw, "f32 activations, GEMV to 2 rows, then tensor cores (bf16 mode)", true);
    quantized_matmul_table(*int8, bw, "int8 activations, integer GEMV (its 16 rows, as on gfx906)");
    quantized_matmul_table(*int8_tensor, bw, kInt8TensorPath);
    return 0;
  }
  if (only == "decode") {
    decode_paths_table(device, copy_bandwidth(*exact));
    return 0;
  }
  const double bw = copy_bandwidth(*exact);
  std::printf("\ncopy bandwidth (read + write, 1 GiB cudaMemcpy D2D): %.0f GB/s\n", bw / 1e9);
  matmul_tables(*exact, *fast, bw);
  quantized_matmul_table(*exact, bw, "f32 activations, GEMV (f32 mode)", true);
  quantized_matmul_table(*fast, bw, "f32 activations, GEMV to 2 rows, then tensor cores (bf16 mode)", true);
  quantized_matmul_table(*int8, bw, "int8 activations, integer GEMV (its 16 rows, as on gfx906)");
  quantized_matmul_table(*int8_tensor, bw, kInt8TensorPath);
  attention_tables(*exact, bw);
  prefill_attention_table(*exact);
  delta_rule_tables(*exact);
  step_sum(*exact, *exact);
  decode_paths_table(device, bw);
  sampling_table(*exact);
  return 0;
}
