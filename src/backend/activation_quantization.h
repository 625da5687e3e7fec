#pragma once
// Int8 activations for matmuls with quantized weights (a backend option, `--activation-quantization`).
// Before such a matmul every row of x [T, K] is cut into blocks of kActivationBlock consecutive k (K is
// a multiple of 32 for every quantized weight, backend/linear.h) and each block becomes int8 codes with
// one f32 scale:
//   a = max |x_k| over the block,  s = a / 127,  q_k = rint(x_k * (127 / a))  (ties to even; all 0 when a = 0)
// so that x_k ~ s q_k, within s / 2. The GPU GEMVs multiply codes by codes (dp4a, v_dot4_i32_i8), which
// is exact, and scale each block's integer sum by s and the weight's group scale; every other path (the
// CPU, prompt-sized GPU matmuls) multiplies by the rounded values s q_k. So every backend and every row
// count computes the same function. (The row-parallel slices of tensor parallelism keep whole blocks:
// their column ranges are multiples of the weight's group.)

#include <cstdint>

namespace dcu {

constexpr int kActivationBlock = 32;

// out[i] = s q_i for the blocks of x [n] (n a multiple of kActivationBlock); out may alias x.
void round_activations_to_int8(const float* x, float* out, int64_t n);

}  // namespace dcu
