#pragma once
// Checks of the matmul ops with quantized weights (backend/linear.h) against the CPU reference, for any
// backend that runs the GPU kernels: gpu_quantized_ops_test runs them on a GPU, kernel_emulation_test on
// the CPU's emulation of the kernels. Tolerances are gpu_quantized_ops_test's (its header says why).

#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "gpu_test_util.h"
#include "model/quantize.h"
#include "quantized_test_util.h"

namespace dcu::testing {

// A quantized weight in a backend's memory, released with it.
class DeviceLinear {
 public:
  DeviceLinear(Backend& be, const HostLinear& host) : be_(be) {
    linear = upload_linear(host, be, [this](size_t bytes) { return buffers_.emplace_back(be_.allocate(bytes)); });
  }
  DeviceLinear(const DeviceLinear&) = delete;
  ~DeviceLinear() {
    for (void* p : buffers_) be_.release(p);
  }
  Linear linear;

 private:
  Backend& be_;
  std::vector<void*> buffers_;
};

// The backend under test, whether its quantized matmuls round their activations to int8
// (GpuBackendOptions::int8_activations), and the configuration's name for messages.
struct QuantizedTarget {
  Backend& be;
  bool int8_activations;
  std::string mode;

  // The CPU reference of x . w^T, with the same activations.
  void reference(const HostTensor& x, const HostLinear& w, HostTensor& y) const {
    cpu::matmul(x.t, linear_view(w), y.t, int8_activations);
  }
  // FP8 matmuls run where the backend reads FP8 (CUDA; HIP GPUs load FP8 checkpoints as int8).
  bool reads(WeightFormat f) const { return f != WeightFormat::Fp8 || be.reads_fp8_weights(); }
  float folded_norm_tolerance() const { return int8_activations ? 2e-3f : 1e-4f; }
};

struct QuantizedCase {
  int64_t T, K, N;
  WeightFormat format;
  int64_t group;
  bool zeros = false;
};

inline std::string describe(const QuantizedCase& c) {
  return std::string(weight_format_name(c.format)) + " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) +
         " N=" + std::to_string(c.N) + " group " + std::to_string(c.group) + (c.zeros ? " zeros" : "");
}

// The GEMV's rows (and CUDA's tensor cores) against the expanded path's.
inline float quantized_tolerance(int64_t T) { return T <= 16 ? 1e-4f : 4e-3f; }

inline void check_quantized_matmuls(const QuantizedTarget& target, std::mt19937& rng) {
  const std::vector<QuantizedCase> cases = {
      {1, 5120, 4096, WeightFormat::Int8, 5120},       // per-channel int8, decode
      {2, 5120, 1024, WeightFormat::Int8, 128},        // int8 with group scales (FP8 checkpoints)
      {1, 5120, 6144, WeightFormat::Int4, 128},        // symmetric int4
      {4, 17408, 640, WeightFormat::Int4, 128, true},  // down_proj width, zero points
      {8, 1024, 300, WeightFormat::Int4, 32, true},
      {16, 2048, 520, WeightFormat::Int8, 2048},       // the GEMV's widest
      {17, 1024, 300, WeightFormat::Int4, 128, true},  // expanded (f32 mode) or tensor cores (bf16 mode)
      {32, 1024, 640, WeightFormat::Int4, 32},         // the tensor-core kernel's widest
      {24, 2048, 300, WeightFormat::Int8, 2048},
      {64, 512, 1000, WeightFormat::Int8, 512},
      {3, 256, 33, WeightFormat::Int4, 64},            // N not a multiple of the block's columns
      {1, 5120, 4096, WeightFormat::Fp8, 128},         // FP8 checkpoints (CUDA: int8 on HIP), decode GEMV
      {4, 5120, 1024, WeightFormat::Fp8, 128},         // the GEMV (f32 mode) or tensor cores (bf16 mode)
      {24, 1024, 640, WeightFormat::Fp8, 128},
      {64, 512, 1000, WeightFormat::Fp8, 128},         // expanded
  };
  Backend& be = target.be;
  for (const QuantizedCase& c : cases) {
    if (!target.reads(c.format)) continue;
    const HostLinear h = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    HostTensor x(DType::F32, {c.T, c.K}), y(DType::F32, {c.T, c.N});
    x.random(rng, -2, 2);
    target.reference(x, h, y);
    DeviceLinear dw(be, h);
    DeviceTensor dx(be, x), dy(be, y);
    be.matmul(dx.t, dw.linear, dy.t);
    EXPECT_LT(relative_error(dy.floats(), y.floats()), quantized_tolerance(c.T)) << target.mode << " " << describe(c);
  }
}

// A GDN layer's projections: two quantized matrices and two 16-bit ones in one call.
inline void check_quantized_matmul_group_of_mixed_formats(const QuantizedTarget& target, std::mt19937& rng) {
  Backend& be = target.be;
  for (int64_t T : {1, 2, 9, 20}) {
    const int64_t K = 1024;
    const HostLinear qkv = random_quantized(rng, WeightFormat::Int4, 768, K, 128, true);
    const HostLinear z = random_quantized(rng, WeightFormat::Int4, 512, K, 128, true);
    HostTensor a(DType::BF16, {48, K}), b(DType::BF16, {48, K}), x(DType::F32, {T, K});
    a.random(rng, -0.1f, 0.1f), b.random(rng, -0.1f, 0.1f), x.random(rng);
    HostTensor y0(DType::F32, {T, 768}), y1(DType::F32, {T, 512}), y2(DType::F32, {T, 48}), y3(DType::F32, {T, 48});
    target.reference(x, qkv, y0), target.reference(x, z, y1);
    cpu::matmul(x.t, a.t, y2.t), cpu::matmul(x.t, b.t, y3.t);
    DeviceLinear dqkv(be, qkv), dz(be, z);
    DeviceTensor da(be, a), db(be, b), dx(be, x), d0(be, y0), d1(be, y1), d2(be, y2), d3(be, y3);
    const Linear ws[] = {dqkv.linear, dz.linear, da.t, db.t};
    const Tensor ys[] = {d0.t, d1.t, d2.t, d3.t};
    be.matmul_group(dx.t, ws, ys);
    const float tol = quantized_tolerance(T);
    const std::string what = target.mode + " T=" + std::to_string(T);
    EXPECT_LT(relative_error(d0.floats(), y0.floats()), tol) << what << " qkv";
    EXPECT_LT(relative_error(d1.floats(), y1.floats()), tol) << what << " z";
    EXPECT_LT(relative_error(d2.floats(), y2.floats()), 1e-4f) << what << " a";
    EXPECT_LT(relative_error(d3.floats(), y3.floats()), 1e-4f) << what << " b";
  }
}

inline void check_quantized_gate_up_swiglu(const QuantizedTarget& target, std::mt19937& rng) {
  const std::vector<QuantizedCase> cases = {
      {1, 5120, 4352, WeightFormat::Int4, 128}, {2, 1024, 3584, WeightFormat::Int8, 1024},
      {8, 512, 1000, WeightFormat::Int4, 32, true}, {40, 640, 300, WeightFormat::Int8, 640},
      {1, 1024, 2000, WeightFormat::Fp8, 128}};
  Backend& be = target.be;
  for (const QuantizedCase& c : cases) {
    if (!target.reads(c.format)) continue;
    const HostLinear gw = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    const HostLinear uw = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    HostTensor x(DType::F32, {c.T, c.K}), gate(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N});
    HostTensor want(DType::F32, {c.T, c.N});
    x.random(rng);
    target.reference(x, gw, gate);
    target.reference(x, uw, up);
    cpu::swiglu(gate.t, up.t, want.t);
    DeviceLinear dgw(be, gw), duw(be, uw);
    DeviceTensor dx(be, x), dgate(be, gate), dup(be, up);
    be.gate_up_swiglu(dx.t, dgw.linear, duw.linear, dgate.t, dup.t, dgate.t);
    EXPECT_LT(relative_error(dgate.floats(), want.floats()), quantized_tolerance(c.T))
        << target.mode << " " << describe(c);
  }
}

// The decode-step fusions with quantized weights: the norm read into the GEMV (with int8 activations,
// into the quantize kernel before it from 2 rows, and for int4 weights at one row too), and accumulation.
inline void check_quantized_norms_folded_into_matmuls(const QuantizedTarget& target, std::mt19937& rng) {
  const std::vector<QuantizedCase> cases = {
      {1, 5120, 6144, WeightFormat::Int8, 5120}, {2, 4096, 3000, WeightFormat::Int4, 128, true},
      {1, 256, 1024, WeightFormat::Int4, 32},    {2, 5120, 2000, WeightFormat::Int8, 128},
      {2, 1024, 3000, WeightFormat::Fp8, 128}};
  Backend& be = target.be;
  for (const QuantizedCase& c : cases) {
    if (!be.fuses_norms(c.T) || !target.reads(c.format)) continue;  // the GEMV takes these rows
    const HostLinear w = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    const HostLinear up_w = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    HostTensor x(DType::F32, {c.T, c.K}), nw(DType::BF16, {c.K}), normed(DType::F32, {c.T, c.K});
    HostTensor y(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N}), acc(DType::F32, {c.T, c.N});
    x.random(rng, -3, 3), nw.random(rng, -0.5f, 0.5f), acc.random(rng);
    DeviceLinear dw(be, w), dup_w(be, up_w);
    DeviceTensor dx(be, x), dnw(be, nw), dy(be, y), dacc(be, acc);
    cpu::rms_norm(x.t, nw.t, 1e-6f, true, normed.t);
    const Linear ws[] = {dw.linear};
    const Tensor ys[] = {dy.t};
    be.norm_matmul_group(dx.t, dnw.t, 1e-6f, ws, ys);
    target.reference(normed, w, y);
    const std::string what = target.mode + " " + describe(c);
    EXPECT_LT(relative_error(dy.floats(), y.floats()), target.folded_norm_tolerance()) << what << " norm_matmul_group";
    be.norm_gate_up_swiglu(dx.t, dnw.t, 1e-6f, dw.linear, dup_w.linear, dy.t);
    target.reference(normed, up_w, up);
    cpu::swiglu(y.t, up.t, y.t);
    EXPECT_LT(relative_error(dy.floats(), y.floats()), target.folded_norm_tolerance())
        << what << " norm_gate_up_swiglu";
    be.matmul_accumulate(dx.t, dw.linear, dacc.t);
    target.reference(x, w, y);
    std::vector<float> expected = acc.floats();
    const std::vector<float> product = y.floats();
    for (size_t i = 0; i < expected.size(); ++i) expected[i] += product[i];
    EXPECT_LT(relative_error(dacc.floats(), expected), 1e-4f) << what << " matmul_accumulate";
  }
}

// Act-order weights (GPTQ desc_act): the activations gathered into each weight's column order, in a
// group whose members have different orders, and in gate/up/SwiGLU; GEMV, tensor-core and expanded rows.
inline void check_quantized_act_order(const QuantizedTarget& target, std::mt19937& rng) {
  const int64_t K = 512, N = 256;
  auto permuted = [&](WeightFormat f, int salt) {
    HostLinear h = random_quantized(rng, f, N, K, 128, f == WeightFormat::Int4);
    h.k_order.resize(size_t(K));
    for (int64_t k = 0; k < K; ++k) h.k_order[size_t(k)] = int32_t((k * (2 * salt + 37) + salt) % K);
    return h;
  };
  Backend& be = target.be;
  for (int64_t T : {1, 8, 40}) {
    const HostLinear a = permuted(WeightFormat::Int4, 1), b = permuted(WeightFormat::Int8, 2);
    HostTensor x(DType::F32, {T, K}), ya(DType::F32, {T, N}), yb(DType::F32, {T, N}), want(DType::F32, {T, N});
    x.random(rng);
    target.reference(x, a, ya), target.reference(x, b, yb);
    DeviceLinear da(be, a), db(be, b);
    DeviceTensor dx(be, x), dya(be, ya), dyb(be, yb);
    const Linear ws[] = {da.linear, db.linear};
    const Tensor ys[] = {dya.t, dyb.t};
    be.matmul_group(dx.t, ws, ys);
    const float tol = quantized_tolerance(T);
    const std::string what = target.mode + " T=" + std::to_string(T);
    EXPECT_LT(relative_error(dya.floats(), ya.floats()), tol) << what << " int4";
    EXPECT_LT(relative_error(dyb.floats(), yb.floats()), tol) << what << " int8";
    const HostLinear up = permuted(WeightFormat::Int4, 3);
    HostTensor yu(DType::F32, {T, N});
    target.reference(x, up, yu);
    cpu::swiglu(ya.t, yu.t, want.t);
    DeviceLinear dup(be, up);
    DeviceTensor dgate(be, ya), dupy(be, yu);
    be.gate_up_swiglu(dx.t, da.linear, dup.linear, dgate.t, dupy.t, dgate.t);
    EXPECT_LT(relative_error(dgate.floats(), want.floats()), tol) << what << " gate_up_swiglu";
  }
}

}  // namespace dcu::testing
