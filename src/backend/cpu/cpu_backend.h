#pragma once
// The CPU backend's class, for tests that wrap it (e.g. to act as a backend with graphs). Everything
// else gets it through make_cpu_backend() (backend/backend.h).

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace dcu {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options = {}) : options_(options) {}
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string name() const override { return "cpu"; }

  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!p) fail("out of host memory allocating {} bytes", bytes);
    return p;
  }
  void release(void* ptr) override { std::free(ptr); }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);  // an empty tensor may have no data pointer
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);  // an empty tensor may have no data pointer
  }
  void fill_zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    // Split across threads so a bandwidth measurement sees every memory channel.
    const size_t chunk = 1 << 20;
    const int64_t chunks = int64_t((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < chunks; ++i) {
      const size_t begin = size_t(i) * chunk;
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, std::min(chunk, bytes - begin));
    }
  }
  void synchronize() override {}

  void embed(const Tensor& table, const Tensor& ids, Tensor out) override { cpu::embed(table, ids, out); }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    cpu::rms_norm(x, w, eps, unit_offset, out);
  }
  void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    cpu::add_rms_norm(x, y, w, eps, unit_offset, out);
  }
  bool reads_fp8_weights() const override { return options_.reads_fp8_weights; }
  void matmul(const Tensor& x, const Linear& w, Tensor y) override { cpu::matmul(x, w, y, options_.int8_activations); }
  void add(Tensor x, const Tensor& y) override { cpu::add(x, y); }
  void swiglu(const Tensor& gate, const Tensor& up, Tensor out) override { cpu::swiglu(gate, up, out); }
  void sigmoid_mul(Tensor x, const Tensor& gate) override { cpu::sigmoid_mul(x, gate); }
  void gather_rows(const Tensor& x, const Tensor& rows, Tensor out) override { cpu::gather_rows(x, rows, out); }
  void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                      const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) override {
    cpu::attention_prep(qg, k, q_norm, k_norm, eps, rope, batch, q, gate);
  }
  void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) override {
    cpu::kv_cache_write(k, v, batch, cache);
  }
  void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale,
                       Tensor out) override {
    cpu::paged_attention(q, cache, batch, scale, out);
  }
  void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
                Tensor out) override {
    cpu::gdn_conv(mixed, weight, state, batch, out);
  }
  void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
                 Tensor beta) override {
    cpu::gdn_gates(a, b, A_log, dt_bias, g, beta);
  }
  void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims, GdnState& state,
                      const BatchLayout& batch, Tensor out) override {
    cpu::gdn_delta_rule(qkv, g, beta, dims, state, batch, out);
  }
  void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) override {
    cpu::gated_rms_norm(x, z, w, eps, out);
  }
  void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors) override {
    cpu::adjust_logits(logits, targets, factors);
  }
  void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed) override {
    cpu::mask_logits(logits, rows, allowed);
  }
  void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature, Tensor top_values,
                     Tensor top_ids, Tensor stats) override {
    cpu::logit_summary(logits, rows, inv_temperature, top_values, top_ids, stats);
  }
  void copy_columns(const Tensor& x, Tensor out, int64_t column) override { cpu::copy_columns(x, out, column); }

 private:
  CpuBackendOptions options_;
};

}  // namespace dcu
