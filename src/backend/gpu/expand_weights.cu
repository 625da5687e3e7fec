// Quantized weights (backend/linear.h) expanded into dense 16-bit weights, for the prompt-sized
// matmuls that run on dense kernels (matmul.cu).

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

// grid-stride over chunks of 8 consecutive weights of one row (K % 8 == 0): out [N, K] of H (Bf16, F16
// or float).
template <typename H>
__global__ void expand_kernel(const MatmulArgs a, H* out) {
  start_after_previous_kernel();
  const int64_t chunks = a.N * a.K / 8, groups = a.K / a.group;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = c * 8 / a.K, k = c * 8 % a.K, g = n * groups + k / a.group;
    const float scale = a.scales[g];
    float v[8];
    if (a.format == WeightFormat::Int8) {
      const uint2 u = reinterpret_cast<const uint2*>(a.w)[c];
      const uint32_t words[2] = {u.x, u.y};
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = scale * float(int8_t(words[j / 4] >> (8 * (j % 4))));
    } else if (a.format == WeightFormat::Fp8) {
      const uint2 u = reinterpret_cast<const uint2*>(a.w)[c];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = scale * fp8_value((j < 4 ? u.x : u.y) >> (8 * (j % 4)));
    } else {
      const uint32_t w = reinterpret_cast<const uint32_t*>(a.w)[c];
      const float zero = a.zeros ? float(a.zeros[g]) : 8.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // k = 2j in nibble j, k = 2j + 1 in nibble j + 4
        v[2 * j] = scale * (float((w >> (4 * j)) & 0xFu) - zero);
        v[2 * j + 1] = scale * (float((w >> (4 * j + 16)) & 0xFu) - zero);
      }
    }
    if constexpr (std::is_same_v<H, float>) {
      reinterpret_cast<float4*>(out)[2 * c] = make_float4(v[0], v[1], v[2], v[3]);
      reinterpret_cast<float4*>(out)[2 * c + 1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
      H h[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) from_f32(v[j], &h[j]);
      uint4 packed;
      packed.x = h[0].bits | uint32_t(h[1].bits) << 16, packed.y = h[2].bits | uint32_t(h[3].bits) << 16;
      packed.z = h[4].bits | uint32_t(h[5].bits) << 16, packed.w = h[6].bits | uint32_t(h[7].bits) << 16;
      reinterpret_cast<uint4*>(out)[c] = packed;
    }
  }
}

}  // namespace

void launch_expand_weights(const Launch& l, const MatmulArgs& a, void* out, DType type) {
  if (a.format == WeightFormat::Dense || a.K % 8 != 0 || a.group <= 0 || a.K % a.group != 0)
    fail_call("launch_expand_weights", __FILE__, __LINE__, "not a quantized weight with whole groups");
  const int64_t chunks = a.N * a.K / 8;
  const unsigned grid = unsigned(std::min<int64_t>(blocks_for(chunks, 256), 8192));
  if (type == DType::BF16) launch_overlapping(l, expand_kernel<Bf16>, grid, 256, 0, a, static_cast<Bf16*>(out));
  else if (type == DType::F16) launch_overlapping(l, expand_kernel<F16>, grid, 256, 0, a, static_cast<F16*>(out));
  else launch_overlapping(l, expand_kernel<float>, grid, 256, 0, a, static_cast<float*>(out));
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
