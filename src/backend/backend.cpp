#include "backend/backend.h"

#include <vector>

#include "core/error.h"

namespace dcu {

void Backend::copy(void* dst, const void* src, size_t bytes) {
  std::vector<char> staging(bytes);
  download(staging.data(), src, bytes);
  upload(dst, staging.data(), bytes);
}

void Backend::norm_matmul_group(const Tensor&, const Tensor&, float, std::span<const Linear>,
                                std::span<const Tensor>) {
  fail("{} does not fold norms into matmuls (see fuses_norms)", name());
}

void Backend::norm_gate_up_swiglu(const Tensor&, const Tensor&, float, const Linear&, const Linear&, Tensor) {
  fail("{} does not fold norms into matmuls (see fuses_norms)", name());
}

void Backend::matmul_accumulate(const Tensor&, const Linear&, Tensor) {
  fail("{} does not fold norms into matmuls (see fuses_norms)", name());
}

void Backend::matmul_group(const Tensor& x, std::span<const Linear> ws, std::span<const Tensor> ys) {
  DCU_CHECK(ws.size() == ys.size() && ws.size() <= kMaxMatmulGroup);
  for (size_t i = 0; i < ws.size(); ++i) matmul(x, ws[i], ys[i]);
}

void Backend::gate_up_swiglu(const Tensor& x, const Linear& gate_w, const Linear& up_w, Tensor gate, Tensor up,
                             Tensor out) {
  const Linear ws[] = {gate_w, up_w};
  const Tensor ys[] = {gate, up};
  matmul_group(x, ws, ys);
  swiglu(gate, up, out);
}

}  // namespace dcu
