// The GPU matmul ops with quantized weights (backend/linear.h) against the CPU reference, under the
// checks kernel_emulation_test shares (quantized_op_checks.h): the GEMV (up to 16 rows; every fusion
// the decode step uses), on CUDA's vendor-BLAS mode the tensor-core kernel (up to 32 rows), and the
// prompt-sized path that expands the codes into 16-bit weights, at the device's warp width and at 64
// lanes (gfx906's wave64), each with f32 activations and with int8 ones
// (GpuBackendOptions::int8_activations: the GEMV multiplies int8 and int4 codes; the CPU reference
// multiplies the same rounded activations; fp8 keeps f32 activations on both). Skips when no GPU is
// present.
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

#include "quantized_op_checks.h"

namespace dcu::testing {
namespace {

// Parameters: the logical warp width (0: the device's), int8 activations.
class GpuQuantizedOps : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (list_gpu_devices().empty()) GTEST_SKIP() << "no GPU present";
  }
  // Runs `check` in both precision modes.
  template <typename Check>
  void in_both_modes(Check check) {
    for (const char* mode : {"float32", "bfloat16"}) {
      GpuBackendOptions o = gpu_options_for_dtype(mode, std::get<0>(GetParam()));
      o.int8_activations = std::get<1>(GetParam());
      auto be = make_gpu_backend(0, o);
      check(QuantizedTarget{*be, o.int8_activations, mode}, rng);
    }
  }
  std::mt19937 rng{99};
};

TEST_P(GpuQuantizedOps, Matmul) { in_both_modes(check_quantized_matmuls); }
TEST_P(GpuQuantizedOps, MatmulGroupOfMixedFormats) { in_both_modes(check_quantized_matmul_group_of_mixed_formats); }
TEST_P(GpuQuantizedOps, GateUpSwiglu) { in_both_modes(check_quantized_gate_up_swiglu); }
TEST_P(GpuQuantizedOps, NormsFoldedIntoMatmuls) { in_both_modes(check_quantized_norms_folded_into_matmuls); }
TEST_P(GpuQuantizedOps, ActOrder) { in_both_modes(check_quantized_act_order); }

INSTANTIATE_TEST_SUITE_P(LanesAndActivations, GpuQuantizedOps,
                         ::testing::Combine(::testing::Values(0, 64), ::testing::Bool()), [](const auto& info) {
                           return std::string(std::get<0>(info.param) == 0 ? "native" : "wave64") +
                                  (std::get<1>(info.param) ? "_int8_activations" : "_f32_activations");
                         });

}  // namespace
}  // namespace dcu::testing
