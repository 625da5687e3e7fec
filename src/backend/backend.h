#pragma once
// The op table every backend implements. Model code calls these and never asks which device it runs
// on. Ops are destination-passing: the caller owns every output and scratch tensor; ops never
// allocate. Activations are f32; tables and small parameters may be BF16, F16 or F32 (read as f32);
// matmul weights are a Linear (backend/linear.h): dense BF16/F16/F32 or int8/int4 codes with scales,
// accumulated in f32 either way.
//
// Shape letters: T tokens in the step, H hidden, K/N matmul in/out, nh/nkv attention heads, d head
// dim, Hk/Hv GDN key/value heads, dk/dv their dims, C = 2*Hk*dk + Hv*dv conv channels, Kc conv taps.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "backend/batch_layout.h"
#include "backend/linear.h"
#include "core/tensor.h"

namespace dcu {

enum class DeviceKind { Cpu, Cuda, Hip };

struct RopeParams {
  int rotary_dim = 0;   // leading dims of each head that rotate (NeoX pairs i, i + rotary_dim/2)
  float theta = 1e4f;
};

// Paged KV cache of one attention layer.
struct PagedKv {
  PagedKv() = default;
  PagedKv(Tensor k_, Tensor v_, int block_size_, Tensor k_scale_ = {}, Tensor v_scale_ = {})
      : k(k_), v(v_), block_size(block_size_), k_scale(k_scale_), v_scale(v_scale_) {}
  Tensor k;             // [num_blocks, block_size, nkv, d]
  Tensor v;             // [num_blocks, block_size, nkv, d]
  int block_size = 0;
  // An 8-bit cache (k, v I8: --kv-cache-dtype int8): element = code * scale, one f32 scale per written
  // (token, KV head), max |x| / 127 of that head's row. Empty for 16- and 32-bit caches.
  Tensor k_scale;       // [num_blocks, block_size, nkv] f32
  Tensor v_scale;       // [num_blocks, block_size, nkv] f32
};

// Per-sequence Gated DeltaNet state of one layer, indexed by state slot.
struct GdnState {
  Tensor conv;          // [slots, C, Kc-1] last Kc-1 pre-conv inputs, oldest first
  Tensor recurrent;     // [slots, Hv, dk, dv] f32
};

struct GdnDims {
  int num_key_heads = 0;    // Hk
  int num_value_heads = 0;  // Hv
  int key_dim = 0;          // dk
  int value_dim = 0;        // dv
  int conv_kernel = 0;      // Kc
  int conv_channels() const { return 2 * num_key_heads * key_dim + num_value_heads * value_dim; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;

  // --- memory -----------------------------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;          // throws dcu::Error when out of memory
  virtual void release(void* ptr) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;    // host -> backend
  virtual void download(void* dst, const void* src, size_t bytes) = 0;  // backend -> host (synchronizes)
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  // backend -> backend. The generic version stages through host memory; backends override it.
  virtual void copy(void* dst, const void* src, size_t bytes);
  virtual void synchronize() = 0;
  // The device queue the ops are enqueued on (cudaStream_t / hipStream_t), so that a communicator
  // can order its collectives after them without a host wait. nullptr: no such queue (CPU).
  virtual void* native_stream() { return nullptr; }

  // --- step graphs (CUDA/HIP graphs) ----------------------------------------------------------
  // A graph replays a recorded sequence of ops with the same arguments (pointers, sizes, grids): the
  // caller keys it by everything those depend on. Backends without graphs answer false.
  virtual bool supports_graphs() const { return false; }
  // Records the ops `record` enqueues as graph `key` (nothing runs). The ops must not synchronise or
  // allocate. Throws dcu::Error when recording fails.
  virtual void capture_graph(uint64_t key, const std::function<void()>& record) {}
  // Runs graph `key`; false when there is none.
  virtual bool launch_graph(uint64_t key) { return false; }
  // Forgets every graph (memory they point into is about to move).
  virtual void clear_graphs() {}

  // --- ops --------------------------------------------------------------------------------------
  // out[t, :] = f32(table[ids[t], :]).   table [V, H], ids [T] i32 (backend memory), out [T, H]
  virtual void embed(const Tensor& table, const Tensor& ids, Tensor out) = 0;
  // Row-wise RMSNorm over the last dim n: y = x * rsqrt(mean(x^2) + eps) * (unit_offset ? 1 + w : w).
  // x, out [R, n] (may alias); w [n]
  virtual void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) = 0;
  // x += y, then out = rms_norm(x) as above: the residual add fused with the next norm.
  // x, y, out [R, n] (out must not alias x or y); w [n]
  virtual void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out) = 0;
  // Whether matmuls read WeightFormat::Fp8 (the CPU, CUDA); the loader converts FP8 to Int8 for those
  // that do not (HIP GPUs: gfx906 has no FP8 arithmetic, and its int8 GEMVs multiply int8 activations
  // with v_dot4).
  virtual bool reads_fp8_weights() const { return false; }
  // y = x . w^T.   x [T, K] f32, w [N, K] (any format the backend reads), y [T, N] f32
  virtual void matmul(const Tensor& x, const Linear& w, Tensor y) = 0;
  // The projections that read the same activations, ys[i] = x . ws[i]^T, as few passes over x and
  // launches as the backend manages (GPUs: one per format). ws[i] [N_i, K], ys[i] [T, N_i]; at most
  // kMaxMatmulGroup of them. The default runs matmul on each.
  virtual void matmul_group(const Tensor& x, std::span<const Linear> ws, std::span<const Tensor> ys);
  // The MLP's first half: out = silu(x . gate_w^T) * (x . up_w^T). gate, up [T, I] are scratch for
  // the two products (a backend that fuses the steps may leave them untouched); out [T, I] may alias
  // gate. The default runs matmul_group and swiglu.
  virtual void gate_up_swiglu(const Tensor& x, const Linear& gate_w, const Linear& up_w, Tensor gate, Tensor up,
                              Tensor out);
  // Decode steps with the norms folded into the matmuls. Whether the three ops below run for T token
  // rows (default: never); the model runner then keeps the residual stream out of separate norm ops:
  // the projections that produce a residual delta add it in place, and those that read the normed
  // residual normalise it as they read it.
  virtual bool fuses_norms(int64_t T) const { return false; }
  // matmul_group of n = rms_norm(x) (1 + norm_w) (the zero-centred norm), n never written.
  // x [T, K] (the residual stream), norm_w [K]; ws, ys as in matmul_group.
  virtual void norm_matmul_group(const Tensor& x, const Tensor& norm_w, float eps, std::span<const Linear> ws,
                                 std::span<const Tensor> ys);
  // out = silu(n . gate_w^T) * (n . up_w^T) for n as above.   out [T, I]
  virtual void norm_gate_up_swiglu(const Tensor& x, const Tensor& norm_w, float eps, const Linear& gate_w,
                                   const Linear& up_w, Tensor out);
  // y += x . w^T.   x [T, K], w [N, K], y [T, N]
  virtual void matmul_accumulate(const Tensor& x, const Linear& w, Tensor y);
  // x += y, elementwise.   x, y [n] f32
  virtual void add(Tensor x, const Tensor& y) = 0;
  // out = silu(gate) * up.   gate, up, out [T, I]
  virtual void swiglu(const Tensor& gate, const Tensor& up, Tensor out) = 0;
  // x *= sigmoid(gate), elementwise.   x, gate [T, n]
  virtual void sigmoid_mul(Tensor x, const Tensor& gate) = 0;
  // out[r, :] = x[rows[r], :].   x [T, H], rows [R] i32 (backend memory), out [R, H]
  virtual void gather_rows(const Tensor& x, const Tensor& rows, Tensor out) = 0;

  // Gated attention, before the cache: splits the per-head interleaved q|gate projection, applies the
  // zero-centered q/k norms (weights [d], 1 + w) and partial NeoX RoPE at each token's position.
  // qg [T, nh, 2d] -> q [T, nh, d], gate [T, nh, d]; k [T, nkv, d] normalized and rotated in place.
  virtual void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                              const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) = 0;
  // Writes each token's k, v [T, nkv, d] into its slot of the paged cache.
  virtual void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) = 0;
  // Causal GQA attention of each new token over its sequence's cache (positions 0..its own).
  // q [T, nh, d], out [T, nh, d]; q head h reads kv head h / (nh / nkv).
  virtual void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale,
                               Tensor out) = 0;

  // Causal depthwise conv (Kc taps, no bias) + SiLU over each sequence's rows, continuing from and
  // updating its conv state (a sequence with context_before == 0 starts from zeros).
  // mixed [T, C], weight [C, Kc], out [T, C]
  virtual void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch,
                        Tensor out) = 0;
  // g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).   a, b, g, beta [T, Hv]; A_log, dt_bias [Hv]
  virtual void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g,
                         Tensor beta) = 0;
  // The gated delta rule: q, k L2-normalized (q scaled by dk^-0.5), value head j uses key head
  // j / (Hv / Hk); continues from and updates each sequence's recurrent state (zeros when
  // context_before == 0). qkv [T, C] (post-conv: q | k | v), g, beta [T, Hv], out [T, Hv, dv].
  virtual void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims,
                              GdnState& state, const BatchLayout& batch, Tensor out) = 0;
  // Per row of dv: y = w * x * rsqrt(mean(x^2) + eps) * silu(z).   x, z, out [R, dv]; w [dv]
  virtual void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) = 0;

  // --- logits (sampling reads a summary of each row, not the row) ----------------------------------
  // Penalties and bans, per entry e naming a distinct (row, id): x = logits[row, id];
  // x = (x > 0 ? x / scale : x * scale) - bias.   logits [R, V]; targets [E, 2] i32 (row, id);
  // factors [E, 2] f32 (scale, bias); a bias of +inf bans the id.
  virtual void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors) = 0;
  // Structured output: logits[rows[i], id] = -inf wherever bit id % 32 of allowed[i, id / 32] is clear.
  // logits [R, V]; rows [m] i32 (distinct); allowed [m, ceil(V / 32)] i32 (bit masks).
  virtual void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed) = 0;
  // For each listed row rows[i] of logits [R, V]: its k largest values and their ids, largest first and
  // equal values by lower id (core/top_k.h), and stats[i] = {log sum_j exp(x_j), sum_j exp((x_j - max)
  // * inv_temperature[i])}.   rows, inv_temperature [n]; top_values [n, k] f32, top_ids [n, k] i32,
  // stats [n, 2] f32; 1 <= k <= min(V, kMaxLogitCandidates).
  virtual void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature,
                             Tensor top_values, Tensor top_ids, Tensor stats) = 0;
  // out[:, column + j] = x[:, j]: x [R, w] becomes columns column..column+w-1 of out [R, W].
  virtual void copy_columns(const Tensor& x, Tensor out, int64_t column) = 0;
};

// The most matmuls one matmul_group call takes (the GDN layer's four input projections).
constexpr size_t kMaxMatmulGroup = 4;

// The most candidates logit_summary returns per row (bounded by the GPU kernel's on-chip sort).
constexpr int kMaxLogitCandidates = 1024;

struct CpuBackendOptions {
  // Matmuls with integer-coded weights (Int8, Int4) round their activations to int8 blocks first, as the
  // GPU backends' int8-activation GEMVs do (backend/activation_quantization.h).
  bool int8_activations = false;
  // false: the loader converts FP8 checkpoints to Int8 as it does for gfx906 (tests of that path).
  bool reads_fp8_weights = true;
};

// The CPU backend (always available; the reference for every other backend).
std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace dcu
