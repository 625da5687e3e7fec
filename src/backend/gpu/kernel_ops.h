#pragma once
// The Backend ops that are kernel launches with no state of the backend's, over tensors: shape checks as
// the CPU reference's, then the launch. GpuBackend forwards to them; so does the emulation test's backend
// (tests/backend/kernel_emulation_test.cpp), which runs the same kernels on the CPU.

#include <span>

#include "backend/backend.h"
#include "backend/gpu/kernels.h"

namespace dcu::gpu {

void embed(const Launch& l, const Tensor& table, const Tensor& ids, Tensor out);
// ys[i] = x . ws[i]^T; act-order weights read x gathered into their column orders, in `ordered`.
void matmul_group(const Launch& l, Scratch& scratch, Scratch& ordered, const Tensor& x, std::span<const Linear> ws,
                  std::span<const Tensor> ys);
// The fused forms take weights in input order only (no act-order k_order).
void gate_up_swiglu(const Launch& l, Scratch& scratch, const Tensor& x, const Linear& gate_w, const Linear& up_w,
                    Tensor gate, Tensor up, Tensor out);
void norm_matmul_group(const Launch& l, const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                       std::span<const Tensor> ys);
void norm_gate_up_swiglu(const Launch& l, const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w,
                         const Linear& up_w, Tensor out);
void matmul_accumulate(const Launch& l, const Tensor& x, const Linear& w, Tensor y);
void rms_norm(const Launch& l, const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out);
void add_rms_norm(const Launch& l, Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out);
void gated_rms_norm(const Launch& l, const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out);
void add(const Launch& l, Tensor x, const Tensor& y);
void swiglu(const Launch& l, const Tensor& gate, const Tensor& up, Tensor out);
void sigmoid_mul(const Launch& l, Tensor x, const Tensor& gate);
void gather_rows(const Launch& l, const Tensor& x, const Tensor& rows, Tensor out);
void attention_prep(const Launch& l, const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                    const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate);
void kv_cache_write(const Launch& l, const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache);
void paged_attention(const Launch& l, Scratch& scratch, const Tensor& q, const PagedKv& cache, const BatchLayout& batch,
                     float scale, Tensor out);
void gdn_conv(const Launch& l, const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
              Tensor out);
void gdn_gates(const Launch& l, const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
               Tensor beta);
void gdn_delta_rule(const Launch& l, const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims,
                    GdnState& state, const BatchLayout& batch, Tensor out);
void adjust_logits(const Launch& l, Tensor logits, const Tensor& targets, const Tensor& factors);
void mask_logits(const Launch& l, Tensor logits, const Tensor& rows, const Tensor& allowed);
void logit_summary(const Launch& l, Scratch& scratch, const Tensor& logits, const Tensor& rows,
                   const Tensor& inv_temperature, Tensor top_values, Tensor top_ids, Tensor stats);
void copy_columns(const Launch& l, const Tensor& x, Tensor out, int64_t column);

}  // namespace dcu::gpu
