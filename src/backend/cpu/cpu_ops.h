#pragma once
// The CPU reference ops, one free function per Backend op (see backend/backend.h for the contracts).

#include <cmath>
#include <vector>

#include "backend/backend.h"

namespace dcu::cpu {

void embed(const Tensor& table, const Tensor& ids, Tensor out);
void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out);
void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out);
// int8_activations: a w of integer codes (Int8, Int4) multiplies x rounded to int8 blocks
// (backend/activation_quantization.h).
void matmul(const Tensor& x, const Linear& w, Tensor y, bool int8_activations = false);
void add(Tensor x, const Tensor& y);
void swiglu(const Tensor& gate, const Tensor& up, Tensor out);
void sigmoid_mul(Tensor x, const Tensor& gate);
void gather_rows(const Tensor& x, const Tensor& rows, Tensor out);
void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                    const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate);
void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache);
void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale, Tensor out);
void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch, Tensor out);
void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g, Tensor beta);
void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims, GdnState& state,
                    const BatchLayout& batch, Tensor out);
void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out);
void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors);
void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed);
void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature, Tensor top_values,
                   Tensor top_ids, Tensor stats);
void copy_columns(const Tensor& x, Tensor out, int64_t column);

// Reads a small parameter vector (norm weights, A_log, ...) of any float dtype as f32.
std::vector<float> to_f32(const Tensor& t);

// Below this much work an op runs on one thread: waking the team costs more than it saves, and on a
// busy machine every parallel region waits for all its threads to be scheduled.
constexpr int64_t kParallelWork = 1 << 18;

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace dcu::cpu
