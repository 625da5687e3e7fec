#pragma once
// Launchers of the GPU kernels, one per Backend op, in plain types so gpu_backend.cpp (host C++) and
// the kernel files (.cu) share them. Every pointer is device memory; shapes use backend.h's letters.

#include <cstddef>
#include <cstdint>

#include "backend/gpu/compat.h"
#include "core/dtype.h"
#include "core/weight_format.h"

namespace dcu::gpu {

class Scratch;

// Where and how a kernel runs: the backend's stream and the logical warp width (the device's native
// width, or 64 on NVIDIA to exercise wave64 logic).
struct Launch {
  gpuStream_t stream = nullptr;
  int lanes = kNativeLanes;
  void* blas = nullptr;  // cublasHandle_t on CUDA builds when large 16-bit matmuls go to cuBLAS, else null
  int gemv_max_tokens = 16;  // matmuls with at most this many token rows use the GEMV
  bool tensor_cores = false;  // CUDA vendor-BLAS mode: decode batches above the GEMV on tensor cores
  // Vendor-BLAS mode: tensor-core matmuls take the activations as two 16-bit parts, hi + lo (false:
  // rounded to one, half the multiplies; --matmul-precision medium).
  bool split_activations = true;
  bool overlap = false;       // launch_overlapping may overlap kernels (CUDA, compute capability 9.0+)
  Scratch* expanded = nullptr;  // where quantized weights are expanded for prompt-sized matmuls
  int multiprocessors = 1;      // SMs / CUs of the device: sizes grids that must cover it
  // Matmuls of int8 and int4 weights round their activations to int8 blocks (backend/activation_quantization.h):
  // the decode rows multiply codes (gemv_int8_activations.cu), larger ones the rounded values.
  bool int8_activations = false;
  Scratch* activations = nullptr;  // the codes or rounded activations of those matmuls
};

// Backend-owned device scratch that grows on demand (ops never allocate their outputs).
class Scratch {
 public:
  virtual ~Scratch() = default;
  virtual void* get(size_t bytes) = 0;  // valid until the next get()
};

// ---- elementwise.cu ------------------------------------------------------------------------------
void launch_embed(const Launch& l, const void* table, DType table_type, const int32_t* ids, float* out, int64_t T,
                  int64_t H);  // table [V, H], ids [T], out [T, H]
void launch_add(const Launch& l, float* x, const float* y, int64_t n);
void launch_swiglu(const Launch& l, const float* gate, const float* up, float* out, int64_t n);
void launch_sigmoid_mul(const Launch& l, float* x, const float* gate, int64_t n);
void launch_gather_rows(const Launch& l, const float* x, const int32_t* rows, float* out, int64_t R,
                        int64_t H);  // x [T, H], rows [R], out [R, H]
// out[t, j] = x[t, order[j]]: activations in an act-order weight's column order.   x, out [T, K]
void launch_gather_columns(const Launch& l, const float* x, const int32_t* order, float* out, int64_t T, int64_t K);

// ---- norms.cu ------------------------------------------------------------------------------------
// x, out [R, n]; w [n]
void launch_rms_norm(const Launch& l, const float* x, const void* w, DType w_type, float eps, bool unit_offset,
                     float* out, int64_t R, int64_t n);
// x += y (written back), then out = rms_norm(x).   x, y, out [R, n]
void launch_add_rms_norm(const Launch& l, float* x, const float* y, const void* w, DType w_type, float eps,
                         bool unit_offset, float* out, int64_t R, int64_t n);
void launch_gated_rms_norm(const Launch& l, const float* x, const float* z, const void* w, DType w_type, float eps,
                           float* out, int64_t R, int64_t n);

// ---- matmul.cu -----------------------------------------------------------------------------------
struct MatmulArgs {
  const float* x = nullptr;  // [T, K]
  const void* w = nullptr;   // [N, K] dense, or the codes of a quantized weight (backend/linear.h)
  DType w_type = DType::F32; // dense: the element type
  float* y = nullptr;        // [T, N]
  int64_t T = 0, K = 0, N = 0;
  WeightFormat format = WeightFormat::Dense;
  const float* scales = nullptr;   // quantized: [N, K / group]
  const uint8_t* zeros = nullptr;  // Int4 zero points [N, K / group]; null: 8
  int64_t group = 0;
};
// The GEMV kernel (weights streamed once for all rows) handles at most this many token rows.
constexpr int64_t kGemvMaxTokens = 16;
// Matmuls of the same x (and so T, K) and weight format, dtype and group, each y = x . w^T; the GEMV
// and the tensor-core kernel run a whole group as one launch. Quantized weights take the GEMV (the
// rows gemv_max_tokens allows, else up to kGemvMaxTokens), the tensor-core kernel (CUDA's vendor-BLAS
// mode, up to kTensorCoreMaxTokens), or beyond that are expanded into dense weights in
// Launch::expanded for the dense path (matmul.cu's header has the details).
// (The kernels build as C++17: no std::span here.)
constexpr int kMaxMatmulGroup = 4;  // = dcu::kMaxMatmulGroup (backend.h)
void launch_matmul_group(const Launch& l, const MatmulArgs* group, int count, Scratch& scratch);
inline void launch_matmul(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  launch_matmul_group(l, &a, 1, scratch);
}
// out [T, N] = silu(gate product) * up product, where gate.y, up.y [T, N] hold the products on the
// paths that need them (the GEMV path fuses all three and leaves them untouched).
void launch_gate_up_swiglu(const Launch& l, const MatmulArgs& gate, const MatmulArgs& up, float* out, Scratch& scratch);
// What a GEMV launch folds in: the zero-centred RMSNorm of its input (x is the residual stream,
// norm_w [K] of norm_type), and accumulation into y (y += x . w^T).
struct GemvFusion {
  const void* norm_w = nullptr;
  DType norm_type = DType::F32;
  float eps = 0.0f;
  bool accumulate = false;
};
// Whether every matmul of T token rows runs on the GEMV, which does the fused ops below.
bool gemv_takes_all(int gemv_max_tokens, int64_t T);
// The decode-step fusions (only where gemv_takes_all): a group, or gate/up/SwiGLU (group[0] = gate,
// group[1] = up, out = group[0].y), of rms_norm(x) (1 + norm_w); and y += x . w^T.
void launch_norm_matmul_group(const Launch& l, const MatmulArgs* group, int count, bool swiglu, const GemvFusion& norm);
void launch_matmul_accumulate(const Launch& l, const MatmulArgs& a);
// A quantized weight a (backend/linear.h) as dense weights: out [N, K] of type (BF16, F16 or F32).
void launch_expand_weights(const Launch& l, const MatmulArgs& a, void* out, DType type);
// Whether this device runs kernels built with the waits that launch_overlapping needs (sm_90+ code).
bool kernels_can_overlap();
// x [n] f32 -> hi, lo [n] of a 16-bit type (BF16 or F16) with x ~= hi + lo; lo null: hi only.
void launch_split16(const Launch& l, const float* x, void* hi, void* lo, int64_t n, DType type);

// ---- gemv_int8_activations.cu ---------------------------------------------------------------------
// The GEMV of Launch::int8_activations (matmul.cu's run_gemv sends int8 and int4 weights there): a group as
// launch_matmul_group's GEMV takes it (T <= kGemvMaxTokens), with the same fusions; the norm goes into
// the kernel that quantizes x, in Launch::activations.
void launch_int8_activation_gemv(const Launch& l, const MatmulArgs* group, int count, bool swiglu,
                                 const GemvFusion& fusion);
// x [T, K] rounded to int8 blocks, as f32 values s q [T, K] in Launch::activations (valid until its next use).
const float* launch_round_activations(const Launch& l, const float* x, int64_t T, int64_t K);
// x [T, K] rounded so, then split as launch_split16 splits: hi, lo [T, K] of type (BF16 or F16), lo null: hi only.
void launch_round_split16(const Launch& l, const float* x, int64_t T, int64_t K, void* hi, void* lo, DType type);

// ---- matmul_tensor_core.cu (CUDA only) -----------------------------------------------------------
// Decode batches of 16-bit weights on tensor cores, weights read once (the vendor-BLAS mode's path
// between the GEMV and cuBLAS).
constexpr int64_t kTensorCoreMaxTokens = 32;
bool tensor_core_matmul_fits(const MatmulArgs& a);  // dtype, T, K multiple of 64, 16-byte alignment
void launch_tensor_core_matmul(const Launch& l, const MatmulArgs* group, int count, Scratch& scratch);

// ---- attention.cu --------------------------------------------------------------------------------
struct AttentionPrepArgs {
  const float* qg = nullptr;  // [T, nh, 2d]
  float* k = nullptr;         // [T, nkv, d] in place
  const void* q_norm = nullptr;
  const void* k_norm = nullptr;  // [d] each
  DType q_norm_type = DType::F32, k_norm_type = DType::F32;
  float eps = 1e-6f;
  int rotary_dim = 0;
  float theta = 1e4f;
  const int32_t* positions = nullptr;  // [T]
  float* q = nullptr;     // [T, nh, d]
  float* gate = nullptr;  // [T, nh, d]
  int T = 0, nh = 0, nkv = 0, d = 0;
};
void launch_attention_prep(const Launch& l, const AttentionPrepArgs& a);

// k, v [T, row]; caches [slots, row] of cache_type (F32, F16 or BF16)
// k, v [T, nkv, d] into the caches [slots, nkv, d]; an I8 cache also gets each (token, head)'s scale
// into k_scale, v_scale [slots, nkv] (null otherwise).
void launch_kv_cache_write(const Launch& l, const float* k, const float* v, const int32_t* slot_mapping, void* k_cache,
                           void* v_cache, float* k_scale, float* v_scale, DType cache_type, int64_t T, int nkv, int d);

struct PagedAttentionArgs {
  const float* q = nullptr;  // [T, nh, d]
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;  // [blocks, block_size, nkv, d]
  const float* k_scale = nullptr;  // [blocks, block_size, nkv] for an I8 cache, else null
  const float* v_scale = nullptr;
  DType cache_type = DType::F32;
  int block_size = 0;
  const int32_t* block_tables = nullptr;  // [S, max_blocks]
  int max_blocks = 0;
  const int32_t* seq_row_begin = nullptr;  // [S + 1]
  int num_seqs = 0;
  const int32_t* positions = nullptr;  // [T]
  int max_position = 0;                // largest position in the step (host side, sizes the split)
  int max_seq_rows = 0;                // most rows of one sequence (host side)
  float scale = 1.0f;
  float* out = nullptr;  // [T, nh, d]
  int T = 0, nh = 0, nkv = 0, d = 0;
};
void launch_paged_attention(const Launch& l, const PagedAttentionArgs& a, Scratch& scratch);

// ---- gdn.cu --------------------------------------------------------------------------------------
struct GdnBatch {
  const int32_t* seq_row_begin = nullptr;       // [S + 1]
  const int32_t* seq_context_before = nullptr;  // [S]
  const int32_t* state_slots = nullptr;         // [S] read
  const int32_t* state_write_slots = nullptr;   // [T] written after each row, -1 none (BatchHost)
  int num_seqs = 0;
  int max_rows_per_seq = 0;                     // host side
};
// mixed, out [T, C]; weight [C, Kc]; conv_state [slots, C, Kc - 1] f32
void launch_gdn_conv(const Launch& l, const float* mixed, const void* weight, DType weight_type, float* conv_state,
                     const GdnBatch& b, float* out, int64_t C, int Kc);
// a, b, g, beta [T, Hv]; A_log, dt_bias [Hv]
void launch_gdn_gates(const Launch& l, const float* a, const float* b, const void* A_log, DType A_log_type,
                      const void* dt_bias, DType dt_bias_type, float* g, float* beta, int64_t T, int Hv);
struct DeltaRuleArgs {
  const float* qkv = nullptr;  // [T, C] q | k | v
  const float* g = nullptr;
  const float* beta = nullptr;  // [T, Hv]
  float* state = nullptr;       // [slots, Hv, dk, dv]
  float* out = nullptr;         // [T, Hv, dv]
  int Hk = 0, Hv = 0, dk = 0, dv = 0;
};
void launch_gdn_delta_rule(const Launch& l, const DeltaRuleArgs& a, const GdnBatch& b);

// ---- logits.cu -----------------------------------------------------------------------------------
// logits [R, V]; targets, factors [E, 2]
void launch_adjust_logits(const Launch& l, float* logits, int64_t V, const int32_t* targets, const float* factors,
                          int64_t E);
// logits [R, V]; rows [m]; allowed [m, ceil(V / 32)] bit masks
void launch_mask_logits(const Launch& l, float* logits, int64_t V, const int32_t* rows, const uint32_t* allowed,
                        int64_t m);
// The summary kernel sorts its candidates on chip: k <= this (Backend's kMaxLogitCandidates).
constexpr int kMaxSummaryCandidates = 1024;
// logits [R, V]; rows, inv_temperature [n]; top_values, top_ids [n, k]; stats [n, 2]
void launch_logit_summary(const Launch& l, const float* logits, int64_t V, const int32_t* rows,
                          const float* inv_temperature, int64_t n, int k, float* top_values, int32_t* top_ids,
                          float* stats, Scratch& scratch);
// x [R, w] into columns column.. of out [R, W]
void launch_copy_columns(const Launch& l, const float* x, int64_t R, int64_t w, float* out, int64_t W,
                         int64_t column);

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(DCUSERVE_EMULATION)
// The entry of a group kernel's index i in `ends` (running totals, entries past the group equal to the
// last): a compare chain and selects, so that kernel-parameter arrays are not copied to the stack to
// be indexed.
template <typename I>
__device__ __forceinline__ int group_entry(const I (&ends)[kMaxMatmulGroup], I i) {
  int p = 0;
#pragma unroll
  for (int e = 0; e + 1 < kMaxMatmulGroup; ++e) p += i >= ends[e];
  return p;
}
template <typename T>
__device__ __forceinline__ T group_pick(const T (&values)[kMaxMatmulGroup], int p) {
  T v = values[0];
#pragma unroll
  for (int e = 1; e < kMaxMatmulGroup; ++e) v = p == e ? values[e] : v;
  return v;
}

// kernel<<<grid, block, smem, l.stream>>>(args...), or its emulation on the CPU.
template <typename... Params, typename... Args>
void launch_kernel(const Launch& l, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Args... args) {
#if defined(DCUSERVE_EMULATION)
  (void)l;
  emulation::launch(grid, block, smem, kernel, Params(args)...);
#else
  kernel<<<grid, block, smem, l.stream>>>(Params(args)...);
#endif
}

// launch_kernel, allowed to start before the previous kernel ends when l.overlap (see
// let_next_kernel_start in compat.h: the kernel must wait_for_previous_kernel).
template <typename... Params, typename... Args>
void launch_overlapping(const Launch& l, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Args... args) {
#if defined(DCUSERVE_CUDA)
  if (l.overlap) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid, config.blockDim = block, config.dynamicSmemBytes = smem, config.stream = l.stream;
    config.attrs = &attribute, config.numAttrs = 1;
    GPU_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
    return;
  }
#endif
  launch_kernel(l, kernel, grid, block, smem, args...);
}

// The kernels' element types for quantized codes (backend/linear.h): one int8 code, a byte of two
// int4 codes, or one FP8 E4M3 byte (CUDA only: the loader converts FP8 to int8 for HIP backends).
struct Int8Code { int8_t bits; };
struct Int4Pair { uint8_t bits; };
struct Fp8Code { uint8_t bits; };
template <typename W> constexpr bool kIntegerCodes = std::is_same_v<W, Int8Code> || std::is_same_v<W, Int4Pair>;
template <typename W> constexpr bool kQuantized = kIntegerCodes<W> || std::is_same_v<W, Fp8Code>;
template <typename W> constexpr int kCodesPerElement = std::is_same_v<W, Int4Pair> ? 2 : 1;

// A code q as the f32 2^23 + q: its bits are 0x4B000000 | q (exact for q < 2^23).
__device__ __forceinline__ float magic_float(uint32_t q) { return __uint_as_float(0x4B000000u | q); }

// The value of the E4M3 byte in the low 8 bits of b, exactly: its exponent and mantissa bits become an
// f32's top exponent and mantissa bits, which f32 reads with a bias of 127 instead of 7 (E4M3's
// subnormals as f32 subnormals), and 2^120 restores the bias. Needs f32 subnormals (no -ftz).
__device__ __forceinline__ float fp8_value(uint32_t b) {
  return __uint_as_float(((b & 0x80u) << 24) | ((b & 0x7Fu) << 20)) * 0x1p120f;
}

// Runs f(T{}) with T the device element type of `t` (float, F16 or Bf16).
template <typename F>
void with_elem_type(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F16: return f(F16{});
    case DType::BF16: return f(Bf16{});
    default: fail_call("with_elem_type", __FILE__, __LINE__, "tensor dtype must be F32, F16 or BF16");
  }
}
#endif

}  // namespace dcu::gpu
