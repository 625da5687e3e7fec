#include "backend/activation_quantization.h"

#include <algorithm>
#include <cmath>

namespace dcu {

void round_activations_to_int8(const float* x, float* out, int64_t n) {
  for (int64_t b = 0; b < n; b += kActivationBlock) {
    float a = 0.0f;
    for (int i = 0; i < kActivationBlock; ++i) a = std::max(a, std::abs(x[b + i]));
    const float inv = a > 0.0f ? 127.0f / a : 0.0f, s = a / 127.0f;
    for (int i = 0; i < kActivationBlock; ++i)
      out[b + i] = std::clamp(std::nearbyint(x[b + i] * inv), -127.0f, 127.0f) * s;
  }
}

}  // namespace dcu
