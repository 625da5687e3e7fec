#pragma once
// A backend whose ops run the GPU kernel files on the CPU (backend/gpu/emulation.h), for the emulation
// tests: the CPU backend's memory and the ops the emulation does not cover, with the ops of the emulated
// kernel files sent through the GPU backend's own marshalling (kernel_ops.h).

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/gpu/kernel_ops.h"

namespace dcu::testing {

class EmulatedKernels final : public CpuBackend {
 public:
  // int8_activations: matmuls of int8 and int4 weights round their activations to int8 (Launch).
  explicit EmulatedKernels(bool int8_activations = false) {
    launch_.multiprocessors = 60;  // a Z100's CUs: decode attention splits as there
    launch_.int8_activations = int8_activations;
    launch_.expanded = &expanded_, launch_.activations = &activations_;
  }
  void embed(const Tensor& table, const Tensor& ids, Tensor out) override { gpu::embed(launch_, table, ids, out); }
  void matmul(const Tensor& x, const Linear& w, Tensor y) override {
    const Linear ws[] = {w};
    const Tensor ys[] = {y};
    matmul_group(x, ws, ys);
  }
  void matmul_group(const Tensor& x, std::span<const Linear> ws, std::span<const Tensor> ys) override {
    gpu::matmul_group(launch_, scratch_, ordered_inputs_, x, ws, ys);
  }
  void gate_up_swiglu(const Tensor& x, const Linear& gate_w, const Linear& up_w, Tensor gate, Tensor up,
                      Tensor out) override {
    if (!gate_w.k_order.empty() || !up_w.k_order.empty())  // as GpuBackend: two matmuls, then swiglu
      return Backend::gate_up_swiglu(x, gate_w, up_w, gate, up, out);
    gpu::gate_up_swiglu(launch_, scratch_, x, gate_w, up_w, gate, up, out);
  }
  // As a HIP build: FP8 read as int8, and weights copied into the backend's buffers (aligned), never
  // read in place from the checkpoint as the CPU backend does.
  DeviceKind kind() const override { return DeviceKind::Hip; }
  bool reads_fp8_weights() const override { return false; }
  bool fuses_norms(int64_t T) const override { return gpu::gemv_takes_all(launch_.gemv_max_tokens, T); }
  void norm_matmul_group(const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                         std::span<const Tensor> ys) override {
    gpu::norm_matmul_group(launch_, x, norm_w, eps, ws, ys);
  }
  void norm_gate_up_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w, const Linear& up_w,
                           Tensor out) override {
    gpu::norm_gate_up_swiglu(launch_, x, norm_w, eps, gate_w, up_w, out);
  }
  void matmul_accumulate(const Tensor& x, const Linear& w, Tensor y) override {
    gpu::matmul_accumulate(launch_, x, w, y);
  }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    gpu::rms_norm(launch_, x, w, eps, unit_offset, out);
  }
  void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out) override {
    gpu::add_rms_norm(launch_, x, y, w, eps, unit_offset, out);
  }
  void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) override {
    gpu::gated_rms_norm(launch_, x, z, w, eps, out);
  }
  void add(Tensor x, const Tensor& y) override { gpu::add(launch_, x, y); }
  void swiglu(const Tensor& gate, const Tensor& up, Tensor out) override { gpu::swiglu(launch_, gate, up, out); }
  void sigmoid_mul(Tensor x, const Tensor& gate) override { gpu::sigmoid_mul(launch_, x, gate); }
  void gather_rows(const Tensor& x, const Tensor& rows, Tensor out) override {
    gpu::gather_rows(launch_, x, rows, out);
  }
  void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                      const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) override {
    gpu::attention_prep(launch_, qg, k, q_norm, k_norm, eps, rope, batch, q, gate);
  }
  void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) override {
    gpu::kv_cache_write(launch_, k, v, batch, cache);
  }
  void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale,
                       Tensor out) override {
    gpu::paged_attention(launch_, scratch_, q, cache, batch, scale, out);
  }
  void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
                Tensor out) override {
    gpu::gdn_conv(launch_, mixed, weight, state, batch, out);
  }
  void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
                 Tensor beta) override {
    gpu::gdn_gates(launch_, a, b, A_log, dt_bias, g, beta);
  }
  void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims, GdnState& state,
                      const BatchLayout& batch, Tensor out) override {
    gpu::gdn_delta_rule(launch_, qkv, g, beta, dims, state, batch, out);
  }
  void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors) override {
    gpu::adjust_logits(launch_, logits, targets, factors);
  }
  void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed) override {
    gpu::mask_logits(launch_, logits, rows, allowed);
  }
  void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature, Tensor top_values,
                     Tensor top_ids, Tensor stats) override {
    gpu::logit_summary(launch_, scratch_, logits, rows, inv_temperature, top_values, top_ids, stats);
  }
  void copy_columns(const Tensor& x, Tensor out, int64_t column) override {
    gpu::copy_columns(launch_, x, out, column);
  }

 private:
  class HostScratch final : public gpu::Scratch {
   public:
    void* get(size_t bytes) override {
      if (bytes > bytes_.size()) bytes_.resize(bytes);
      return bytes_.data();
    }

   private:
    std::vector<char> bytes_;
  };
  HostScratch scratch_, ordered_inputs_, expanded_, activations_;
  gpu::Launch launch_;  // the emulated warp width, a HIP build's GEMV limit (16 rows)
};

}  // namespace dcu::testing
