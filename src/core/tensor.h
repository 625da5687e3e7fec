#pragma once
// A non-owning view of a dense, row-major tensor in some backend's memory. Ops take views; whoever
// allocated the memory owns it (destination passing: kernels never allocate).

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace dcu {

constexpr int kMaxDims = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};

  Tensor() = default;
  Tensor(void* data, DType dtype, std::initializer_list<int64_t> dims) : data(data), dtype(dtype) {
    DCU_CHECK(dims.size() <= kMaxDims);
    for (int64_t d : dims) shape[ndim++] = d;
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  size_t bytes() const { return size_t(numel()) * dtype_size(dtype); }
  int64_t dim(int i) const { return shape[i < 0 ? ndim + i : i]; }
  // Rows when the tensor is read as a matrix [rows, last dim].
  int64_t rows() const { return ndim == 0 ? 1 : numel() / shape[ndim - 1]; }
  int64_t cols() const { return ndim == 0 ? 1 : shape[ndim - 1]; }
  bool empty() const { return data == nullptr; }

  template <typename T> T* as() const { return static_cast<T*>(data); }

  // Rows [begin, begin + count) of the leading dimension.
  Tensor slice_rows(int64_t begin, int64_t count) const {
    Tensor t = *this;
    int64_t row_elems = numel() / shape[0];
    t.data = static_cast<char*>(data) + begin * row_elems * int64_t(dtype_size(dtype));
    t.shape[0] = count;
    return t;
  }
  Tensor reshaped(std::initializer_list<int64_t> dims) const {
    Tensor t(data, dtype, dims);
    DCU_CHECK(t.numel() == numel());
    return t;
  }
  std::string shape_string() const;
};

}  // namespace dcu
