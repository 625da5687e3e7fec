// The GPU matmul ops with quantized weights (backend/linear.h) against the CPU reference: the GEMV
// (up to 16 rows; every fusion the decode step uses), on CUDA's vendor-BLAS mode the tensor-core
// kernel (up to 32 rows), and the prompt-sized path that expands the codes into 16-bit weights, at
// the device's warp width and at 64 lanes (gfx906's wave64), each with f32 activations and with int8
// ones (GpuBackendOptions::int8_activations: the GEMV multiplies int8 and int4 codes; the CPU reference
// multiplies the same rounded activations; fp8 keeps f32 activations on both). Skips when no GPU is present.
//
// Tolerances (max |gpu - cpu| / max(1, max |cpu|)):
//   GEMV: 1e-4. It forms the same f32 weights scale * (q - zero) (fp8: scale * e4m3(q)) as the CPU,
//     exactly; only the order of the f32 sums differs. Tensor cores: 1e-4 too (the codes are exact in
//     bf16, the activations split hi + lo).
//   expanded path (more than 16 rows): 4e-3. In the bf16 mode the expanded weights are rounded to
//     bf16 (CUDA) or f16 (rocBLAS) while the reference's are exact f32 (the f32 mode expands to f32).
//   int8 activations: the same; the GEMV's integer sums are exact. Where the GEMV folds the norm, 2e-3:
//     the GPU quantizes the row it normalised itself (its sum of squares in another order), so a value
//     within an ulp of a rounding boundary may take the next code (one code of one k moves the output
//     by about 1 / (127 sqrt(K)) of its scale).

#include <gtest/gtest.h>

#include "backend/cpu/cpu_ops.h"
#include "gpu_test_util.h"
#include "model/quantize.h"
#include "quantized_test_util.h"

namespace dcu::testing {
namespace {

// A quantized weight in device memory, released with it.
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

struct Case {
  int64_t T, K, N;
  WeightFormat format;
  int64_t group;
  bool zeros = false;
};

std::string describe(const Case& c) {
  return std::string(weight_format_name(c.format)) + " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) +
         " N=" + std::to_string(c.N) + " group " + std::to_string(c.group) + (c.zeros ? " zeros" : "");
}

float tolerance(const Case& c) { return c.T <= 16 ? 1e-4f : 4e-3f; }

// FP8 matmuls run where the backend reads FP8 (CUDA; HIP GPUs load FP8 checkpoints as int8).
bool reads(const Backend& be, WeightFormat f) { return f != WeightFormat::Fp8 || be.reads_fp8_weights(); }

// Parameters: the logical warp width (0: the device's), int8 activations.
class GpuQuantizedOps : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (list_gpu_devices().empty()) GTEST_SKIP() << "no GPU present";
  }
  bool int8_activations() const { return std::get<1>(GetParam()); }
  std::unique_ptr<Backend> backend(const char* mode) {
    GpuBackendOptions o = gpu_options_for_dtype(mode, std::get<0>(GetParam()));
    o.int8_activations = int8_activations();
    return make_gpu_backend(0, o);
  }
  // The CPU reference of x . w^T, with the run's activations.
  void reference(const HostTensor& x, const HostLinear& w, HostTensor& y) const {
    cpu::matmul(x.t, linear_view(w), y.t, int8_activations());
  }
  float folded_norm_tolerance() const { return int8_activations() ? 2e-3f : 1e-4f; }
  std::mt19937 rng{99};
};

const std::vector<Case> kCases = {
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

TEST_P(GpuQuantizedOps, Matmul) {
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = backend(mode);
    for (const Case& c : kCases) {
      if (!reads(*be, c.format)) continue;
      const HostLinear h = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
      HostTensor x(DType::F32, {c.T, c.K}), y(DType::F32, {c.T, c.N});
      x.random(rng, -2, 2);
      reference(x, h, y);
      DeviceLinear dw(*be, h);
      DeviceTensor dx(*be, x), dy(*be, y);
      be->matmul(dx.t, dw.linear, dy.t);
      EXPECT_LT(relative_error(dy.floats(), y.floats()), tolerance(c)) << mode << " " << describe(c);
    }
  }
}

// A GDN layer's projections: two quantized matrices and two 16-bit ones in one call.
TEST_P(GpuQuantizedOps, MatmulGroupOfMixedFormats) {
  for (const char* mode : {"float32", "bfloat16"})
    for (int64_t T : {1, 2, 9, 20}) {
      auto be = backend(mode);
      const int64_t K = 1024;
      const HostLinear qkv = random_quantized(rng, WeightFormat::Int4, 768, K, 128, true);
      const HostLinear z = random_quantized(rng, WeightFormat::Int4, 512, K, 128, true);
      HostTensor a(DType::BF16, {48, K}), b(DType::BF16, {48, K}), x(DType::F32, {T, K});
      a.random(rng, -0.1f, 0.1f), b.random(rng, -0.1f, 0.1f), x.random(rng);
      HostTensor y0(DType::F32, {T, 768}), y1(DType::F32, {T, 512}), y2(DType::F32, {T, 48}), y3(DType::F32, {T, 48});
      reference(x, qkv, y0), reference(x, z, y1);
      cpu::matmul(x.t, a.t, y2.t), cpu::matmul(x.t, b.t, y3.t);
      DeviceLinear dqkv(*be, qkv), dz(*be, z);
      DeviceTensor da(*be, a), db(*be, b), dx(*be, x), d0(*be, y0), d1(*be, y1), d2(*be, y2), d3(*be, y3);
      const Linear ws[] = {dqkv.linear, dz.linear, da.t, db.t};
      const Tensor ys[] = {d0.t, d1.t, d2.t, d3.t};
      be->matmul_group(dx.t, ws, ys);
      const float tol = T <= 16 ? 1e-4f : 4e-3f;
      const std::string what = std::string(mode) + " T=" + std::to_string(T);
      EXPECT_LT(relative_error(d0.floats(), y0.floats()), tol) << what << " qkv";
      EXPECT_LT(relative_error(d1.floats(), y1.floats()), tol) << what << " z";
      EXPECT_LT(relative_error(d2.floats(), y2.floats()), 1e-4f) << what << " a";
      EXPECT_LT(relative_error(d3.floats(), y3.floats()), 1e-4f) << what << " b";
    }
}

TEST_P(GpuQuantizedOps, GateUpSwiglu) {
  const std::vector<Case> cases = {{1, 5120, 4352, WeightFormat::Int4, 128}, {2, 1024, 3584, WeightFormat::Int8, 1024},
                                   {8, 512, 1000, WeightFormat::Int4, 32, true}, {40, 640, 300, WeightFormat::Int8, 640},
                                   {1, 1024, 2000, WeightFormat::Fp8, 128}};
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = backend(mode);
    for (const Case& c : cases) {
      if (!reads(*be, c.format)) continue;
      const HostLinear gw = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
      const HostLinear uw = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
      HostTensor x(DType::F32, {c.T, c.K}), gate(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N});
      HostTensor want(DType::F32, {c.T, c.N});
      x.random(rng);
      reference(x, gw, gate);
      reference(x, uw, up);
      cpu::swiglu(gate.t, up.t, want.t);
      DeviceLinear dgw(*be, gw), duw(*be, uw);
      DeviceTensor dx(*be, x), dgate(*be, gate), dup(*be, up);
      be->gate_up_swiglu(dx.t, dgw.linear, duw.linear, dgate.t, dup.t, dgate.t);
      EXPECT_LT(relative_error(dgate.floats(), want.floats()), tolerance(c)) << mode << " " << describe(c);
    }
  }
}

// The decode-step fusions with quantized weights: the norm read into the GEMV (with int8 activations,
// into the quantize kernel before it from 2 rows, and for int4 weights at one row too), and accumulation.
TEST_P(GpuQuantizedOps, NormsFoldedIntoMatmuls) {
  const std::vector<Case> cases = {{1, 5120, 6144, WeightFormat::Int8, 5120}, {2, 4096, 3000, WeightFormat::Int4, 128, true},
                                   {1, 256, 1024, WeightFormat::Int4, 32},    {2, 5120, 2000, WeightFormat::Int8, 128},
                                   {2, 1024, 3000, WeightFormat::Fp8, 128}};
  for (const char* mode : {"float32", "bfloat16"}) {
    auto be = backend(mode);
    for (const Case& c : cases) {
      if (!be->fuses_norms(c.T) || !reads(*be, c.format)) continue;  // the GEMV takes these rows
      const HostLinear w = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
      const HostLinear up_w = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
      HostTensor x(DType::F32, {c.T, c.K}), nw(DType::BF16, {c.K}), normed(DType::F32, {c.T, c.K});
      HostTensor y(DType::F32, {c.T, c.N}), up(DType::F32, {c.T, c.N}), acc(DType::F32, {c.T, c.N});
      x.random(rng, -3, 3), nw.random(rng, -0.5f, 0.5f), acc.random(rng);
      DeviceLinear dw(*be, w), dup_w(*be, up_w);
      DeviceTensor dx(*be, x), dnw(*be, nw), dy(*be, y), dacc(*be, acc);
      cpu::rms_norm(x.t, nw.t, 1e-6f, true, normed.t);
      const Linear ws[] = {dw.linear};
      const Tensor ys[] = {dy.t};
      be->norm_matmul_group(dx.t, dnw.t, 1e-6f, ws, ys);
      reference(normed, w, y);
      const std::string what = std::string(mode) + " " + describe(c);
      EXPECT_LT(relative_error(dy.floats(), y.floats()), folded_norm_tolerance()) << what << " norm_matmul_group";
      be->norm_gate_up_swiglu(dx.t, dnw.t, 1e-6f, dw.linear, dup_w.linear, dy.t);
      reference(normed, up_w, up);
      cpu::swiglu(y.t, up.t, y.t);
      EXPECT_LT(relative_error(dy.floats(), y.floats()), folded_norm_tolerance()) << what << " norm_gate_up_swiglu";
      be->matmul_accumulate(dx.t, dw.linear, dacc.t);
      reference(x, w, y);
      std::vector<float> expected = acc.floats();
      const std::vector<float> product = y.floats();
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += product[i];
      EXPECT_LT(relative_error(dacc.floats(), expected), 1e-4f) << what << " matmul_accumulate";
    }
  }
}

// Act-order weights (GPTQ desc_act): the activations gathered into each weight's column order, in a
// group whose members have different orders, and in gate/up/SwiGLU; GEMV, tensor-core and expanded rows.
TEST_P(GpuQuantizedOps, ActOrder) {
  const int64_t K = 512, N = 256;
  auto permuted = [&](WeightFormat f, int salt) {
    HostLinear h = random_quantized(rng, f, N, K, 128, f == WeightFormat::Int4);
    h.k_order.resize(size_t(K));
    for (int64_t k = 0; k < K; ++k) h.k_order[size_t(k)] = int32_t((k * (2 * salt + 37) + salt) % K);
    return h;
  };
  for (const char* mode : {"float32", "bfloat16"})
    for (int64_t T : {1, 8, 40}) {
      auto be = backend(mode);
      const HostLinear a = permuted(WeightFormat::Int4, 1), b = permuted(WeightFormat::Int8, 2);
      HostTensor x(DType::F32, {T, K}), ya(DType::F32, {T, N}), yb(DType::F32, {T, N}), want(DType::F32, {T, N});
      x.random(rng);
      reference(x, a, ya), reference(x, b, yb);
      DeviceLinear da(*be, a), db(*be, b);
      DeviceTensor dx(*be, x), dya(*be, ya), dyb(*be, yb);
      const Linear ws[] = {da.linear, db.linear};
      const Tensor ys[] = {dya.t, dyb.t};
      be->matmul_group(dx.t, ws, ys);
      const float tol = T <= 16 ? 1e-4f : 4e-3f;
      const std::string what = std::string(mode) + " T=" + std::to_string(T);
      EXPECT_LT(relative_error(dya.floats(), ya.floats()), tol) << what << " int4";
      EXPECT_LT(relative_error(dyb.floats(), yb.floats()), tol) << what << " int8";
      const HostLinear up = permuted(WeightFormat::Int4, 3);
      HostTensor yu(DType::F32, {T, N});
      reference(x, up, yu);
      cpu::swiglu(ya.t, yu.t, want.t);
      DeviceLinear dup(*be, up);
      DeviceTensor dgate(*be, ya), dupy(*be, yu);
      be->gate_up_swiglu(dx.t, da.linear, dup.linear, dgate.t, dupy.t, dgate.t);
      EXPECT_LT(relative_error(dgate.floats(), want.floats()), tol) << what << " gate_up_swiglu";
    }
}

INSTANTIATE_TEST_SUITE_P(LanesAndActivations, GpuQuantizedOps,
                         ::testing::Combine(::testing::Values(0, 64), ::testing::Bool()), [](const auto& info) {
                           return std::string(std::get<0>(info.param) == 0 ? "native" : "wave64") +
                                  (std::get<1>(info.param) ? "_int8_activations" : "_f32_activations");
                         });

}  // namespace
}  // namespace dcu::testing
