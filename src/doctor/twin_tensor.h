#pragma once
// Tensors held twice, on a reference backend and on the backend under test, with the same contents:
// the self-test runs an op on each and compares what came out. Plain C++ (no test framework).

#include <cstdint>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include <omp.h>

#include "backend/backend.h"

namespace dcu::doctor {

enum class Side { Reference, Device };

// The self-test's shapes are far too small for a team of OpenMP threads: waking one costs more than it
// saves, and on a busy machine every parallel region waits for all of them (seconds instead of
// tenths). The CPU runs them on the calling thread while this lives.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMpThread() { omp_set_num_threads(saved_); }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int saved_;
};

struct BackendPair {
  Backend& reference;
  Backend& device;
  std::mt19937 rng{20261202};
  Backend& operator[](Side s) { return s == Side::Reference ? reference : device; }
  // f(backend, side) on the reference, then on the device.
  template <typename F>
  void run(F&& f) {
    f(reference, Side::Reference);
    f(device, Side::Device);
  }
};

class Twin {
 public:
  Twin(BackendPair& pair, DType dtype, std::initializer_list<int64_t> shape) : Twin(pair, dtype, dtype, shape) {}
  // A different storage type per side (a bf16 KV cache on the device, f32 on the CPU): both hold
  // the values the coarser type can represent.
  Twin(BackendPair& pair, DType reference_dtype, DType device_dtype, std::initializer_list<int64_t> shape);
  ~Twin();
  Twin(const Twin&) = delete;
  Twin& operator=(const Twin&) = delete;

  // Uniform values in [lo, hi) (integers for I32), the same on both sides.
  Twin& random(float lo = -1.0f, float hi = 1.0f);
  Twin& assign(const std::vector<float>& values);
  Tensor operator[](Side s) const { return s == Side::Reference ? reference_ : device_; }
  std::vector<float> read(Side s) const;
  // max |device - reference| / max(1, max |reference|); infinite where one side is NaN and the other not.
  double error() const;

 private:
  BackendPair& pair_;
  Tensor reference_, device_;
};

// The error measure of Twin::error over two host vectors.
double relative_error(const std::vector<float>& got, const std::vector<float>& want);

// A step's batch layout on both sides: sequences of (tokens already cached, new tokens), KV pages
// handed out in order, sequence s in state slot s.
class TwinBatch {
 public:
  TwinBatch(BackendPair& pair, const std::vector<std::pair<int, int>>& seqs, int block_size);
  ~TwinBatch();
  TwinBatch(const TwinBatch&) = delete;
  TwinBatch& operator=(const TwinBatch&) = delete;
  const BatchLayout& operator[](Side s) const { return s == Side::Reference ? reference_ : device_; }
  int tokens() const { return host_.num_tokens(); }
  int blocks_used() const { return blocks_used_; }

 private:
  BatchLayout upload(Backend& b, void*& memory);
  BackendPair& pair_;
  BatchHost host_;
  int blocks_used_ = 0;
  void* reference_memory_ = nullptr;
  void* device_memory_ = nullptr;
  BatchLayout reference_, device_;
};

}  // namespace dcu::doctor
