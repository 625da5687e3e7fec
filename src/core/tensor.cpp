#include "core/tensor.h"

namespace dcu {

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace dcu
